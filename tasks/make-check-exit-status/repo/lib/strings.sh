# shellcheck shell=bash
# String helpers.

# str_trim S: S without leading and trailing whitespace.
str_trim() {
	local s=$1
	s=${s#"${s%%[![:space:]]*}"}
	s=${s%"${s##*[![:space:]]}"}
	printf '%s\n' "$s"
}

# str_lower S: S in lower case.
str_lower() {
	printf '%s\n' "${1,,}"
}

# str_join SEP ITEMS...: the items joined with SEP.
str_join() {
	local sep=$1 out="" first=1 item
	shift
	for item in "$@"; do
		if [ $first = 1 ]; then
			out=$item
			first=0
		else
			out+=$sep$item
		fi
	done
	printf '%s\n' "$out"
}

# str_starts_with S PREFIX: succeeds when S starts with PREFIX.
str_starts_with() {
	case $1 in
	"$2"*) return 0 ;;
	esac
	return 1
}
