//go:build !linux

package machine

// markOpaque does nothing off Linux, where no backend mounts layers.
func markOpaque(dir string) error { return nil }
