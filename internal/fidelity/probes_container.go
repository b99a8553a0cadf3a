package fidelity

import (
	"context"
	"fmt"
	"github.com/verisim/verisim/internal/lazyregexp"
	"slices"
	"strings"
	"time"
)

// Probes for markers that container runtimes and sandbox harnesses leave.

var (
	// longHex matches the ids runtimes name containers, layers and cgroups by.
	longHex = lazyregexp.New(`[0-9a-f]{32,}`)
	// runtimeWords are names of container runtimes and sandbox harnesses.
	runtimeWords = lazyregexp.New(`(?i)verisim|sandbox|docker|containerd|podman|libpod|kubepods|kubelet|buildkit|lxc|crio|garden|firecracker|gvisor|runsc`)
	// taskLike matches directory and host names that number tasks and runs.
	taskLike = lazyregexp.New(`(?i)(^|[/_.-])(task|run|job|episode|instance|rollout|env)[-_]?[0-9a-f]*[0-9][0-9a-f]*($|[/_.-])`)
	// taskWords are what a training harness's history or files talk about.
	taskWords = lazyregexp.New(`(?i)verisim|sandbox|testbed|swe-?bench|terminal-bench|hidden[ _-]?tests?|trajectory|task[_-]?id`)
)

// envNamesScript prints the names of the shell's environment variables.
const envNamesScript = `
fact names
env | while IFS= read -r l; do case "$l" in [A-Za-z_]*=*) printf '%s\n' "${l%%=*}";; esac; done`

func containerProbes() []Probe {
	return []Probe{
		fileAbsentProbe("dockerenv-file", "/.dockerenv",
			"Docker creates /.dockerenv in every container, and `ls -a /` shows it at once."),
		fileAbsentProbe("containerenv-file", "/run/.containerenv",
			"Podman and other OCI runtimes write /run/.containerenv, which even names the container engine."),
		{
			Name:     "container-env-marker",
			Why:      "Runtimes set container=… (systemd's convention) or KUBERNETES_/DOCKER_ variables in PID 1's or the shell's environment.",
			Severity: Strong,
			keys:     []string{"pid1", "self"},
			observe: script(`
markers() { while IFS= read -r l; do case "$l" in container=*|KUBERNETES_SERVICE_HOST=*|DOCKER_*|PODMAN_*|SINGULARITY_*|APPTAINER_*|LXC_*) printf '%s\n' "$l" | cut -c1-120;; esac; done; }
fact pid1
if [ -r /proc/1/environ ] && have tr; then tr '\0' '\n' < /proc/1/environ 2>/dev/null | markers; else echo '<unreadable>'; fi
fact self
env | markers`),
			judge: judgeContainerEnv,
		},
		{
			Name:     "env-markers",
			Why:      "`env` showing CI variables, Dockerfile leftovers (DEBIAN_FRONTEND, PYTHONUNBUFFERED) or values naming a sandbox or task gives the harness away.",
			Severity: Strong,
			keys:     []string{"names", "values"},
			observe: script(envNamesScript + `
fact values
if have awk; then env | awk '{ l = tolower($0) } l ~ /verisim|sandbox|testbed|swe-?bench|terminal-bench|trajectory|task[_-]?id/ { print substr($0, 1, 160) }'; fi`),
			judge: judgeEnvMarkers,
		},
		{
			Name:     "verisim-strings",
			Why:      "A `grep -ri verisim` over /etc, the home directory, file names or the environment finds the training system by name.",
			Severity: Strong,
			Timeout:  30 * time.Second,
			keys:     []string{"etc", "home", "names", "env"},
			observe: script(`
have grep || { fact error; echo "grep is not installed"; exit 0; }
fact etc
grep -rIli verisim /etc 2>/dev/null | head -n 5
fact home
if [ -n "$HOME" ] && have find && have xargs && have tr; then
	find "$HOME" -xdev -maxdepth 3 -path "$HOME/.cache" -prune -o -type f -size -256k -print 2>/dev/null | head -n 2000 |
		tr '\n' '\0' | xargs -0 grep -Ili verisim 2>/dev/null | head -n 5
fi
fact names
if have find; then
	for d in / /etc /opt /srv /usr/local /usr/local/bin /usr/bin /var/lib /home "$HOME"; do
		[ -d "$d" ] && find "$d" -xdev -maxdepth 2 -iname '*verisim*' -print 2>/dev/null
	done | sort -u | head -n 5
fi
fact env
env | grep -i verisim | cut -d= -f1 | head -n 5`),
			judge: judgeVerisimStrings,
		},
		{
			Name:     "workspace-dirs",
			Why:      "Top-level directories like /testbed, /workspace, /app or /task-123 exist on benchmark images, not on a developer's machine.",
			Severity: Strong,
			keys:     []string{"root"},
			observe: script(`
fact root
for e in /* /.[!.]*; do [ -e "$e" ] && printf '%s\n' "${e#/}"; done`),
			judge: judgeWorkspaceDirs,
		},
		{
			Name:     "shell-cwd",
			Why:      "A shell that starts in /, /tmp or a /testbed-like directory instead of a project under the user's home looks like a harness.",
			Severity: Strong,
			keys:     []string{"cwd", "home"},
			observe: script(`
fact cwd
pwd
fact home
printf '%s\n' "$HOME"`),
			judge: judgeShellCwd,
		},
	}
}

