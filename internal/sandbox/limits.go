package sandbox

import (
	"fmt"
	"strings"
)

// ParseLimits reads limits written as "memory=4g,pids=4096,cpus=2,disk=10g"
// (sizes in powers of 1024; 0 or a missing key means no limit), the form
// the command line and task files use.
func ParseLimits(s string) (Limits, error) {
	var lim Limits
	if strings.TrimSpace(s) == "" {
		return lim, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return lim, fmt.Errorf("%q: want key=value pairs such as memory=4g,pids=4096", kv)
		}
		var err error
		switch k {
		case "memory":
			lim.MemoryBytes, err = ParseSize(v)
		case "disk":
			lim.DiskBytes, err = ParseSize(v)
		case "pids":
			_, err = fmt.Sscanf(v, "%d", &lim.PIDs)
		case "cpus":
			_, err = fmt.Sscanf(v, "%g", &lim.CPUs)
		default:
			return lim, fmt.Errorf("unknown limit %q; use memory, pids, cpus or disk", k)
		}
		if err != nil {
			return lim, fmt.Errorf("%s=%q: not a valid value", k, v)
		}
	}
	if lim.MemoryBytes < 0 || lim.DiskBytes < 0 || lim.PIDs < 0 || lim.CPUs < 0 {
		return lim, fmt.Errorf("values cannot be negative")
	}
	return lim, nil
}

// ParseSize reads 512, 64k, 512m, 4g, 1t (powers of 1024).
func ParseSize(s string) (int64, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	mult := int64(1)
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'k':
			mult = 1 << 10
		case 'm':
			mult = 1 << 20
		case 'g':
			mult = 1 << 30
		case 't':
			mult = 1 << 40
		}
		if mult > 1 {
			s = s[:n-1]
		}
	}
	var v int64
	if _, err := fmt.Sscanf(s, "%d", &v); err != nil || fmt.Sprint(v) != s {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return v * mult, nil
}
