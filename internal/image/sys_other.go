//go:build !linux

package image

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"time"
)

// Layers, whiteouts and the tools that build them are Linux's; elsewhere
// only directory images resolve.
var errNotLinux = errors.New("image layers need Linux")

func isWhiteout(fs.FileInfo) bool                 { return false }
func isOpaque(string) bool                        { return false }
func lchown(string, int, int) error               { return errNotLinux }
func chmod(p string, perm uint32) error           { return os.Chmod(p, fs.FileMode(perm&0o777)) }
func setTimes(string, time.Time, time.Time) error { return errNotLinux }
func mknod(string, uint32, int64, int64) error    { return errNotLinux }
func lsetxattr(string, string, []byte) error      { return errNotLinux }
func fileOwner(fs.FileInfo) (int, int)            { return 0, 0 }
func inode(fs.FileInfo) (uint64, uint64, uint64)  { return 0, 0, 1 }
func unmountUnder(string) error                   { return nil }
func setProcessGroup(*exec.Cmd)                   {}
func exchange(string, string) error               { return errNotLinux }
func changeTime(fs.FileInfo) int64                { return 0 }
func accessTime(fi fs.FileInfo) time.Time         { return fi.ModTime() }

func lockPath(context.Context, string) (func(), error) { return nil, errNotLinux }

const oNoFollow = 0
