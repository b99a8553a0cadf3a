#!/bin/bash
set -euo pipefail
cp "$SOLUTION_DIR/files/mdtable/table.py" mdtable/table.py
