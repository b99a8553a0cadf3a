#!/bin/bash
# Tests for lib/strings.sh; exits non-zero on the first failure.
. "$(dirname "$0")/../lib/strings.sh"

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

[ "$(str_trim "  a b  ")" = "a b" ] || fail "str_trim spaces"
[ "$(str_trim "$(printf '\t x\n')")" = "x" ] || fail "str_trim tabs"
[ "$(str_trim "")" = "" ] || fail "str_trim empty"
[ "$(str_lower "HeLLo")" = "hello" ] || fail "str_lower"
[ "$(str_join , a b c)" = "a,b,c" ] || fail "str_join"
[ "$(str_join ' - ' one)" = "one" ] || fail "str_join single"
[ "$(str_join ,)" = "" ] || fail "str_join none"
str_starts_with "release-1.2" "release-" || fail "str_starts_with yes"
! str_starts_with "hotfix" "release-" || fail "str_starts_with no"
str_starts_with "a*b" "a*" || fail "str_starts_with glob chars"
! str_starts_with "abc" "a*c" || fail "str_starts_with literal prefix"
echo "strings: ok"
