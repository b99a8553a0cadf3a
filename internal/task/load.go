package task

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/verisim/verisim/internal/lazyregexp"
	"github.com/verisim/verisim/internal/sandbox"
	"github.com/verisim/verisim/internal/yamlfield"
)

// FieldError is one problem in a task file.
type FieldError = yamlfield.FieldError

var idRE = lazyregexp.New(`^[a-z0-9][a-z0-9._-]*$`)

// Load reads the task in directory dir (dir/task.yaml). Every problem of the
// file is reported, joined, as *FieldError values.
func Load(dir string) (*Task, error) {
	file := filepath.Join(dir, FileName)
	data, err := os.ReadFile(file)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: no %s here; a task directory holds task.yaml, repo/, tests/ and solution/ (see docs/task-format.md)", dir, FileName)
		}
		return nil, err
	}
	t, err := Parse(file, data)
	if err != nil {
		return nil, err
	}
	t.Dir = dir
	if err := t.checkFiles(file); err != nil {
		return nil, err
	}
	return t, nil
}

// LoadSuite loads every task under root: root itself when it holds
// task.yaml, otherwise each directory below it that does (not looking
// inside a task's own directories). Tasks come sorted by id; ids must be
// unique. All problems of all files are reported together.
func LoadSuite(root string) ([]*Task, error) {
	if _, err := os.Stat(filepath.Join(root, FileName)); err == nil {
		t, err := Load(root)
		if err != nil {
			return nil, err
		}
		return []*Task{t}, nil
	}
	fi, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("tasks directory: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("tasks directory %s is not a directory", root)
	}
	var dirs []string
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() || p == root {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if _, err := os.Stat(filepath.Join(p, FileName)); err == nil {
			dirs = append(dirs, p)
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("find tasks under %s: %w", root, err)
	}
	if len(dirs) == 0 {
		return nil, fmt.Errorf("no tasks under %s: no directory there holds a %s", root, FileName)
	}
	var tasks []*Task
	var errs []error
	seen := map[string]string{}
	for _, d := range dirs {
		t, err := Load(d)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if prev, ok := seen[t.ID]; ok {
			errs = append(errs, fmt.Errorf("%s: task id %q is also the id of %s; ids must be unique", filepath.Join(d, FileName), t.ID, prev))
			continue
		}
		seen[t.ID] = d
		tasks = append(tasks, t)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	sort.Slice(tasks, func(i, j int) bool { return tasks[i].ID < tasks[j].ID })
	return tasks, nil
}

// Parse reads task.yaml content; name is used in errors. It checks the
// fields but not the files they name (Load does).
func Parse(name string, data []byte) (*Task, error) {
	d := &decoder{Errors: yamlfield.Errors{File: name}}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, yamlfield.Syntax(name, err)
	}
	if len(doc.Content) == 0 {
		return nil, &FieldError{File: name, Line: 1, Problem: "the file is empty; write at least id:, instruction:, repo: and grade: (see docs/task-format.md)"}
	}
	root := yamlfield.Deref(doc.Content[0])
	t := &Task{}
	d.mapping(root, "", map[string]func(*yaml.Node, string){
		"id":          func(n *yaml.Node, f string) { t.ID = d.str(n, f) },
		"instruction": func(n *yaml.Node, f string) { t.Instruction = strings.TrimSpace(d.str(n, f)) },
		"repo": func(n *yaml.Node, f string) {
			d.mapping(n, f, map[string]func(*yaml.Node, string){
				"dir":     func(n *yaml.Node, f string) { t.Repo.Dir = d.str(n, f) },
				"git":     func(n *yaml.Node, f string) { t.Repo.Git = d.str(n, f) },
				"commit":  func(n *yaml.Node, f string) { t.Repo.Commit = d.str(n, f) },
				"clone":   func(n *yaml.Node, f string) { t.Repo.Clone = d.str(n, f) },
				"archive": func(n *yaml.Node, f string) { t.Repo.Archive = d.str(n, f) },
				"name":    func(n *yaml.Node, f string) { t.Repo.Name = d.str(n, f) },
			})
		},
		"setup": func(n *yaml.Node, f string) { t.Setup = d.strs(n, f) },
		"grade": func(n *yaml.Node, f string) {
			g := &t.Grade
			d.mapping(n, f, map[string]func(*yaml.Node, string){
				"command":      func(n *yaml.Node, f string) { g.Command = d.str(n, f) },
				"format":       func(n *yaml.Node, f string) { g.Format = d.str(n, f) },
				"reward":       func(n *yaml.Node, f string) { g.Reward = d.str(n, f) },
				"timeout":      func(n *yaml.Node, f string) { g.Timeout = d.duration(n, f) },
				"tests_target": func(n *yaml.Node, f string) { g.TestsTarget = d.str(n, f) },
				"protect":      func(n *yaml.Node, f string) { g.Protect = d.strs(n, f) },
				"reward_file":  func(n *yaml.Node, f string) { g.RewardFile = d.str(n, f) },
				"tests":        func(n *yaml.Node, f string) { g.Tests = d.strs(n, f) },
				"user":         func(n *yaml.Node, f string) { g.User = d.str(n, f) },
			})
		},
		"timeouts": func(n *yaml.Node, f string) {
			d.mapping(n, f, map[string]func(*yaml.Node, string){
				"setup": func(n *yaml.Node, f string) { t.Timeouts.Setup = d.duration(n, f) },
				"agent": func(n *yaml.Node, f string) { t.Timeouts.Agent = d.duration(n, f) },
			})
		},
		"limits": func(n *yaml.Node, f string) {
			t.LimitsS = d.str(n, f)
			lim, err := sandbox.ParseLimits(t.LimitsS)
			if err != nil {
				d.errf(n.Line, f, "%v (write e.g. memory=2g,pids=1024,cpus=1,disk=4g)", err)
			}
			t.Limits = lim
		},
		"tags": func(n *yaml.Node, f string) { t.Tags = d.strs(n, f) },
		"metadata": func(n *yaml.Node, f string) {
			if n.Kind != yaml.MappingNode {
				d.errf(n.Line, f, "want a mapping of strings (key: value), got %s", yamlfield.Describe(n))
				return
			}
			for i := 0; i+1 < len(n.Content); i += 2 {
				if t.Meta == nil {
					t.Meta = map[string]string{}
				}
				k := n.Content[i].Value
				t.Meta[k] = d.str(n.Content[i+1], f+"."+k)
			}
		},
	})
	d.check(t, root)
	if err := d.Err(); err != nil {
		return nil, err
	}
	return t, nil
}

// decoder collects every problem of one file.
type decoder struct {
	yamlfield.Errors
	lines map[string]int
}

func (d *decoder) errf(line int, field, format string, args ...any) {
	d.Add(line, field, format, args...)
}

func join(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

// mapping decodes a mapping node with one handler per known key; unknown
// and repeated keys are errors.
func (d *decoder) mapping(n *yaml.Node, field string, known map[string]func(*yaml.Node, string)) {
	if n.Kind != yaml.MappingNode {
		what := "fields"
		if field == "" {
			what = "task fields (id:, instruction:, repo:, grade:, ...)"
		}
		d.errf(n.Line, field, "want a mapping of %s, got %s", what, yamlfield.Describe(n))
		return
	}
	if d.lines == nil {
		d.lines = map[string]int{}
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], yamlfield.Deref(n.Content[i+1])
		f := join(field, k.Value)
		h, ok := known[k.Value]
		if !ok {
			names := make([]string, 0, len(known))
			for name := range known {
				names = append(names, name)
			}
			sort.Strings(names)
			if guess := yamlfield.Closest(k.Value, names); guess != "" {
				d.errf(k.Line, f, "unknown field; did you mean %q?", guess)
			} else {
				d.errf(k.Line, f, "unknown field; known fields here: %s", strings.Join(names, ", "))
			}
			continue
		}
		if seen[k.Value] {
			d.errf(k.Line, f, "given twice")
			continue
		}
		seen[k.Value] = true
		d.lines[f] = v.Line
		h(v, f)
	}
}

func (d *decoder) str(n *yaml.Node, field string) string {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		d.errf(n.Line, field, "want a string, got %s", yamlfield.Describe(n))
		return ""
	}
	return n.Value
}

