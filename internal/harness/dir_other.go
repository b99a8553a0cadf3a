//go:build !unix

package harness

import (
	"os"
	"os/exec"
)

// killGroupOnCancel leaves exec's default, killing the command alone: there
// are no process groups to kill here.
func killGroupOnCancel(cmd *exec.Cmd) {}

func exitCode(ps *os.ProcessState) int { return ps.ExitCode() }
