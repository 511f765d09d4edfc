#!/usr/bin/env bash
# SGLang's function-call parser tests against hermes_env (a development check; see README.md here).
# Usage: tools/upstream_suites/run_sglang.sh ORACLE_VENV [pytest args...]
#   ORACLE_VENV: made by tools/vllm-oracle/setup.sh (it has what sglang.srt.function_call imports;
#   pytest is added if missing). SGLANG_ONLY=1 runs SGLang's own detectors instead (the baseline).
# SGLang's tests are not on PyPI: the selection this runs is listed in sglang/SOURCES.md and must be
# in sglang/test/ (kept out of git). The sglang package (0.5.9) is fetched from PyPI once into
# $UPSTREAM_DIR.
set -euo pipefail
oracle=${1:?usage: run_sglang.sh ORACLE_VENV [pytest args...]}; shift
here=$(cd "$(dirname "$0")" && pwd); repo=$(cd "$here/../.." && pwd)
tests=$here/sglang/test/registered/function_call
if [ ! -f "$tests/test_function_call_parser.py" ]; then
    echo "SGLang's test files are missing from $tests: place them as $here/sglang/SOURCES.md says." >&2
    exit 2
fi
# Packages, so that test_qwen3_coder_detector's relative imports work.
for d in test test/registered test/registered/function_call test/registered/function_call/test_qwen3_coder_detector; do
    touch "$here/sglang/$d/__init__.py"
done
dest=${UPSTREAM_DIR:-/tmp/hermes-upstream}
"$here/pypi_sdist.sh" "$oracle/bin/python" sglang 0.5.9 "$dest" sglang
src=$dest/sglang-0.5.9
"$oracle/bin/python" -c "import pytest" 2>/dev/null || "$oracle/bin/pip" install -q pytest
plugin=(-p hermes_as_sglang)
[ "${SGLANG_ONLY:-}" = 1 ] && plugin=()
cd "$src"
PYTHONPATH="$repo/python:$here:$here/sglang:." "$oracle/bin/python" -m pytest "${plugin[@]}" -q -p no:cacheprovider \
    "$tests" "$here/sglang/test_qwen3_coder_registered_cases.py" "$@"
