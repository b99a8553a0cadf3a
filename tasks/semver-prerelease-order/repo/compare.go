package relver

// Compare returns -1, 0 or +1 as a is lower than, equal to or higher than b
// in semver precedence. Build metadata is ignored.
func Compare(a, b Version) int {
	if c := cmpUint(a.Major, b.Major); c != 0 {
		return c
	}
	if c := cmpUint(a.Minor, b.Minor); c != 0 {
		return c
	}
	return cmpUint(a.Patch, b.Patch)
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
