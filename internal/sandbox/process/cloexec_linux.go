package process

import "golang.org/x/sys/unix"

// closeInherited marks every descriptor above stdio close-on-exec, so that
// descriptors this process inherited without the flag (from a shell, say)
// do not reach commands.
func closeInherited() { _ = unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC) }
