"""What Trajectory and assistant_token_mask raise: hermes_env.errors' TrajectoryError tree (HermesEnvError and
ValueError), with the offending position and a message naming what was wrong."""

from __future__ import annotations

import hermes_env._renamed as _renamed
import hermes_env.errors as errors
import hermes_env.trajectory as trajectory
import pytest
from hermes_env.trajectory import FINISH_REASONS, Trajectory, assistant_token_mask


def test_the_trajectory_modules_old_names_are_the_errors_classes() -> None:
    for name in ("TrajectoryError", "TrajectoryDivergence"):
        _renamed._warned.discard(f"hermes_env.trajectory:{name}")  # warned once per process: maybe already
        with pytest.warns(DeprecationWarning, match=f"import {name} from hermes_env.errors"):
            assert getattr(trajectory, name) is getattr(errors, name)
    assert issubclass(errors.TrajectoryError, errors.HermesEnvError)
    assert issubclass(errors.TrajectoryError, ValueError)


def test_bad_input_carries_its_index() -> None:
    with pytest.raises(errors.TrajectoryError, match=r"index 1 is negative \(-7\)") as info:
        Trajectory(vocab_size=10).add_prompt([1, -7])
    assert info.value.index == 1
    with pytest.raises(errors.TrajectoryError, match=r"vocab_size must be a positive integer.*got 0") as info:
        Trajectory(vocab_size=0)
    assert info.value.index is None
    with pytest.raises(errors.TrajectoryError, match="span at index 1"):
        assistant_token_mask([(0, 1)], [(0, 5), (3, 6)], [5])


def test_unknown_names_list_the_valid_ones() -> None:
    t = Trajectory()
    t.add_prompt([1, 2])
    with pytest.raises(errors.TrajectoryError, match=r"finish_reason \"nope\".*use one of") as info:
        t.add_completion([3], [-0.5], finish_reason="nope")
    assert all(reason in str(info.value) for reason in FINISH_REASONS)
    with pytest.raises(errors.TrajectoryError, match="'raise', 'warn_and_restart' or 'keep_raw'"):
        t.extend([1, 2, 3], policy="nope")  # type: ignore[arg-type]


def test_a_divergence_carries_index_and_window() -> None:
    t = Trajectory()
    t.add_prompt([1, 2, 3])
    t.add_completion([4], [-0.1], finish_reason="stop")
    with pytest.raises(errors.TrajectoryDivergence, match="differ at token index 1") as info:
        t.extend([1, 9, 3, 4, 5], policy="raise")
    err = info.value
    assert isinstance(err, errors.TrajectoryError) and err.index == 1
    assert (err.window["index"], err.window["ours"][1], err.window["theirs"][1]) == (1, 2, 9)
