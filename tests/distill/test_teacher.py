"""Teacher scoring: vLLM prompt_logprobs parsing, contexts, filler, alignment checks, failures, tokenizer check."""

from __future__ import annotations

from typing import Any

import pytest
from hermes_env.distill import FILLER_LOGPROB, FILLER_TOKEN_ID, TeacherClient, TeacherContext, check_distill_arrays
from hermes_env.distill.teacher import generate_url, top_k_entries
from hermes_env.distill.tokenizers import tokenizer_mismatch
from hermes_env.errors import TeacherError
from hermes_env.testing import qwen3_tokenizer
from hermes_env.testing.scripted_vllm import ScriptedVLLMServer, scripted_prompt_logprobs
from hermes_env.testing.trainer_stub import check_batch
from hypothesis import given
from hypothesis import strategies as st

M = -100


def test_top_k_entries_are_best_first_with_ties_by_id() -> None:
    entry = {"7": -2.0, "3": -0.5, "9": -0.5, "1": -3.0}
    assert top_k_entries(entry, 3) == ([3, 9, 7], [-0.5, -0.5, -2.0])
    # vLLM's Logprob objects and the list-of-single-entry form read the same.
    assert top_k_entries({"4": {"logprob": -0.1, "rank": 1}, "5": {"logprob": -1.0}}, 1) == ([4], [-0.1])
    assert top_k_entries([{"4": -0.1}, {"5": -1.0}], 2) == ([4, 5], [-0.1, -1.0])


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"1": -0.1}, "returned 1 logprobs at a position, fewer than teacher_top_k=2"),
        ({"1": -0.1, "x": -1.0}, "not a token id"),
        ({"1": -0.1, "2": 0.5}, "not a finite number <= 0"),
        (None, "not an object"),
    ],
)
def test_unusable_prompt_logprobs_are_refused(entry: Any, message: str) -> None:
    with pytest.raises(TeacherError, match=message):
        top_k_entries(entry, 2)


def test_generate_url() -> None:
    assert generate_url("http://h:1/v1") == generate_url("http://h:1/") == "http://h:1/generate"


@pytest.fixture(scope="module")
def teacher_server() -> Any:
    with ScriptedVLLMServer(qwen3_tokenizer(), lambda request: "ok") as server:
        yield server


def _expected(ids: list[int], p: int, k: int) -> tuple[list[int], list[float]]:
    return top_k_entries(scripted_prompt_logprobs(ids, k, len(qwen3_tokenizer()))[p], k)


async def test_teacher_scores_each_run_in_its_context_and_fills_the_rest(teacher_server: Any) -> None:
    tokens = [11, 12, 13, 14, 15, 16, 17, 18]
    masks = [M, M, 13, 14, M, M, 17, M]
    client = TeacherClient(teacher_server.base_url, top_k=3, vocab_size=len(qwen3_tokenizer()))
    prefix = [90, 91, 92, 93]
    contexts = [TeacherContext(2, 4), TeacherContext(6, 7, prefix_ids=prefix, hint="look first")]
    arrays = await client.score(tokens, contexts)
    # Same context: the student's own tokens before the run; hinted: the prefix, then the run's tokens.
    assert arrays.token_ids[2] == _expected(tokens, 2, 3)[0] and arrays.logprobs[3] == _expected(tokens, 3, 3)[1]
    assert (arrays.token_ids[6], arrays.logprobs[6]) == _expected([*prefix, 17], 4, 3)
    for p in (0, 1, 4, 5, 7):
        assert arrays.token_ids[p] == [FILLER_TOKEN_ID] * 3 and arrays.logprobs[p] == [FILLER_LOGPROB] * 3
    assert arrays.requests == 2 and arrays.tokens_sent == 4 + 5
    assert check_distill_arrays([tokens], [masks], [arrays.token_ids], [arrays.logprobs]) == []
    sent = [r.body for r in teacher_server.requests[-2:]]
    assert {tuple(b["prompt"]["prompt_token_ids"]) for b in sent} == {tuple(tokens[:4]), (*prefix, 17)}
    assert all(b["prompt_logprobs"] == 3 and b["max_tokens"] == 1 for b in sent)


