package proctree

import (
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestKillSession(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	// A session leader whose child moves to its own process group (job
	// control puts each background job in one).
	cmd := exec.Command("bash", "-c", "set -m; sleep 301 & echo $!; sleep 301")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, _ := out.Read(buf)
	child, _ := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	sid := cmd.Process.Pid
	if len(Session(sid)) < 2 {
		t.Fatalf("session %d lists %v", sid, Session(sid))
	}
	Kill(sid, syscall.SIGKILL)
	cmd.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for len(Session(sid)) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if left := Session(sid); len(left) > 0 {
		t.Errorf("processes left in the session: %v", left)
	}
	if child > 0 && syscall.Kill(child, 0) == nil {
		// Reaped zombies of init may linger a moment; check it is dead.
		b, _ := exec.Command("ps", "-o", "stat=", "-p", strconv.Itoa(child)).Output()
		if s := strings.TrimSpace(string(b)); s != "" && !strings.HasPrefix(s, "Z") {
			t.Errorf("child %d of the session survived (%s)", child, s)
		}
	}
}
