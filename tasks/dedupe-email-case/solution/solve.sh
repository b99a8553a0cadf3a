#!/bin/bash
set -euo pipefail
cp "$SOLUTION_DIR/files/contactsync/dedupe.py" contactsync/dedupe.py
