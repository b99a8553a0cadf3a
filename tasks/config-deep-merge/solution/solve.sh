#!/bin/bash
set -euo pipefail
cp "$SOLUTION_DIR/files/layercfg/merge.py" layercfg/merge.py
