//go:build !linux

package guest

// IsInit is always false off Linux: only the Linux host starts a guest init.
func IsInit() bool { return false }

// Main is never called off Linux.
func Main() { panic("guest: the sandbox init runs only on Linux") }
