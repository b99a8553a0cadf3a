package persona

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// supplementaryGroups are the groups a distribution installer puts its
// first user in. Those the base image has are used; "wheel" stands in for
// "sudo" on images without the latter.
var supplementaryGroups = []string{"adm", "cdrom", "sudo", "dip", "plugdev", "lpadmin", "lxd", "sambashare", "docker"}

// isHumanID reports whether id is in the range distributions give people
// (login.defs UID_MIN..UID_MAX); nobody (65534) and dynamic system ids
// above 60000 are not.
func isHumanID(id uint64) bool { return id >= 1000 && id < 60000 }

// accountFiles are the merged account databases.
type accountFiles struct {
	passwd, group, shadow, gshadow, subuid, subgid string
	// shadowGID owns /etc/shadow and /etc/gshadow (0 without a shadow group).
	shadowGID int
	// groups are the persona's supplementary gids, in /etc/group order.
	groups []uint32
	// sudoGroup is the base's group for administrators, "sudo" or
	// "wheel"; "" when it has neither.
	sudoGroup string
}

// baseAccounts are the base image's account files; missing ones are "".
type baseAccounts struct {
	passwd, group, shadow, gshadow, subuid, subgid string
}

// mergeAccounts keeps the base image's system accounts, drops its people,
// and adds the persona. created dates the password change in /etc/shadow.
func (p *Persona) mergeAccounts(b baseAccounts, created time.Time) accountFiles {
	if b.passwd == "" {
		b.passwd = "root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
	}
	if b.group == "" {
		b.group = "root:x:0:\nnogroup:x:65534:\n"
	}
	var out accountFiles
	droppedUsers := map[string]bool{}
	var keptUsers []string
	var passwd []string
	for _, line := range lines(b.passwd) {
		f := strings.Split(line, ":")
		if len(f) != 7 {
			passwd = append(passwd, line)
			continue
		}
		uid, err := strconv.ParseUint(f[2], 10, 32)
		if (err == nil && (isHumanID(uid) || uid == uint64(p.UID))) || f[0] == p.UserName {
			droppedUsers[f[0]] = true
			continue
		}
		keptUsers = append(keptUsers, f[0])
		passwd = append(passwd, line)
	}
	passwd = append(passwd, fmt.Sprintf("%s:x:%d:%d:%s,,,:%s:%s", p.UserName, p.UID, p.GID, p.FullName, p.Home, p.Shell))
	out.passwd = joinLines(passwd)

	// Which groups to join depends on which exist.
	existing := map[string]bool{}
	droppedGroups := map[string]bool{}
	for _, line := range lines(b.group) {
		f := strings.Split(line, ":")
		if len(f) != 4 {
			continue
		}
		gid, err := strconv.ParseUint(f[2], 10, 32)
		if (err == nil && (isHumanID(gid) || gid == uint64(p.GID))) || f[0] == p.UserName {
			droppedGroups[f[0]] = true
			continue
		}
		existing[f[0]] = true
		if f[0] == "shadow" && err == nil {
			out.shadowGID = int(gid)
		}
	}
	join := map[string]bool{}
	for _, g := range supplementaryGroups {
		join[g] = existing[g]
	}
	switch {
	case existing["sudo"]:
		out.sudoGroup = "sudo"
	case existing["wheel"]:
		join["wheel"] = true
		out.sudoGroup = "wheel"
	}
	fixMembers := func(members string, group string) string {
		var kept []string
		for _, m := range strings.Split(members, ",") {
			if m != "" && !droppedUsers[m] && m != p.UserName {
				kept = append(kept, m)
			}
		}
		if join[group] {
			kept = append(kept, p.UserName)
		}
		return strings.Join(kept, ",")
	}
	var group []string
	for _, line := range lines(b.group) {
		f := strings.Split(line, ":")
		if len(f) != 4 {
			group = append(group, line)
			continue
		}
		if droppedGroups[f[0]] {
			continue
		}
		f[3] = fixMembers(f[3], f[0])
		if join[f[0]] {
			gid, _ := strconv.ParseUint(f[2], 10, 32)
			out.groups = append(out.groups, uint32(gid))
		}
		group = append(group, strings.Join(f, ":"))
	}
	group = append(group, fmt.Sprintf("%s:x:%d:", p.UserName, p.GID))
	out.group = joinLines(group)

	if b.gshadow == "" {
		// Derive one, as shadow-utils would: system groups are locked.
		var gs []string
		for _, line := range lines(b.group) {
			if f := strings.Split(line, ":"); len(f) == 4 {
				gs = append(gs, f[0]+":*::"+f[3])
			}
		}
		b.gshadow = joinLines(gs)
	}
	var gshadow []string
	for _, line := range lines(b.gshadow) {
		f := strings.Split(line, ":")
		if len(f) != 4 {
			gshadow = append(gshadow, line)
			continue
		}
		if droppedGroups[f[0]] || !existing[f[0]] {
			continue
		}
		f[3] = fixMembers(f[3], f[0])
		gshadow = append(gshadow, strings.Join(f, ":"))
	}
	gshadow = append(gshadow, p.UserName+":!::")
	out.gshadow = joinLines(gshadow)

	day := strconv.FormatInt(created.Unix()/86400, 10)
	if b.shadow == "" {
		var sh []string
		for _, u := range keptUsers {
			sh = append(sh, u+":*:"+day+":0:99999:7:::")
		}
		b.shadow = joinLines(sh)
	}
	var shadow []string
	for _, line := range lines(b.shadow) {
		f := strings.Split(line, ":")
		if len(f) != 9 {
			shadow = append(shadow, line)
			continue
		}
		if droppedUsers[f[0]] || !slices.Contains(keptUsers, f[0]) {
			continue
		}
		if f[0] == "root" && !strings.HasPrefix(f[1], "*") && !strings.HasPrefix(f[1], "!") {
			f[1] = "*" // root is locked on a desktop install; people use sudo
		}
		shadow = append(shadow, strings.Join(f, ":"))
	}
	shadow = append(shadow, fmt.Sprintf("%s:%s:%s:0:99999:7:::", p.UserName, cryptHash(p.rand("password")), day))
	out.shadow = joinLines(shadow)

	out.subuid = p.mergeSubIDs(b.subuid, droppedUsers)
	out.subgid = p.mergeSubIDs(b.subgid, droppedUsers)
	return out
}

