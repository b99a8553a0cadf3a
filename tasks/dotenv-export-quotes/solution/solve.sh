#!/bin/bash
set -euo pipefail
cp "$SOLUTION_DIR/files/envload/parser.py" envload/parser.py
