"""A SCRIPTED in-process stand-in for an atroposlib server: ``tokens_and_logprobs_completion``, answered at once.

No HTTP and no model: the reply to each sample is ``responder(request)``, either a text (tokenized
with the real tokenizer, followed by its EOS id, as vLLM returns a finished sample) or the exact
token ids to return. Logprobs are :func:`~hermes_env.testing.scripted_vllm.scripted_logprob`.
Used where only hermes_env's own work should be timed or counted (benches/longroll_bench.py,
tests/managed/test_incremental.py)::

    server = InstantScriptedServer(tokenizer, lambda r: "Done.")
    async with managed_server(server, tokenizer) as m:
        await m.chat_completion(messages=[{"role": "user", "content": "Hi"}])
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hermes_env.testing.scripted_vllm import scripted_logprob

__all__ = ["InstantRequest", "InstantScriptedServer"]


@dataclass(frozen=True)
class InstantRequest:
    """One sample to answer: the prompt ids as sent (the caller's list, not a copy), its index of ``n``."""

    input_ids: Sequence[int]
    index: int
    n: int
    params: dict[str, Any]


class InstantScriptedServer:
    """Answers ``tokens_and_logprobs_completion`` from ``responder`` without I/O; see the module docstring.

    ``record=True`` keeps a copy of every prompt in ``prompts`` and every sample's ids in ``outputs``
    (tests); ``keep_input=True`` keeps the very list it was sent in ``kept`` (a server that holds on
    to its input). ``cpu_seconds`` is the process CPU time spent answering so far, which a benchmark
    subtracts to time only its client.
    """

    def __init__(
        self,
        tokenizer: Any,
        responder: Callable[[InstantRequest], str | Sequence[int]],
        *,
        record: bool = False,
        keep_input: bool = False,
    ) -> None:
        self.tokenizer = tokenizer
        self.responder = responder
        self.record = record
        self.keep_input = keep_input
        self.prompts: list[list[int]] = []
        self.outputs: list[list[int]] = []
        self.kept: list[Any] = []
        self.calls = 0
        self.last_prompt_tokens = 0
        self.cpu_seconds = 0.0

    async def tokens_and_logprobs_completion(
        self, *, input_ids: Sequence[int], n: int = 1, **params: Any
    ) -> tuple[Sequence[int], list[list[int]], list[list[float]], list[str]]:
        started = time.process_time()
        self.calls += 1
        self.last_prompt_tokens = len(input_ids)
        if self.record:
            self.prompts.append(list(input_ids))
        if self.keep_input:
            self.kept.append(input_ids)
        outputs, logprobs, finishes = [], [], []
        for index in range(n):
            reply = self.responder(InstantRequest(input_ids, index, n, dict(params)))
            if isinstance(reply, str):
                ids = [*self.tokenizer.encode(reply, add_special_tokens=False), self.tokenizer.eos_token_id]
            else:
                ids = [int(t) for t in reply]
            outputs.append(ids)
            if self.record:
                self.outputs.append(ids)
            logprobs.append([scripted_logprob(t, j) for j, t in enumerate(ids)])
            finishes.append("stop")
        self.cpu_seconds += time.process_time() - started
        return input_ids, outputs, logprobs, finishes
