#!/bin/bash
set -euo pipefail
cp "$SOLUTION_DIR/files/count/count.go" count/count.go