func (d *decoder) strs(n *yaml.Node, field string) []string {
	if n.Kind != yaml.SequenceNode {
		d.errf(n.Line, field, "want a list of strings, got %s", yamlfield.Describe(n))
		return nil
	}
	var out []string // an empty list is no list: the same task either way
	for i, c := range n.Content {
		out = append(out, d.str(yamlfield.Deref(c), fmt.Sprintf("%s[%d]", field, i)))
	}
	return out
}

func (d *decoder) duration(n *yaml.Node, field string) time.Duration {
	s := d.str(n, field)
	if s == "" {
		return 0
	}
	v, err := time.ParseDuration(s)
	if err != nil || v <= 0 {
		d.errf(n.Line, field, "%q is not a positive duration; write e.g. 90s, 5m or 1h30m", s)
		return 0
	}
	return v
}

// line is where field's value is, or the line of the enclosing mapping.
func (d *decoder) line(field string, fallback int) int {
	if l, ok := d.lines[field]; ok {
		return l
	}
	return fallback
}

// check applies the rules between fields and the defaults.
func (d *decoder) check(t *Task, root *yaml.Node) {
	if root.Kind != yaml.MappingNode {
		return
	}
	top := root.Line
	switch {
	case t.ID == "" && d.lines["id"] == 0:
		d.errf(top, "id", "missing; name the task, e.g. id: fix-date-parsing")
	case t.ID != "" && !idRE.MatchString(t.ID):
		d.errf(d.line("id", top), "id", "%q: use lower-case letters, digits, '.', '_' and '-', starting with a letter or digit", t.ID)
	}
	if t.Instruction == "" {
		d.errf(d.line("instruction", top), "instruction", "missing or empty; write what the developer asks, as they would type it")
	}
	r := t.Repo
	n := 0
	for _, s := range []string{r.Dir, r.Git, r.Archive} {
		if s != "" {
			n++
		}
	}
	switch {
	case n == 0:
		d.errf(d.line("repo", top), "repo", "give one of dir:, git: (with commit:) or archive:")
	case n > 1:
		d.errf(d.line("repo", top), "repo", "give only one of dir:, git: and archive:")
	case r.Git != "" && r.Commit == "":
		d.errf(d.line("repo.git", top), "repo.commit", "missing; a git source needs the commit to check out")
	case r.Git == "" && (r.Commit != "" || r.Clone != ""):
		d.errf(d.line("repo.commit", d.line("repo.clone", top)), "repo.commit", "commit: and clone: go with git:")
	}
	if r.Name != "" && (r.Name == "." || r.Name == ".." || strings.ContainsAny(r.Name, "/\\:\x00\n") || strings.HasPrefix(r.Name, "-")) {
		d.errf(d.line("repo.name", top), "repo.name", "%q is not a single directory name", r.Name)
	}
	for i, s := range t.Setup {
		if strings.TrimSpace(s) == "" {
			d.errf(d.line("setup", top), fmt.Sprintf("setup[%d]", i), "empty command")
		}
	}
	g := &t.Grade
	if strings.TrimSpace(g.Command) == "" {
		d.errf(d.line("grade.command", d.line("grade", top)), "grade.command", "missing; the command that runs the tests, e.g. go test -v ./...")
	}
	switch g.Format {
	case "":
		g.Format = FormatExit
	case FormatExit, FormatGo, FormatUnittest, FormatPytest, FormatTAP:
	default:
		d.errf(d.line("grade.format", top), "grade.format", "unknown format %q; use exit, go, unittest, pytest or tap", g.Format)
	}
	switch g.Reward {
	case "":
		g.Reward = RewardPass
	case RewardPass, RewardFraction:
	default:
		d.errf(d.line("grade.reward", top), "grade.reward", "unknown reward %q; use pass or fraction", g.Reward)
	}
	if g.RewardFile != "" && g.Format != FormatExit {
		d.errf(d.line("grade.reward_file", top), "grade.reward_file", "only goes with format exit")
	}
	if g.User != "" && g.User != "root" {
		d.errf(d.line("grade.user", top), "grade.user", "%q: leave it out for the machine's user, or write root", g.User)
	}
	for i, p := range g.Protect {
		if _, err := filepath.Match(strings.ReplaceAll(p, "**", "*"), ""); err != nil || p == "" || strings.HasPrefix(p, "/") {
			d.errf(d.line("grade.protect", top), fmt.Sprintf("grade.protect[%d]", i), "%q is not a relative glob", p)
		}
	}
	if g.Timeout == 0 {
		g.Timeout = DefaultGradeTimeout
	}
	if t.Timeouts.Setup == 0 {
		t.Timeouts.Setup = DefaultSetupTimeout
	}
	if t.Timeouts.Agent == 0 {
		t.Timeouts.Agent = DefaultAgentTimeout
	}
}

