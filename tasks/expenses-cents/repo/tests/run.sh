#!/bin/bash
# Tests for the expense scripts. Prints TAP; exits non-zero if any fail.
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

# squeeze runs of blanks so column widths don't matter
norm() { awk '{ $1 = $1; print }'; }

cat >"$tmp/whole.csv" <<'CSV'
date,amount,category,description
2024-05-01,100,groceries,big shop, with commas, in it
2024-05-02,890,rent,May
2024-05-03,20,groceries,bakery

2024-06-01,890,rent,June
CSV

t_totals() {
	[ "$(bash "$root/summarize.sh" "$tmp/whole.csv" | norm)" = "$(printf 'rent 1780\ngroceries 120\nTOTAL 1900')" ]
}

t_month() {
	[ "$(bash "$root/summarize.sh" -m 2024-06 "$tmp/whole.csv" | norm)" = "$(printf 'rent 890\nTOTAL 890')" ]
}

t_usage() {
	! bash "$root/summarize.sh" 2>/dev/null && ! bash "$root/summarize.sh" a b 2>/dev/null
}

t_categories() {
	[ "$(bash "$root/categories.sh" "$tmp/whole.csv")" = "$(printf 'groceries 2\nrent 2')" ]
}

check "totals per category, largest first" t_totals
check "-m filters by month" t_month
check "usage errors" t_usage
check "categories.sh counts entries" t_categories

echo "1..$n"
[ "$failed" -eq 0 ]
