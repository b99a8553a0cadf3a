#!/bin/sh
# Runs the sandbox benchmark side by side with its peers. Installs
# bubblewrap and runc from Debian first when they are missing (a peer that
# still cannot be found is skipped, and the table says so). Needs root.
# Extra arguments go to "verisim bench sandbox".
set -eu
cd "$(dirname "$0")/.."
scripts/install-deps.sh bwrap:bubblewrap runc:runc
go build -o bin/ ./cmd/verisim ./cmd/verisim-init
exec bin/verisim bench sandbox "$@"
