#!/bin/bash
# Tests for the release scripts. Prints TAP; exits non-zero if any fail.
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

cat >"$tmp/CHANGELOG.md" <<'MD'
# Changelog

## [Unreleased]

- Nothing yet.

## [2.0.0] - 2024-05-01

### Changed
- Config moved to TOML.

### Removed
- The XML exporter.

## [1.1.0] - 2024-02-11

- Faster start-up.
MD

relnotes() { bash "$root/scripts/relnotes.sh" "$@"; }

t_middle() {
	[ "$(relnotes 2.0.0 "$tmp/CHANGELOG.md")" = "$(printf '### Changed\n- Config moved to TOML.\n\n### Removed\n- The XML exporter.')" ]
}

t_v_prefix() {
	[ "$(relnotes v2.0.0 "$tmp/CHANGELOG.md")" = "$(relnotes 2.0.0 "$tmp/CHANGELOG.md")" ]
}

t_unreleased() {
	[ "$(relnotes Unreleased "$tmp/CHANGELOG.md")" = "- Nothing yet." ]
}

t_missing() {
	! relnotes 9.9.9 "$tmp/CHANGELOG.md" 2>/dev/null
}

t_cut_release() {
	cp "$tmp/CHANGELOG.md" "$tmp/cut.md"
	RELEASE_DATE=2024-06-01 bash "$root/scripts/cut-release.sh" 2.1.0 "$tmp/cut.md" &&
		grep -qx '## \[2.1.0\] - 2024-06-01' "$tmp/cut.md" &&
		[ "$(grep -c '^## \[Unreleased\]' "$tmp/cut.md")" -eq 1 ] &&
		[ "$(relnotes 2.1.0 "$tmp/cut.md")" = "- Nothing yet." ] &&
		! bash "$root/scripts/cut-release.sh" 2.1.0 "$tmp/cut.md" 2>/dev/null
}

check "notes of a release between two others" t_middle
check "accepts a leading v" t_v_prefix
check "notes of the Unreleased section" t_unreleased
check "fails for an unknown version" t_missing
check "cut-release.sh dates the Unreleased section" t_cut_release

echo "1..$n"
[ "$failed" -eq 0 ]
