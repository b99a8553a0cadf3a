#!/bin/bash
set -euo pipefail
cp "$SOLUTION_DIR/files/pager/pager.go" pager/pager.go
