#!/bin/bash
# deploy.sh [-n|--dry-run] ENV [--skip-api]: push build/ to ENV's host and
# restart the API. With --dry-run, print the commands instead of running them.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
RSYNC=${RSYNC:-rsync}
SSH=${SSH:-ssh}

usage() {
	echo "usage: deploy.sh [-n|--dry-run] ENV [--skip-api]" >&2
	exit 2
}

env_name=""
skip_api=0
dry_run=0
while [ $# -gt 0 ]; do
	case $1 in
	--skip-api) skip_api=1 ;;
	-n | --dry-run) dry_run=1 ;;
	-h | --help) usage ;;
	-*)
		echo "deploy.sh: unknown option $1" >&2
		usage
		;;
	*)
		[ -z "$env_name" ] || usage
		env_name=$1
		;;
	esac
	shift
done
[ -n "$env_name" ] || usage

conf="$here/config/$env_name.env"
if [ ! -f "$conf" ]; then
	echo "deploy.sh: no config for '$env_name' ($conf)" >&2
	exit 1
fi
# shellcheck source=/dev/null
. "$conf"
for v in HOST USER SITE_DIR API_DIR SERVICE; do
	if [ -z "${!v:-}" ]; then
		echo "deploy.sh: $v missing in $conf" >&2
		exit 1
	fi
done

build="$here/build"
if [ ! -d "$build/site" ]; then
	echo "deploy.sh: $build/site not found; build first" >&2
	exit 1
fi

run() {
	if [ $dry_run = 1 ]; then
		echo "+ $*"
	else
		"$@"
	fi
}

target="$USER@$HOST"
echo "deploying to $env_name ($target)" >&2
run "$RSYNC" -az --delete "$build/site/" "$target:$SITE_DIR/"
if [ $skip_api = 0 ]; then
	run "$RSYNC" -az --delete --exclude .env "$build/api/" "$target:$API_DIR/"
	run "$SSH" "$target" sudo systemctl restart "$SERVICE"
	run "$SSH" "$target" systemctl is-active --quiet "$SERVICE"
fi
echo "done" >&2
