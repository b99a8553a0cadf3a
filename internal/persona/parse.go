package persona

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"github.com/verisim/verisim/internal/lazyregexp"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/verisim/verisim/internal/yamlfield"
)

// zoneinfoDir is where Parse looks up time zones. When it does not exist
// (a host without tzdata) only the shape of the name is checked.
const zoneinfoDir = "/usr/share/zoneinfo"

// Defaults for optional fields. The default environment is default.yaml's.
const (
	defaultUID       = 1000
	defaultShell     = "/bin/bash"
	defaultLocale    = "en_US.UTF-8"
	defaultWorkspace = "~/src/{repo}"
)

// FieldError is one problem in a persona file.
type FieldError = yamlfield.FieldError

var knownFields = []string{
	"user", "full_name", "email", "uid", "gid", "home", "shell", "hostname",
	"timezone", "locale", "env", "dotfiles", "history", "workspace", "seed",
}

// decoder collects every problem of one file, so that a user fixes them in
// one go.
type decoder struct {
	yamlfield.Errors
	file  string
	lines map[string]int // field → line of its value
}

func (d *decoder) errf(line int, field, format string, args ...any) {
	d.Add(line, field, format, args...)
}

func parse(name string, data []byte, zoneDir string) (*Persona, error) {
	d := &decoder{Errors: yamlfield.Errors{File: name}, file: name, lines: map[string]int{}}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, yamlfield.Syntax(name, err)
	}
	if len(doc.Content) == 0 {
		return nil, &FieldError{File: name, Line: 1, Problem: "the file is empty; write the persona's fields (user:, full_name:, email:, hostname:, timezone:, ...)"}
	}
	root := yamlfield.Deref(doc.Content[0])
	if root.Kind != yaml.MappingNode {
		return nil, &FieldError{File: name, Line: root.Line, Problem: fmt.Sprintf("want a mapping of persona fields (user: maya, ...), got %s", yamlfield.Kind(root))}
	}
	p := &Persona{}
	d.decodeFields(p, root)
	d.applyDefaults(p, root.Line)
	d.validate(p, zoneDir)
	if err := d.Err(); err != nil {
		return nil, err
	}
	return p, nil
}

func (d *decoder) decodeFields(p *Persona, root *yaml.Node) {
	firstLine := map[string]int{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := yamlfield.Deref(root.Content[i]), yamlfield.Deref(root.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			d.errf(k.Line, "", "a field name must be a plain word; see default.yaml for the fields")
			continue
		}
		key := k.Value
		if prev, dup := firstLine[key]; dup {
			d.errf(k.Line, key, "set twice (first on line %d); keep one", prev)
			continue
		}
		firstLine[key] = k.Line
		d.lines[key] = v.Line
		switch key {
		case "user":
			d.str(v, key, &p.UserName)
		case "full_name":
			d.str(v, key, &p.FullName)
		case "email":
			d.str(v, key, &p.Email)
		case "uid":
			d.id(v, key, &p.UID)
		case "gid":
			d.id(v, key, &p.GID)
		case "home":
			d.str(v, key, &p.Home)
		case "shell":
			d.str(v, key, &p.Shell)
		case "hostname":
			d.str(v, key, &p.Hostname)
		case "timezone":
			d.str(v, key, &p.Timezone)
		case "locale":
			d.str(v, key, &p.Locale)
		case "env":
			p.EnvVars = d.strMap(v, key)
		case "dotfiles":
			p.Dotfiles = d.strMap(v, key)
		case "history":
			p.History = d.strList(v, key)
		case "workspace":
			d.str(v, key, &p.WorkspaceTemplate)
		case "seed":
			if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" || v.Decode(&p.Seed) != nil {
				d.errf(v.Line, key, "want a non-negative integer, got %s; e.g. seed: 42", yamlfield.Describe(v))
			}
		default:
			hint := ""
			if s := yamlfield.Closest(key, knownFields); s != "" {
				hint = fmt.Sprintf("did you mean %q? ", s)
			}
			d.errf(k.Line, key, "unknown field; %sknown fields: %s", hint, strings.Join(knownFields, ", "))
		}
	}
}

