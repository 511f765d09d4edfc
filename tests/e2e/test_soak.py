"""A short soak (``benches/soak.py``): ``serve`` with faults at random on the slot pool, every pulled group valid,
every dropped group explained by an injected fault, and nothing left behind once ``serve`` is stopped."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest
from hermes_env.isolation import bwrap_problem

BENCHES = Path(__file__).resolve().parents[2] / "benches"
sys.path.insert(0, str(BENCHES))

pytestmark = pytest.mark.e2e
pytest.importorskip("matplotlib")

SOAK_MINUTES = 1.0
# What each injected fault may cost: a policy fault drops its group as a bad response, a killed worker as a failed
# sandbox, a restart of the policy server as a connection error; a hostile command (fork bomb, memory, disk) is
# contained and drops nothing.
EXPLAINED = {"policy_bad_response", "sandbox_failed", "policy_connection_error"}


@pytest.mark.timeout(900)
def test_short_soak_on_the_slot_pool(tmp_path: Path) -> None:
    if bwrap_problem() is not None:
        pytest.skip(f"bubblewrap unusable here: {bwrap_problem()}")
    import soak

    args = argparse.Namespace(
        minutes=SOAK_MINUTES, backend="sandbox", fault_rate=0.05, hostile_rate=0.05, worker_kill_every_s=20.0,
        policy_restart_every_s=25.0, policy_down_s=2.0, group_size=4, batch_size=8, concurrency=8, sample_s=2.0,
        seed=1, out=str(tmp_path),
    )  # fmt: skip
    report = soak.soak(args)
    assert report["serve_ran_to_the_end"] and report["serve_exit_status"] == 143, report
    assert report["groups_pulled"] > 0 and report["bad_groups"] == 0, report["problems"]
    assert set(report["groups_dropped_by_cause"]) <= EXPLAINED, report
    if report["groups_dropped_by_cause"].get("sandbox_failed"):
        assert report["workers_killed"] > 0
    if report["groups_dropped_by_cause"].get("policy_connection_error"):
        assert report["policy_server_restarts"] > 0
    assert report["groups_dropped_while_stopping"] == 0
    assert not any(report["leftovers"].values()), report["leftovers"]
    assert (tmp_path / "rss.png").is_file()
