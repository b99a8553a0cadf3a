#!/bin/bash
set -euo pipefail
cp "$SOLUTION_DIR/files/relkit/version.py" relkit/version.py
