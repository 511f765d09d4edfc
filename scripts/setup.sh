#!/usr/bin/env bash
# Set up a development environment from a fresh clone: Debian packages (bubblewrap for sandboxed
# tools, tmux for stateful terminals, chromium for the HTML view's browser test), a virtualenv in
# .venv, the Rust core built in release mode into it, and the test/cluster/bench extras.
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

missing=()
command -v bwrap >/dev/null || missing+=(bubblewrap)
command -v tmux >/dev/null || missing+=(tmux)
command -v chromium >/dev/null || missing+=(chromium)
if [ "${#missing[@]}" -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        step "installing Debian packages: ${missing[*]}" apt_install "${missing[@]}"
    else
        echo "setup: install ${missing[*]} (sudo apt-get install ${missing[*]}): sandboxed tools need bubblewrap," \
            "stateful terminals tmux, the HTML view's browser test chromium" >&2
    fi
fi
[ -x .venv/bin/python ] || step "creating the virtualenv .venv" python3 -m venv .venv
step "installing maturin into .venv" .venv/bin/pip install -q --upgrade pip maturin
step "building the Rust core (release) and installing hermes_env with its test, cluster and bench extras" \
    env VIRTUAL_ENV="$PWD/.venv" .venv/bin/maturin develop --release --extras test,cluster,bench
echo "setup: done"
