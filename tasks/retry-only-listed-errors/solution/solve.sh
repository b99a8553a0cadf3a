#!/bin/bash
set -euo pipefail
cp "$SOLUTION_DIR/files/fetchkit/retry.py" fetchkit/retry.py
