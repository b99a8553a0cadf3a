#!/bin/bash
set -euo pipefail
cp "$SOLUTION_DIR/files/bm/cli.py" bm/cli.py
