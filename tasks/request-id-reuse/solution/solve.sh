#!/bin/bash
set -euo pipefail
cp "$SOLUTION_DIR/files/middleware/requestid.go" middleware/requestid.go
