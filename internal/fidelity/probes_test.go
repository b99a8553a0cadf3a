package fidelity

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// A real developer laptop's mount table (Ubuntu, systemd).
var laptopMounts = lines(
	"22 28 0:21 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw",
	"23 28 0:22 / /proc rw,nosuid,nodev,noexec,relatime shared:14 - proc proc rw",
	"24 28 0:5 / /dev rw,nosuid,relatime shared:2 - devtmpfs udev rw,size=16281168k,nr_inodes=4070292,mode=755,inode64",
	"25 24 0:23 / /dev/pts rw,nosuid,noexec,relatime shared:3 - devpts devpts rw,gid=5,mode=620,ptmxmode=000",
	"26 28 0:24 / /run rw,nosuid,nodev,noexec,relatime shared:5 - tmpfs tmpfs rw,size=3262880k,mode=755,inode64",
	"28 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw,errors=remount-ro",
	"29 22 0:6 / /sys/kernel/security rw,nosuid,nodev,noexec,relatime shared:8 - securityfs securityfs rw",
	"30 24 0:25 / /dev/shm rw,nosuid,nodev shared:4 - tmpfs tmpfs rw,inode64",
	"31 26 0:26 / /run/lock rw,nosuid,nodev,noexec,relatime shared:6 - tmpfs tmpfs rw,size=5120k,inode64",
	"32 22 0:27 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot",
	"33 22 0:28 / /sys/fs/pstore rw,nosuid,nodev,noexec,relatime shared:10 - pstore pstore rw",
	"34 22 0:29 / /sys/firmware/efi/efivars rw,nosuid,nodev,noexec,relatime shared:11 - efivarfs efivarfs rw",
	"35 22 0:30 / /sys/fs/bpf rw,nosuid,nodev,noexec,relatime shared:12 - bpf bpf rw,mode=700",
	"36 23 0:31 / /proc/sys/fs/binfmt_misc rw,relatime shared:13 - autofs systemd-1 rw,fd=29,pgrp=1,timeout=0,minproto=5,maxproto=5,direct",
	"37 24 0:20 / /dev/mqueue rw,nosuid,nodev,noexec,relatime shared:15 - mqueue mqueue rw",
	"38 22 0:7 / /sys/kernel/debug rw,nosuid,nodev,noexec,relatime shared:16 - debugfs debugfs rw",
	"39 22 0:12 / /sys/kernel/tracing rw,nosuid,nodev,noexec,relatime shared:17 - tracefs tracefs rw",
	"40 22 0:32 / /sys/fs/fuse/connections rw,nosuid,nodev,noexec,relatime shared:18 - fusectl fusectl rw",
	"41 22 0:33 / /sys/kernel/config rw,nosuid,nodev,noexec,relatime shared:19 - configfs configfs rw",
	"60 28 259:1 / /boot/efi rw,relatime shared:31 - vfat /dev/nvme0n1p1 rw,fmask=0077,dmask=0077",
	"61 26 0:45 / /run/user/1000 rw,nosuid,nodev,relatime shared:300 - tmpfs tmpfs rw,size=3262876k,mode=700,uid=1000,gid=1000",
	"62 28 7:1 / /snap/core22/1380 ro,nodev,relatime shared:33 - squashfs /dev/loop1 ro",
	"63 26 0:4 net:[4026532650] /run/docker/netns/4a1e2b3c9d0f rw shared:400 - nsfs nsfs rw",
	"64 28 0:90 / /var/lib/docker/overlay2/0d3c9f8a7b6e5d4c3b2a1f0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c/merged rw,relatime - overlay overlay rw,lowerdir=/var/lib/docker/overlay2/l/ABC:/var/lib/docker/overlay2/l/DEF",
)

// A namespace sandbox's mount table: overlay root, minimal kernel mounts.
var sandboxMounts = lines(
	"100 99 0:50 / / rw,relatime - overlay overlay rw,lowerdir=/var/lib/verisim/layers/3f2a9c/fs:/var/lib/verisim/layers/77b1e0/fs,upperdir=/var/lib/verisim/sb/s1/upper,workdir=/var/lib/verisim/sb/s1/work",
	"101 100 0:51 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw",
	"102 100 0:52 / /dev rw,nosuid - tmpfs tmpfs rw,mode=755",
	"103 102 0:53 / /dev/pts rw - devpts devpts rw,mode=620,ptmxmode=666",
	"104 100 0:54 / /tmp rw - tmpfs tmpfs rw",
	"105 100 0:21 / /sys ro,nosuid,nodev,noexec - sysfs sysfs ro",
)

// Docker's masks and bind mounts.
var dockerMounts = lines(
	"500 480 0:60 / / rw,relatime - ext4 /dev/sda1 rw",
	"501 500 259:2 /var/lib/docker/containers/0d3c9f8a7b6e5d4c3b2a1f0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c/hosts /etc/hosts rw,relatime - ext4 /dev/sda1 rw",
	"502 500 0:70 / /proc rw - proc proc rw",
	"503 502 0:71 /null /proc/kcore rw,nosuid - tmpfs tmpfs rw,size=65536k,mode=755",
)

// A repository a developer has worked in for years.
var realRepo = kv(
	"repo", "/home/maya/src/widget",
	"shallow", "false",
	"count", "1432",
	"remotes", lines("origin\tgit@github.com:acme/widget.git (fetch)", "origin\tgit@github.com:acme/widget.git (push)"),
	"authors", lines("    812 Maya Lindqvist <maya@acme.io>", "    402 Tom Okafor <tom@acme.io>", "     9 dependabot[bot] <49699333+dependabot[bot]@users.noreply.github.com>"),
	"identity", lines("name=Maya Lindqvist", "email=maya@acme.io"),
	"now", "1750000000",
	"dates", lines("1749990000 1749990100", "1749900000 1749900000", "1748000000 1748000500", "1700000000 1700000000"),
	"mtimes", lines("1749990000", "1749000000", "1745000000", "1745000000", "1700000000", "1749999000"),
)

// spreadStamps renders n mtimes spread over a year before 1750000000.
func spreadStamps(n int) string {
	return repeatLines(n, func(i int) string { return fmt.Sprint(1750000000 - int64(i)*86400*7) })
}

