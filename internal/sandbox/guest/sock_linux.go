package guest

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// The init speaks to the host over unix sockets without package net: net
// links the C library whenever cgo is on (for its resolver and user
// lookups), and a dynamically linked init takes about 0.8 ms longer to
// start on every sandbox. Sockets here are non-blocking descriptors wrapped
// in *os.File, which waits on them through the runtime's poller as net
// would.

// listener accepts connections on a listening unix socket.
type listener struct {
	f  *os.File
	rc syscall.RawConn
}

// fileListener takes over the listening socket at fd.
func fileListener(fd int) (*listener, error) {
	if err := unix.SetNonblock(fd, true); err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "listener")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &listener{f: f, rc: rc}, nil
}

// accept waits for the next connection. It fails with os.ErrClosed once
// the listener is closed.
func (l *listener) accept() (*os.File, error) {
	var nfd int
	var aerr error
	err := l.rc.Read(func(fd uintptr) bool {
		nfd, _, aerr = unix.Accept4(int(fd), unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		return !errors.Is(aerr, unix.EAGAIN)
	})
	if err != nil {
		return nil, err
	}
	if aerr != nil {
		return nil, aerr
	}
	return os.NewFile(uintptr(nfd), "conn"), nil
}

// dialUnix connects to the unix socket at path.
func dialUnix(path string) (*os.File, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}
