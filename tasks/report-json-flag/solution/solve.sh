#!/bin/bash
set -euo pipefail
cp "$SOLUTION_DIR/files/main.go" main.go
