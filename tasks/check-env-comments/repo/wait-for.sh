#!/bin/bash
# wait-for.sh HOST:PORT [TIMEOUT]: wait until HOST:PORT accepts TCP
# connections, up to TIMEOUT seconds (default 15).
set -uo pipefail

target=${1:?usage: wait-for.sh HOST:PORT [TIMEOUT]}
timeout=${2:-15}
host=${target%:*}
port=${target##*:}
if [ "$host" = "$target" ] || [ -z "$port" ]; then
	echo "wait-for.sh: expected HOST:PORT, got $target" >&2
	exit 2
fi

for ((i = 0; i <= timeout; i++)); do
	if (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; then
		exit 0
	fi
	[ "$i" -lt "$timeout" ] && sleep 1
done
echo "wait-for.sh: $target not reachable after ${timeout}s" >&2
exit 1
