#!/bin/bash
set -euo pipefail
cp "$SOLUTION_DIR/files/compare.go" compare.go
