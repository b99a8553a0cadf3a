# shellcheck shell=bash
# Levelled logging to stderr. LOG_LEVEL: debug, info (default), warn, error.

_log_rank() {
	case $1 in
	debug) echo 0 ;;
	info) echo 1 ;;
	warn) echo 2 ;;
	error) echo 3 ;;
	*) echo 1 ;;
	esac
}

_log() {
	local level=$1
	shift
	if [ "$(_log_rank "$level")" -ge "$(_log_rank "${LOG_LEVEL:-info}")" ]; then
		printf '%s %-5s %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$level" "$*" >&2
	fi
}

log_debug() { _log debug "$@"; }
log_info() { _log info "$@"; }
log_warn() { _log warn "$@"; }
log_error() { _log error "$@"; }
