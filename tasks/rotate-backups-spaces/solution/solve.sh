#!/bin/bash
set -euo pipefail
cp "$SOLUTION_DIR/files/rotate-backups.sh" rotate-backups.sh
chmod +x rotate-backups.sh
