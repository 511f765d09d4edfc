#!/usr/bin/env bash
# Set up a development environment from a fresh clone: Debian packages (bubblewrap for
# sandboxed tools, tmux for stateful terminals), a virtualenv in .venv, the Rust core built
# in release mode into it, and the test/cluster/bench/gguf extras.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v bwrap >/dev/null || ! command -v tmux >/dev/null; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap tmux >/dev/null
    else
        echo "setup: install bubblewrap and tmux (sudo apt-get install bubblewrap tmux) for sandboxed tools" >&2
    fi
fi
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/pip install -q --upgrade pip
.venv/bin/pip install -q maturin
# The gguf extra builds llama-cpp-python from source: about 12 minutes on 2 cores the first time,
# then pip's wheel cache has it. -march=native builds die with SIGILL on some VMs, hence
# GGML_NATIVE=OFF; LLAVA_BUILD=OFF skips the multimodal library hermes_env does not use.
if ! .venv/bin/python -c "import llama_cpp" 2>/dev/null; then
    echo "setup: installing llama-cpp-python (gguf extra): a source build of about 12 minutes unless pip has it cached" >&2
fi
export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF}"
VIRTUAL_ENV="$PWD/.venv" .venv/bin/maturin develop --release -q --extras test,cluster,bench,gguf
