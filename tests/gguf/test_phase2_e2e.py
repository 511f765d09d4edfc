"""End to end with the real model: Phase 2 through hermes_env's managed server, Phase 1 and the demo through the CLI.

SmolLM2-135M-Instruct is sampled by serve_gguf (llama.cpp on this CPU) at temperature 1; each
test checks that what would be trained is exactly what the model sampled: masks on exactly the
sampled tokens, and logprobs that a teacher-forced pass of the model reproduces
(``hermes_env.checks.recompute``).
"""

from __future__ import annotations

import asyncio
import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from gguf_helpers import run_module
from hermes_env.checks.recompute import check_groups
from hermes_env.environments.terminal_tasks.gguf_policy import GGUF_EXAMPLE_TURNS, GGUF_SYSTEM_PROMPT
from hermes_env.errors import TrajectoryDivergence
from hermes_env.trajectory import MASK, PROMPT_LOGPROB, TrajectoryDivergenceWarning

pytestmark = [pytest.mark.gguf, pytest.mark.e2e]

DATA = Path(__file__).resolve().parent / "data"


def terminal_schema() -> dict[str, Any]:
    from hermes_env.tools.registry import REGISTRY

    return REGISTRY.get("terminal").schema


async def with_managed(gguf_server: Any, tokenizer: Any, policy: str, body: Any) -> Any:
    """Runs ``body(managed)`` with hermes_env's ManagedServer over atroposlib's ServerManager -> serve_gguf."""
    from atroposlib.envs.server_handling.server_manager import ServerManager
    from hermes_env.managed import ManagedServer

    manager = ServerManager([gguf_server.server_config(timeout=300)])
    try:
        managed = ManagedServer(manager, tokenizer, tool_parser="hermes", divergence_policy=policy)
        return await body(managed)
    finally:
        for s in manager.servers:
            if s.check_task is not None:
                s.check_task.cancel()


def assert_trained_exactly_what_was_sampled(managed: Any, branch: Any) -> None:
    """Masks cover exactly the tokens the server returned for this branch's turns, in order; nothing else."""
    traj = branch.trajectory
    tokens, masks, logprobs = traj.tokens, traj.masks, traj.logprobs
    completions = [(start, end) for kind, start, end, _ in traj.segments if kind == "completion"]
    records = [managed._records[cid] for cid in branch.completion_ids]
    assert [tokens[s:e] for s, e in completions] == [list(r.token_ids) for r in records]
    trained = {i for i, m in enumerate(masks) if m != MASK}
    assert trained == {i for s, e in completions for i in range(s, e)}
    for i, (t, m, lp) in enumerate(zip(tokens, masks, logprobs, strict=True)):
        if i in trained:
            assert m == t and lp <= 0.0
        else:
            assert lp == PROMPT_LOGPROB


def write_groups(path: Path, branches: list[Any]) -> Path:
    items = [b.trajectory.to_scored_item(0.0) for b in branches]
    group = {
        "tokens": [i["tokens"] for i in items],
        "masks": [i["masks"] for i in items],
        "inference_logprobs": [i["inference_logprobs"] for i in items],
        "scores": [0.0] * len(items),
    }
    path.write_text(json.dumps(group) + "\n")
    return path


@pytest.fixture(scope="module")
def multi_turn(gguf_server: Any, tools_tokenizer: Any) -> Iterator[tuple[Any, Any]]:
    """A task sampled n=8 times; one branch that called a tool continues for two more turns (tool results in
    between), the last one cut by max_tokens. Yields (managed server, the continued branch)."""
    tools = [terminal_schema()]
    # The worked exchanges without their closing "Done." turns: the model often answers "Done." itself, and
    # the managed server recognises a reply by its content, so a copy of an example's text would be taken
    # for that example and the conversation would no longer continue this branch.
    examples = [m for m in GGUF_EXAMPLE_TURNS if m.get("content") != "Done."]
    opening = [
        {"role": "system", "content": GGUF_SYSTEM_PROMPT},
        *examples,
        {"role": "user", "content": "Create an empty file named a.txt."},
    ]

    async def body(managed: Any) -> tuple[Any, Any]:
        first = await managed.chat_completion(messages=opening, tools=tools, n=8, max_tokens=48, seed=1)
        called = [c for c in first.choices if c.message.tool_calls]
        assert called, [c.message.content for c in first.choices]  # the worked turns make most replies calls
        reply = called[0].message.model_dump(exclude_none=True)
        results = [{"role": "tool", "tool_call_id": c["id"], "content": "[exit code 0]"} for c in reply["tool_calls"]]
        messages = [*opening, reply, *results]
        second = await managed.chat_completion(messages=messages, tools=tools, max_tokens=48, seed=2)
        messages += [second.choices[0].message.model_dump(exclude_none=True)]
        messages += [{"role": "user", "content": "Now list the files."}]
        third = await managed.chat_completion(messages=messages, tools=tools, max_tokens=5, seed=3, ignore_eos=True)
        assert third.choices[0].finish_reason == "length"
        branch = max(managed.get_state()["branches"], key=lambda b: len(b.completion_ids))
        return managed, branch

    # keep_raw, the environments' default: a sampler may produce a non-canonical tokenization of its own text
    # (e.g. "}}" as one token where re-tokenizing the text gives two), which only the raw tokens preserve.
    yield asyncio.run(with_managed(gguf_server, tools_tokenizer, "keep_raw", body))


