#!/bin/bash
set -euo pipefail
cp "$SOLUTION_DIR/files/Makefile" Makefile
cp "$SOLUTION_DIR/files/README.md" README.md
