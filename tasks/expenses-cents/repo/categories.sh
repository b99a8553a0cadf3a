#!/bin/bash
# categories.sh FILE: the categories used in FILE, with entry counts.
set -euo pipefail
if [ $# -ne 1 ]; then
	echo "usage: categories.sh FILE" >&2
	exit 2
fi
awk -F, 'NR == 1 && $1 == "date" { next } NF >= 3 { n[$3]++ } END { for (c in n) print c, n[c] }' "$1" | sort
