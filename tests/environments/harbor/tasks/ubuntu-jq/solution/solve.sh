#!/bin/bash
jq -r '.[] | select(.age > 30) | .name' /srv/data/people.json > /srv/data/older.txt
