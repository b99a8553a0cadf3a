#!/bin/bash
set -euo pipefail
cp "$SOLUTION_DIR/files/notify/notifier.go" notify/notifier.go
cp "$SOLUTION_DIR/files/cmd/alertd/main.go" cmd/alertd/main.go
