#!/bin/bash
set -euo pipefail
cp "$SOLUTION_DIR/files/duration.go" duration.go
