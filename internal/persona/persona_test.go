package persona

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestDefault(t *testing.T) {
	p := Default()
	for _, generic := range []string{"user", "test", "dev", "admin", "ubuntu"} {
		if p.UserName == generic {
			t.Errorf("default user name %q is a generic account name", p.UserName)
		}
	}
	if p.Home != "/home/"+p.UserName || p.Shell != "/bin/bash" || p.Locale != "en_US.UTF-8" {
		t.Errorf("default persona = %+v", p)
	}
	if msg := checkHostname(p.Hostname); msg != "" {
		t.Errorf("default hostname: %s", msg)
	}
	env := p.Env()
	want := []string{
		"HOME=/home/maya", "USER=maya", "LOGNAME=maya", "SHELL=/bin/bash", "LANG=en_US.UTF-8",
		"TERM=xterm-256color", "EDITOR=vim",
		"PATH=/home/maya/.local/bin:/home/maya/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	}
	for _, w := range want {
		if !slices.Contains(env, w) {
			t.Errorf("Env() lacks %q; got %q", w, env)
		}
	}
	if !slices.IsSorted(env) {
		t.Errorf("Env() is not sorted: %q", env)
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if k == "TZ" || mentionsTell(kv) != "" || strings.Contains(strings.ToLower(v), "task") {
			t.Errorf("Env() has a tell: %q", kv)
		}
	}
	if got := p.Workspace("widget"); got != "/home/maya/src/widget" {
		t.Errorf("Workspace(widget) = %q", got)
	}
	u := p.User()
	if u.Name != "maya" || u.UID != 1000 || u.GID != 1000 || u.Home != "/home/maya" || !reflect.DeepEqual(u.Groups, []uint32{1000}) {
		t.Errorf("User() = %+v", u)
	}
	if got := p.OpaqueDirs(); !reflect.DeepEqual(got, []string{"/home"}) {
		t.Errorf("OpaqueDirs() = %q", got)
	}
	if Default() == p {
		t.Error("Default returns a shared value")
	}
}

// TestLoadDefaultFile loads the embedded file from disk, with the time
// zone checked against the host's zone data.
func TestLoadDefaultFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "persona.yaml")
	if err := os.WriteFile(path, defaultYAML, 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Load(path)
	if err != nil {
		t.Fatalf("Load(default.yaml): %v", err)
	}
	if !reflect.DeepEqual(p, Default()) {
		t.Errorf("Load(default.yaml) = %+v, want %+v", p, Default())
	}
}

