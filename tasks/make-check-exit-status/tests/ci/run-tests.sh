#!/bin/bash
# What CI runs: lint, the unit tests via make, and each test script on its
# own so failures show up by name. Prints TAP.
cd "$(dirname "$0")/.." || exit 1
n=0
failed=0
check() {
	local desc=$1
	shift
	n=$((n + 1))
	if "$@" >/dev/null 2>&1; then
		echo "ok $n - $desc"
	else
		echo "not ok $n - $desc"
		failed=$((failed + 1))
	fi
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# project copy with the real Makefile and lib/, and made-up test scripts:
# fake NAME:STATUS ... writes t/NAME.t exiting with STATUS, which leaves a
# marker file when it runs.
fake() {
	local dir=$tmp/$1 spec name status
	shift
	rm -rf "$dir"
	mkdir -p "$dir/t" "$dir/ran"
	cp Makefile "$dir/"
	cp -r lib "$dir/"
	for spec in "$@"; do
		name=${spec%%:*}
		status=${spec#*:}
		printf '#!/bin/bash
touch "%s/ran/%s"
exit %s
' "$dir" "$name" "$status" >"$dir/t/$name.t"
	done
	echo "$dir"
}
ran() { ls "$1/ran" | tr '\n' ' '; }

t_first_fails() {
	local d
	d=$(fake first a:1 b:0 c:0)
	! make -s -C "$d" check >/dev/null 2>&1 && [ "$(ran "$d")" = "a b c " ]
}

t_middle_fails() {
	local d
	d=$(fake middle a:0 b:3 c:0)
	! make -s -C "$d" check >/dev/null 2>&1 && [ "$(ran "$d")" = "a b c " ]
}

t_last_fails() {
	local d
	d=$(fake last a:0 b:0 c:1)
	! make -s -C "$d" check >/dev/null 2>&1
}

t_all_pass() {
	local d
	d=$(fake pass a:0 b:0 c:0)
	make -s -C "$d" check >/dev/null 2>&1 && [ "$(ran "$d")" = "a b c " ]
}

t_no_tests() {
	local d
	d=$(fake empty)
	make -s -C "$d" check >/dev/null 2>&1
}

t_lint_fails() {
	local d
	d=$(fake lint a:0)
	printf 'broken() {\n' >"$d/lib/aaa.sh"
	! make -s -C "$d" lint >/dev/null 2>&1
}

check "make check fails when the first script fails, and runs the rest" t_first_fails
check "make check fails when a middle script fails" t_middle_fails
check "make check fails when the last script fails" t_last_fails
check "make check passes when every script passes" t_all_pass
check "make check passes with no scripts" t_no_tests
check "make lint catches syntax errors" t_lint_fails
check "make lint" make -s lint
check "make check" make -s check
for t in t/*.t; do
	check "$t" bash "$t"
done

echo "1..$n"
[ "$failed" -eq 0 ]