// checkFiles checks the files the task names, relative to its directory.
func (t *Task) checkFiles(file string) error {
	var errs []error
	inDir := func(field, rel string, wantDir bool) {
		if filepath.IsAbs(rel) || strings.HasPrefix(filepath.Clean(rel), "..") {
			errs = append(errs, &FieldError{File: file, Line: 1, Field: field, Problem: fmt.Sprintf("%q must be a path inside the task directory", rel)})
			return
		}
		fi, err := os.Stat(filepath.Join(t.Dir, rel))
		switch {
		case err != nil:
			errs = append(errs, &FieldError{File: file, Line: 1, Field: field, Problem: fmt.Sprintf("%s does not exist in the task directory", rel)})
		case wantDir && !fi.IsDir():
			errs = append(errs, &FieldError{File: file, Line: 1, Field: field, Problem: fmt.Sprintf("%s is not a directory", rel)})
		case !wantDir && fi.IsDir():
			errs = append(errs, &FieldError{File: file, Line: 1, Field: field, Problem: fmt.Sprintf("%s is a directory, want an archive file", rel)})
		}
	}
	if t.Repo.Dir != "" {
		inDir("repo.dir", t.Repo.Dir, true)
		// The repository enters the machine whole: it must not hold the
		// task's own hidden tests, solution or task.yaml.
		repo := filepath.Clean(filepath.Join(t.Dir, t.Repo.Dir))
		for _, private := range []string{TestsDir, SolutionDir, FileName} {
			p := filepath.Join(t.Dir, private)
			if rel, err := filepath.Rel(repo, p); err == nil && !strings.HasPrefix(rel, "..") {
				errs = append(errs, &FieldError{File: file, Line: 1, Field: "repo.dir", Problem: fmt.Sprintf("%q holds the task's %s, which must stay out of the machine; put the repository in its own directory (repo/)", t.Repo.Dir, private)})
				break
			}
		}
	}
	if t.Repo.Archive != "" {
		inDir("repo.archive", t.Repo.Archive, false)
	}
	if t.Repo.Clone != "" {
		if fi, err := os.Stat(t.Repo.Clone); err != nil || !fi.IsDir() {
			errs = append(errs, &FieldError{File: file, Line: 1, Field: "repo.clone", Problem: fmt.Sprintf("%s is not a directory; give a local clone of %s", t.Repo.Clone, t.Repo.Git)})
		}
	}
	return errors.Join(errs...)
}

