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

cat >"$tmp/links.md" <<'MD'
# Changelog

## [1.0.0] - 2024-04-01

- Stable API.

## [0.9.0] - 2024-03-01

### Added
- First public version.
- Docs.

### Fixed
- Crash on empty input.

[1.0.0]: https://git.example.com/x/compare/v0.9.0...v1.0.0
[0.9.0]: https://git.example.com/x/releases/tag/v0.9.0
MD

t_oldest_plain() {
	[ "$(relnotes 1.1.0 "$tmp/CHANGELOG.md")" = "- Faster start-up." ]
}

t_oldest_with_links() {
	[ "$(relnotes 0.9.0 "$tmp/links.md")" = "$(printf '### Added\n- First public version.\n- Docs.\n\n### Fixed\n- Crash on empty input.')" ]
}

t_newest_with_links() {
	[ "$(relnotes 1.0.0 "$tmp/links.md")" = "- Stable API." ]
}

t_oldest_no_final_newline() {
	printf '# Changelog\n\n## [0.2.0]\n\n- b\n\n## [0.1.0]\n\n- a1\n- a2' >"$tmp/nonl.md"
	[ "$(relnotes 0.1.0 "$tmp/nonl.md")" = "$(printf -- '- a1\n- a2')" ]
}

t_oldest_trailing_blanks() {
	printf '# Changelog\n\n## [0.1.0]\n\n- only\n\n\n' >"$tmp/blanks.md"
	[ "$(relnotes 0.1.0 "$tmp/blanks.md" | od -c)" = "$(printf -- '- only\n' | od -c)" ]
}

t_repo_changelog() {
	[ "$(relnotes 0.1.0 "$root/CHANGELOG.md")" = "$(printf -- '### Added\n- `relnotes.sh` prints the notes of one release.\n- Tests.')" ]
}

check "notes of a release between two others" t_middle
check "oldest release keeps its last line" t_oldest_plain
check "oldest release stops at the link definitions" t_oldest_with_links
check "newest release with link definitions below" t_newest_with_links
check "oldest release in a file without a final newline" t_oldest_no_final_newline
check "oldest release with trailing blank lines" t_oldest_trailing_blanks
check "the project's own CHANGELOG.md" t_repo_changelog
check "accepts a leading v" t_v_prefix
check "notes of the Unreleased section" t_unreleased
check "fails for an unknown version" t_missing
check "cut-release.sh dates the Unreleased section" t_cut_release

echo "1..$n"
[ "$failed" -eq 0 ]
