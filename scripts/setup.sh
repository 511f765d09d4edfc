#!/usr/bin/env bash
# Set up a development environment from a fresh clone: Debian packages (bubblewrap for
# sandboxed tools, tmux for stateful terminals), a virtualenv in .venv, the Rust core built
# in release mode into it, and the test/cluster/bench extras.
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
VIRTUAL_ENV="$PWD/.venv" .venv/bin/maturin develop --release -q --extras test,cluster,bench