func TestLoadMinimal(t *testing.T) {
	p, err := Parse("p.yaml", []byte("user: sam\nfull_name: Sam Ortiz\nemail: sam@ortiz.io\nhostname: sams-mbp\ntimezone: UTC\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p.UID != 1000 || p.GID != 1000 || p.Home != "/home/sam" || p.WorkspaceTemplate != "~/src/{repo}" || p.Seed == 0 {
		t.Errorf("defaults not applied: %+v", p)
	}
	if p.EnvVars["PATH"] == "" || p.EnvVars["TERM"] != "xterm-256color" {
		t.Errorf("default env not applied: %v", p.EnvVars)
	}
	q, _ := Parse("p.yaml", []byte("user: sam\nfull_name: Sam Ortiz\nemail: sam@ortiz.io\nhostname: sams-mbp\ntimezone: UTC\n"))
	if p.Seed != q.Seed {
		t.Error("a file without a seed gets a different seed each time")
	}
}

// validFile is a persona file with one field per line, so that cases can
// replace a line and know where the error must point.
var validFile = []string{
	"user: maya",                      // 1
	"full_name: Maya Chen",            // 2
	"email: maya@chen.dev",            // 3
	"uid: 1000",                       // 4
	"gid: 1000",                       // 5
	"home: /home/maya",                // 6
	"shell: /bin/bash",                // 7
	"hostname: maya-thinkpad",         // 8
	"timezone: Europe/Berlin",         // 9
	"locale: en_US.UTF-8",             // 10
	"workspace: ~/src/{repo}",         // 11
	"seed: 7",                         // 12
	"env:",                            // 13
	"  EDITOR: nvim",                  // 14
	"dotfiles:",                       // 15
	"  .config/git/ignore: \"*.swp\"", // 16
	"history:",                        // 17
	"  - ls -la",                      // 18
}

func TestLoadErrors(t *testing.T) {
	_, zoneErr := os.Stat(zoneinfoDir)
	cases := []struct {
		name      string
		line      int    // line to replace (1-based); 0 appends
		text      string // replacement; "" deletes the line
		wantLine  int
		wantField string
		want      string
	}{
		{"uid root", 4, "uid: 0", 4, "uid", "0 is root; use a uid between 1000 and 60000"},
		{"uid system", 4, "uid: 999", 4, "uid", "system range"},
		{"uid too big", 4, "uid: 65534", 4, "uid", "above the range"},
		{"uid negative", 4, "uid: -5", 4, "uid", "negative"},
		{"uid not a number", 4, "uid: maya", 4, "uid", "want an integer"},
		{"gid root", 5, "gid: 0", 5, "gid", "0 is root; use a gid"},
		{"user shape", 1, "user: Maya", 1, "user", "not a valid user name"},
		{"user system", 1, "user: root", 1, "user", "system account"},
		{"user tell", 1, "user: sandbox", 1, "user", "gives the machine away"},
		{"full name colon", 2, "full_name: \"Maya: Chen\"", 2, "full_name", "may not contain"},
		{"email", 3, "email: maya", 3, "email", "not an email address"},
		{"home relative", 6, "home: home/maya", 6, "home", "not absolute"},
		{"home unclean", 6, "home: /home//maya/", 6, "home", "not a clean path"},
		{"home root", 6, "home: /", 6, "home", "not a home"},
		{"shell relative", 7, "shell: bash", 7, "shell", "not absolute"},
		{"hostname hex", 8, "hostname: 3f2a9c1b7d4e", 8, "hostname", "container id"},
		{"hostname sandbox", 8, "hostname: dev-sandbox-3", 8, "hostname", "sandbox"},
		{"hostname container", 8, "hostname: build-container", 8, "hostname", "container"},
		{"hostname underscore", 8, "hostname: maya_laptop", 8, "hostname", "RFC 1123"},
		{"hostname upper", 8, "hostname: Maya-Laptop", 8, "hostname", "upper-case"},
		{"hostname localhost", 8, "hostname: localhost", 8, "hostname", "unconfigured"},
		{"timezone shape", 9, "timezone: europe/berlin", 9, "timezone", "not an IANA time zone"},
		{"timezone file", 9, "timezone: zone.tab", 9, "timezone", "not an IANA time zone"},
		{"locale", 10, "locale: english", 10, "locale", "not a locale name"},
		{"workspace no placeholder", 11, "workspace: ~/src/repo", 11, "workspace", "{repo} exactly once"},
		{"workspace outside home", 11, "workspace: /srv/{repo}", 11, "workspace", "not under the home"},
		{"workspace escapes home", 11, "workspace: ~/../{repo}", 11, "workspace", "not a clean path"},
		{"seed negative", 12, "seed: -1", 12, "seed", "non-negative integer"},
		{"env TZ", 14, "  TZ: Europe/Berlin", 14, "env.TZ", "/etc/localtime"},
		{"env HOME", 14, "  HOME: /tmp", 14, "env.HOME", "\"home\" field"},
		{"env key", 14, "  1X: y", 14, "env.1X", "not a variable name"},
		{"env tell", 14, "  RUNNER: verisim", 14, "env.RUNNER", "gives the machine away"},
		{"env not a map", 14, "  - nvim", 14, "env", "want a mapping"},
		{"dotfile absolute", 16, "  /etc/passwd: x", 16, "dotfiles./etc/passwd", "relative to the home"},
		{"dotfile escapes", 16, "  ../x: y", 16, "dotfiles.../x", "relative to the home"},
		{"history multi-line", 18, "  - \"ls\\nrm -rf /\"", 18, "history[0]", "one line"},
		{"history not a string", 18, "  - {a: b}", 18, "history[0]", "want a string"},
		{"unknown field", 0, "usr: maya", 19, "usr", "did you mean \"user\""},
		{"duplicate field", 0, "uid: 1001", 19, "uid", "set twice (first on line 4)"},
		{"missing hostname", 8, "", 1, "hostname", "missing; add e.g. hostname:"},
		{"not a mapping", -1, "- user: maya", 1, "", "want a mapping"},
		{"syntax", 0, "  bad: [", 0, "", "invalid YAML"},
	}
	if zoneErr == nil {
		cases = append(cases, struct {
			name      string
			line      int
			text      string
			wantLine  int
			wantField string
			want      string
		}{"timezone unknown", 9, "timezone: Mars/Olympus_Mons", 9, "timezone", "not a time zone in /usr/share/zoneinfo"})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lines := slices.Clone(validFile)
			switch {
			case tc.line == -1:
				lines = []string{tc.text}
			case tc.line == 0:
				lines = append(lines, tc.text)
			case tc.text == "":
				lines = slices.Delete(lines, tc.line-1, tc.line)
			default:
				lines[tc.line-1] = tc.text
			}
			path := filepath.Join(t.TempDir(), "persona.yaml")
			if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path)
			if err == nil {
				t.Fatal("Load succeeded")
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a *FieldError", err)
			}
			if fe.File != path || (tc.wantLine != 0 && fe.Line != tc.wantLine) || fe.Field != tc.wantField {
				t.Errorf("error at %s:%d field %q, want line %d field %q (%v)", fe.File, fe.Line, fe.Field, tc.wantLine, tc.wantField, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

func TestLoadErrorFormat(t *testing.T) {
	lines := slices.Clone(validFile)
	lines[3] = "uid: 0"
	_, err := Parse("persona.yaml", []byte(strings.Join(lines, "\n")))
	want := `persona.yaml:4: field "uid": 0 is root; use a uid between 1000 and 60000`
	if err == nil || err.Error() != want {
		t.Errorf("error = %v, want %s", err, want)
	}
}

func TestLoadReportsEveryProblem(t *testing.T) {
	lines := slices.Clone(validFile)
	lines[3] = "uid: 0"
	lines[7] = "hostname: sandbox"
	_, err := Parse("p.yaml", []byte(strings.Join(lines, "\n")))
	if err == nil || !strings.Contains(err.Error(), "p.yaml:4:") || !strings.Contains(err.Error(), "p.yaml:8:") {
		t.Errorf("error %v does not report both lines 4 and 8", err)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) = %v, want ErrNotExist", err)
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	p, err := Parse("p.yaml", []byte(strings.Join(validFile, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	p.Dotfiles[".bashrc"] = "# mine\nalias ll='ls -l'\n\ttabbed: yes\n"
	for _, q := range []*Persona{p, Default()} {
		data, err := q.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		back, err := Parse("back.yaml", data)
		if err != nil {
			t.Fatalf("Parse(Marshal()) = %v\n%s", err, data)
		}
		if !reflect.DeepEqual(back, q) {
			t.Errorf("round trip changed the persona:\n got %+v\nwant %+v", back, q)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(defaultYAML)
	f.Add([]byte(strings.Join(validFile, "\n")))
	f.Add([]byte("user: [a\n"))
	f.Add([]byte("user: &a maya\nfull_name: *a\n"))
	f.Add([]byte("env: {A: '1', B: \"x\\ty\"}\nhistory: [a, b]\n"))
	f.Add([]byte("seed: 18446744073709551615\nuid: 0x3e8\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := parse("fuzz.yaml", data, "")
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a *FieldError", err)
			}
			return
		}
		out, err := p.Marshal()
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		back, err := parse("fuzz.yaml", out, "")
		if err != nil {
			t.Fatalf("Parse(Marshal(p)) = %v\n%s", err, out)
		}
		if !reflect.DeepEqual(back, p) {
			t.Fatalf("round trip changed the persona:\n got %+v\nwant %+v", back, p)
		}
	})
}

func TestWorkspaceRoot(t *testing.T) {
	for _, tc := range []struct{ tmpl, root, ws string }{
		{"~/src/{repo}", "/home/maya/src", "/home/maya/src/widget"},
		{"~/{repo}", "/home/maya", "/home/maya/widget"},
		{"~/work/{repo}/code", "/home/maya/work", "/home/maya/work/widget/code"},
		{"/home/maya/code/gh-{repo}", "/home/maya/code", "/home/maya/code/gh-widget"},
	} {
		p := Default()
		p.WorkspaceTemplate = tc.tmpl
		if got := p.workspaceRoot(); got != tc.root {
			t.Errorf("%s: root %q, want %q", tc.tmpl, got, tc.root)
		}
		if got := p.Workspace("widget"); got != tc.ws {
			t.Errorf("%s: Workspace %q, want %q", tc.tmpl, got, tc.ws)
		}
	}
}
