#!/bin/bash
set -euo pipefail
cp "$SOLUTION_DIR/files/diskreport/units.py" diskreport/units.py
