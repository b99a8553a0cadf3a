#!/bin/bash
set -euo pipefail
cp "$SOLUTION_DIR/files/logscan/parser.py" logscan/parser.py
