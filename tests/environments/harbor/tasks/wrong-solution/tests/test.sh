#!/bin/bash
if [ "$(cat /app/primes.txt 2>/dev/null)" = "2 3 5 7 11" ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
