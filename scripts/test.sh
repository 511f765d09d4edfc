#!/usr/bin/env bash
# The whole test suite: Rust formatting and lints, the pure-Rust core's tests, ruff (lints and formatting), the
# extension's stubs, pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -q -- -D warnings
cargo test -p hermes_core -q
.venv/bin/ruff check python tests benches
.venv/bin/ruff format --check python tests benches
# The hand-written stubs of the Rust extension match what it exports.
.venv/bin/python -m mypy.stubtest hermes_env._core
.venv/bin/python -m pytest -q "$@"