// mergeSubIDs rewrites /etc/subuid or /etc/subgid: other people's ranges go,
// the persona gets the first free 65536 ids from 100000, as useradd does.
func (p *Persona) mergeSubIDs(base string, dropped map[string]bool) string {
	var out []string
	next := uint64(100000)
	for _, line := range lines(base) {
		f := strings.Split(line, ":")
		if len(f) == 3 && (dropped[f[0]] || f[0] == p.UserName) {
			continue
		}
		if len(f) == 3 {
			start, err1 := strconv.ParseUint(f[1], 10, 32)
			count, err2 := strconv.ParseUint(f[2], 10, 32)
			if err1 == nil && err2 == nil && start+count > next {
				next = start + count
			}
		}
		out = append(out, line)
	}
	out = append(out, fmt.Sprintf("%s:%d:65536", p.UserName, next))
	return joinLines(out)
}

// cryptHash is a string shaped like a SHA-512 crypt(3) hash ("$6$salt$…").
// It is random, not the hash of any password, so nobody can log in with
// one; the last character carries only two bits, as in a real hash.
func cryptHash(r *rand.Rand) string {
	const alphabet = "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	var b strings.Builder
	b.WriteString("$6$")
	for range 16 {
		b.WriteByte(alphabet[r.IntN(64)])
	}
	b.WriteByte('$')
	for range 21 { // 63 bytes, 4 characters per 3 bytes
		v := r.Uint32() & 0xffffff
		for range 4 {
			b.WriteByte(alphabet[v&63])
			v >>= 6
		}
	}
	last := r.IntN(256) // the 64th byte: 6 bits, then 2
	b.WriteByte(alphabet[last&63])
	b.WriteByte(alphabet[last>>6])
	return b.String()
}

// lines splits a text file into its non-empty lines.
func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

func joinLines(ls []string) string {
	if len(ls) == 0 {
		return ""
	}
	return strings.Join(ls, "\n") + "\n"
}
