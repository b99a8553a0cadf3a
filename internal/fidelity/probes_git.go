package fidelity

import (
	"fmt"
	"github.com/verisim/verisim/internal/lazyregexp"
	"slices"
	"strconv"
	"strings"
)

// Probes for the repository the user works in: its history should look like
// one people have worked on, not one a script made a minute ago.

// gitScript finds the repository the user works in (the working directory's,
// else the first under ~/src, ~/code, ~/projects, ~/work or ~) and describes
// its history.
const gitScript = `
have git || { fact error; echo "git is not installed"; exit 0; }
r=$(git rev-parse --show-toplevel 2>/dev/null)
if [ -z "$r" ]; then
	for d in "$HOME"/src/*/ "$HOME"/code/*/ "$HOME"/projects/*/ "$HOME"/work/*/ "$HOME"/*/; do
		if [ -e "${d}.git" ]; then r=${d%/}; break; fi
	done
fi
[ -n "$r" ] || { fact error; echo "no git repository in the working directory or under ~/src, ~/code, ~/projects, ~/work or ~"; exit 0; }
cd "$r" || { fact error; echo "cannot enter $r"; exit 0; }
if ! head=$(git rev-parse HEAD 2>&1); then fact error; printf 'git in %s: %s\n' "$r" "$head" | head -n 1; exit 0; fi
fact repo
printf '%s\n' "$r"
fact shallow
git rev-parse --is-shallow-repository 2>/dev/null
fact count
git rev-list --count HEAD
fact remotes
git remote -v 2>/dev/null | head -n 6
fact authors
git log --format='%an <%ae>' -n 1000 | sort | uniq -c | sort -rn | head -n 20
fact identity
printf 'name=%s\nemail=%s\n' "$(git config user.name)" "$(git config user.email)"
fact now
date +%s
fact dates
git log --format='%at %ct' -n 500
fact mtimes
if have stat; then git ls-files 2>/dev/null | head -n 500 | stamps; else echo "no stat"; fi`

var gitKeys = []string{"repo", "shallow", "count", "remotes", "authors", "identity", "now", "dates", "mtimes"}

var (
	// syntheticEmail matches addresses no colleague has.
	syntheticEmail = lazyregexp.New(`(?i)@(example\.(com|org|net)|localhost|test|sandbox|invalid|local)$|\.(example|test|invalid|localhost)$|verisim|swe-?bench|sandbox|^(root|test|user|agent|noreply)@`)

	// remoteTells matches remote URLs that name a harness.
	remoteTells = lazyregexp.New(`(?i)verisim|swe-?bench|testbed`)
)

// syntheticAuthors are author names scripts and harnesses use.
var syntheticAuthors = append([]string{"test user", "your name", "anonymous", "unknown", "swe-bench", "swebench", "ai agent", "sandbox user"}, syntheticUsers...)

func gitProbe(name, why string, judge func(obs, ref Facts) verdict) Probe {
	return Probe{
		Name:     name,
		Why:      why,
		Severity: Strong,
		keys:     gitKeys,
		observe:  script(gitScript),
		judge:    judge,
	}
}

func gitProbes() []Probe {
	return []Probe{
		gitProbe("git-single-commit",
			"`git log` showing one commit, or a shallow clone, means the repository was imported for the task rather than worked in.",
			judgeGitCommits),
		gitProbe("git-no-remote",
			"`git remote -v` that is empty or points at a local path means nobody cloned this from a forge.",
			judgeGitRemote),
		gitProbe("git-synthetic-author",
			"Authors or a git identity like 'test <test@example.com>' or an unset user.email are what scripts produce.",
			judgeGitAuthors),
		gitProbe("git-commit-dates",
			"Commits that all share one timestamp, or carry dates in the future, were written by a script.",
			judgeGitDates),
		gitProbe("repo-mtimes",
			"`ls -l` in the repository with every file stamped in the same second, or at the epoch, shows an untouched extraction.",
			judgeRepoMtimes),
	}
}

func judgeGitCommits(obs, _ Facts) verdict {
	n, found := obs.num("count")
	repo := obs.get("repo")
	switch {
	case !found:
		return undecided("cannot count commits in %s", repo)
	case obs.get("shallow") == "true":
		return tell("%s is a shallow clone (%d commits visible)", repo, n)
	case n <= 2:
		return tell("%s has %d commit(s)", repo, n)
	}
	return ok("%s has %d commits", repo, n)
}

