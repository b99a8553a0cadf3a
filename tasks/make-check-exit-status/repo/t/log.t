#!/bin/bash
# Tests for lib/log.sh; exits non-zero on the first failure.
. "$(dirname "$0")/../lib/log.sh"

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

out=$(log_info "hello" 2>&1 >/dev/null)
[[ $out =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z\ info\ \ hello$ ]] || fail "log_info format: $out"
[ -z "$(log_debug "not shown by default" 2>&1)" ] || fail "debug shown at info"
[ -n "$(LOG_LEVEL=debug log_debug "x" 2>&1)" ] || fail "debug not shown at debug"
[ -z "$(LOG_LEVEL=error log_warn "x" 2>&1)" ] || fail "warn shown at error"
[ -n "$(LOG_LEVEL=error log_error "x" 2>&1)" ] || fail "error not shown at error"
[ -z "$(log_info "x" 2>/dev/null)" ] || fail "log wrote to stdout"
echo "log: ok"
