#!/usr/bin/env bash
# vLLM 0.33.0's tool-parser tests against hermes_env (a development check; see README.md here).
# Usage: tools/upstream_suites/run_vllm.sh ORACLE_VENV [pytest args...]
#   ORACLE_VENV: made by tools/vllm-oracle/setup.sh (pytest is added to it if missing).
# The vLLM source tree (for its tests/) is fetched from PyPI once into $UPSTREAM_DIR.
set -euo pipefail
oracle=${1:?usage: run_vllm.sh ORACLE_VENV [pytest args...]}; shift
here=$(cd "$(dirname "$0")" && pwd); repo=$(cd "$here/../.." && pwd)
src=${UPSTREAM_DIR:-/tmp/hermes-upstream}/vllm-0.33.0
if [ ! -d "$src/tests/tool_parsers" ]; then
    mkdir -p "$(dirname "$src")"
    url=$(curl -fsS -H "Accept: application/vnd.pypi.simple.v1+json" https://pypi.org/simple/vllm/ |
        "$oracle/bin/python" -c 'import json,sys; print([f["url"] for f in json.load(sys.stdin)["files"] if f["filename"]=="vllm-0.33.0.tar.gz"][0])')
    curl -fsS "$url" | tar xz -C "$(dirname "$src")" vllm-0.33.0/tests
fi
"$oracle/bin/python" -c "import pytest" 2>/dev/null || "$oracle/bin/pip" install -q pytest
tok=$("$repo/.venv/bin/python" -c "from hermes_env.testing import qwen3_tokenizer_dir; print(qwen3_tokenizer_dir())")
files=()
for f in qwen3coder glm4_moe glm47_moe hermes kimi_k2 pythonic llama4_pythonic llama3_json deepseekv3 deepseekv31 \
         granite internlm2 jamba longcat xlam; do
    files+=("tests/tool_parsers/test_${f}_tool_parser.py")
done
cd "$src"
QWEN3_TOKENIZER_DIR=$tok PYTHONPATH="$repo/python:$here:." \
    "$oracle/bin/python" -m pytest -p hermes_as_vllm --noconftest -q -p no:cacheprovider "${files[@]}" "$@"
