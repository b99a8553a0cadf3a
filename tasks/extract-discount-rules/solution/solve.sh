#!/bin/bash
set -euo pipefail
cp "$SOLUTION_DIR/files/shopcart/pricing.py" shopcart/pricing.py
cp "$SOLUTION_DIR/files/shopcart/cart.py" shopcart/cart.py
cp "$SOLUTION_DIR/files/shopcart/invoice.py" shopcart/invoice.py
