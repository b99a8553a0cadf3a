#!/bin/bash
# relnotes.sh VERSION [CHANGELOG]: print the notes of one release from a
# Keep a Changelog file, e.g. for `gh release create --notes-file -`.
set -euo pipefail

version=${1:?usage: relnotes.sh VERSION [CHANGELOG]}
file=${2:-CHANGELOG.md}
version=${version#v}

if ! grep -q "^## \[$version\]" "$file"; then
	echo "relnotes.sh: no section for $version in $file" >&2
	exit 1
fi

# From the version's heading to the next one, dropping both headings, then
# leading and trailing blank lines.
sed -n "/^## \[$version\]/,/^## \[/p" "$file" |
	sed '1d;$d' |
	sed '/./,$!d' |
	tac | sed '/./,$!d' | tac
