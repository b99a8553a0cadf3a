package fidelity

import (
	"context"
	"fmt"
	"github.com/verisim/verisim/internal/lazyregexp"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// Probes for who the machine and its user claim to be.

var (
	hexName  = lazyregexp.New(`^[0-9a-f]{8,}$`)
	uuidLike = lazyregexp.New(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	// k8sPod matches a Deployment's pod names (web-7d9f8b6c5-x2k4j).
	k8sPod = lazyregexp.New(`^[a-z0-9-]+-[0-9a-f]{6,10}-[a-z0-9]{5}$`)
	digits = lazyregexp.New(`[0-9]`)
)

// hostWords are hostname labels that name infrastructure, not a person's
// machine.
var hostWords = []string{
	"sandbox", "container", "runner", "docker", "worker", "buildkitsandbox", "task", "verisim",
	"pod", "ci", "agent", "instance", "job", "runtime", "testbed", "swe", "eval", "modal", "e2b",
	"localhost", "vm", "env",
}

// syntheticUsers are account names that harnesses and images create.
var syntheticUsers = []string{
	"user", "agent", "runner", "sandbox", "test", "tester", "dev", "developer", "coder", "admin",
	"docker", "ci", "builder", "app", "worker", "default", "guest", "verisim", "model", "ai",
	"assistant", "nonroot", "appuser",
}

// hostnameCmd prints the kernel's hostname.
const hostnameCmd = `cat /proc/sys/kernel/hostname 2>/dev/null || uname -n`

func identityProbes() []Probe {
	return []Probe{
		{
			Name:     "hostname",
			Why:      "A hex container id, a pod name or a label like sandbox/runner/localhost as hostname is the first thing a prompt or `hostname` shows.",
			Severity: Strong,
			keys:     []string{"kernel", "etc", "etc_present"},
			observe: script(`
fact kernel
` + hostnameCmd + `
fact etc_present
yesno [ -s /etc/hostname ]
fact etc
cat /etc/hostname 2>/dev/null`),
			judge: judgeHostname,
		},
		{
			Name:     "etc-hosts",
			Why:      "Docker and Kubernetes write /etc/hosts themselves, mapping the hostname to a 172.x pod address or saying 'Kubernetes-managed'.",
			Severity: Weak,
			keys:     []string{"present", "hosts", "hostname"},
			observe: script(`
fact present
yesno [ -e /etc/hosts ]
fact hosts
head -n 60 /etc/hosts 2>/dev/null
fact hostname
` + hostnameCmd),
			judge: judgeEtcHosts,
		},
		{
			Name:     "resolv-conf",
			Why:      "Docker's embedded resolver (127.0.0.11), cluster.local search domains or a missing resolv.conf are container defaults.",
			Severity: Weak,
			keys:     []string{"present", "conf"},
			observe: script(`
fact present
yesno [ -e /etc/resolv.conf ]
fact conf
grep -v '^[[:space:]]*#' /etc/resolv.conf 2>/dev/null | head -n 20`),
			judge: judgeResolvConf,
		},
		{
			Name:     "machine-id",
			Why:      "Every installed system has a 32-hex /etc/machine-id; images ship none, an empty one or 'uninitialized'.",
			Severity: Strong,
			keys:     []string{"state"},
			observe:  observeMachineID,
			judge: func(obs, _ Facts) verdict {
				if s := obs.get("state"); s != "valid" {
					return tell("/etc/machine-id is %s", s)
				}
				return ok("/etc/machine-id holds a valid id")
			},
		},
		{
			Name:     "passwd-users",
			Why:      "An /etc/passwd with no human account, or one named user/agent/runner, or no entry for the current uid, is how images look.",
			Severity: Strong,
			keys:     []string{"uid", "user", "passwd", "passwd_found"},
			observe:  observePasswd,
			judge:    judgePasswd,
		},
		{
			Name:     "user-groups",
			Why:      "A developer's account is in several groups (sudo, adm, docker…); an account in its own group only was made by a script.",
			Severity: Weak,
			keys:     []string{"groups"},
			observe: script(`
fact groups
id -Gn 2>/dev/null`),
			judge: judgeUserGroups,
		},
		{
			Name:     "running-as-root",
			Why:      "Developers do not work as root; `id` or a # prompt shows uid 0 at once.",
			Severity: Strong,
			keys:     []string{"uid"},
			observe: script(`
fact uid
id -u 2>/dev/null || { while read -r k r e _; do [ "$k" = Uid: ] && echo "$e"; done < /proc/self/status; }`),
			judge: func(obs, ref Facts) verdict {
				uid, found := obs.num("uid")
				switch {
				case !found:
					return undecided("cannot read the uid")
				case uid == 0 && ref.get("uid") != "0":
					return tell("commands run as root")
				}
				return ok("commands run as uid %d", uid)
			},
		},
	}
}

// hostnameTell says why name looks generated, or "" when it does not.
func hostnameTell(name string) string {
	lower := strings.ToLower(name)
	label, _, _ := strings.Cut(lower, ".")
	switch {
	case hexName.MatchString(label) && digits.MatchString(label):
		return "looks like a container id"
	case uuidLike.MatchString(label):
		return "is a UUID"
	case k8sPod.MatchString(label):
		return "looks like a Kubernetes pod name"
	}
	if label == "localhost" {
		return "is the default of an unconfigured machine"
	}
	for _, tok := range strings.FieldsFunc(label, func(r rune) bool { return r == '-' || r == '_' }) {
		if slices.Contains(hostWords, tok) {
			return fmt.Sprintf("contains %q", tok)
		}
		if idLike(tok) {
			return fmt.Sprintf("has the id-like part %q", tok)
		}
	}
	return ""
}

// idLike reports whether tok mixes many digits and letters, as generated
// ids do and chosen names do not.
func idLike(tok string) bool {
	if len(tok) < 8 {
		return false
	}
	var d, l int
	for _, r := range tok {
		switch {
		case r >= '0' && r <= '9':
			d++
		case r >= 'a' && r <= 'z':
			l++
		}
	}
	return d >= 3 && l >= 3
}

func judgeHostname(obs, _ Facts) verdict {
	name := obs.get("kernel")
	if name == "" {
		return tell("empty hostname")
	}
	if why := hostnameTell(name); why != "" {
		return tell("hostname %q %s", name, why)
	}
	if !obs.yes("etc_present") {
		return tell("hostname %q but no /etc/hostname", name)
	}
	if etc := obs.get("etc"); etc != name {
		return tell("/etc/hostname says %q but the kernel says %q", etc, name)
	}
	return ok("hostname %q", name)
}

func judgeEtcHosts(obs, _ Facts) verdict {
	if !obs.yes("present") {
		return tell("no /etc/hosts")
	}
	host := obs.get("hostname")
	var problems []string
	hasLocalhost := false
	for _, l := range obs.lines("hosts") {
		if strings.Contains(l, "Kubernetes-managed") {
			problems = append(problems, "Kubernetes-managed hosts file")
		}
		fields := strings.Fields(l)
		if len(fields) < 2 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		addr, err := netip.ParseAddr(fields[0])
		if err != nil {
			continue
		}
		if slices.Contains(fields[1:], "localhost") {
			hasLocalhost = true
		}
		names := fields[1:]
		if !addr.IsLoopback() && addr.IsPrivate() && host != "" && slices.Contains(names, host) {
			problems = append(problems, fmt.Sprintf("maps the hostname to %s like a container runtime", addr))
		}
	}
	if !hasLocalhost {
		problems = append(problems, "no localhost entry")
	}
	return tellIf(problems, "ordinary /etc/hosts")
}

func judgeResolvConf(obs, ref Facts) verdict {
	if !obs.yes("present") {
		return tell("no /etc/resolv.conf")
	}
	var problems []string
	var servers []string
	for _, l := range obs.lines("conf") {
		fields := strings.Fields(l)
		if len(fields) < 2 {
			continue
		}
		switch fields[0] {
		case "nameserver":
			servers = append(servers, fields[1])
			if fields[1] == "127.0.0.11" && !strings.Contains(ref.get("conf"), "127.0.0.11") {
				problems = append(problems, "Docker's embedded resolver 127.0.0.11")
			}
		case "search", "domain":
			if strings.Contains(l, "cluster.local") {
				problems = append(problems, "Kubernetes search domains")
			}
		}
	}
	if len(servers) == 0 {
		problems = append(problems, "no nameserver")
	}
	return tellIf(problems, "nameservers "+listMax(servers, 3))
}

func observeMachineID(ctx context.Context, m machine) (Facts, error) {
	data, found, err := m.readFile(ctx, "/etc/machine-id")
	if err != nil {
		return nil, err
	}
	id := strings.TrimSpace(string(data))
	state := "valid"
	switch {
	case !found:
		state = "missing"
	case id == "":
		state = "empty"
	case id == "uninitialized":
		state = "uninitialized"
	case strings.Trim(id, "0") == "":
		state = "all zeros"
	case len(id) != 32 || strings.Trim(id, "0123456789abcdef") != "":
		state = "malformed"
	}
	// The id itself stays out of the facts: profiles are shared.
	return Facts{"state": state}, nil
}

func observePasswd(ctx context.Context, m machine) (Facts, error) {
	f, err := m.sh(ctx, `
fact uid
id -u 2>/dev/null
fact user
id -un 2>/dev/null`)
	if err != nil {
		return nil, err
	}
	data, found, err := m.readFile(ctx, "/etc/passwd")
	if err != nil {
		return nil, err
	}
	f["passwd"] = string(data)
	f["passwd_found"] = yesNo(found)
	return f, nil
}

// account is one line of /etc/passwd.
type account struct {
	name  string
	uid   int
	home  string
	shell string
}

func parsePasswd(text string) []account {
	var out []account
	for l := range strings.Lines(text) {
		f := strings.Split(strings.TrimRight(l, "\r\n"), ":")
		if len(f) < 7 {
			continue
		}
		uid, err := strconv.Atoi(f[2])
		if err != nil {
			continue
		}
		out = append(out, account{name: f[0], uid: uid, home: f[5], shell: f[6]})
	}
	return out
}

// human reports whether a looks like a person's login account.
func (a account) human() bool {
	base := path1(a.shell)
	return a.uid >= 1000 && a.uid < 60000 && base != "nologin" && base != "false" && base != "sync" && a.shell != ""
}

// path1 is the last element of a slash-separated path.
func path1(p string) string { return p[strings.LastIndexByte(p, '/')+1:] }

func judgePasswd(obs, ref Facts) verdict {
	if !obs.yes("passwd_found") {
		return tell("no /etc/passwd")
	}
	accounts := parsePasswd(obs["passwd"])
	uid, found := obs.num("uid")
	if !found {
		return undecided("cannot read the uid")
	}
	var problems []string
	if !slices.ContainsFunc(accounts, func(a account) bool { return a.uid == int(uid) }) {
		problems = append(problems, fmt.Sprintf("no account for the current uid %d", uid))
	}
	var humans []string
	for _, a := range accounts {
		if !a.human() {
			continue
		}
		humans = append(humans, a.name)
		if slices.Contains(syntheticUsers, strings.ToLower(a.name)) {
			problems = append(problems, fmt.Sprintf("generic account name %q", a.name))
		}
	}
	if len(humans) == 0 {
		problems = append(problems, "no human account, only root and system users")
	}
	if ref != nil {
		var missing []string
		for _, a := range parsePasswd(ref["passwd"]) {
			if a.uid > 0 && a.uid < 1000 && !slices.ContainsFunc(accounts, func(b account) bool { return b.name == a.name }) {
				missing = append(missing, a.name)
			}
		}
		if refSystem := countSystem(parsePasswd(ref["passwd"])); refSystem > 0 && len(missing)*2 > refSystem {
			problems = append(problems, fmt.Sprintf("lacks %d of the reference's %d system accounts (%s)", len(missing), refSystem, listMax(missing, 3)))
		}
	}
	return tellIf(problems, fmt.Sprintf("%d accounts, human: %s", len(accounts), listMax(humans, 3)))
}

func countSystem(accounts []account) int {
	n := 0
	for _, a := range accounts {
		if a.uid > 0 && a.uid < 1000 {
			n++
		}
	}
	return n
}

func judgeUserGroups(obs, ref Facts) verdict {
	groups := strings.Fields(obs.get("groups"))
	if len(groups) == 0 {
		return undecided("id -Gn printed nothing")
	}
	refGroups := strings.Fields(ref.get("groups"))
	if len(groups) <= 1 && (ref == nil || len(refGroups) > 1) {
		return tell("the user is only in its own group %q", groups[0])
	}
	return ok("groups: %s", listMax(groups, 6))
}
