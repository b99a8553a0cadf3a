#!/bin/bash
set -euo pipefail
cp "$SOLUTION_DIR/files/backoff.go" backoff.go
