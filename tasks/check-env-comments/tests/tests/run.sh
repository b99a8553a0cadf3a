#!/bin/bash
# Tests for the start-up scripts. Prints TAP; exits non-zero if any fail.
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

# run check-env.sh in a clean environment: cenv VAR=VALUE... -- ARGS...
cenv() {
	local vars=()
	while [ $# -gt 0 ] && [ "$1" != "--" ]; do
		vars+=("$1")
		shift
	done
	shift
	env -i PATH="$PATH" "${vars[@]}" bash "$root/check-env.sh" "$@"
}

printf 'ALPHA\nBETA\n' >"$tmp/plain.txt"

t_all_set() {
	local out
	out=$(cenv ALPHA=1 BETA=2 -- -f "$tmp/plain.txt" 2>&1) &&
		[ "$out" = "check-env.sh: all 2 required variables set" ]
}

t_missing() {
	local err
	err=$(cenv ALPHA=1 -- -f "$tmp/plain.txt" 2>&1 >/dev/null)
	[ $? -eq 1 ] && printf '%s\n' "$err" | grep -qx "missing: BETA" &&
		! printf '%s\n' "$err" | grep -q "missing: ALPHA"
}

t_no_final_newline() {
	printf 'ALPHA\nBETA' >"$tmp/nonl.txt"
	! cenv ALPHA=1 -- -f "$tmp/nonl.txt" 2>/dev/null
}

t_bad_file() {
	cenv -- -f "$tmp/nope.txt" 2>/dev/null
	[ $? -eq 2 ]
}

t_wait_for_usage() {
	bash "$root/wait-for.sh" no-port 2>/dev/null
	[ $? -eq 2 ]
}

cat >"$tmp/commented.txt" <<'TXT'
# database
DB_HOST
DB_PASSWORD

# http
PORT
TXT

t_comments_skipped() {
	local out
	out=$(cenv DB_HOST=db DB_PASSWORD=s3cret PORT=8080 -- -f "$tmp/commented.txt" 2>&1) &&
		[ "$out" = "check-env.sh: all 3 required variables set" ]
}

t_comments_not_reported() {
	local err
	err=$(cenv DB_HOST=db -- -f "$tmp/commented.txt" 2>&1 >/dev/null)
	[ $? -eq 1 ] &&
		[ "$(printf '%s\n' "$err" | grep '^missing: ' | sort | tr '\n' ' ')" = "missing: DB_PASSWORD missing: PORT " ] &&
		printf '%s\n' "$err" | grep -q "2 of 3 required variables missing"
}

t_empty_is_missing() {
	local err
	err=$(cenv DB_HOST=db DB_PASSWORD= PORT=8080 -- -f "$tmp/commented.txt" 2>&1 >/dev/null)
	[ $? -eq 1 ] && [ "$(printf '%s\n' "$err" | grep '^missing: ')" = "missing: DB_PASSWORD" ]
}

t_repo_file() {
	local out
	out=$(env -i PATH="$PATH" DB_HOST=h DB_USER=u DB_PASSWORD=p PORT=1 PUBLIC_URL=https://x bash "$root/check-env.sh" 2>&1) &&
		[ "$out" = "check-env.sh: all 5 required variables set" ]
}

check "passes when everything is set" t_all_set
check "skips comments and blank lines" t_comments_skipped
check "does not report comments as missing" t_comments_not_reported
check "an empty variable counts as missing" t_empty_is_missing
check "the bundled required-env.txt" t_repo_file
check "reports missing variables" t_missing
check "reads a last line without newline" t_no_final_newline
check "unreadable file is a usage error" t_bad_file
check "wait-for.sh wants HOST:PORT" t_wait_for_usage

echo "1..$n"
[ "$failed" -eq 0 ]
