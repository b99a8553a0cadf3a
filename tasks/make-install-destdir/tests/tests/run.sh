#!/bin/bash
# Tests for git-tools. Prints TAP; exits non-zero if any fail.
cd "$(dirname "$0")/.." || exit 1
root=$PWD
n=0
failed=0
check() {
	local desc=$1
	shift
	n=$((n + 1))
	if "$@"; then
		echo "ok $n - $desc"
	else
		echo "not ok $n - $desc"
		failed=$((failed + 1))
	fi
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1

commit_as() { # commit_as NAME FILE LINES
	local i
	for i in $(seq 1 "$3"); do echo "line $i" >>"$2"; done
	git add "$2"
	git -c user.name="$1" -c user.email="$1@example.com" commit -qm "edit $2"
}

setup_repo() {
	rm -rf "$tmp/repo"
	git init -q -b main "$tmp/repo" && cd "$tmp/repo" || return 1
	commit_as ana a.txt 3
	commit_as ana a.txt 2
	commit_as bo b.txt 10
}

t_stats() {
	(
		setup_repo || exit 1
		out=$(bash "$root/bin/git-stats") || exit 1
		[ "$(printf '%s\n' "$out" | awk '{print $1, $2, $3, $4}')" = "$(printf '2 5 0 ana\n1 10 0 bo')" ]
	)
}

t_stats_bad_option() {
	(setup_repo && ! bash "$root/bin/git-stats" --frobnicate 2>/dev/null)
}

t_prune_merged() {
	(
		setup_repo || exit 1
		git branch done-feature && git checkout -qb wip && commit_as ana w.txt 1 && git checkout -q main || exit 1
		out=$(bash "$root/bin/git-prune-merged" -n) || exit 1
		[ "$out" = "would delete done-feature" ] || exit 1
		bash "$root/bin/git-prune-merged" >/dev/null || exit 1
		[ "$(git branch --format='%(refname:short)' | tr '\n' ' ')" = "main wip " ]
	)
}

# Every install test runs with HOME pointing into $tmp so that nothing can
# land in the real home directory.
mk() { HOME=$tmp/home make -s -C "$root" "$@" >/dev/null; }
mode() { stat -c %a "$1"; }

t_destdir_prefix() {
	local d=$tmp/pkg
	mk install DESTDIR="$d" PREFIX=/usr &&
		[ -x "$d/usr/bin/git-stats" ] && [ -x "$d/usr/bin/git-prune-merged" ] &&
		[ "$(mode "$d/usr/bin/git-stats")" = 755 ] &&
		[ -f "$d/usr/share/man/man1/git-stats.1" ] && [ -f "$d/usr/share/man/man1/git-prune-merged.1" ] &&
		[ "$(mode "$d/usr/share/man/man1/git-stats.1")" = 644 ] &&
		[ ! -e "$tmp/home/.local" ]
}

t_default_prefix() {
	local d=$tmp/def
	mk install DESTDIR="$d" &&
		[ -x "$d/usr/local/bin/git-stats" ] &&
		[ -f "$d/usr/local/share/man/man1/git-prune-merged.1" ]
}

t_prefix_only() {
	local p=$tmp/opt/git-tools
	mk install PREFIX="$p" &&
		[ -x "$p/bin/git-stats" ] && [ -f "$p/share/man/man1/git-stats.1" ]
}

t_uninstall_destdir() {
	local d=$tmp/un
	mk install DESTDIR="$d" PREFIX=/usr &&
		echo keep >"$d/usr/bin/other-tool" &&
		mk uninstall DESTDIR="$d" PREFIX=/usr &&
		[ ! -e "$d/usr/bin/git-stats" ] && [ ! -e "$d/usr/bin/git-prune-merged" ] &&
		[ ! -e "$d/usr/share/man/man1/git-stats.1" ] &&
		[ -f "$d/usr/bin/other-tool" ]
}

t_installed_script_runs() {
	local d=$tmp/run
	mk install DESTDIR="$d" PREFIX=/usr &&
		"$d/usr/bin/git-stats" --help | grep -q '^usage: git stats'
}

check "git-stats counts commits and lines per author" t_stats
check "git-stats rejects unknown options" t_stats_bad_option
check "git-prune-merged deletes merged branches only" t_prune_merged
check "make install DESTDIR=... PREFIX=/usr" t_destdir_prefix
check "PREFIX defaults to /usr/local" t_default_prefix
check "make install PREFIX=... without DESTDIR" t_prefix_only
check "make uninstall honours DESTDIR and PREFIX" t_uninstall_destdir
check "installed scripts run" t_installed_script_runs

echo "1..$n"
[ "$failed" -eq 0 ]
