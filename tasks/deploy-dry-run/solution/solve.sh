#!/bin/bash
set -euo pipefail
cp "$SOLUTION_DIR/files/deploy.sh" deploy.sh
chmod +x deploy.sh
