#!/usr/bin/env bash
# Set up a development environment from a fresh clone: Debian packages (bubblewrap for sandboxed tools, tmux for
# stateful terminals, chromium for the HTML view's browser test, podman + runc + debootstrap for the docker backend
# unless a Docker engine already answers), a virtualenv in .venv, the Rust core built in release mode into it, the
# test/cluster/bench/gguf extras, and the container base image.
# One line per step; a step that fails prints the end of its output. Running it again skips what is done.
set -euo pipefail
cd "$(dirname "$0")/.."

log="$(mktemp -t hermes-setup.XXXXXX)"
trap 'rm -f "$log"' EXIT

step() {  # step "what" command...: run quietly, show the output only when it fails
    local what="$1"
    shift
    echo "setup: $what"
    if ! "$@" >"$log" 2>&1; then
        echo "setup: FAILED: $what; the end of its output:" >&2
        tail -n 40 "$log" >&2
        exit 1
    fi
}

apt_install() {
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"
}

docker_engine_up() { command -v docker >/dev/null && timeout 20 docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

missing=()
command -v bwrap >/dev/null || missing+=(bubblewrap)
command -v tmux >/dev/null || missing+=(tmux)
command -v chromium >/dev/null || missing+=(chromium)
if ! command -v podman >/dev/null && ! docker_engine_up; then missing+=(podman runc); fi
command -v debootstrap >/dev/null || missing+=(debootstrap)
if [ "${#missing[@]}" -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        step "installing Debian packages: ${missing[*]}" apt_install "${missing[@]}"
    else
        echo "setup: install ${missing[*]} (sudo apt-get install ${missing[*]}): sandboxed tools need bubblewrap," \
            "stateful terminals tmux, the HTML view's browser test chromium, the docker backend podman, runc and" \
            "debootstrap" >&2
    fi
fi
[ -x .venv/bin/python ] || step "creating the virtualenv .venv" python3 -m venv .venv
step "installing maturin into .venv" .venv/bin/pip install -q --upgrade pip maturin
step "building the Rust core (release) and installing hermes_env with its test, cluster and bench extras" \
    env VIRTUAL_ENV="$PWD/.venv" .venv/bin/maturin develop --release --extras test,cluster,bench

# The docker backend's base image and an engine configuration that works on this machine
# (hermes_env/containers/setup.py). It mostly waits on Debian's mirror, so it runs while llama.cpp compiles.
# Required as root (CI); elsewhere a missing engine only turns that backend off.
containers_log="$(mktemp -t hermes-setup-containers.XXXXXX)"
trap 'rm -f "$log" "$containers_log"' EXIT
echo "setup: making the container base image and engine configuration (docker backend), in the background"
.venv/bin/python -m hermes_env.containers setup >"$containers_log" 2>&1 &
containers_pid=$!

# The gguf extra (a real model on CPU) builds llama-cpp-python from source: about 12 minutes on 2 cores the
# first time, then pip's wheel cache has it. -march=native builds die with SIGILL on some VMs, hence
# GGML_NATIVE=OFF; LLAVA_BUILD=OFF skips the multimodal library hermes_env does not use.
gguf_requirements="$(.venv/bin/python -c 'import tomllib; print(" ".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["gguf"]))')"
gguf_note=""
.venv/bin/python -c "import llama_cpp" 2>/dev/null || gguf_note=" (llama-cpp-python: a ~12 min source build unless pip has it cached)"
# shellcheck disable=SC2086
step "installing the gguf extra$gguf_note" \
    env CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF}" .venv/bin/pip install -q $gguf_requirements

if wait "$containers_pid"; then
    echo "setup: container base image ready"
elif [ "$(id -u)" = 0 ]; then
    echo "setup: FAILED: making the container base image; the end of its output:" >&2
    tail -n 40 "$containers_log" >&2
    exit 1
else
    echo "setup: no container engine set up (the docker backend is off): $(tail -n 1 "$containers_log")" >&2
fi
echo "setup: done"
