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

check "deploys site and api" t_full
check "--skip-api only syncs the site" t_skip_api
check "unknown environment fails before doing anything" t_unknown_env
check "usage errors" t_usage

echo "1..$n"
[ "$failed" -eq 0 ]
