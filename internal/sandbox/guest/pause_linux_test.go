package guest

import (
	"os"
	"reflect"
	"strconv"
	"testing"
)

// TestUnsettled: a process is paused when all its threads are stopped, or
// when each of its threads asleep in the kernel waits on a paused vfork
// child (one sharing its memory); anything else still runs.
func TestUnsettled(t *testing.T) {
	// vm[pid] names each process's address space: a vfork child shares
	// its parent's until it execs.
	vm := map[int]int{}
	sameVM := func(a, b int) bool { return vm[a] != 0 && vm[a] == vm[b] }
	procs := func(ps ...procState) map[string]procState {
		m := map[string]procState{}
		for _, p := range ps {
			m[strconv.Itoa(p.pid)] = p
			if vm[p.pid] == 0 {
				vm[p.pid] = p.pid
			}
		}
		return m
	}
	for _, tc := range []struct {
		name  string
		vm    map[int]int
		procs []procState
		want  []string
	}{
		{"all stopped", nil, []procState{{2, 1, "T"}, {3, 2, "tT"}, {4, 2, "Z"}}, nil},
		{"one running", nil, []procState{{2, 1, "T"}, {3, 2, "TR"}}, []string{"3"}},
		{"vfork parent of a stopped child", map[int]int{3: 2}, []procState{{2, 1, "D"}, {3, 2, "T"}}, nil},
		{"vfork parent of a running child", map[int]int{3: 2}, []procState{{2, 1, "D"}, {3, 2, "R"}}, []string{"2", "3"}},
		{"asleep, child exec'd", nil, []procState{{2, 1, "D"}, {3, 2, "T"}}, []string{"2"}},
		{"two threads in vfork, one child", map[int]int{3: 2}, []procState{{2, 1, "DDT"}, {3, 2, "T"}}, []string{"2"}},
		{"two threads in vfork, two children", map[int]int{3: 2, 4: 2}, []procState{{2, 1, "DDT"}, {3, 2, "T"}, {4, 2, "T"}}, nil},
		{"one in vfork, one sleeping", map[int]int{3: 2}, []procState{{2, 1, "DS"}, {3, 2, "T"}}, []string{"2"}},
		{"vfork chain", map[int]int{3: 2, 4: 2}, []procState{{2, 1, "D"}, {3, 2, "D"}, {4, 3, "T"}}, nil},
		{"nothing", nil, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vm = map[int]int{}
			for k, v := range tc.vm {
				vm[k] = v
			}
			if got := unsettled(procs(tc.procs...), sameVM); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("unsettled = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestSameVM: a process shares its address space with itself, not with
// another process.
func TestSameVM(t *testing.T) {
	if !sameVM(os.Getpid(), os.Getpid()) {
		t.Skip("kcmp is not available on this kernel")
	}
	if sameVM(os.Getpid(), os.Getppid()) {
		t.Error("the test and its parent share an address space")
	}
}
