#!/bin/bash
# summarize.sh [-m YYYY-MM] FILE: total amount per category, largest first,
# then a TOTAL line.
set -euo pipefail

month=""
if [ "${1:-}" = "-m" ]; then
	month=${2:?usage: summarize.sh [-m YYYY-MM] FILE}
	shift 2
fi
if [ $# -ne 1 ]; then
	echo "usage: summarize.sh [-m YYYY-MM] FILE" >&2
	exit 2
fi

awk -F, -v month="$month" '
NR == 1 && $1 == "date" { next }
/^[[:space:]]*$/ { next }
month != "" && substr($1, 1, 7) != month { next }
{
	sum[$3] += $2
	total += $2
}
END {
	for (c in sum)
		printf "%-14s %10.2f\n", c, sum[c] | "sort -k2,2nr -k1,1"
	close("sort -k2,2nr -k1,1")
	printf "%-14s %10.2f\n", "TOTAL", total
}
' "$1"
