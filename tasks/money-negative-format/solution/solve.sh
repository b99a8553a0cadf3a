#!/bin/bash
set -euo pipefail
cp "$SOLUTION_DIR/files/money/money.go" money/money.go
