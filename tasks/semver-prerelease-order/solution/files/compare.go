package relver

import (
	"strconv"
	"strings"
)

// Compare returns -1, 0 or +1 as a is lower than, equal to or higher than b
// in semver precedence. Build metadata is ignored.
func Compare(a, b Version) int {
	if c := cmpUint(a.Major, b.Major); c != 0 {
		return c
	}
	if c := cmpUint(a.Minor, b.Minor); c != 0 {
		return c
	}
	if c := cmpUint(a.Patch, b.Patch); c != 0 {
		return c
	}
	return comparePre(a.Pre, b.Pre)
}

// comparePre orders pre-release identifiers as semver 2.0 section 11 says:
// a version without them is higher; otherwise identifiers are compared left
// to right, numeric ones numerically and below alphanumeric ones, others in
// ASCII order; a shorter list that is a prefix of a longer one is lower.
func comparePre(a, b []string) int {
	if len(a) == 0 || len(b) == 0 {
		switch {
		case len(a) == len(b):
			return 0
		case len(a) == 0:
			return 1
		default:
			return -1
		}
	}
	for i := 0; i < len(a) && i < len(b); i++ {
		if c := compareIdent(a[i], b[i]); c != 0 {
			return c
		}
	}
	return cmpUint(uint64(len(a)), uint64(len(b)))
}

func compareIdent(a, b string) int {
	an, aNum := numeric(a)
	bn, bNum := numeric(b)
	switch {
	case aNum && bNum:
		return cmpUint(an, bn)
	case aNum:
		return -1
	case bNum:
		return 1
	}
	return strings.Compare(a, b)
}

func numeric(s string) (uint64, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Latest returns the highest of the tags that parse as versions, or "" if
// none do. With includePre false, pre-releases are skipped.
func Latest(tags []string, includePre bool) string {
	best := ""
	var bestV Version
	for _, t := range tags {
		v, err := Parse(t)
		if err != nil {
			continue
		}
		if v.IsPrerelease() && !includePre {
			continue
		}
		if best == "" || Compare(v, bestV) > 0 {
			best, bestV = t, v
		}
	}
	return best
}
