#!/bin/bash
set -euo pipefail
cp "$SOLUTION_DIR/files/scripts/relnotes.sh" scripts/relnotes.sh
chmod +x scripts/relnotes.sh