async def test_a_teacher_that_fails_raises_teacher_error() -> None:
    def broken(request: Any) -> str:
        raise LookupError("no script left")

    with ScriptedVLLMServer(qwen3_tokenizer(), broken) as server:
        client = TeacherClient(server.base_url, top_k=2)
        with pytest.raises(TeacherError, match="answered HTTP 400"):
            await client.score([1, 2, 3], [TeacherContext(1, 3)])
    client = TeacherClient("http://127.0.0.1:9", top_k=2)  # nothing listens on port 9
    with pytest.raises(TeacherError, match="could not be asked"):
        await client.prompt_top_k([1, 2], [1])


async def test_a_teacher_answering_ids_outside_the_student_vocabulary_is_refused(teacher_server: Any) -> None:
    client = TeacherClient(teacher_server.base_url, top_k=2, vocab_size=50)
    with pytest.raises(TeacherError, match="outside the student's vocabulary of 50"):
        await client.prompt_top_k([1000, 2000, 3000], [1, 2])


class _Vocab:
    def __init__(self, vocab: dict[str, int]) -> None:
        self.vocab = vocab

    def get_vocab(self) -> dict[str, int]:
        return self.vocab


def test_tokenizer_mismatch_names_what_differs() -> None:
    assert tokenizer_mismatch(_Vocab({"a": 0, "b": 1}), _Vocab({"a": 0, "b": 1})) is None
    assert tokenizer_mismatch(_Vocab({"a": 0}), _Vocab({"a": 0, "b": 1})) == "2 tokens against the student's 1"
    assert "id 0: 'a' for the student, 'b' for the teacher" in str(
        tokenizer_mismatch(_Vocab({"a": 0, "b": 1}), _Vocab({"b": 0, "a": 1}))
    )


def test_check_distill_arrays_finds_misalignment() -> None:
    tokens, masks = [[1, 2, 3]], [[M, 2, 3]]
    good_ids = [[[0, 0], [5, 6], [7, 8]]]
    good_lps = [[[0.0, 0.0], [-0.1, -1.0], [-0.2, -2.0]]]
    assert check_distill_arrays(tokens, masks, good_ids, good_lps) == []
    assert check_distill_arrays(tokens, masks, None, None) == []
    assert "only one of" in check_distill_arrays(tokens, masks, good_ids, None)[0]
    short = check_distill_arrays(tokens, masks, [good_ids[0][:2]], [good_lps[0][:2]])
    assert "2/2 distill rows for 3 tokens" in short[0]
    ragged = [[[0, 0], [5], [7, 8]]]
    assert "position 1: 1/2 entries, expected 2" in check_distill_arrays(tokens, masks, ragged, good_lps)[0]
    not_filler = [[[4, 0], [5, 6], [7, 8]]]
    assert "untrained, but not the filler" in check_distill_arrays(tokens, masks, not_filler, good_lps)[0]
    positive = [[[0.0, 0.0], [0.1, -1.0], [-0.2, -2.0]]]
    assert "not a number <= 0" in check_distill_arrays(tokens, masks, good_ids, positive)[0]


def test_trainer_stub_checks_advantages_and_distill_arrays() -> None:
    group = {
        "tokens": [[1, 2, 3]],
        "masks": [[M, 2, 3]],
        "scores": [1.0],
        "advantages": [[0.0, 0.5, 0.5]],
        "distill_token_ids": [[[0], [5], [7]]],
        "distill_logprobs": [[[0.0], [-0.1], [-0.2]]],
    }
    report = check_batch([group])
    assert report.problems == [] and report.with_advantages == 1 and report.with_distill == 1
    bad = {**group, "advantages": [[0.3, 0.5, 0.5]], "distill_token_ids": [[[0], [5]]]}
    problems = check_batch([bad]).problems
    assert any("untrained position has a non-zero advantage" in p for p in problems)
    assert any("distill rows for 3 tokens" in p for p in problems)


@given(st.lists(st.lists(st.booleans(), min_size=1, max_size=12), min_size=1, max_size=4), st.integers(1, 4))
def test_filled_arrays_line_up_for_any_mask(trained: list[list[bool]], k: int) -> None:
    tokens = [[i + 1 for i in range(len(t))] for t in trained]
    masks = [[tok if on else M for tok, on in zip(seq, t, strict=True)] for seq, t in zip(tokens, trained, strict=True)]
    ids = [[[p + 1] * k if m != M else [FILLER_TOKEN_ID] * k for p, m in enumerate(mask)] for mask in masks]
    lps = [[[-1.0] * k if m != M else [FILLER_LOGPROB] * k for m in mask] for mask in masks]
    assert check_distill_arrays(tokens, masks, ids, lps) == []
