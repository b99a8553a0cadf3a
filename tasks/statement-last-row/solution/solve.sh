#!/bin/bash
set -euo pipefail
cp "$SOLUTION_DIR/files/statement/statement.go" statement/statement.go
