#!/bin/bash
set -euo pipefail
cp "$SOLUTION_DIR/files/config/config.go" config/config.go
