#!/bin/bash
# cut-release.sh VERSION [CHANGELOG]: rename the Unreleased section to
# VERSION with today's date (RELEASE_DATE overrides) and open a new, empty
# Unreleased section above it.
set -euo pipefail

version=${1:?usage: cut-release.sh VERSION [CHANGELOG]}
file=${2:-CHANGELOG.md}
version=${version#v}
date=${RELEASE_DATE:-$(date +%F)}

if ! grep -q '^## \[Unreleased\]' "$file"; then
	echo "cut-release.sh: no Unreleased section in $file" >&2
	exit 1
fi
if grep -q "^## \[$version\]" "$file"; then
	echo "cut-release.sh: $version is already in $file" >&2
	exit 1
fi

sed -i "s/^## \[Unreleased\].*/## [Unreleased]\n\n## [$version] - $date/" "$file"
