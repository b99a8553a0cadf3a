#!/bin/bash
set -euo pipefail
cp "$SOLUTION_DIR/files/check-env.sh" check-env.sh
chmod +x check-env.sh
