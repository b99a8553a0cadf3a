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

cat >"$tmp/cents.csv" <<'CSV'
date,amount,category,description
2024-05-01,12.50,groceries,market
2024-05-02,3.25,groceries,bakery
2024-05-03,0.10,fees,bank
2024-05-04,0.20,fees,bank
2024-05-05,15.80,transport,ticket
2024-05-06,0.99,apps,notes app
CSV

t_totals() {
	[ "$(bash "$root/summarize.sh" "$tmp/whole.csv" | norm)" = "$(printf 'rent 1780.00\ngroceries 120.00\nTOTAL 1900.00')" ]
}

t_month() {
	[ "$(bash "$root/summarize.sh" -m 2024-06 "$tmp/whole.csv" | norm)" = "$(printf 'rent 890.00\nTOTAL 890.00')" ]
}

t_cents() {
	local out
	out=$(bash "$root/summarize.sh" "$tmp/cents.csv" | norm) || return 1
	[ "$out" = "$(printf 'groceries 15.75\ntransport 15.80\napps 0.99\nfees 0.30\nTOTAL 32.84')" ] ||
		[ "$out" = "$(printf 'transport 15.80\ngroceries 15.75\napps 0.99\nfees 0.30\nTOTAL 32.84')" ]
}

t_cents_sorted_by_value() {
	local out
	out=$(bash "$root/summarize.sh" "$tmp/cents.csv" | norm | awk '$1 != "TOTAL" { print $1 }' | tr '\n' ' ')
	[ "$out" = "transport groceries apps fees " ]
}

t_real_file() {
	[ "$(bash "$root/summarize.sh" -m 2024-05 "$root/expenses.csv" | norm | tail -n 1)" = "TOTAL 1004.24" ] &&
		bash "$root/summarize.sh" -m 2024-05 "$root/expenses.csv" | norm | grep -qx 'groceries 71.25'
}

t_usage() {
	! bash "$root/summarize.sh" 2>/dev/null && ! bash "$root/summarize.sh" a b 2>/dev/null
}

t_categories() {
	[ "$(bash "$root/categories.sh" "$tmp/whole.csv")" = "$(printf 'groceries 2\nrent 2')" ]
}

check "totals per category, largest first" t_totals
check "-m filters by month" t_month
check "totals keep the cents" t_cents
check "categories sorted by amount, cents included" t_cents_sorted_by_value
check "the sample file adds up" t_real_file
check "usage errors" t_usage
check "categories.sh counts entries" t_categories

echo "1..$n"
[ "$failed" -eq 0 ]