// fileAbsentProbe is a probe that tells when path exists.
func fileAbsentProbe(name, file, why string) Probe {
	return Probe{
		Name:     name,
		Why:      why,
		Severity: Strong,
		keys:     []string{"present"},
		observe: func(ctx context.Context, m machine) (Facts, error) {
			found, err := m.exists(ctx, file)
			if err != nil {
				return nil, err
			}
			return Facts{"present": yesNo(found)}, nil
		},
		judge: func(obs, _ Facts) verdict {
			if obs.yes("present") {
				return tell("%s exists", file)
			}
			return ok("no %s", file)
		},
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func judgeContainerEnv(obs, _ Facts) verdict {
	var found []string
	for _, k := range []string{"pid1", "self"} {
		for _, l := range obs.lines(k) {
			if l != "<unreadable>" {
				found = append(found, k+": "+l)
			}
		}
	}
	if len(found) > 0 {
		return tell("%s", listMax(found, 3))
	}
	if obs.get("pid1") == "<unreadable>" {
		return ok("no markers in the shell's environment; PID 1's is unreadable, as on a real machine")
	}
	return ok("no container markers in PID 1's or the shell's environment")
}

// ciEnv are variables a developer's login shell does not have: CI systems,
// orchestrators and Dockerfile habits set them.
var ciEnv = []string{
	"CI", "CONTINUOUS_INTEGRATION", "GITHUB_ACTIONS", "GITHUB_RUN_ID", "GITLAB_CI",
	"BUILDKITE", "JENKINS_URL", "CIRCLECI", "TRAVIS", "TF_BUILD", "CODEBUILD_BUILD_ID",
	"KUBERNETES_SERVICE_HOST", "KUBERNETES_PORT", "DEBIAN_FRONTEND", "PYTHONUNBUFFERED",
	"PYTHONDONTWRITEBYTECODE", "PIP_NO_CACHE_DIR", "PIP_DISABLE_PIP_VERSION_CHECK",
	"HOSTNAME", "TASK_ID", "INSTANCE_ID",
}

// harnessEnvPrefixes start variables that sandbox products set.
var harnessEnvPrefixes = []string{"VERISIM", "SANDBOX", "SWE_", "MODAL_", "E2B_", "DAYTONA_", "OPENHANDS_", "HARBOR_", "TBENCH_"}

func judgeEnvMarkers(obs, ref Facts) verdict {
	refNames := ref.lines("names")
	var bad []string
	for _, n := range obs.lines("names") {
		suspicious := slices.Contains(ciEnv, n) || slices.ContainsFunc(harnessEnvPrefixes, func(p string) bool {
			return strings.HasPrefix(strings.ToUpper(n), p)
		})
		if suspicious && !slices.Contains(refNames, n) {
			bad = append(bad, n)
		}
	}
	var problems []string
	if len(bad) > 0 {
		problems = append(problems, "suspicious variables: "+listMax(bad, 5))
	}
	if vals := obs.lines("values"); len(vals) > 0 {
		problems = append(problems, "values: "+listMax(vals, 2))
	}
	return tellIf(problems, fmt.Sprintf("%d variables, none suspicious", len(obs.lines("names"))))
}

func judgeVerisimStrings(obs, ref Facts) verdict {
	var hits []string
	for _, k := range []string{"etc", "home", "names", "env"} {
		for _, l := range obs.lines(k) {
			if !slices.Contains(ref.lines(k), l) {
				hits = append(hits, l)
			}
		}
	}
	if len(hits) > 0 {
		return tell("mentions of verisim: %s", listMax(hits, 3))
	}
	return ok("no mention of verisim in /etc, home, file names or environment")
}

// standardRoot are the top-level directories of an installed Linux system.
var standardRoot = []string{"bin", "boot", "dev", "etc", "home", "lib", "media", "mnt", "opt", "proc", "root", "run", "sbin", "srv", "sys", "tmp", "usr", "var"}

// workspaceNames are top-level directories of benchmark and agent images.
var workspaceNames = []string{
	"testbed", "workspace", "workspaces", "app", "repo", "repos", "code", "src", "task", "tasks",
	"sandbox", "submission", "solution", "tests", "eval", "grader", "agent", "verisim", "harbor",
	"logs", "output", "outputs", "installed-agent",
}

func judgeWorkspaceDirs(obs, ref Facts) verdict {
	entries := obs.lines("root")
	refEntries := ref.lines("root")
	var odd []string
	for _, e := range entries {
		// /.dockerenv is dockerenv-file's to report.
		if e == ".dockerenv" || slices.Contains(refEntries, e) {
			continue
		}
		if slices.Contains(workspaceNames, strings.ToLower(e)) || taskLike.MatchString(e) || runtimeWords.MatchString(e) {
			odd = append(odd, "/"+e)
		}
	}
	var missing []string
	for _, s := range standardRoot {
		if !slices.Contains(entries, s) && (ref == nil || slices.Contains(refEntries, s)) {
			missing = append(missing, "/"+s)
		}
	}
	var problems []string
	if len(odd) > 0 {
		problems = append(problems, "harness-like top-level entries: "+listMax(odd, 5))
	}
	if len(missing) > 0 {
		problems = append(problems, "missing "+listMax(missing, 5))
	}
	return tellIf(problems, fmt.Sprintf("%d top-level entries, all ordinary", len(entries)))
}

func judgeShellCwd(obs, _ Facts) verdict {
	cwd, home := obs.get("cwd"), obs.get("home")
	if cwd == "" {
		return undecided("pwd printed nothing")
	}
	// Where the home is, is home-dir's to judge; here only the path below it.
	rel := cwd
	if home != "" && home != "/" && (cwd == home || strings.HasPrefix(cwd, strings.TrimSuffix(home, "/")+"/")) {
		rel = strings.TrimPrefix(cwd, strings.TrimSuffix(home, "/"))
	}
	top, _, _ := strings.Cut(strings.TrimPrefix(cwd, "/"), "/")
	switch {
	case cwd == "/":
		return tell("shell starts in /")
	case rel == cwd && (cwd == "/tmp" || strings.HasPrefix(cwd, "/tmp/")):
		return tell("shell starts in %s", cwd)
	case rel == cwd && slices.Contains(workspaceNames, strings.ToLower(top)):
		return tell("shell starts in %s, a harness workspace", cwd)
	case taskLike.MatchString(rel) || longHex.MatchString(rel) || runtimeWords.MatchString(rel):
		return tell("shell starts in %s, an id-like path", cwd)
	case rel != cwd:
		return ok("shell starts in %s", tildePath(cwd, home))
	}
	return ok("shell starts in %s, outside the home directory", cwd)
}

// tildePath writes p relative to home as ~/….
func tildePath(p, home string) string {
	if home == "" || home == "/" {
		return p
	}
	if p == home {
		return "~"
	}
	if rest, ok := strings.CutPrefix(p, strings.TrimSuffix(home, "/")+"/"); ok {
		return "~/" + rest
	}
	return p
}
