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

check "make lint" make -s lint
check "make check" make -s check
for t in t/*.t; do
	check "$t" bash "$t"
done

echo "1..$n"
[ "$failed" -eq 0 ]
