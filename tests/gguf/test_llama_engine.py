"""The llama.cpp engine with the real model: logprobs, n > 1, prefix re-use, stopping, queueing, errors."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hermes_env.checks.recompute import recompute_logprobs
from hermes_env.errors import GenerationRequestError
from hermes_env.gguf.engine import Engine, GenerationRequest
from hermes_env.gguf.llama import LlamaCpp
from hermes_env.gguf.sampling import SamplingParams

pytestmark = pytest.mark.gguf


@pytest.fixture(scope="module")
def engine(smollm2: Path) -> Iterator[Engine]:
    model = LlamaCpp(smollm2, n_ctx=4096, n_seq=4, n_batch=256, n_threads=1)
    eng = Engine(model, seed=0).start()
    yield eng
    eng.stop()
    model.close()


@pytest.fixture(scope="module")
def prompt(gguf_tokenizer: Any) -> list[int]:
    text = gguf_tokenizer.apply_chat_template(
        [{"role": "user", "content": "Name three colours."}], tokenize=False, add_generation_prompt=True
    )
    return gguf_tokenizer.encode(text, add_special_tokens=False)


def run(engine: Engine, **kwargs: Any) -> Any:
    return engine.submit(GenerationRequest(**kwargs)).result(timeout=300)


def test_logprobs_are_the_models_at_temperature_1(engine: Engine, prompt: list[int], smollm2: Path) -> None:
    # Sampled at T=0.7 with top-p 0.9, yet the logprobs are those of the model's own distribution:
    # a teacher-forced pass over the same tokens gives them back to within the kernels' rounding.
    result = run(engine, prompt=prompt, n=3, max_tokens=24, sampling=SamplingParams(0.7, 0.9), seed=3)
    sequences = [prompt + s.token_ids for s in result.samples]
    recomputed = recompute_logprobs(smollm2, sequences)
    diffs = np.concatenate(
        [np.abs(np.array(s.logprobs) - r[len(prompt) :]) for s, r in zip(result.samples, recomputed, strict=True)]
    )
    assert diffs.mean() < 0.15, diffs.mean()
    for s in result.samples:
        assert all(np.isfinite(s.logprobs)) and max(s.logprobs) <= 0.0
        assert all(0 <= t < engine.vocab_size for t in s.token_ids)


def test_n_samples_read_the_prompt_once(engine: Engine, prompt: list[int]) -> None:
    before = dict(engine.stats)
    result = run(engine, prompt=prompt, n=4, max_tokens=12, seed=11, ignore_eos=True)
    read = engine.stats["prompt_tokens_read"] - before["prompt_tokens_read"]
    reused = engine.stats["prompt_tokens_reused"] - before["prompt_tokens_reused"]
    assert read + reused == len(prompt)
    assert len(result.samples) == 4 and all(len(s.token_ids) == 12 for s in result.samples)
    assert len({tuple(s.token_ids) for s in result.samples}) > 1  # independent draws
    assert all(s.finish_reason == "length" for s in result.samples)


def test_next_turn_reuses_the_cached_prefix(engine: Engine, prompt: list[int], gguf_tokenizer: Any) -> None:
    first = run(engine, prompt=prompt, max_tokens=16, seed=5).samples[0]
    follow = gguf_tokenizer.encode("\n<|im_start|>user\nAnd two more?<|im_end|>\n<|im_start|>assistant\n")
    before = engine.stats["prompt_tokens_reused"]
    run(engine, prompt=prompt + first.token_ids + follow, max_tokens=4, seed=5)
    # Everything the first request left in the cache (prompt + all but its last token) is re-used.
    assert engine.stats["prompt_tokens_reused"] - before >= len(prompt) + len(first.token_ids) - 1


def test_stop_conditions(engine: Engine, prompt: list[int], gguf_tokenizer: Any) -> None:
    cut = run(engine, prompt=prompt, max_tokens=3, ignore_eos=True, seed=1).samples[0]
    assert cut.finish_reason == "length" and len(cut.token_ids) == 3 and cut.stop_reason is None
    # A stop string ends the sample; the text stops before it, the ids keep the token that completed it.
    free = run(engine, prompt=prompt, max_tokens=40, ignore_eos=True, seed=2).samples[0]
    word = free.text.split()[1] if len(free.text.split()) > 1 else free.text[:2]
    stopped = run(engine, prompt=prompt, max_tokens=40, ignore_eos=True, seed=2, stop=(word,)).samples[0]
    assert stopped.finish_reason == "stop" and stopped.stop_reason == word
    assert stopped.text == free.text[: free.text.index(word)]
    assert word in gguf_tokenizer.decode(stopped.token_ids)
    assert stopped.token_ids == free.token_ids[: len(stopped.token_ids)]
    # A stop token id ends it too (the token is kept, as vLLM keeps it).
    token = free.token_ids[4]
    by_id = run(engine, prompt=prompt, max_tokens=40, ignore_eos=True, seed=2, stop_token_ids=frozenset({token}))
    assert by_id.samples[0].token_ids == free.token_ids[: free.token_ids.index(token) + 1]
    assert by_id.samples[0].stop_reason == token


def test_eos_ends_with_the_eos_token(engine: Engine, gguf_tokenizer: Any) -> None:
    messages = [{"role": "user", "content": "What is 2+2?"}]
    prompt = gguf_tokenizer.encode(
        gguf_tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True),
        add_special_tokens=False,
    )
    result = run(engine, prompt=prompt, n=2, max_tokens=60, seed=9, sampling=SamplingParams(temperature=0.0))
    s = result.samples[0]
    assert s.finish_reason == "stop" and s.token_ids[-1] in engine.eog_ids and s.stop_reason is None
    assert "<|im_end|>" not in s.text  # special tokens are skipped in the text
    assert all(x.token_ids == s.token_ids for x in result.samples)  # greedy: identical samples


def test_seed_reproduces_a_request(engine: Engine, prompt: list[int]) -> None:
    a = run(engine, prompt=prompt, max_tokens=16, seed=42, ignore_eos=True).samples[0]
    b = run(engine, prompt=prompt, max_tokens=16, seed=42, ignore_eos=True).samples[0]
    assert a.token_ids == b.token_ids


def test_prompt_logprobs_are_teacher_forced(engine: Engine, prompt: list[int], smollm2: Path) -> None:
    result = run(engine, prompt=prompt, max_tokens=1, prompt_logprobs=2)
    entries = result.prompt_logprobs
    assert entries is not None and len(entries) == len(prompt) and entries[0] is None
    assert all(list(e)[0] == t for e, t in zip(entries[1:], prompt[1:], strict=True))  # the prompt's token first
    assert all(len(e) in (2, 3) for e in entries[1:])
    recomputed = recompute_logprobs(smollm2, [prompt])[0]
    ours = np.array([e[t] for e, t in zip(entries[1:], prompt[1:], strict=True)])
    np.testing.assert_allclose(ours, recomputed[1:], atol=1e-3)  # both batch kernels


def test_requests_beyond_the_cache_wait_in_the_queue(smollm2: Path, prompt: list[int]) -> None:
    # Room for about two requests at a time: six submitted at once all complete.
    model = LlamaCpp(smollm2, n_ctx=2 * (len(prompt) + 16) + 8, n_seq=3, n_batch=128, n_threads=1)
    eng = Engine(model).start()
    try:
        futures = [eng.submit(GenerationRequest(prompt=prompt, max_tokens=16, seed=i)) for i in range(6)]
        results = [f.result(timeout=300) for f in futures]
        assert all(len(r.samples) == 1 and r.samples[0].token_ids for r in results)
        assert eng.pending() == 0
    finally:
        eng.stop()
        model.close()


def test_cancelled_requests_free_their_sequences(engine: Engine, prompt: list[int]) -> None:
    futures = [engine.submit(GenerationRequest(prompt=prompt, max_tokens=300, ignore_eos=True)) for _ in range(4)]
    for f in futures:
        f.cancel()
    result = run(engine, prompt=prompt, n=4, max_tokens=4, ignore_eos=True)
    assert len(result.samples) == 4
    assert all(f.cancelled() for f in futures)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"prompt": []}, "prompt is empty"),
        ({"prompt": [1, 49152]}, "outside the vocabulary"),
        ({"prompt": [1] * 4096}, "maximum context length is 4096"),
        ({"prompt": [1, 2], "n": 5}, "n must be between 1 and 4"),
        ({"prompt": [1, 2], "max_tokens": 0}, "max_tokens must be at least 1"),
        ({"prompt": [1, 2], "n": 4, "max_tokens": 2000}, "needs up to 8002 KV cells"),
        ({"prompt": [1, 2], "sampling": SamplingParams(top_p=0.0)}, "top_p in"),
        ({"prompt": [1, 2], "logprobs": 21}, "logprobs must be between 0 and 20"),
    ],
)
def test_bad_requests_are_refused_at_once(engine: Engine, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(GenerationRequestError, match=message):
        engine.submit(GenerationRequest(**kwargs))


def test_stopped_engine_fails_what_it_holds(smollm2: Path, prompt: list[int]) -> None:
    model = LlamaCpp(smollm2, n_ctx=1024, n_seq=1, n_threads=1)
    eng = Engine(model).start()
    future = eng.submit(GenerationRequest(prompt=prompt, max_tokens=500, ignore_eos=True))
    eng.stop()
    model.close()
    with pytest.raises((RuntimeError, concurrent.futures.CancelledError)):
        future.result(timeout=30)
    assert not eng.running
