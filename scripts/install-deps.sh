#!/bin/sh
# Installs the Debian packages verisim's tests and image builds use, when
# they are missing (scripts/test.sh calls it; pass extra "command:package"
# pairs as arguments, as scripts/bench.sh does). Safe to run again: it installs nothing that is present,
# and refreshes apt's package lists only when it has to install something.
#
# Add a package by appending "command package" to the list below.
set -eu

# command-to-check  debian-package
deps='
debootstrap debootstrap
git git
ps procps
bash bash
make make
/usr/bin/python3 python3
newuidmap uidmap
'

missing=''
for pair in $(printf '%s' "$deps" | tr ' ' ':') "$@"; do
	cmd=${pair%%:*}
	pkg=${pair#*:}
	if command -v "$cmd" >/dev/null 2>&1 || [ -x "/usr/sbin/$cmd" ] || [ -x "/sbin/$cmd" ]; then
		continue
	fi
	missing="$missing $pkg"
done

if [ -z "$missing" ]; then
	echo "install-deps: nothing to install"
	exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO=sudo
	else
		echo "install-deps: need root to install:$missing" >&2
		exit 1
	fi
else
	SUDO=''
fi

echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
# Only refresh the lists when apt does not know a package yet.
for pkg in $missing; do
	if ! apt-cache show "$pkg" >/dev/null 2>&1; then
		echo "install-deps: apt-get update"
		$SUDO apt-get update -q
		break
	fi
done
# shellcheck disable=SC2086 # word splitting of $missing is intended
if ! $SUDO apt-get install -y -q --no-install-recommends $missing; then
	echo "install-deps: apt-get update, then trying again"
	$SUDO apt-get update -q
	$SUDO apt-get install -y -q --no-install-recommends $missing
fi
echo "install-deps: installed$missing"
