#!/bin/bash
set -euo pipefail
cp "$SOLUTION_DIR/files/lru/lru.go" lru/lru.go
