//go:build !linux

package process

// closeInherited does nothing where close_range is not available.
func closeInherited() {}