def test_multi_turn_masks_are_exactly_the_sampled_tokens(multi_turn: tuple[Any, Any], tools_tokenizer: Any) -> None:
    managed, branch = multi_turn
    assert len(branch.completion_ids) == 3
    assert branch.trajectory.last_finish_reason == "length"
    assert_trained_exactly_what_was_sampled(managed, branch)
    # The tool results and the new user message sit in the prompt part, untrained.
    untrained = [t for t, m in zip(branch.tokens, branch.masks, strict=True) if m == MASK]
    assert "[exit code 0]" in tools_tokenizer.decode(untrained) and "Now list the files." in tools_tokenizer.decode(
        untrained
    )
    # n = 8: every sample of the first turn is its own branch with its own exact trajectory.
    branches = managed.get_state()["branches"]
    assert len(branches) == 8
    for b in branches:
        assert_trained_exactly_what_was_sampled(managed, b)


def test_recompute_passes_and_a_shifted_trajectory_fails(
    multi_turn: tuple[Any, Any], smollm2: Path, tmp_path: Path
) -> None:
    managed, branch = multi_turn
    other = next(b for b in managed.get_state()["branches"] if b is not branch)  # another sample of turn 1
    path = write_groups(tmp_path / "groups.jsonl", [branch, other])
    report = check_groups(path, smollm2)
    assert report.passed, report.summary()
    assert report.mean_abs_diff < 0.15 and report.trained_tokens > 40
    # The classic off-by-one, on the multi-turn branch: each logprob written next to the following token.
    item = branch.trajectory.to_scored_item(0.0)
    lps, masks = item["inference_logprobs"], item["masks"]
    trained = [i for i, m in enumerate(masks) if m != MASK]
    values = [lps[i] for i in trained]
    for i, v in zip(trained, values[1:] + values[:1], strict=True):
        lps[i] = v
    shifted = tmp_path / "shifted.jsonl"
    shifted.write_text(json.dumps({"tokens": [item["tokens"]], "masks": [masks], "inference_logprobs": [lps]}) + "\n")
    proc = run_module("hermes_env.checks.recompute", str(shifted), "--model", str(smollm2))
    assert proc.returncode == 1 and "FAIL" in proc.stdout, proc.stdout + proc.stderr
    mean = float(proc.stdout.split("mean ")[1].split(" nats")[0])
    # Far above the check's 0.15-nat threshold (the right logprobs gave < 0.15 above); how far depends on the
    # sampled text, so no closer bound.
    assert mean > 0.5, proc.stdout
    # Phase-1 data (no logprobs) is not checkable: a clear error, exit status 2.
    phase1 = tmp_path / "phase1.jsonl"
    phase1.write_text(json.dumps({"tokens": [item["tokens"]], "masks": [masks]}) + "\n")
    proc = run_module("hermes_env.checks.recompute", str(phase1))
    assert proc.returncode == 2 and "has no inference_logprobs" in proc.stderr


def test_divergence_policies_when_the_template_rewrites_history(
    gguf_server: Any, smollm2: Path, tmp_path: Path
) -> None:
    from hermes_env.gguf import load_gguf_tokenizer

    tokenizer = load_gguf_tokenizer(smollm2, chat_template=str(DATA / "marks_earlier_turns.jinja"))
    opening = [{"role": "user", "content": "Say something about the sea."}]

    async def two_turns(managed: Any) -> tuple[Any, Any]:
        first = await managed.chat_completion(messages=opening, max_tokens=12, seed=4)
        reply = first.choices[0].message.model_dump(exclude_none=True)
        messages = [*opening, reply, {"role": "user", "content": "And about the sky?"}]
        await managed.chat_completion(messages=messages, max_tokens=12, seed=5)
        return managed, managed.get_state()

    with pytest.raises(TrajectoryDivergence):
        asyncio.run(with_managed(gguf_server, tokenizer, "raise", two_turns))

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        managed, state = asyncio.run(with_managed(gguf_server, tokenizer, "warn_and_restart", two_turns))
    assert any(issubclass(w.category, TrajectoryDivergenceWarning) for w in caught)
    (branch,) = state["branches"]
    assert len(state["nodes"]) == 2 and len(branch.restarted) == 1  # the first turn is kept as its own sequence
    closed = branch.restarted[0]
    assert closed.trajectory.num_trained == len(managed._records[branch.completion_ids[0]].token_ids)
    assert branch.trajectory.num_trained == len(managed._records[branch.completion_ids[1]].token_ids)
    assert "[earlier] " in tokenizer.decode(branch.tokens)  # the restart holds the template's rendering

    managed, state = asyncio.run(with_managed(gguf_server, tokenizer, "keep_raw", two_turns))
    (branch,) = state["branches"]
    assert_trained_exactly_what_was_sampled(managed, branch)
    assert "[earlier] " not in tokenizer.decode(branch.tokens)  # the model's own tokens, not the re-rendering
    report = check_groups(write_groups(tmp_path / "kept_raw.jsonl", [branch]), smollm2)
    assert report.passed, report.summary()