// sameStamps renders n identical mtimes.
func sameStamps(n int) string {
	return repeatLines(n, func(int) string { return "1750000000" })
}

var laptopStatus = lines("CapInh:\t0000000000000000", "CapPrm:\t0000000000000000", "CapEff:\t0000000000000000",
	"CapBnd:\t000001ffffffffff", "CapAmb:\t0000000000000000", "NoNewPrivs:\t0", "Seccomp:\t0")

var laptopStatusOut = kv("status", laptopStatus, "cap_last_cap", "40", "uid", "1000")

var laptopProcs = kv("ps", lines(
	psLine(1, 0, "systemd", "/sbin/init splash"),
	psLine(2, 0, "kthreadd", ""),
	repeatLines(120, func(i int) string { return psLine(100+i, 2, fmt.Sprintf("kworker/%d:1", i), "") }),
	repeatLines(80, func(i int) string { return psLine(1000+i, 1, "gnome-shell", "/usr/bin/gnome-shell") }),
	psLine(4242, 1, "bash", "-bash"),
))

var devLaptop = lines("autofs", "block", "bsg", "btrfs-control", "bus", "char", "console", "core", "cpu", "cpu_dma_latency",
	"cuse", "disk", "dri", "drm_dp_aux0", "fd", "full", "fuse", "hidraw0", "hpet", "hugepages", "hwrng", "i2c-0", "initctl",
	"input", "kmsg", "kvm", "log", "loop0", "loop-control", "mapper", "mcelog", "mem", "mqueue", "net", "null", "nvme0",
	"nvme0n1", "nvme0n1p1", "nvme0n1p2", "port", "ppp", "psaux", "ptmx", "pts", "random", "rfkill", "rtc", "rtc0", "shm",
	"snapshot", "snd", "stderr", "stdin", "stdout", "tpm0", "tty", "tty0", "tty1", "ttyS0", "uhid", "uinput", "urandom",
	"usb", "userfaultfd", "vcs", "vcsa", "vfio", "vga_arbiter", "vhost-net", "video0", "zero")

var devSandbox = lines("console", "fd", "full", "null", "ptmx", "pts", "random", "shm", "stderr", "stdin", "stdout", "tty", "urandom", "zero")

var laptopEnv = lines("HOME", "USER", "LOGNAME", "SHELL", "PATH", "LANG", "TERM", "PWD", "SHLVL", "XDG_RUNTIME_DIR",
	"XDG_SESSION_ID", "XDG_SESSION_TYPE", "DBUS_SESSION_BUS_ADDRESS", "SSH_AUTH_SOCK", "EDITOR", "DISPLAY", "COLORTERM",
	"GOPATH", "MAIL", "OLDPWD", "LESSOPEN", "LS_COLORS", "_")

var laptopPasswd = lines(
	"root:x:0:0:root:/root:/bin/bash",
	"daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin",
	"systemd-network:x:998:998:systemd Network Management:/:/usr/sbin/nologin",
	"messagebus:x:101:102::/nonexistent:/usr/sbin/nologin",
	"maya:x:1000:1000:Maya Lindqvist,,,:/home/maya:/bin/bash",
	"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin",
)

var laptopHome = kv("home", "/home/maya", "uid", "1000", "exists", "yes", "owner", "1000", "writable", "yes", "entries", "41", "passwd_home", "/home/maya")

var laptopTZ = kv("tz", "", "localtime", "/usr/share/zoneinfo/Europe/Stockholm", "timezone_file", "Europe/Stockholm", "abbrev", "CEST")

type probeCase struct {
	probe string
	name  string
	want  Status
	// out is what every script prints; files are served by ReadFile/Stat.
	out   string
	files map[string]string
	// ref, when set, is the reference machine's output for the probe.
	ref string
}

