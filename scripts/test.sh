#!/bin/sh
# verisim's test command (README, .ci/run): installs the Debian packages the
# tests need, checks formatting and vet, then runs every test with the race
# detector. Tests that need root skip with the reason when run without it;
# run as root (as CI does) to run them all.
set -eu
cd "$(dirname "$0")/.."

scripts/install-deps.sh

echo "== gofmt"
unformatted=$(gofmt -l cmd internal)
if [ -n "$unformatted" ]; then
	echo "gofmt would change:" >&2
	echo "$unformatted" >&2
	exit 1
fi

echo "== go vet"
go vet ./...

if [ "$(id -u)" -eq 0 ]; then
	# Builds a minimal Debian with debootstrap (about 200 MB from the
	# configured mirror, well under a minute).
	VERISIM_TEST_DEBOOTSTRAP=${VERISIM_TEST_DEBOOTSTRAP:-1}
	export VERISIM_TEST_DEBOOTSTRAP
else
	echo "note: not root; tests of the local sandbox backend will skip (run as root to include them)"
fi

echo "== go test -race"
go test -race -count=1 -timeout 20m ./...
