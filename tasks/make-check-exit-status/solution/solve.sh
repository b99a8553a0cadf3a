#!/bin/bash
set -euo pipefail
cp "$SOLUTION_DIR/files/Makefile" Makefile
