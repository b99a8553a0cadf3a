#!/bin/bash
# rotate-backups.sh [-n] DIR KEEP: delete all but the KEEP newest *.tar.gz
# in DIR. Names carry the date, so name order is age order.
set -eu

dry_run=0
if [ "${1:-}" = "-n" ]; then
	dry_run=1
	shift
fi
if [ $# -ne 2 ]; then
	echo "usage: $0 [-n] DIR KEEP" >&2
	exit 2
fi
dir=$1
keep=$2
case $keep in
'' | *[!0-9]*)
	echo "$0: KEEP must be a number, got '$keep'" >&2
	exit 2
	;;
esac
if [ ! -d "$dir" ]; then
	echo "$0: no such directory: $dir" >&2
	exit 1
fi

shopt -s nullglob
files=("$dir"/*.tar.gz)
sorted=()
if [ ${#files[@]} -gt 0 ]; then
	mapfile -t sorted < <(printf '%s\n' "${files[@]}" | sort -r)
fi
count=0
for f in "${sorted[@]}"; do
	count=$((count + 1))
	if [ $count -le $keep ]; then
		continue
	fi
	if [ $dry_run = 1 ]; then
		echo "would delete $f"
	else
		rm -f -- "$f"
		echo "deleted $f"
	fi
done
