#!/bin/bash
# Tests for the backup scripts. Prints TAP; exits non-zero if any fail.
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

# make DIR with backups for 2024-05-01 .. 2024-05-0N
seed() {
	local dir=$1 count=$2 prefix=${3:-app} i
	mkdir -p "$dir"
	for i in $(seq 1 "$count"); do
		echo "$i" >"$dir/$prefix-2024-05-0$i.tar.gz"
	done
}
listing() { (cd "$1" && ls -1 | tr '\n' ' '); }

t_keeps_newest() {
	local d=$tmp/plain
	seed "$d" 5
	bash "$root/rotate-backups.sh" "$d" 2 >/dev/null &&
		[ "$(listing "$d")" = "app-2024-05-04.tar.gz app-2024-05-05.tar.gz " ]
}

t_keep_more_than_present() {
	local d=$tmp/few
	seed "$d" 2
	bash "$root/rotate-backups.sh" "$d" 7 >/dev/null &&
		[ "$(listing "$d")" = "app-2024-05-01.tar.gz app-2024-05-02.tar.gz " ]
}

t_dry_run() {
	local d=$tmp/dry out
	seed "$d" 3
	out=$(bash "$root/rotate-backups.sh" -n "$d" 1) &&
		[ "$(listing "$d" | wc -w)" -eq 3 ] &&
		[ "$(printf '%s\n' "$out" | grep -c '^would delete')" -eq 2 ]
}

t_ignores_other_files() {
	local d=$tmp/other
	seed "$d" 3
	echo notes >"$d/README.txt"
	bash "$root/rotate-backups.sh" "$d" 1 >/dev/null &&
		[ -f "$d/README.txt" ] && [ -f "$d/app-2024-05-03.tar.gz" ] && [ ! -f "$d/app-2024-05-02.tar.gz" ]
}

t_bad_keep() {
	! bash "$root/rotate-backups.sh" "$tmp" two 2>/dev/null
}

t_make_backup() {
	mkdir -p "$tmp/src/data" && echo hi >"$tmp/src/data/file.txt"
	local out
	out=$(BACKUP_DATE=2024-05-09 bash "$root/make-backup.sh" "$tmp/src/data" "$tmp/out") &&
		[ "$out" = "$tmp/out/data-2024-05-09.tar.gz" ] &&
		tar -tzf "$out" | grep -q '^data/file.txt$'
}

check "keeps the newest KEEP backups" t_keeps_newest
check "keeps everything when KEEP exceeds the count" t_keep_more_than_present
check "-n deletes nothing and lists candidates" t_dry_run
check "leaves other files alone" t_ignores_other_files
check "rejects a non-numeric KEEP" t_bad_keep
check "make-backup.sh names archives by date" t_make_backup

echo "1..$n"
[ "$failed" -eq 0 ]
