#!/bin/bash
set -euo pipefail
cp "$SOLUTION_DIR/files/summarize.sh" summarize.sh
chmod +x summarize.sh