func probeCases() []probeCase {
	tool := lines("git", "gcc", "cc", "make", "vim", "nano", "less", "man", "ps", "curl", "wget", "ssh", "sudo", "python3", "tar", "diff", "grep", "sed", "awk", "find")
	return []probeCase{
		{probe: "dockerenv-file", name: "present", want: StatusTell, files: map[string]string{"/.dockerenv": ""}},
		{probe: "dockerenv-file", name: "absent", want: StatusOK},
		{probe: "containerenv-file", name: "present", want: StatusTell, files: map[string]string{"/run/.containerenv": "engine=\"podman\""}},
		{probe: "containerenv-file", name: "absent", want: StatusOK},

		{probe: "container-env-marker", name: "pid1 container=", want: StatusTell, out: kv("pid1", "container=docker", "self", "")},
		{probe: "container-env-marker", name: "kubernetes in shell", want: StatusTell, out: kv("pid1", "<unreadable>", "self", "KUBERNETES_SERVICE_HOST=10.96.0.1")},
		{probe: "container-env-marker", name: "clean", want: StatusOK, out: kv("pid1", "<unreadable>", "self", "")},

		{probe: "env-markers", name: "dockerfile leftovers", want: StatusTell, out: kv("names", lines("HOME", "DEBIAN_FRONTEND", "PATH"), "values", "")},
		{probe: "env-markers", name: "task value", want: StatusTell, out: kv("names", lines("HOME", "WORKDIR"), "values", "WORKDIR=/testbed")},
		{probe: "env-markers", name: "harness prefix", want: StatusTell, out: kv("names", lines("HOME", "VERISIM_EPISODE"), "values", "")},
		{probe: "env-markers", name: "desktop", want: StatusOK, out: kv("names", laptopEnv, "values", "")},
		{probe: "env-markers", name: "set on the reference too", want: StatusOK,
			out: kv("names", lines("HOME", "DEBIAN_FRONTEND"), "values", ""), ref: kv("names", lines("HOME", "USER", "DEBIAN_FRONTEND"), "values", "")},

		{probe: "verisim-strings", name: "etc mentions", want: StatusTell, out: kv("etc", "/etc/verisim/persona.yaml", "home", "", "names", "", "env", "")},
		{probe: "verisim-strings", name: "env mentions", want: StatusTell, out: kv("etc", "", "home", "", "names", "", "env", "VERISIM_TASK")},
		{probe: "verisim-strings", name: "clean", want: StatusOK, out: kv("etc", "", "home", "", "names", "", "env", "")},
		{probe: "verisim-strings", name: "installed on the reference too", want: StatusOK,
			out: kv("etc", "", "home", "", "names", "/usr/local/bin/verisim", "env", ""),
			ref: kv("etc", "", "home", "/home/ana/.bashrc", "names", "/usr/local/bin/verisim", "env", "")},

		{probe: "workspace-dirs", name: "testbed", want: StatusTell, out: kv("root", lines(strings.Fields(strings.Join(standardRoot, " "))...)+"\ntestbed")},
		{probe: "workspace-dirs", name: "task dir", want: StatusTell, out: kv("root", strings.Join(standardRoot, "\n")+"\ntask-1234")},
		{probe: "workspace-dirs", name: "no boot", want: StatusTell, out: kv("root", strings.ReplaceAll(strings.Join(standardRoot, "\n"), "boot\n", ""))},
		{probe: "workspace-dirs", name: "installed system", want: StatusOK, out: kv("root", strings.Join(standardRoot, "\n")+"\nsnap\nlost+found\ncdrom\nswap.img")},

		{probe: "shell-cwd", name: "testbed", want: StatusTell, out: kv("cwd", "/testbed", "home", "/home/maya")},
		{probe: "shell-cwd", name: "root dir", want: StatusTell, out: kv("cwd", "/", "home", "/home/maya")},
		{probe: "shell-cwd", name: "tmp", want: StatusTell, out: kv("cwd", "/tmp/run", "home", "/home/maya")},
		{probe: "shell-cwd", name: "task-numbered", want: StatusTell, out: kv("cwd", "/home/maya/task-42", "home", "/home/maya")},
		{probe: "shell-cwd", name: "project in home", want: StatusOK, out: kv("cwd", "/home/maya/src/widget", "home", "/home/maya")},
		{probe: "shell-cwd", name: "hex-named dir in home", want: StatusTell, out: kv("cwd", "/home/maya/0d3c9f8a7b6e5d4c3b2a1f0e9d8c7b6a", "home", "/home/maya")},
		{probe: "shell-cwd", name: "server checkout", want: StatusOK, out: kv("cwd", "/srv/www/shop", "home", "/home/maya")},
		{probe: "shell-cwd", name: "no output", want: StatusError, out: kv("cwd", "", "home", "/home/maya")},

		{probe: "hostname", name: "container id", want: StatusTell, out: kv("kernel", "3f9a2b7c1d4e", "etc_present", "yes", "etc", "3f9a2b7c1d4e")},
		{probe: "hostname", name: "sandbox word", want: StatusTell, out: kv("kernel", "sandbox-7", "etc_present", "yes", "etc", "sandbox-7")},
		{probe: "hostname", name: "localhost", want: StatusTell, out: kv("kernel", "localhost", "etc_present", "yes", "etc", "localhost")},
		{probe: "hostname", name: "pod", want: StatusTell, out: kv("kernel", "web-7d9f8b6c5-x2k4j", "etc_present", "yes", "etc", "web-7d9f8b6c5-x2k4j")},
		{probe: "hostname", name: "runner id", want: StatusTell, out: kv("kernel", "fv-az178x3k2-77", "etc_present", "yes", "etc", "fv-az178x3k2-77")},
		{probe: "hostname", name: "etc disagrees", want: StatusTell, out: kv("kernel", "maya-thinkpad", "etc_present", "yes", "etc", "debian")},
		{probe: "hostname", name: "no etc hostname", want: StatusTell, out: kv("kernel", "maya-thinkpad", "etc_present", "no", "etc", "")},
		{probe: "hostname", name: "laptop", want: StatusOK, out: kv("kernel", "maya-thinkpad", "etc_present", "yes", "etc", "maya-thinkpad")},

		{probe: "etc-hosts", name: "docker address", want: StatusTell,
			out: kv("present", "yes", "hosts", lines("127.0.0.1\tlocalhost", "172.17.0.2\tmaya-thinkpad"), "hostname", "maya-thinkpad")},
		{probe: "etc-hosts", name: "kubernetes", want: StatusTell,
			out: kv("present", "yes", "hosts", lines("# Kubernetes-managed hosts file.", "127.0.0.1\tlocalhost"), "hostname", "maya-thinkpad")},
		{probe: "etc-hosts", name: "missing", want: StatusTell, out: kv("present", "no", "hosts", "", "hostname", "maya-thinkpad")},
		{probe: "etc-hosts", name: "debian", want: StatusOK,
			out: kv("present", "yes", "hosts", lines("127.0.0.1 localhost", "127.0.1.1 maya-thinkpad", "::1 ip6-localhost ip6-loopback"), "hostname", "maya-thinkpad")},

		{probe: "resolv-conf", name: "docker dns", want: StatusTell, out: kv("present", "yes", "conf", "nameserver 127.0.0.11\noptions ndots:0")},
		{probe: "resolv-conf", name: "cluster", want: StatusTell, out: kv("present", "yes", "conf", "search default.svc.cluster.local svc.cluster.local\nnameserver 10.96.0.10")},
		{probe: "resolv-conf", name: "missing", want: StatusTell, out: kv("present", "no", "conf", "")},
		{probe: "resolv-conf", name: "resolved", want: StatusOK, out: kv("present", "yes", "conf", "nameserver 127.0.0.53\noptions edns0 trust-ad\nsearch lan")},

		{probe: "machine-id", name: "uninitialized", want: StatusTell, files: map[string]string{"/etc/machine-id": "uninitialized\n"}},
		{probe: "machine-id", name: "missing", want: StatusTell},
		{probe: "machine-id", name: "empty", want: StatusTell, files: map[string]string{"/etc/machine-id": ""}},
		{probe: "machine-id", name: "valid", want: StatusOK, files: map[string]string{"/etc/machine-id": "4c4c4544003510488046b4c04f503532\n"}},

		{probe: "passwd-users", name: "agent account", want: StatusTell, out: kv("uid", "1000", "user", "agent"),
			files: map[string]string{"/etc/passwd": strings.ReplaceAll(laptopPasswd, "maya", "agent")}},
		{probe: "passwd-users", name: "uid not in passwd", want: StatusTell, out: kv("uid", "1001", "user", ""),
			files: map[string]string{"/etc/passwd": laptopPasswd}},
		{probe: "passwd-users", name: "no passwd", want: StatusTell, out: kv("uid", "1000", "user", "")},
		{probe: "passwd-users", name: "no system accounts unlike the reference", want: StatusTell, out: kv("uid", "1000", "user", "maya"),
			files: map[string]string{"/etc/passwd": lines("root:x:0:0:root:/root:/bin/bash", "maya:x:1000:1000::/home/maya:/bin/bash")},
			ref:   kv("uid", "1000", "user", "ana", "passwd", laptopPasswd, "passwd_found", "yes")},
		{probe: "passwd-users", name: "laptop", want: StatusOK, out: kv("uid", "1000", "user", "maya"),
			files: map[string]string{"/etc/passwd": laptopPasswd}},

		{probe: "user-groups", name: "own group only", want: StatusTell, out: kv("groups", "maya")},
		{probe: "user-groups", name: "developer", want: StatusOK, out: kv("groups", "maya adm cdrom sudo dip plugdev docker")},

		{probe: "running-as-root", name: "root", want: StatusTell, out: kv("uid", "0")},
		{probe: "running-as-root", name: "user", want: StatusOK, out: kv("uid", "1000")},

		{probe: "home-dir", name: "unset", want: StatusTell, out: with(laptopHome, "home", "")},
		{probe: "home-dir", name: "missing", want: StatusTell, out: with(laptopHome, "exists", "no")},
		{probe: "home-dir", name: "foreign owner", want: StatusTell, out: with(laptopHome, "owner", "0")},
		{probe: "home-dir", name: "nearly empty", want: StatusTell, out: with(laptopHome, "entries", "2")},
		{probe: "home-dir", name: "passwd disagrees", want: StatusTell, out: with(laptopHome, "passwd_home", "/home/agent")},
		{probe: "home-dir", name: "scratch", want: StatusTell, out: with(laptopHome, "home", "/tmp/home", "passwd_home", "/tmp/home")},
		{probe: "home-dir", name: "lived in", want: StatusOK, out: laptopHome},
		{probe: "home-dir", name: "owner unknown without stat", want: StatusOK, out: with(laptopHome, "owner", "")},

		{probe: "dotfiles", name: "no gitconfig", want: StatusTell, out: kv("present", lines(".bashrc", ".profile"))},
		{probe: "dotfiles", name: "none", want: StatusTell, out: kv("present", "")},
		{probe: "dotfiles", name: "zsh user", want: StatusOK, out: kv("present", lines(".zshrc", ".zprofile", ".config/git/config"))},

		{probe: "dotdirs", name: "no cache", want: StatusTell, out: kv("dirs", ".config 3")},
		{probe: "dotdirs", name: "empty config", want: StatusTell, out: kv("dirs", lines(".cache 4", ".config 0"))},
		{probe: "dotdirs", name: "used", want: StatusOK, out: kv("dirs", lines(".cache 14", ".config 22", ".local 2", ".ssh 4"))},

		{probe: "shell-history", name: "no file", want: StatusTell, out: kv("files", "")},
		{probe: "shell-history", name: "short", want: StatusTell, out: kv("files", "3 /home/maya/.bash_history")},
		{probe: "shell-history", name: "short against a long reference", want: StatusTell,
			out: kv("files", "60 /home/maya/.bash_history"), ref: kv("files", "5000 /home/ana/.zsh_history")},
		{probe: "shell-history", name: "months", want: StatusOK, out: kv("files", lines("1800 /home/maya/.bash_history", "1800 /home/maya/.bash_history"))},

		{probe: "history-mentions-task", name: "testbed", want: StatusTell, out: kv("hits", "cd /testbed && pytest")},
		{probe: "history-mentions-task", name: "clean", want: StatusOK, out: kv("hits", "")},
		{probe: "history-mentions-task", name: "no grep", want: StatusError, out: kv("error", "grep is not installed")},

		{probe: "home-mtimes", name: "one second", want: StatusTell, out: kv("now", "1750000100", "mtimes", sameStamps(30))},
		{probe: "home-mtimes", name: "one afternoon", want: StatusTell,
			out: kv("now", "1750100000", "mtimes", repeatLines(30, func(i int) string { return fmt.Sprint(1750000000 + i*60) }))},
		{probe: "home-mtimes", name: "a year", want: StatusOK, out: kv("now", "1750000100", "mtimes", spreadStamps(60))},

		{probe: "tmp-contents", name: "no stat", want: StatusOK, out: kv("now", "1750000000", "entries", lines("- .X11-unix", "- .ICE-unix", "- tmux-1000"))},
		{probe: "tmp-contents", name: "empty", want: StatusTell, out: kv("now", "1750000000", "entries", "")},
		{probe: "tmp-contents", name: "task files", want: StatusTell, out: kv("now", "1750000000", "entries", lines("1749000000 .X11-unix", "1749999000 hidden_tests.py"))},
		{probe: "tmp-contents", name: "one second", want: StatusTell, out: kv("now", "1750000000", "entries", lines("1749000000 a", "1749000000 b", "1749000000 c"))},
		{probe: "tmp-contents", name: "session", want: StatusOK,
			out: kv("now", "1750000000", "entries", lines("1749000000 .X11-unix", "1749000010 .ICE-unix", "1749990000 systemd-private-1a2b-colord.service-x", "1749999000 tmux-1000"))},

		{probe: "env-login-vars", name: "no USER", want: StatusTell, out: kv("names", strings.ReplaceAll(laptopEnv, "USER\n", ""))},
		{probe: "env-login-vars", name: "bare exec", want: StatusTell, out: kv("names", lines("HOME", "USER", "LOGNAME", "SHELL", "PATH"))},
		{probe: "env-login-vars", name: "login", want: StatusOK, out: kv("names", laptopEnv)},

		{probe: "path-entries", name: "docker default", want: StatusTell, out: kv("path", dockerPath, "uid", "1000")},
		{probe: "path-entries", name: "relative", want: StatusTell, out: kv("path", ".:/usr/local/bin:/usr/bin:/bin", "uid", "1000")},
		{probe: "path-entries", name: "root's dirs", want: StatusTell, out: kv("path", "/root/.cargo/bin:/usr/bin:/bin", "uid", "1000")},
		{probe: "path-entries", name: "image dirs", want: StatusTell, out: kv("path", "/go/bin:/usr/local/go/bin:/usr/bin:/bin", "uid", "1000")},
		{probe: "path-entries", name: "login", want: StatusOK,
			out: kv("path", "/home/maya/.local/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/usr/games:/usr/local/games:/snap/bin", "uid", "1000")},

		{probe: "locale", name: "unset", want: StatusTell, out: kv("lang", "", "lc_all", "", "lc_ctype", "", "warnings", "")},
		{probe: "locale", name: "posix", want: StatusTell, out: kv("lang", "en_US.UTF-8", "lc_all", "POSIX", "lc_ctype", "", "warnings", "")},
		{probe: "locale", name: "not generated", want: StatusTell,
			out: kv("lang", "de_DE.UTF-8", "lc_all", "", "lc_ctype", "", "warnings", "locale: Cannot set LC_CTYPE to default locale: No such file or directory")},
		{probe: "locale", name: "utf-8", want: StatusOK, out: kv("lang", "en_US.UTF-8", "lc_all", "", "lc_ctype", "", "warnings", "")},

		{probe: "timezone", name: "no localtime", want: StatusTell, out: kv("tz", "", "localtime", "missing", "timezone_file", "", "abbrev", "UTC")},
		{probe: "timezone", name: "utc", want: StatusTell, out: with(laptopTZ, "localtime", "/usr/share/zoneinfo/Etc/UTC", "timezone_file", "Etc/UTC", "abbrev", "UTC")},
		{probe: "timezone", name: "utc like the reference", want: StatusOK,
			out: with(laptopTZ, "localtime", "/usr/share/zoneinfo/Etc/UTC", "abbrev", "UTC"),
			ref: with(laptopTZ, "localtime", "/usr/share/zoneinfo/Etc/UTC", "timezone_file", "Etc/UTC", "abbrev", "UTC")},
		{probe: "timezone", name: "local", want: StatusOK, out: laptopTZ},

		{probe: "term", name: "unset", want: StatusTell, out: kv("term", "")},
		{probe: "term", name: "dumb", want: StatusTell, out: kv("term", "dumb")},
		{probe: "term", name: "emulator", want: StatusOK, out: kv("term", "xterm-256color")},

		{probe: "tools", name: "no git", want: StatusTell, out: kv("found", strings.ReplaceAll(tool, "git\n", ""))},
		{probe: "tools", name: "stripped", want: StatusTell, out: kv("found", lines("git", "gcc", "vi", "grep", "sed"))},
		{probe: "tools", name: "reference has more", want: StatusTell, out: kv("found", tool), ref: kv("found", tool+"\nclang")},
		{probe: "tools", name: "workstation", want: StatusOK, out: kv("found", tool)},

		{probe: "utmp-session", name: "nobody", want: StatusTell, out: kv("utmp", "no", "who", "0", "runtime_dir", "", "run_user", "no")},
		{probe: "utmp-session", name: "logged in", want: StatusOK, out: kv("utmp", "yes", "who", "2", "runtime_dir", "/run/user/1000", "run_user", "yes")},

		{probe: "process-names", name: "tini and sleep", want: StatusTell, out: kv("ps", lines(
			psLine(1, 0, "tini", "/sbin/tini -- sleep infinity"), psLine(7, 1, "sleep", "sleep infinity ")))},
		{probe: "process-names", name: "idle keeper", want: StatusTell, out: kv("ps", lines(
			psLine(1, 0, "systemd", "/sbin/init"), psLine(7, 1, "tail", "/usr/bin/tail -f /dev/null")))},
		{probe: "process-names", name: "probe shells left out", want: StatusOK, out: kv("ps", lines(
			psLine(1, 0, "systemd", "/sbin/init splash"),
			psLine(50, 1, "sh", "/bin/sh -c : fidelity-probe fact() { …verisim… }"),
			psLine(51, 50, "awk", "awk tolower($0) ~ /verisim|sandbox/"),
			psLine(52, 51, "grep", "grep -i verisim")))},
		{probe: "process-names", name: "desktop", want: StatusOK, out: laptopProcs},

		{probe: "process-count", name: "bare namespace", want: StatusTell, out: kv("ps", lines(
			psLine(1, 0, "verisim-init", "/verisim-init"), psLine(2, 1, "bash", "bash")))},
		{probe: "process-count", name: "inflated by probes only", want: StatusTell, out: kv("ps", lines(
			psLine(1, 0, "init", "/sbin/init"),
			repeatLines(80, func(i int) string { return psLine(10+i, 1, "sh", "/bin/sh -c : fidelity-probe x") })))},
		{probe: "process-count", name: "small reference", want: StatusOK, out: kv("ps", lines(
			psLine(1, 0, "init", "/sbin/init"), psLine(2, 1, "sshd", "sshd"), psLine(3, 2, "bash", "-bash"))),
			ref: kv("count", "10", "procs", "init\t/sbin/init")},
		{probe: "process-count", name: "desktop", want: StatusOK, out: laptopProcs},

		{probe: "pid1-name", name: "custom init", want: StatusTell, out: kv("comm", "verisim-init", "cmdline", "/.verisim/init")},
		{probe: "pid1-name", name: "renamed", want: StatusTell, out: kv("comm", "systemd", "cmdline", "/opt/sandboxd --serve")},
		{probe: "pid1-name", name: "systemd", want: StatusOK, out: kv("comm", "systemd", "cmdline", "/sbin/init splash")},
		{probe: "pid1-name", name: "unreadable", want: StatusError, out: kv("comm", "", "cmdline", "")},

		{probe: "shell-pid", name: "tiny", want: StatusTell, out: kv("pid", "12")},
		{probe: "shell-pid", name: "after boot", want: StatusOK, out: kv("pid", "48213")},

		{probe: "pid1-start", name: "late init", want: StatusTell, out: kv("stat", pid1Stat(360000), "uptime", "100000.00 390000.00", "hz", "100")},
		{probe: "pid1-start", name: "booted", want: StatusOK, out: kv("stat", pid1Stat(52), "uptime", "100000.00 390000.00", "hz", "100")},
		{probe: "pid1-start", name: "garbled", want: StatusError, out: kv("stat", "garbage", "uptime", "1.0 1.0", "hz", "100")},

		{probe: "uptime", name: "fresh boot", want: StatusTell, out: kv("uptime", "42.17 80.03")},
		{probe: "uptime", name: "days", want: StatusOK, out: kv("uptime", "352310.55 2710000.10")},

		{probe: "init-system", name: "systemctl without systemd", want: StatusTell, out: kv("systemd_dir", "no", "systemctl", "yes", "pid1", "bash")},
		{probe: "init-system", name: "faked dir", want: StatusTell, out: kv("systemd_dir", "yes", "systemctl", "yes", "pid1", "sh")},
		{probe: "init-system", name: "reference has systemd", want: StatusTell, out: kv("systemd_dir", "no", "systemctl", "no", "pid1", "init"),
			ref: kv("systemd_dir", "yes", "systemctl", "yes", "pid1", "systemd")},
		{probe: "init-system", name: "systemd", want: StatusOK, out: kv("systemd_dir", "yes", "systemctl", "yes", "pid1", "systemd")},

		{probe: "cgroup-self", name: "cgroup namespace root", want: StatusTell, out: kv("cgroup", "0::/")},
		{probe: "cgroup-self", name: "docker", want: StatusTell, out: kv("cgroup", "0::/system.slice/docker-0d3c9f8a7b6e5d4c3b2a1f0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c.scope")},
		{probe: "cgroup-self", name: "session", want: StatusOK, out: kv("cgroup", "0::/user.slice/user-1000.slice/session-2.scope")},
		{probe: "cgroup-self", name: "gnome terminal", want: StatusOK,
			out: kv("cgroup", "0::/user.slice/user-1000.slice/user@1000.service/app.slice/app-org.gnome.Terminal.slice/vte-spawn-1b9e7c2a-4f6d-4a51-9c1e-2f1f0f3a7b44.scope")},
		{probe: "cgroup-self", name: "root like the reference", want: StatusOK, out: kv("cgroup", lines("1:name=systemd:/", "0::/")), ref: kv("cgroup", "0::/")},
		{probe: "pid1-cgroup", name: "cgroup namespace root", want: StatusTell, out: kv("cgroup", "0::/")},
		{probe: "pid1-cgroup", name: "kubepods", want: StatusTell, out: kv("cgroup", "0::/kubepods/burstable/pod1234")},
		{probe: "pid1-cgroup", name: "init scope", want: StatusOK, out: kv("cgroup", "0::/init.scope")},
		{probe: "pid1-cgroup", name: "above the namespace root", want: StatusTell, out: kv("cgroup", "8:pids:/..\n4:memory:/")},
		{probe: "pid1-cgroup", name: "unreadable", want: StatusError, out: kv("cgroup", "")},

		{probe: "cgroupfs", name: "missing", want: StatusTell, out: kv("present", "no", "entries", "0")},
		{probe: "cgroupfs", name: "empty", want: StatusTell, out: kv("present", "yes", "entries", "0")},
		{probe: "cgroupfs", name: "mounted", want: StatusOK, out: kv("present", "yes", "entries", "31")},

		{probe: "memory-limit", name: "limited", want: StatusTell, out: kv("memtotal", "131072000", "limits", "/ memory.max 4294967296")},
		{probe: "memory-limit", name: "v1 limited", want: StatusTell,
			out: kv("memtotal", "131072000", "limits", lines("/docker/abc memory.limit_in_bytes 2147483648", "/ memory.limit_in_bytes 9223372036854771712"))},
		{probe: "memory-limit", name: "unlimited", want: StatusOK, out: kv("memtotal", "32768000", "limits", "/user.slice memory.max max")},
		{probe: "memory-limit", name: "no meminfo", want: StatusError, out: kv("memtotal", "", "limits", "")},

		{probe: "cpu-limit", name: "quota", want: StatusTell, out: kv("nproc", "64", "cpuinfo", "64", "limits", "/ cpu.max 200000 100000")},
		{probe: "cpu-limit", name: "v1 quota", want: StatusTell, out: kv("nproc", "32", "cpuinfo", "32", "limits", lines("/ cpu.cfs_quota_us 400000", "/ cpu.cfs_period_us 100000"))},
		{probe: "cpu-limit", name: "cpuset", want: StatusTell, out: kv("nproc", "4", "cpuinfo", "64", "limits", "")},
		{probe: "cpu-limit", name: "unlike the reference", want: StatusTell, out: kv("nproc", "192", "cpuinfo", "192", "limits", ""),
			ref: kv("nproc", "8", "cpuinfo", "8", "limits", "")},
		{probe: "cpu-limit", name: "laptop", want: StatusOK, out: kv("nproc", "8", "cpuinfo", "8", "limits", "/user.slice cpu.max max 100000")},

		{probe: "net-interfaces", name: "loopback only", want: StatusTell, out: kv("ifaces", "lo 00:00:00:00:00:00")},
		{probe: "net-interfaces", name: "docker mac", want: StatusTell, out: kv("ifaces", lines("eth0 02:42:ac:11:00:02", "lo 00:00:00:00:00:00"))},
		{probe: "net-interfaces", name: "laptop", want: StatusOK, out: kv("ifaces", lines("enp0s31f6 54:e1:ad:12:34:56", "lo 00:00:00:00:00:00", "wlp0s20f3 a4:c3:f0:11:22:33"))},

		{probe: "no-new-privs", name: "set", want: StatusTell, out: with(laptopStatusOut, "status", strings.Replace(laptopStatus, "NoNewPrivs:\t0", "NoNewPrivs:\t1", 1))},
		{probe: "no-new-privs", name: "clear", want: StatusOK, out: laptopStatusOut},
		{probe: "no-new-privs", name: "old kernel", want: StatusError, out: with(laptopStatusOut, "status", "CapBnd:\t000001ffffffffff")},
		{probe: "seccomp", name: "filtered", want: StatusTell, out: with(laptopStatusOut, "status", strings.Replace(laptopStatus, "Seccomp:\t0", "Seccomp:\t2", 1))},
		{probe: "seccomp", name: "none", want: StatusOK, out: laptopStatusOut},
		{probe: "capabilities", name: "docker default", want: StatusTell, out: with(laptopStatusOut, "status", strings.Replace(laptopStatus, "000001ffffffffff", "00000000a80425fb", 1))},
		{probe: "capabilities", name: "trimmed", want: StatusTell, out: with(laptopStatusOut, "status", strings.Replace(laptopStatus, "000001ffffffffff", "000001fffeffffff", 1))},
		{probe: "capabilities", name: "user holds caps", want: StatusTell,
			out: with(laptopStatusOut, "status", strings.Replace(laptopStatus, "CapEff:\t0000000000000000", "CapEff:\t0000000000003000", 1))},
		{probe: "capabilities", name: "full set", want: StatusOK, out: laptopStatusOut},
		{probe: "capabilities", name: "old kernel's full set", want: StatusOK,
			out: kv("status", strings.Replace(laptopStatus, "000001ffffffffff", "0000003fffffffff", 1), "cap_last_cap", "37", "uid", "1000")},

		{probe: "user-namespace", name: "mapped", want: StatusTell, out: kv("uid_map", "         0       1000          1", "gid_map", "         0       1000          1")},
		{probe: "user-namespace", name: "identity", want: StatusOK, out: kv("uid_map", "         0          0 4294967295", "gid_map", "         0          0 4294967295")},

		{probe: "dev-entries", name: "minimal", want: StatusTell, out: kv("entries", devSandbox)},
		{probe: "dev-entries", name: "unlike the reference", want: StatusTell, out: kv("entries", devSandbox+"\nsda"), ref: kv("entries", devLaptop)},
		{probe: "dev-entries", name: "laptop", want: StatusOK, out: kv("entries", devLaptop)},
		{probe: "dev-entries", name: "like the reference", want: StatusOK, out: kv("entries", devLaptop+"\ntty2"), ref: kv("entries", devLaptop)},

		{probe: "kernel-log", name: "no kmsg", want: StatusTell, out: kv("kmsg", "no", "readable", "no", "hits", "")},
		{probe: "kernel-log", name: "host events", want: StatusTell, out: kv("kmsg", "yes", "readable", "yes", "hits", "[ 12.3] docker0: port 1(veth1a2b3c) entered forwarding state")},
		{probe: "kernel-log", name: "restricted", want: StatusOK, out: kv("kmsg", "yes", "readable", "no", "hits", "")},

		{probe: "boot-kernel", name: "no modules", want: StatusTell, out: kv("release", "6.8.0-45-generic", "modules", "no", "boot", "")},
		{probe: "boot-kernel", name: "installed", want: StatusOK,
			out: kv("release", "6.8.0-45-generic", "modules", "yes", "boot", lines("config-6.8.0-45-generic", "efi", "grub", "initrd.img-6.8.0-45-generic", "vmlinuz-6.8.0-45-generic"))},

		{probe: "etc-mtimes", name: "one second", want: StatusTell, out: kv("now", "1750000100", "mtimes", sameStamps(80))},
		{probe: "etc-mtimes", name: "last hour", want: StatusTell,
			out: kv("now", "1750000100", "mtimes", repeatLines(40, func(i int) string { return fmt.Sprint(1750000000 - i*30) }))},
		{probe: "etc-mtimes", name: "installed over years", want: StatusOK, out: kv("now", "1750000100", "mtimes", spreadStamps(80))},

		{probe: "mount-sources", name: "verisim overlay", want: StatusTell, out: kv("mountinfo", sandboxMounts)},
		{probe: "mount-sources", name: "neutral overlay", want: StatusTell,
			out: kv("mountinfo", "1 0 0:50 / / rw - overlay overlay rw,lowerdir=/l/0:/l/1,upperdir=/u,workdir=/w")},
		{probe: "mount-sources", name: "docker binds", want: StatusTell, out: kv("mountinfo", dockerMounts)},
		{probe: "mount-sources", name: "laptop running docker", want: StatusOK, out: kv("mountinfo", laptopMounts)},
		{probe: "root-fs-type", name: "overlay", want: StatusTell, out: kv("mountinfo", sandboxMounts)},
		{probe: "root-fs-type", name: "ext4", want: StatusOK, out: kv("mountinfo", laptopMounts)},
		{probe: "root-fs-type", name: "btrfs unlike the reference", want: StatusTell,
			out: kv("mountinfo", "1 0 0:50 /@ / rw - btrfs /dev/sda2 rw"), ref: kv("mountinfo", laptopMounts)},
		{probe: "mount-types", name: "minimal", want: StatusTell, out: kv("mountinfo", sandboxMounts)},
		{probe: "mount-types", name: "lacks the reference's", want: StatusTell, out: kv("mountinfo", strings.Replace(laptopMounts, "bpf bpf", "tmpfs tmpfs", 1)), ref: kv("mountinfo", laptopMounts)},
		{probe: "mount-types", name: "booted", want: StatusOK, out: kv("mountinfo", laptopMounts)},
		{probe: "proc-masking", name: "kcore masked", want: StatusTell, out: kv("mountinfo", dockerMounts)},
		{probe: "proc-masking", name: "sys read-only", want: StatusTell, out: kv("mountinfo", sandboxMounts)},
		{probe: "proc-masking", name: "laptop", want: StatusOK, out: kv("mountinfo", laptopMounts)},

		{probe: "git-single-commit", name: "one commit", want: StatusTell, out: with(realRepo, "count", "1")},
		{probe: "git-single-commit", name: "shallow", want: StatusTell, out: with(realRepo, "shallow", "true", "count", "50")},
		{probe: "git-single-commit", name: "history", want: StatusOK, out: realRepo},
		{probe: "git-single-commit", name: "no repository", want: StatusError, out: kv("error", "no git repository in the working directory")},
		{probe: "git-no-remote", name: "none", want: StatusTell, out: with(realRepo, "remotes", "")},
		{probe: "git-no-remote", name: "local path", want: StatusTell, out: with(realRepo, "remotes", "origin\t/srv/mirror/widget.git (fetch)")},
		{probe: "git-no-remote", name: "forge", want: StatusOK, out: realRepo},
		{probe: "git-synthetic-author", name: "example.com", want: StatusTell, out: with(realRepo, "authors", "      1 Test User <test@example.com>")},
		{probe: "git-synthetic-author", name: "id in name", want: StatusTell, out: with(realRepo, "authors", "      4 Seed 9ec3b48b maintainers <m@acme.io>")},
		{probe: "git-synthetic-author", name: "no identity", want: StatusTell, out: with(realRepo, "identity", "name=\nemail=")},
		{probe: "git-synthetic-author", name: "agent identity", want: StatusTell, out: with(realRepo, "identity", "name=agent\nemail=agent@sandbox.local")},
		{probe: "git-synthetic-author", name: "colleagues", want: StatusOK, out: realRepo},
		{probe: "git-commit-dates", name: "one timestamp", want: StatusTell, out: with(realRepo, "dates", lines("1700000000 1700000000", "1700000000 1700000000", "1700000000 1700000000"))},
		{probe: "git-commit-dates", name: "future", want: StatusTell, out: with(realRepo, "dates", lines("1790000000 1790000000", "1700000000 1700000000"))},
		{probe: "git-commit-dates", name: "scripted burst", want: StatusTell,
			out: with(realRepo, "dates", repeatLines(6, func(i int) string { return fmt.Sprintf("%d %d", 1700000000+i*5, 1700000000+i*5) }))},
		{probe: "git-commit-dates", name: "fresh history", want: StatusTell,
			out: with(realRepo, "dates", repeatLines(4, func(i int) string { return fmt.Sprintf("%d %d", 1749999000+i*300, 1749999000+i*300) }))},
		{probe: "git-commit-dates", name: "years", want: StatusOK, out: realRepo},
		{probe: "repo-mtimes", name: "one second", want: StatusTell, out: with(realRepo, "mtimes", sameStamps(50))},
		{probe: "repo-mtimes", name: "epoch", want: StatusTell, out: with(realRepo, "mtimes", repeatLines(10, func(i int) string { return fmt.Sprint(i) }))},
		{probe: "repo-mtimes", name: "edited", want: StatusOK, out: realRepo},
		{probe: "repo-mtimes", name: "no stat", want: StatusError, out: with(realRepo, "mtimes", "no stat")},
	}
}

