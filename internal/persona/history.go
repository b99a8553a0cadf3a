package persona

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// repoFacts is what the generated history knows about a checked-out
// repository, so that its commands name real files and packages.
type repoFacts struct {
	name, url, branch string
	dir               string // the workspace, as typed: ~/src/name
	lang              string // go, python, node, rust, make or ""
	files             []string
	pkgs              []string // test targets: Go package dirs, test files
}

var chores = []string{
	"df -h", "free -h", "htop", "docker ps", "sudo apt update", "sudo apt upgrade",
	"docker images", "ls -la", "uptime", "ip a", "ping -c 3 1.1.1.1", "top",
}

// history accumulates commands as bash with HISTCONTROL=ignoreboth saves
// them: a command equal to the previous one is not recorded again.
type history struct {
	r    *rand.Rand
	cmds []string
}

func (h *history) addf(format string, args ...any) { h.add(fmt.Sprintf(format, args...)) }

func (h *history) add(cmd string) {
	if n := len(h.cmds); n > 0 && h.cmds[n-1] == cmd {
		return
	}
	h.cmds = append(h.cmds, cmd)
}

func (h *history) maybe(chance float64, cmd string) {
	if h.r.Float64() < chance {
		h.add(cmd)
	}
}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

// historyFile is ~/.bash_history for the persona, about repo when there is
// one; ok is false when a dotfile supplies it instead.
func (p *Persona) historyFile(repo *repoFacts) (data []byte, ok bool) {
	if _, fromDotfiles := p.Dotfiles[".bash_history"]; fromDotfiles {
		return nil, false
	}
	cmds := p.History
	if len(cmds) == 0 {
		cmds = p.generateHistory(repo)
	}
	return []byte(strings.Join(cmds, "\n") + "\n"), true
}

// generateHistory writes months of shell use: setting the machine up,
// cloning repo, then work sessions on it with chores in between. Without a
// repo only the set-up and chores remain.
func (p *Persona) generateHistory(repo *repoFacts) []string {
	r := p.rand("history")
	h := &history{r: r}
	editor := strings.Fields(p.editor())[0]

	h.add("sudo apt update")
	h.add("sudo apt upgrade")
	h.addf("sudo apt install git curl build-essential %s", editor)
	h.addf("ssh-keygen -t ed25519 -C \"%s\"", p.Email)
	h.add("cat ~/.ssh/id_ed25519.pub")
	h.addf("git config --global user.name \"%s\"", p.FullName)
	h.addf("git config --global user.email %s", p.Email)
	h.add("git config --global init.defaultBranch main")
	h.add("git config --global pull.ff only")
	h.addf("%s ~/.bashrc", editor)
	h.add("source ~/.bashrc")

	if repo == nil {
		for range 15 + r.IntN(20) {
			h.add(pick(r, chores))
			h.maybe(0.2, fmt.Sprintf("%s ~/.bashrc", editor))
			h.maybe(0.3, "clear")
		}
		return h.cmds
	}

	root := p.tildePath(p.workspaceRoot())
	if root != "~" {
		h.addf("mkdir -p %s", root)
		h.addf("cd %s", root)
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(repo.dir, root), "/")
	if rel == repo.name {
		h.addf("git clone %s", repo.url)
	} else {
		h.addf("git clone %s %s", repo.url, rel)
	}
	h.addf("cd %s", rel)
	h.add("ls -la")
	p.setupCommands(h, repo, editor)
	for range 45 + r.IntN(50) {
		p.workSession(h, repo, editor)
		h.maybe(0.15, pick(r, chores))
		h.maybe(0.1, fmt.Sprintf("history | grep %s", pick(r, []string{"docker", "ssh", "git log", "curl", "test"})))
		h.maybe(0.3, pick(r, []string{"cd", "clear", "exit"}))
	}
	return h.cmds
}

func (p *Persona) setupCommands(h *history, repo *repoFacts, editor string) {
	switch repo.lang {
	case "go":
		h.add("go version")
		h.addf("%s ~/.profile", editor)
		h.add("source ~/.profile")
		h.add("go version")
		h.add("go build ./...")
	case "python":
		h.add("python3 -m venv .venv")
		h.add("source .venv/bin/activate")
		h.add("pip install -U pip")
	case "node":
		h.add("node --version")
		h.add("npm install")
	case "rust":
		h.add("cargo build")
	case "make":
		h.add("make")
	}
}

// workSession reads, edits and tests the repository, then throws the
// experiment away. It never commits, branches or stashes: each of those
// would have to show in the clone's reflog and refs, which record only
// the clone and the pulls.
func (p *Persona) workSession(h *history, repo *repoFacts, editor string) {
	r := h.r
	h.addf("cd %s", repo.dir)
	h.add("git status")
	h.maybe(0.6, "git pull")
	h.maybe(0.3, pick(r, []string{"git log --oneline -15", "git log -p -3", "git show --stat"}))
	edited := false
	for range 1 + r.IntN(4) {
		if len(repo.files) > 0 {
			file := pick(r, repo.files)
			if r.IntN(4) == 0 {
				h.addf("git log --oneline -- %s", file)
			}
			h.addf("%s %s", editor, file)
			edited = true
		}
		p.testCommand(h, repo)
		h.maybe(0.3, "git diff")
	}
	h.maybe(0.2, fmt.Sprintf("grep -rn \"%s\" .", pick(r, []string{"TODO", "timeout", "deprecated", "FIXME"})))
	h.maybe(0.1, "docker compose up -d")
	if edited {
		h.add("git diff --stat")
		h.add(pick(r, []string{"git restore .", "git checkout -- .", "git restore ."}))
		h.maybe(0.5, "git status")
	}
}

func (p *Persona) testCommand(h *history, repo *repoFacts) {
	r := h.r
	target := ""
	if len(repo.pkgs) > 0 {
		target = pick(r, repo.pkgs)
	}
	var options []string
	switch repo.lang {
	case "go":
		options = []string{"go test ./...", "go build ./...", "go vet ./..."}
		if target != "" {
			options = append(options, "go test ./"+target+"/...", "go test -count=1 ./"+target+"/")
		}
	case "python":
		options = []string{"pytest -q", "pytest -x"}
		if target != "" {
			options = append(options, "pytest "+target, "pytest -q "+target)
		}
	case "node":
		options = []string{"npm test", "npm run build", "npm run lint"}
	case "rust":
		options = []string{"cargo test", "cargo build", "cargo clippy"}
	case "make":
		options = []string{"make", "make test"}
	default:
		options = []string{"ls -la", "git log --oneline -5"}
	}
	h.add(pick(r, options))
}

// tildePath writes a path under the home directory the way people type it.
func (p *Persona) tildePath(abs string) string {
	if abs == p.Home {
		return "~"
	}
	if rest, ok := strings.CutPrefix(abs, p.Home+"/"); ok {
		return "~/" + rest
	}
	return abs
}