func (d *decoder) str(v *yaml.Node, field string, dst *string) {
	if v.Kind != yaml.ScalarNode || v.ShortTag() == "!!null" {
		d.errf(v.Line, field, "want a string, got %s", yamlfield.Describe(v))
		return
	}
	*dst = v.Value
}

func (d *decoder) id(v *yaml.Node, field string, dst *uint32) {
	var n int64
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" || v.Decode(&n) != nil {
		d.errf(v.Line, field, "want an integer between 1000 and 60000, got %s", yamlfield.Describe(v))
		return
	}
	if msg := checkID(field, n); msg != "" {
		d.errf(v.Line, field, "%s", msg)
		return
	}
	*dst = uint32(n)
}

func (d *decoder) strMap(v *yaml.Node, field string) map[string]string {
	if v.Kind != yaml.MappingNode {
		d.errf(v.Line, field, "want a mapping of names to strings, got %s", yamlfield.Describe(v))
		return nil
	}
	m := map[string]string{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := yamlfield.Deref(v.Content[i]), yamlfield.Deref(v.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			d.errf(k.Line, field, "keys must be plain strings, got %s", yamlfield.Describe(k))
			continue
		}
		entry := field + "." + k.Value
		if _, dup := m[k.Value]; dup {
			d.errf(k.Line, entry, "set twice; keep one")
			continue
		}
		d.lines[entry] = k.Line
		if val.Kind != yaml.ScalarNode || val.ShortTag() == "!!null" {
			d.errf(val.Line, entry, "want a string, got %s", yamlfield.Describe(val))
			continue
		}
		m[k.Value] = val.Value
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

func (d *decoder) strList(v *yaml.Node, field string) []string {
	if v.Kind != yaml.SequenceNode {
		d.errf(v.Line, field, "want a list of strings, got %s", yamlfield.Describe(v))
		return nil
	}
	var out []string
	for i, item := range v.Content {
		item = yamlfield.Deref(item)
		entry := fmt.Sprintf("%s[%d]", field, i)
		d.lines[entry] = item.Line
		if item.Kind != yaml.ScalarNode || item.ShortTag() == "!!null" {
			d.errf(item.Line, entry, "want a string, got %s", yamlfield.Describe(item))
			continue
		}
		out = append(out, item.Value)
	}
	return out
}

// applyDefaults fills optional fields and reports missing required ones at
// the line where the mapping starts.
func (d *decoder) applyDefaults(p *Persona, line int) {
	required := []struct{ field, example string }{
		{"user", "maya"},
		{"full_name", "Maya Chen"},
		{"email", "maya.chen@fastmail.com"},
		{"hostname", "maya-thinkpad"},
		{"timezone", "Europe/Berlin"},
	}
	for _, r := range required {
		if _, set := d.lines[r.field]; !set {
			d.errf(line, r.field, "missing; add e.g. %s: %s", r.field, r.example)
		}
	}
	if _, set := d.lines["uid"]; !set {
		p.UID = defaultUID
	}
	if _, set := d.lines["gid"]; !set {
		p.GID = p.UID
	}
	if _, set := d.lines["home"]; !set && p.UserName != "" {
		p.Home = "/home/" + p.UserName
	}
	if _, set := d.lines["shell"]; !set {
		p.Shell = defaultShell
	}
	if _, set := d.lines["locale"]; !set {
		p.Locale = defaultLocale
	}
	if _, set := d.lines["workspace"]; !set {
		p.WorkspaceTemplate = defaultWorkspace
	}
	for k, v := range defaultEnv() {
		if _, set := p.EnvVars[k]; !set {
			if p.EnvVars == nil {
				p.EnvVars = map[string]string{}
			}
			p.EnvVars[k] = v
		}
	}
	if p.Seed == 0 {
		p.Seed = identitySeed(p)
	}
}

// defaultEnv is the env mapping of the embedded default.yaml, the single
// place where the default environment is written down.
func defaultEnv() map[string]string {
	var f struct {
		Env map[string]string `yaml:"env"`
	}
	if err := yaml.Unmarshal(defaultYAML, &f); err != nil {
		panic("persona: embedded default.yaml: " + err.Error())
	}
	return f.Env
}

// identitySeed derives a stable seed from who the persona is, so that a file
// without a seed still gives the same machine every time.
func identitySeed(p *Persona) uint64 {
	sum := sha256.Sum256([]byte(p.UserName + "\x00" + p.Hostname + "\x00" + p.Email))
	if s := binary.LittleEndian.Uint64(sum[:8]); s != 0 {
		return s
	}
	return 1
}

func (d *decoder) check(field string, msg string) {
	if msg != "" && !d.Failed(field) {
		d.errf(d.lines[field], field, "%s", msg)
	}
}

func (d *decoder) validate(p *Persona, zoneDir string) {
	set := func(f string) bool { _, ok := d.lines[f]; return ok && !d.Failed(f) }
	if set("user") {
		d.check("user", checkUserName(p.UserName))
	}
	if set("full_name") {
		d.check("full_name", checkFullName(p.FullName))
	}
	if set("email") {
		d.check("email", checkEmail(p.Email))
	}
	if set("home") {
		d.check("home", checkAbsPath(p.Home, "/home/"+orDefault(p.UserName, "maya")))
		if p.Home == "/" || p.Home == "/root" {
			d.check("home", fmt.Sprintf("%q is not a home for a person; use e.g. /home/%s", p.Home, orDefault(p.UserName, "maya")))
		}
	}
	if set("shell") {
		d.check("shell", checkAbsPath(p.Shell, "/bin/bash"))
	}
	if set("hostname") {
		d.check("hostname", checkHostname(p.Hostname))
	}
	if set("timezone") {
		d.check("timezone", checkTimezone(p.Timezone, zoneDir))
	}
	if set("locale") {
		d.check("locale", checkLocale(p.Locale))
	}
	for _, k := range sortedKeys(p.EnvVars) {
		if _, fromFile := d.lines["env."+k]; fromFile {
			d.check("env."+k, checkEnv(k, p.EnvVars[k]))
		}
	}
	for _, k := range sortedKeys(p.Dotfiles) {
		d.check("dotfiles."+k, checkDotfile(k, p.Dotfiles[k]))
	}
	for i, cmd := range p.History {
		d.check(fmt.Sprintf("history[%d]", i), checkHistory(cmd))
	}
	if set("workspace") && !d.Failed("home") {
		d.check("workspace", checkWorkspace(p.WorkspaceTemplate, p.Home))
	}
}

var (
	userNameRE = lazyregexp.New(`^[a-z][a-z0-9_-]{0,31}$`)
	emailRE    = lazyregexp.New(`^[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}$`)
	labelRE    = lazyregexp.New(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	hexLikeRE  = lazyregexp.New(`^[0-9a-f]{8,}$`)
	localeRE   = lazyregexp.New(`^[a-z]{2,3}(_[A-Z]{2})?(\.[A-Za-z0-9-]+)?(@[a-z]+)?$`)
	envKeyRE   = lazyregexp.New(`^[A-Za-z_][A-Za-z0-9_]*$`)
	zoneElemRE = lazyregexp.New(`^[A-Z][A-Za-z0-9_+-]*$`)
)

// systemNames are accounts a base image owns; a persona may not take them.
var systemNames = map[string]bool{
	"root": true, "daemon": true, "bin": true, "sys": true, "sync": true, "games": true,
	"man": true, "lp": true, "mail": true, "news": true, "uucp": true, "proxy": true,
	"www-data": true, "backup": true, "list": true, "irc": true, "gnats": true,
	"nobody": true, "nogroup": true, "messagebus": true, "sshd": true, "syslog": true,
	"uuidd": true, "tss": true, "polkitd": true, "sudo": true, "adm": true, "staff": true,
	"users": true, "shadow": true, "utmp": true, "docker": true,
}

// tellWords give a sandbox away wherever they appear.
var tellWords = []string{"verisim", "sandbox"}

func mentionsTell(s string, extra ...string) string {
	lower := strings.ToLower(s)
	for _, w := range append(extra, tellWords...) {
		if strings.Contains(lower, w) {
			return w
		}
	}
	return ""
}

func checkUserName(s string) string {
	switch {
	case !userNameRE.MatchString(s):
		return fmt.Sprintf("%q is not a valid user name; use 1-32 lowercase letters, digits, '-' or '_', starting with a letter (e.g. maya)", s)
	case systemNames[s] || strings.HasPrefix(s, "systemd-"):
		return fmt.Sprintf("%q is a system account; use the developer's own login name (e.g. maya)", s)
	}
	if w := mentionsTell(s, "container"); w != "" {
		return fmt.Sprintf("%q mentions %q, which gives the machine away; use a person's login name", s, w)
	}
	return ""
}

func checkFullName(s string) string {
	if strings.TrimSpace(s) == "" {
		return "empty; write the person's name, e.g. Maya Chen"
	}
	if strings.ContainsAny(s, ":,") || hasControl(s) {
		return fmt.Sprintf("%q may not contain ':', ',' or control characters (they break /etc/passwd); write the name only", s)
	}
	if w := mentionsTell(s); w != "" {
		return fmt.Sprintf("%q mentions %q, which gives the machine away; write a person's name", s, w)
	}
	return ""
}

func checkEmail(s string) string {
	if !emailRE.MatchString(s) {
		return fmt.Sprintf("%q is not an email address; use e.g. maya.chen@fastmail.com", s)
	}
	if w := mentionsTell(s); w != "" {
		return fmt.Sprintf("%q mentions %q, which gives the machine away; use a person's address", s, w)
	}
	return ""
}

func checkID(field string, n int64) string {
	switch {
	case n == 0:
		return fmt.Sprintf("0 is root; use a %s between 1000 and 60000", field)
	case n < 0:
		return fmt.Sprintf("%d is negative; use a %s between 1000 and 60000", n, field)
	case n < 1000:
		return fmt.Sprintf("%d is in the system range; use a %s between 1000 and 60000", n, field)
	case n > 60000:
		return fmt.Sprintf("%d is above the range for people; use a %s between 1000 and 60000", n, field)
	}
	return ""
}

func checkAbsPath(s, example string) string {
	switch {
	case !strings.HasPrefix(s, "/"):
		return fmt.Sprintf("%q is not absolute; use e.g. %s", s, example)
	case path.Clean(s) != s:
		return fmt.Sprintf("%q is not a clean path; use %q", s, path.Clean(s))
	case strings.ContainsAny(s, ":") || hasControl(s):
		return fmt.Sprintf("%q may not contain ':' or control characters (they break /etc/passwd); use e.g. %s", s, example)
	}
	return ""
}

func checkHostname(s string) string {
	if s != strings.ToLower(s) {
		return fmt.Sprintf("%q has upper-case letters; use %q", s, strings.ToLower(s))
	}
	if len(s) > 64 {
		return fmt.Sprintf("%q is longer than 64 characters; use a short name like maya-thinkpad", s)
	}
	for _, label := range strings.Split(s, ".") {
		if !labelRE.MatchString(label) {
			return fmt.Sprintf("%q is not a valid host name (RFC 1123: dot-separated labels of letters, digits and inner '-'); use e.g. maya-thinkpad", s)
		}
		if hexLikeRE.MatchString(label) {
			return fmt.Sprintf("%q looks like a container id; use a machine name like maya-thinkpad", s)
		}
	}
	if s == "localhost" || strings.HasPrefix(s, "localhost.") {
		return fmt.Sprintf("%q is what unconfigured machines are called; use a machine name like maya-thinkpad", s)
	}
	if w := mentionsTell(s, "container"); w != "" {
		return fmt.Sprintf("%q mentions %q, which gives the machine away; use a machine name like maya-thinkpad", s, w)
	}
	return ""
}

func checkTimezone(s, zoneDir string) string {
	for _, elem := range strings.Split(s, "/") {
		if !zoneElemRE.MatchString(elem) || s == "Factory" {
			return fmt.Sprintf("%q is not an IANA time zone name; use e.g. Europe/Berlin or America/New_York", s)
		}
	}
	if zoneDir == "" {
		return ""
	}
	if _, err := os.Stat(zoneDir); err != nil {
		return "" // no zone data on this host: the shape check is all we can do
	}
	head := make([]byte, 4)
	f, err := os.Open(filepath.Join(zoneDir, filepath.FromSlash(s)))
	if err == nil {
		_, err = f.Read(head)
		f.Close()
	}
	if err != nil || !bytes.Equal(head, []byte("TZif")) {
		return fmt.Sprintf("%q is not a time zone in %s; use an IANA name such as Europe/Berlin", s, zoneDir)
	}
	return ""
}

func checkLocale(s string) string {
	switch s {
	case "C", "POSIX", "C.UTF-8", "C.utf8":
		return ""
	}
	if !localeRE.MatchString(s) {
		return fmt.Sprintf("%q is not a locale name; use e.g. en_US.UTF-8", s)
	}
	return ""
}

// envFromFields are variables a login sets from other persona fields.
var envFromFields = map[string]string{
	"HOME": "home", "USER": "user", "LOGNAME": "user", "SHELL": "shell",
	"LANG": "locale",
}

func checkEnv(k, v string) string {
	if !envKeyRE.MatchString(k) {
		return fmt.Sprintf("%q is not a variable name; use letters, digits and '_'", k)
	}
	if f, ok := envFromFields[k]; ok {
		return fmt.Sprintf("%s comes from the %q field; set that instead", k, f)
	}
	if k == "TZ" {
		return "real machines take the zone from /etc/localtime, not TZ; set the \"timezone\" field instead"
	}
	if strings.ContainsRune(v, 0) {
		return "the value contains a NUL byte; remove it"
	}
	if w := mentionsTell(k + "=" + v); w != "" {
		return fmt.Sprintf("mentions %q, which gives the machine away; remove the variable", w)
	}
	return ""
}

func checkDotfile(p, content string) string {
	if p == "" || strings.HasPrefix(p, "/") || path.Clean(p) != p || p == "." || p == ".." || strings.HasPrefix(p, "../") {
		return fmt.Sprintf("%q is not a clean path relative to the home directory; use e.g. .config/git/ignore", p)
	}
	if hasControl(p) {
		return fmt.Sprintf("%q contains control characters; use a plain file name", p)
	}
	if w := mentionsTell(content); w != "" {
		return fmt.Sprintf("the content mentions %q, which gives the machine away; remove it", w)
	}
	return ""
}

func checkHistory(cmd string) string {
	switch {
	case strings.TrimSpace(cmd) == "":
		return "empty command; remove the entry"
	case strings.ContainsAny(cmd, "\n\r\x00"):
		return "a history entry is one line; split it into several entries"
	}
	if w := mentionsTell(cmd); w != "" {
		return fmt.Sprintf("the command mentions %q, which gives the machine away; remove it", w)
	}
	return ""
}

func checkWorkspace(tmpl, home string) string {
	if strings.Count(tmpl, "{repo}") != 1 {
		return fmt.Sprintf("%q must contain {repo} exactly once; use e.g. ~/src/{repo}", tmpl)
	}
	filled := strings.ReplaceAll(tmpl, "{repo}", "repo")
	if strings.ContainsAny(filled, "{}$:") || hasControl(filled) {
		return fmt.Sprintf("%q may hold no placeholder but {repo}; use e.g. ~/src/{repo}", tmpl)
	}
	var abs string
	switch {
	case strings.HasPrefix(filled, "~/"):
		abs = home + filled[1:]
	case strings.HasPrefix(filled, home+"/"):
		abs = filled
	default:
		return fmt.Sprintf("%q is not under the home directory; start it with ~/ (e.g. ~/src/{repo})", tmpl)
	}
	if path.Clean(abs) != abs {
		return fmt.Sprintf("%q is not a clean path under the home directory; use e.g. ~/src/{repo}", tmpl)
	}
	return ""
}

func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return true
		}
	}
	return false
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
