#!/bin/bash
# relnotes.sh VERSION [CHANGELOG]: print the notes of one release from a
# Keep a Changelog file, e.g. for `gh release create --notes-file -`.
set -euo pipefail

version=${1:?usage: relnotes.sh VERSION [CHANGELOG]}
file=${2:-CHANGELOG.md}
version=${version#v}

if ! awk -v h="## [$version]" 'index($0, h) == 1 { f = 1 } END { exit !f }' "$file"; then
	echo "relnotes.sh: no section for $version in $file" >&2
	exit 1
fi

# The lines after the version's heading, up to the next heading or the link
# definitions ("[x.y.z]: url") at the bottom, without leading or trailing
# blank lines.
awk -v h="## [$version]" '
	index($0, h) == 1 { on = 1; next }
	on && (/^## \[/ || /^\[[^]]+\]: /) { exit }
	on {
		if ($0 ~ /^[[:space:]]*$/) { blanks++; next }
		if (printed) for (i = 0; i < blanks; i++) print ""
		blanks = 0
		printed = 1
		print
	}
' "$file"
