#!/bin/bash
set -euo pipefail
cp "$SOLUTION_DIR/files/ini/ini.go" ini/ini.go
