"""The real model as its own teacher: serve_gguf's prompt_logprobs top-k, and the recompute check of them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hermes_env.checks.recompute import check_distill
from hermes_env.distill import TeacherClient, TeacherContext, filler_row

pytestmark = [pytest.mark.gguf]

K = 5


def _ids(tokenizer: Any, messages: list[dict[str, str]], **kwargs: Any) -> list[int]:
    ids = tokenizer.apply_chat_template(messages, tokenize=True, **kwargs)
    return list(ids["input_ids"] if hasattr(ids, "keys") else ids)


async def _written_group(gguf_server: Any, tokenizer: Any) -> dict[str, Any]:
    chat = [
        {"role": "user", "content": "Name a colour."},
        {"role": "assistant", "content": "Blue is a colour."},
        {"role": "user", "content": "And another one?"},
        {"role": "assistant", "content": "Green."},
    ]
    tokens = _ids(tokenizer, chat)
    # Train the first answer's first tokens and the last four tokens.
    first = len(_ids(tokenizer, chat[:1], add_generation_prompt=True))
    runs = [(first, first + 5), (len(tokens) - 4, len(tokens))]
    masks = [-100] * len(tokens)
    for s, e in runs:
        masks[s:e] = tokens[s:e]
    hinted = [*chat[:2], {"role": "user", "content": "And another one? [hint for this step] Pick green."}]
    prefix = _ids(tokenizer, hinted, add_generation_prompt=True)
    contexts = [TeacherContext(*runs[0]), TeacherContext(*runs[1], prefix_ids=prefix, hint="Pick green.")]
    client = TeacherClient(gguf_server.base_url, top_k=K, vocab_size=len(tokenizer))
    arrays = await client.score(tokens, contexts)
    return {
        "tokens": [tokens],
        "masks": [masks],
        "scores": [1.0],
        "distill_token_ids": [arrays.token_ids],
        "distill_logprobs": [arrays.logprobs],
        "rollout_info": [{"distill": {"contexts": [c.to_json() for c in contexts]}}],
    }


async def test_teacher_top_k_recomputes_and_a_shifted_array_fails(
    gguf_server: Any, tools_tokenizer: Any, smollm2: Path, tmp_path: Path
) -> None:
    group = await _written_group(gguf_server, tools_tokenizer)
    mask = group["masks"][0]
    for p, m in enumerate(mask):
        row_ids, row_lps = group["distill_token_ids"][0][p], group["distill_logprobs"][0][p]
        if m == -100:
            assert (row_ids, row_lps) == filler_row(K)
        else:
            assert len(set(row_ids)) == K and row_lps == sorted(row_lps, reverse=True)
    path = tmp_path / "distill.jsonl"
    path.write_text(json.dumps(group) + "\n")
    report = check_distill(path, smollm2)
    assert report.passed, report.summary()
    assert report.positions == sum(m != -100 for m in mask)

    # The hinted context matters: scored in the sequence's own context instead, the second run disagrees.
    same = json.loads(json.dumps(group))
    same["rollout_info"][0]["distill"]["contexts"][1]["prefix_ids"] = None
    path.write_text(json.dumps(same) + "\n")
    assert check_distill(path, smollm2).mean_abs_diff > report.mean_abs_diff

    # One position out of step: every trained row moved to the next position.
    shifted = json.loads(json.dumps(group))
    trained = [p for p, m in enumerate(mask) if m != -100]
    rows = shifted["distill_logprobs"][0]
    for a, b in zip(trained, trained[1:], strict=False):
        rows[a] = group["distill_logprobs"][0][b]
    path.write_text(json.dumps(shifted) + "\n")
    assert not check_distill(path, smollm2).passed