// HasSolution reports whether the task has a reference solution.
func (t *Task) HasSolution() bool {
	_, err := os.Stat(filepath.Join(t.Dir, SolutionDir, SolveScript))
	return err == nil
}

// TestsPath is the host directory of the hidden tests ("" when the task has
// none).
func (t *Task) TestsPath() string {
	p := filepath.Join(t.Dir, TestsDir)
	if fi, err := os.Stat(p); err == nil && fi.IsDir() {
		return p
	}
	return ""
}

// Encode writes t as task.yaml content; zero and default fields are left
// out. Parse(Encode(t)) gives t back, up to defaults.
func Encode(t *Task) ([]byte, error) {
	type grade struct {
		Command     string   `yaml:"command"`
		Format      string   `yaml:"format,omitempty"`
		Reward      string   `yaml:"reward,omitempty"`
		Timeout     string   `yaml:"timeout,omitempty"`
		TestsTarget string   `yaml:"tests_target,omitempty"`
		Protect     []string `yaml:"protect,omitempty,flow"`
		RewardFile  string   `yaml:"reward_file,omitempty"`
		Tests       []string `yaml:"tests,omitempty"`
		User        string   `yaml:"user,omitempty"`
	}
	type timeouts struct {
		Setup string `yaml:"setup,omitempty"`
		Agent string `yaml:"agent,omitempty"`
	}
	type file struct {
		ID          string            `yaml:"id"`
		Instruction string            `yaml:"instruction"`
		Repo        Repo              `yaml:"repo"`
		Setup       []string          `yaml:"setup,omitempty"`
		Grade       grade             `yaml:"grade"`
		Timeouts    *timeouts         `yaml:"timeouts,omitempty"`
		Limits      string            `yaml:"limits,omitempty"`
		Tags        []string          `yaml:"tags,omitempty,flow"`
		Meta        map[string]string `yaml:"metadata,omitempty"`
	}
	dur := func(d, def time.Duration) string {
		if d == 0 || d == def {
			return ""
		}
		return d.String()
	}
	f := file{
		ID: t.ID, Instruction: t.Instruction, Repo: t.Repo, Setup: t.Setup,
		Grade: grade{
			Command: t.Grade.Command, Reward: t.Grade.Reward, Timeout: dur(t.Grade.Timeout, DefaultGradeTimeout),
			TestsTarget: t.Grade.TestsTarget, Protect: t.Grade.Protect, RewardFile: t.Grade.RewardFile,
			Tests: t.Grade.Tests, User: t.Grade.User, Format: t.Grade.Format,
		},
		Limits: t.LimitsS, Tags: t.Tags, Meta: t.Meta,
	}
	if f.Grade.Format == FormatExit {
		f.Grade.Format = ""
	}
	if f.Grade.Reward == RewardPass {
		f.Grade.Reward = ""
	}
	if to := (timeouts{dur(t.Timeouts.Setup, DefaultSetupTimeout), dur(t.Timeouts.Agent, DefaultAgentTimeout)}); to != (timeouts{}) {
		f.Timeouts = &to
	}
	return yaml.Marshal(&f)
}
