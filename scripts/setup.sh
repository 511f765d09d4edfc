#!/usr/bin/env bash
# Set up a development environment from a fresh clone: Debian packages (bubblewrap for sandboxed tools, tmux for
# stateful terminals, podman + runc + debootstrap for the docker backend unless a Docker engine already answers),
# a virtualenv in .venv, the Rust core built in release mode into it, the test/cluster/bench extras, and the
# container base image (idempotent: each step is skipped when its result is present).
set -euo pipefail
cd "$(dirname "$0")/.."
docker_engine_up() { command -v docker >/dev/null && timeout 20 docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }
packages=()
command -v bwrap >/dev/null || packages+=(bubblewrap)
command -v tmux >/dev/null || packages+=(tmux)
if ! command -v podman >/dev/null && ! docker_engine_up; then packages+=(podman runc); fi
command -v debootstrap >/dev/null || packages+=(debootstrap)
if [ ${#packages[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}" >/dev/null
    else
        echo "setup: install ${packages[*]} (sudo apt-get install ${packages[*]}) for sandboxed tools and containers" >&2
    fi
fi
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/pip install -q --upgrade pip
.venv/bin/pip install -q maturin
VIRTUAL_ENV="$PWD/.venv" .venv/bin/maturin develop --release -q --extras test,cluster,bench
# The docker backend's base image and an engine configuration that works on this machine (see
# hermes_env/containers/setup.py). Required as root (CI); elsewhere a missing engine only disables that backend.
.venv/bin/python -m hermes_env.containers setup || [ "$(id -u)" != 0 ]
