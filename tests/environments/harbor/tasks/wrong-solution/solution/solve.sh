#!/bin/bash
# Wrong on purpose: 1 is not prime. The oracle must report this task.
echo "1 2 3 5 7" > /app/primes.txt
