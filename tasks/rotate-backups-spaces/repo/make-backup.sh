#!/bin/bash
# make-backup.sh SRC DEST_DIR [NAME]: archive SRC as DEST_DIR/NAME-YYYY-MM-DD.tar.gz
set -euo pipefail

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
	echo "usage: $0 SRC DEST_DIR [NAME]" >&2
	exit 2
fi
src=$1
dest=$2
name=${3:-$(basename "$src")}
stamp=${BACKUP_DATE:-$(date +%F)}

mkdir -p "$dest"
out="$dest/$name-$stamp.tar.gz"
tar -czf "$out.partial" -C "$(dirname "$src")" "$(basename "$src")"
mv "$out.partial" "$out"
echo "$out"
