#!/bin/bash
if [ "$(cat /app/size.txt 2>/dev/null)" = "2684354560" ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
