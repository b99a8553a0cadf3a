#!/bin/bash
set -euo pipefail
cp "$SOLUTION_DIR/files/timesheet/report.py" timesheet/report.py
