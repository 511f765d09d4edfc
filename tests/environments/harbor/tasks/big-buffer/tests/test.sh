#!/bin/bash
# pytest installed with pip into the image's own Python at verify time (the other style TB2 tasks use).
python3 -m pip install --no-cache-dir -q "pytest==8.4.1"
if python3 -m pytest /tests/test_size.py -rA; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
