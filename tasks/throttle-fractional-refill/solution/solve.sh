#!/bin/bash
set -euo pipefail
cp "$SOLUTION_DIR/files/bucket/bucket.go" bucket/bucket.go
