package rollout

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/verisim/verisim/internal/sandbox"
	"github.com/verisim/verisim/internal/sandbox/local/localtest"
	"github.com/verisim/verisim/internal/task"
	"github.com/verisim/verisim/internal/task/generate"
)

// pflagModule is a module nobody here wrote, from the module cache (it is
// one of verisim's own dependencies, so any machine that built verisim has
// it).
func pflagModule(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/spf13/pflag").Output()
	dir := strings.TrimSpace(string(out))
	if err != nil || dir == "" {
		t.Skip("github.com/spf13/pflag is not in the module cache")
	}
	return dir
}

// TestGeneratedTaskLeavesNoTrace generates a feature-deletion task from a
// real module, proves it in a sandbox (solution passes, nothing fails) and
// then searches the whole filesystem of a fresh episode's machine for a
// distinctive line of the removed code: git objects, history, caches,
// module caches — it must be nowhere.
func TestGeneratedTaskLeavesNoTrace(t *testing.T) {
	if testing.Short() {
		t.Skip("generating runs the module's tests several times")
	}
	rt := localtest.Runtime(t)
	module := pflagModule(t)
	dirs, err := generate.DeleteFeature(t.Context(), module, t.TempDir(), generate.Options{Max: 1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	tk, err := task.Load(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	snippet := strings.TrimSpace(tk.Meta["snippet"])
	if len(snippet) < 20 {
		t.Fatalf("generated task has no usable snippet: %q", snippet)
	}
	s := testSetup(t, rt)
	if v := Validate(t.Context(), s, tk); !v.OK() {
		t.Fatalf("generated task %s is not valid: %v", tk.ID, v.Err)
	}

	env, err := Prepare(t.Context(), s, tk)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Release(context.Background())
	sb, err := rt.Fork(t.Context(), env.Snapshot, sandbox.ForkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close(context.Background())
	if err := sb.WriteFile(t.Context(), "/root/.snippet", []byte(snippet), 0o600); err != nil {
		t.Fatal(err)
	}
	// Every regular file up to 64 MiB (the image's big libraries are not
	// where a pipeline leaves code), read as text, and every object of
	// every git repository, decompressed: packs and loose objects are
	// zlib streams a plain grep cannot see into.
	search := func() string {
		var out, errb bytes.Buffer
		st, err := sb.Run(t.Context(), sandbox.Cmd{
			Args: []string{"/bin/bash", "-c", `
find / \( -path /proc -o -path /sys -o -path /dev \) -prune -o -type f -size -64M -print0 2>/dev/null |
	xargs -0 grep -lF -a -f /root/.snippet 2>/dev/null | grep -vx /root/.snippet
find / \( -path /proc -o -path /sys -o -path /dev \) -prune -o -type d -name '*.git' -print 2>/dev/null |
while read -r gitdir; do
	git --git-dir="$gitdir" cat-file --batch-all-objects --batch 2>/dev/null | grep -qF -a -f /root/.snippet && echo "$gitdir (objects)"
	git --git-dir="$gitdir" reflog --all -p 2>/dev/null | grep -qF -a -f /root/.snippet && echo "$gitdir (reflog)"
	git --git-dir="$gitdir" stash list -p 2>/dev/null | grep -qF -a -f /root/.snippet && echo "$gitdir (stash)"
done
exit 0`},
			User: &sandbox.User{Home: "/root"}, Stdout: &out, Stderr: &errb,
		})
		if err != nil || st.Code != 0 {
			t.Fatalf("search: %v %+v %s", err, st, errb.String())
		}
		return strings.TrimSpace(out.String())
	}
	if found := search(); found != "" {
		t.Fatalf("the removed code (%q) is still in the machine:\n%s", snippet, found)
	}
	// The search does find the snippet where it is: in the workspace once
	// the solution is applied.
	if err := ApplySolution(t.Context(), sb, tk, env.Workspace); err != nil {
		t.Fatal(err)
	}
	if found := search(); !strings.Contains(found, env.Workspace) {
		t.Fatalf("the search did not find the snippet after the solution put it back; found %q", found)
	}
	// And in git objects once it is committed there.
	var out bytes.Buffer
	if st, err := sb.Run(t.Context(), sandbox.Cmd{Args: []string{"/bin/sh", "-c", "git add -A && git commit -qm wip && git reset -q --hard HEAD~1 && git checkout -q -- ."}, Dir: env.Workspace, Stdout: &out, Stderr: &out}); err != nil || st.Code != 0 {
		t.Fatalf("commit the solution: %v %+v %s", err, st, out.String())
	}
	found := search()
	if !strings.Contains(found, ".git (objects)") {
		t.Fatalf("after committing and resetting, the search found %q; want the git objects among it", found)
	}
	for _, line := range strings.Split(found, "\n") {
		if !strings.HasSuffix(line, ")") {
			t.Errorf("after the reset, a file still holds the code: %s", line)
		}
	}
	// And the task directory itself holds it only in solution/ (and
	// task.yaml's metadata), never in repo/.
	filepath.WalkDir(filepath.Join(tk.Dir, "repo"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(snippet)) {
				t.Errorf("%s holds the removed code", p)
			}
		}
		return nil
	})
}