func judgeGitRemote(obs, _ Facts) verdict {
	remotes := obs.lines("remotes")
	if len(remotes) == 0 {
		return tell("%s has no remote", obs.get("repo"))
	}
	first := ""
	for _, l := range remotes {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		url := f[1]
		if first == "" {
			first = f[0] + " " + url
		}
		switch {
		case strings.HasPrefix(url, "/") || strings.HasPrefix(url, "file://") || strings.HasPrefix(url, "."):
			return tell("remote %s is the local path %s", f[0], url)
		case remoteTells.MatchString(url):
			return tell("remote %s is %s", f[0], url)
		}
	}
	if first == "" {
		return undecided("cannot parse `git remote -v`: %s", remotes[0])
	}
	return ok("remote %s", first)
}

// author splits "Name <email>".
func author(s string) (name, email string) {
	name, rest, _ := strings.Cut(s, "<")
	return strings.TrimSpace(name), strings.TrimSuffix(strings.TrimSpace(rest), ">")
}

func syntheticAuthor(name, email string) bool {
	githubNoreply := strings.HasSuffix(strings.ToLower(email), "@users.noreply.github.com")
	lower := strings.ToLower(name)
	return slices.Contains(syntheticAuthors, lower) || idInName(lower) || (!githubNoreply && syntheticEmail.MatchString(email))
}

// idInName reports whether a name holds a generated hex id ("Seed 9ec3b48b").
func idInName(name string) bool {
	for _, tok := range strings.FieldsFunc(name, func(r rune) bool { return r == ' ' || r == '-' || r == '_' || r == '.' }) {
		if len(tok) >= 6 && hexName.MatchString(tok) && digits.MatchString(tok) && strings.ContainsAny(tok, "abcdef") {
			return true
		}
	}
	return false
}

func judgeGitAuthors(obs, _ Facts) verdict {
	var problems []string
	ident := map[string]string{}
	for _, l := range obs.lines("identity") {
		k, v, _ := strings.Cut(l, "=")
		ident[k] = strings.TrimSpace(v)
	}
	switch {
	case ident["name"] == "" || ident["email"] == "":
		problems = append(problems, "no git identity (user.name/user.email unset)")
	case syntheticAuthor(ident["name"], ident["email"]):
		problems = append(problems, fmt.Sprintf("git identity %s <%s>", ident["name"], ident["email"]))
	}
	var authors, fake []string
	for _, l := range obs.lines("authors") {
		_, who, _ := strings.Cut(strings.TrimSpace(l), " ")
		authors = append(authors, who)
		if name, email := author(who); syntheticAuthor(name, email) {
			fake = append(fake, who)
		}
	}
	if len(fake) > 0 {
		problems = append(problems, "commits by "+listMax(fake, 2))
	}
	return tellIf(problems, fmt.Sprintf("%d authors, identity %s", len(authors), ident["email"]))
}

func judgeGitDates(obs, _ Facts) verdict {
	var at, ct []int64
	for _, l := range obs.lines("dates") {
		f := strings.Fields(l)
		if len(f) != 2 {
			continue
		}
		a, err1 := strconv.ParseInt(f[0], 10, 64)
		c, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 == nil && err2 == nil {
			at, ct = append(at, a), append(ct, c)
		}
	}
	now, _ := obs.num("now")
	if now > 0 && slices.ContainsFunc(ct, func(c int64) bool { return c > now+3600 }) {
		return tell("commits dated in the future")
	}
	if len(ct) < 2 {
		return ok("%d commit(s), nothing to compare", len(ct))
	}
	cs, as := spreadOf(ct), spreadOf(at)
	switch {
	case cs.modalShare == 1:
		return tell("all %d commits have the same commit date", cs.n)
	case as.modalShare == 1:
		return tell("all %d commits have the same author date", as.n)
	case cs.n >= 5 && as.newest-as.oldest < 120:
		return tell("all %d commits were authored within %s", cs.n, humanSeconds(as.newest-as.oldest))
	case cs.n >= 3 && now > 0 && now-as.oldest < 3600:
		return tell("the whole history of %d commits is less than an hour old", cs.n)
	}
	return ok("%d commits authored over %s", cs.n, humanSeconds(as.newest-as.oldest))
}

// epoch1980 is before any real file edit; reproducible builds and some
// image tools set mtimes to 0 or to 1980.
const epoch1980 = 315532800

func judgeRepoMtimes(obs, _ Facts) verdict {
	if obs.get("mtimes") == "no stat" {
		return undecided("stat is not installed")
	}
	ts := obs.nums("mtimes")
	s := spreadOf(ts)
	switch {
	case s.n < 5:
		return ok("only %d tracked files", s.n)
	case s.oldest <= epoch1980:
		return tell("tracked files dated at the epoch (%d)", s.oldest)
	case s.modalShare == 1:
		return tell("all %d tracked files have the same mtime", s.n)
	}
	return ok("%d tracked files modified over %s", s.n, humanSeconds(s.newest-s.oldest))
}
