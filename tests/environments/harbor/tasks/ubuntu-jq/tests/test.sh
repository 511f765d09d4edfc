#!/bin/bash
# Checks the answer with the image's own tools; the reward goes to reward.json.
grep -q 'VERSION_ID="24.04"' /etc/os-release || { echo "not Ubuntu 24.04"; echo '{"reward": 0}' > /logs/verifier/reward.json; exit 0; }
if [ "$(cat /srv/data/older.txt 2>/dev/null)" = "$(printf 'Ada\nGrace')" ]; then
  echo '{"reward": 1}' > /logs/verifier/reward.json
else
  echo '{"reward": 0}' > /logs/verifier/reward.json
fi
