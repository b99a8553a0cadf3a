#!/bin/bash
# Tests for deploy.sh with fake rsync/ssh. Prints TAP; exits non-zero if any fail.
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

# A copy of the project with a build/ dir and fake rsync/ssh that log calls.
work=$tmp/work
mkdir -p "$work/build/site" "$work/build/api" "$tmp/bin"
cp -r "$root/deploy.sh" "$root/config" "$work/"
echo '<h1>hi</h1>' >"$work/build/site/index.html"
for tool in rsync ssh; do
	printf '#!/bin/bash\necho "%s $*" >>"%s"\n' "$tool" "$tmp/calls.log" >"$tmp/bin/$tool"
	chmod +x "$tmp/bin/$tool"
done
deploy() { : >"$tmp/calls.log"; PATH="$tmp/bin:$PATH" bash "$work/deploy.sh" "$@"; }
calls() { cat "$tmp/calls.log"; }

t_full() {
	deploy staging >/dev/null 2>&1 &&
		[ "$(calls | wc -l)" -eq 4 ] &&
		calls | grep -qx "rsync -az --delete $work/build/site/ deploy@staging.example.net:/srv/www/site/" &&
		calls | grep -qx "ssh deploy@staging.example.net sudo systemctl restart api.service"
}

t_skip_api() {
	deploy production --skip-api >/dev/null 2>&1 &&
		[ "$(calls | wc -l)" -eq 1 ] && calls | grep -q '^rsync .*www.example.net:/srv/www/site/$'
}

t_unknown_env() {
	! deploy qa >/dev/null 2>&1 && [ ! -s "$tmp/calls.log" ]
}

t_usage() {
	deploy >/dev/null 2>&1
	[ $? -eq 2 ] && ! deploy staging production >/dev/null 2>&1 && ! deploy staging --force >/dev/null 2>&1
}

t_dry_run() {
	local out
	out=$(deploy staging --dry-run 2>/dev/null) || return 1
	[ ! -s "$tmp/calls.log" ] &&
		[ "$(printf '%s\n' "$out" | grep -c '^+ ')" -eq 4 ] &&
		printf '%s\n' "$out" | grep -qx "+ rsync -az --delete $work/build/site/ deploy@staging.example.net:/srv/www/site/" &&
		printf '%s\n' "$out" | grep -qx "+ rsync -az --delete --exclude .env $work/build/api/ deploy@staging.example.net:/srv/api/" &&
		printf '%s\n' "$out" | grep -qx "+ ssh deploy@staging.example.net sudo systemctl restart api.service"
}

t_dry_run_short_and_position() {
	local a b
	a=$(deploy -n production --skip-api 2>/dev/null) || return 1
	[ ! -s "$tmp/calls.log" ] || return 1
	b=$(deploy production --skip-api -n 2>/dev/null) || return 1
	[ ! -s "$tmp/calls.log" ] &&
		[ "$a" = "$b" ] &&
		[ "$(printf '%s\n' "$a" | grep -c '^+ ')" -eq 1 ] &&
		printf '%s\n' "$a" | grep -q '^+ rsync .*www.example.net:/srv/www/site/$'
}

t_dry_run_still_checks() {
	! deploy qa -n >/dev/null 2>&1 && ! deploy -n >/dev/null 2>&1 &&
		! deploy staging --dry-run --bogus >/dev/null 2>&1 && [ ! -s "$tmp/calls.log" ]
}

t_dry_run_custom_binaries() {
	local out
	out=$(RSYNC=/opt/bin/rsync3 deploy staging -n --skip-api 2>/dev/null) &&
		printf '%s\n' "$out" | grep -q '^+ /opt/bin/rsync3 -az --delete '
}

t_normal_run_prints_no_commands() {
	local out
	out=$(deploy staging 2>/dev/null) && ! printf '%s\n' "$out" | grep -q '^+ ' && [ "$(calls | wc -l)" -eq 4 ]
}

check "deploys site and api" t_full
check "--dry-run prints commands and runs none" t_dry_run
check "-n works anywhere on the command line" t_dry_run_short_and_position
check "--dry-run still validates arguments and config" t_dry_run_still_checks
check "--dry-run shows RSYNC/SSH overrides" t_dry_run_custom_binaries
check "a real run does not print the commands" t_normal_run_prints_no_commands
check "--skip-api only syncs the site" t_skip_api
check "unknown environment fails before doing anything" t_unknown_env
check "usage errors" t_usage

echo "1..$n"
[ "$failed" -eq 0 ]
