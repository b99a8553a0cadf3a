#!/bin/bash
# check-env.sh [-f FILE]: check that every variable named in FILE
# (default: required-env.txt next to this script) is set.
set -uo pipefail

file="$(dirname "$0")/required-env.txt"
if [ "${1:-}" = "-f" ]; then
	file=${2:?usage: check-env.sh [-f FILE]}
	shift 2
fi
if [ $# -ne 0 ]; then
	echo "usage: check-env.sh [-f FILE]" >&2
	exit 2
fi
if [ ! -r "$file" ]; then
	echo "check-env.sh: cannot read $file" >&2
	exit 2
fi

count=0
missing=0
while IFS= read -r name || [ -n "$name" ]; do
	count=$((count + 1))
	if ! printenv "$name" >/dev/null; then
		echo "missing: $name" >&2
		missing=$((missing + 1))
	fi
done <"$file"

if [ $missing -gt 0 ]; then
	echo "check-env.sh: $missing of $count required variables missing" >&2
	exit 1
fi
echo "check-env.sh: all $count required variables set"
