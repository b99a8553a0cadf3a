package importer

import (
	"strconv"
	"strings"
)

// fileChange is one file a unified (git) diff touches. Old is "" for a
// file the diff creates, New is "" for one it deletes.
type fileChange struct {
	Old, New string
}

// parsePatch lists the files a git diff touches, in order. It reads
// only the headers of each file section ("diff --git", "rename from/to",
// "---"/"+++" before the first hunk), so hunk lines that happen to start
// with "--- " are not mistaken for headers.
func parsePatch(patch string) []fileChange {
	var out []fileChange
	var cur *fileChange
	inHeader := false
	flush := func() {
		if cur != nil && (cur.Old != "" || cur.New != "") {
			out = append(out, *cur)
		}
		cur = nil
	}
	for _, line := range strings.Split(patch, "\n") {
		line = strings.TrimSuffix(line, "\r")
		switch {
		case strings.HasPrefix(line, "diff --git "):
			flush()
			cur = &fileChange{}
			cur.Old, cur.New = splitGitHeader(strings.TrimPrefix(line, "diff --git "))
			inHeader = true
		case !inHeader:
		case strings.HasPrefix(line, "@@"), strings.HasPrefix(line, "GIT binary patch"), strings.HasPrefix(line, "Binary files "):
			inHeader = false
		case strings.HasPrefix(line, "new file mode"):
			cur.Old = ""
		case strings.HasPrefix(line, "deleted file mode"):
			cur.New = ""
		case strings.HasPrefix(line, "rename from "), strings.HasPrefix(line, "copy from "):
			cur.Old = unquotePath(line[strings.Index(line, "from ")+5:])
		case strings.HasPrefix(line, "rename to "), strings.HasPrefix(line, "copy to "):
			cur.New = unquotePath(line[strings.Index(line, "to ")+3:])
		case strings.HasPrefix(line, "--- "):
			cur.Old = diffPath(line[4:], "a/")
		case strings.HasPrefix(line, "+++ "):
			cur.New = diffPath(line[4:], "b/")
		}
	}
	flush()
	return out
}

// diffPath reads the path of a "---"/"+++" line: "" for /dev/null, the
// prefix (a/ or b/) removed, a trailing tab and timestamp dropped.
func diffPath(s, prefix string) string {
	if i := strings.IndexByte(s, '\t'); i >= 0 && !strings.HasPrefix(s, `"`) {
		s = s[:i]
	}
	s = unquotePath(strings.TrimSpace(s))
	if s == "/dev/null" {
		return ""
	}
	return strings.TrimPrefix(s, prefix)
}

// splitGitHeader splits "a/x b/x" (either side possibly quoted). Without
// quotes the split is ambiguous when names hold spaces; the usual case,
// where both names are the same, is resolved by trying every space.
func splitGitHeader(s string) (string, string) {
	if strings.HasPrefix(s, `"`) {
		if q, err := strconv.QuotedPrefix(s); err == nil {
			return strings.TrimPrefix(unquotePath(q), "a/"), strings.TrimPrefix(unquotePath(strings.TrimSpace(s[len(q):])), "b/")
		}
	}
	if i := strings.Index(s, ` "`); i >= 0 {
		return strings.TrimPrefix(s[:i], "a/"), strings.TrimPrefix(unquotePath(s[i+1:]), "b/")
	}
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' && strings.HasPrefix(s, "a/") && strings.HasPrefix(s[i+1:], "b/") && s[2:i] == s[i+3:] {
			return s[2:i], s[i+3:]
		}
	}
	if a, b, ok := strings.Cut(s, " "); ok {
		return strings.TrimPrefix(a, "a/"), strings.TrimPrefix(b, "b/")
	}
	return s, s
}

// unquotePath undoes git's C-style quoting of unusual file names (octal
// escapes for non-ASCII bytes are the same in Go string literals).
func unquotePath(s string) string {
	if len(s) >= 2 && s[0] == '"' {
		if u, err := strconv.Unquote(s); err == nil {
			return u
		}
	}
	return s
}