// pid1Stat renders /proc/1/stat with the given start time in ticks.
func pid1Stat(start int) string {
	fields := []string{"S", "0", "1", "1", "0", "-1", "4194560", "46000", "1900000", "140", "2100", "300", "900", "2500",
		"900", "20", "0", "1", "0", fmt.Sprint(start), "170000000", "3000"}
	return "1 (systemd) " + strings.Join(fields, " ")
}

func probeByName(t *testing.T, name string) Probe {
	t.Helper()
	for _, p := range Probes() {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("no probe %q", name)
	return Probe{}
}

func TestProbeCases(t *testing.T) {
	for _, tc := range probeCases() {
		t.Run(tc.probe+"/"+tc.name, func(t *testing.T) {
			p := probeByName(t, tc.probe)
			var profile *Profile
			if tc.ref != "" {
				profile = &Profile{Version: ProfileVersion, Observations: map[string]Observation{p.Name: {Facts: parseFacts(tc.ref)}}}
				if profile.reference(p) == nil {
					t.Fatalf("reference output lacks some of %v", p.keys)
				}
			}
			row := auditOne(t.Context(), &fakeSandbox{out: tc.out, files: tc.files}, p, profile)
			if row.Status != tc.want {
				t.Fatalf("status %s (%s), want %s", row.Status, row.Evidence, tc.want)
			}
			if row.Evidence == "" || strings.ContainsAny(row.Evidence, "\n\t") {
				t.Errorf("evidence %q is not one non-empty line", row.Evidence)
			}
			if row.Compared != (tc.ref != "") {
				t.Errorf("compared = %v with ref %q", row.Compared, tc.ref)
			}
			t.Logf("%s: %s", row.Status, row.Evidence)
		})
	}
}

// TestEveryProbeHasCases keeps the promise that each probe is shown both
// firing and staying quiet.
func TestEveryProbeHasCases(t *testing.T) {
	seen := map[string]map[Status]bool{}
	for _, tc := range probeCases() {
		if seen[tc.probe] == nil {
			seen[tc.probe] = map[Status]bool{}
		}
		seen[tc.probe][tc.want] = true
	}
	for _, p := range Probes() {
		if !seen[p.Name][StatusTell] || !seen[p.Name][StatusOK] {
			t.Errorf("probe %s needs a case where it fires and one where it does not (has %v)", p.Name, seen[p.Name])
		}
	}
}

var kebab = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

func TestProbeSet(t *testing.T) {
	probes := Probes()
	if len(probes) < 35 {
		t.Errorf("%d probes, want at least 35", len(probes))
	}
	names := map[string]bool{}
	for _, p := range probes {
		if !kebab.MatchString(p.Name) {
			t.Errorf("probe name %q is not kebab-case", p.Name)
		}
		if names[p.Name] {
			t.Errorf("probe name %q is used twice", p.Name)
		}
		names[p.Name] = true
		if p.Why == "" || !strings.HasSuffix(p.Why, ".") || strings.Contains(p.Why, "\n") || strings.Count(p.Why, ". ") > 0 {
			t.Errorf("%s: Why %q is not one sentence", p.Name, p.Why)
		}
		if p.Severity != Strong && p.Severity != Weak {
			t.Errorf("%s: severity %q", p.Name, p.Severity)
		}
		if p.Limitation != "" && (!strings.HasSuffix(p.Limitation, ".") || !strings.Contains(p.Limitation, "microVM")) {
			t.Errorf("%s: limitation %q should end a sentence and say what a microVM changes", p.Name, p.Limitation)
		}
		if p.observe == nil || p.judge == nil || len(p.keys) == 0 {
			t.Errorf("%s: incomplete probe", p.Name)
		}
	}
	for _, want := range []string{"net-interfaces", "process-count", "root-fs-type", "mount-sources", "user-namespace", "memory-limit"} {
		if probeByName(t, want).Limitation == "" {
			t.Errorf("%s should carry its known limitation", want)
		}
	}
}
