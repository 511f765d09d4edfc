"""ManagedServer end to end: atroposlib's ServerManager/VLLMServer -> scripted vLLM /generate.

Everything is real except the model: the Qwen3 tokenizer and chat template, atroposlib 0.4.0's
HTTP client code, hermes_env's parsers and trajectories.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hermes_env.errors import TrajectoryDivergence
from hermes_env.managed import managed_server
from hermes_env.testing.scripted_vllm import ScriptedCompletion, ScriptedRequest, scripted_logprob
from hermes_env.trajectory import MASK, TrajectoryDivergenceWarning
from managed_tools import TOOLS

SYSTEM = {"role": "system", "content": "You are a careful agent."}


def tool_turn(k: int) -> str:
    call = json.dumps({"name": "terminal", "arguments": {"command": f"echo step {k}"}})
    return f"<think>\nStep {k}: run a command.\n</think>\n\n<tool_call>\n{call}\n</tool_call>"


def assistant_turn(request: ScriptedRequest) -> int:
    """How many assistant turns the prompt already holds (Qwen3 ChatML)."""
    return request.prompt_text.count("<|im_start|>assistant") - 1


def assert_aligned(traj: Any, requests: list[Any], samples: list[int] | None = None) -> None:
    """Masks/logprobs are the generated tokens exactly where each request's sample landed."""
    tokens, masks, logprobs = traj.tokens, traj.masks, traj.logprobs
    assert len(tokens) == len(masks) == len(logprobs)
    trained: dict[int, float] = {}
    for r, sample in zip(requests, samples or [0] * len(requests), strict=True):
        prompt = r.body["prompt"]["prompt_token_ids"]
        out = r.samples[sample].token_ids
        assert tokens[: len(prompt)] == prompt, "each prompt sent is a prefix of the trajectory"
        assert tokens[len(prompt) : len(prompt) + len(out)] == out
        for j, t in enumerate(out):
            trained[len(prompt) + j] = scripted_logprob(t, j)
    for i, (t, m, lp) in enumerate(zip(tokens, masks, logprobs, strict=True)):
        if i in trained:
            assert m == t and lp == pytest.approx(trained[i]), i
        else:
            assert m == MASK and lp == 1.0, i


async def run_tool_loop(m: Any, turns: int, **sampling: Any) -> tuple[list[dict[str, Any]], list[Any]]:
    messages: list[dict[str, Any]] = [SYSTEM, {"role": "user", "content": "Run the steps."}]
    replies = []
    for _ in range(turns):
        completion = await m.chat_completion(messages=messages, tools=TOOLS, n=1, max_tokens=256, **sampling)
        message = completion.choices[0].message
        replies.append(completion.choices[0])
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            break
        for call in message.tool_calls:
            messages.append({"role": "tool", "tool_call_id": call.id, "content": f"ran {call.function.arguments}"})
    return messages, replies


@pytest.mark.parametrize("turns", [2, 7, 30])
async def test_tool_calling_rollout_is_token_exact(server_manager: Any, scripted: Any, tok: Any, turns: int) -> None:
    server, script = scripted
    script.fn = lambda r: tool_turn(assistant_turn(r)) if assistant_turn(r) < turns - 1 else "All steps done."
    async with managed_server(server_manager, tok, tool_parser="hermes") as m:
        messages, replies = await run_tool_loop(m, turns)
        state = m.get_state()
    assert len(replies) == turns and len(server.requests) == turns
    for k, choice in enumerate(replies[:-1]):
        assert choice.finish_reason == "tool_calls"
        assert choice.message.reasoning_content == f"Step {k}: run a command."
        (call,) = choice.message.tool_calls
        assert call.function.name == "terminal"
        assert json.loads(call.function.arguments) == {"command": f"echo step {k}"}
        assert not choice.message.content
    assert replies[-1].message.content == "All steps done." and replies[-1].finish_reason == "stop"
    (branch,) = state["branches"]
    assert_aligned(branch.trajectory, server.requests)
    # every generated token (EOS included) is trained, nothing else
    generated = sum(len(r.samples[0].token_ids) for r in server.requests)
    assert branch.trajectory.num_trained == generated
    assert branch.messages == messages
    item = branch.to_scored_item(1.0)
    assert item["tokens"] == branch.tokens and item["messages"] == messages
    assert state["nodes"] == [branch] and branch.masked_tokens == branch.trajectory.masks


async def test_n_greater_than_one_forks(server_manager: Any, scripted: Any, tok: Any) -> None:
    server, script = scripted

    def respond(r: ScriptedRequest) -> str:
        turn = assistant_turn(r)
        if turn == 0:
            return tool_turn(10 + r.index)  # three different first moves
        return f"finished branch {r.prompt_text.count('echo step 1')}"

    script.fn = respond
    base = [SYSTEM, {"role": "user", "content": "Go."}]
    async with managed_server(server_manager, tok) as m:
        first = await m.chat_completion(messages=base, tools=TOOLS, n=3, max_tokens=128)
        assert len(first.choices) == 3
        for choice in first.choices:
            msg = choice.message
            convo = [*base, msg.model_dump(exclude_none=True)]
            convo.append({"role": "tool", "tool_call_id": msg.tool_calls[0].id, "content": "ok"})
            await m.chat_completion(messages=convo, tools=TOOLS, max_tokens=128)
        branches = m.get_state()["branches"]
    assert len(branches) == 3
    prompt0 = server.requests[0].body["prompt"]["prompt_token_ids"]
    for i, b in enumerate(branches):
        assert b.tokens[: len(prompt0)] == prompt0
        assert_aligned(b.trajectory, [server.requests[0], server.requests[1 + i]], samples=[i, 0])
        assert len(b.completion_ids) == 2
    assert len({tuple(b.tokens) for b in branches}) == 3


THINK_REPLY = "<think>\nThe user greets me.\n</think>\n\nHello!"


def chat_script(r: ScriptedRequest) -> str:
    return THINK_REPLY if assistant_turn(r) == 0 else "Goodbye!"


async def two_user_turns(m: Any) -> None:
    msgs: list[dict[str, Any]] = [{"role": "user", "content": "Hi"}]
    first = await m.chat_completion(messages=msgs, max_tokens=64)
    msgs += [first.choices[0].message.model_dump(exclude_none=True), {"role": "user", "content": "Bye"}]
    await m.chat_completion(messages=msgs, max_tokens=64)


async def test_think_stripping_template_raises(server_manager: Any, scripted: Any, tok: Any) -> None:
    server, script = scripted
    script.fn = chat_script
    async with managed_server(server_manager, tok, divergence_policy="raise") as m:
        with pytest.raises(TrajectoryDivergence) as info:
            await two_user_turns(m)
        (branch,) = m.get_state()["branches"]
        first = server.requests[0]
        prompt = first.body["prompt"]["prompt_token_ids"]
        # Qwen3 drops the earlier <think> block: the first generated token no longer matches.
        assert info.value.index == len(prompt)
        assert "<think>" in info.value.window["ours_text"]
        assert len(branch.trajectory) == len(prompt) + len(first.samples[0].token_ids), "branch unchanged"
        assert len(server.requests) == 1, "nothing was sent for the divergent prompt"


async def test_think_stripping_template_warn_and_restart(server_manager: Any, scripted: Any, tok: Any) -> None:
    server, script = scripted
    script.fn = chat_script
    async with managed_server(server_manager, tok, divergence_policy="warn_and_restart") as m:
        with pytest.warns(TrajectoryDivergenceWarning, match="new sequence"):
            await two_user_turns(m)
        state = m.get_state()
    closed, current = state["nodes"]
    assert closed is state["branches"][0].restarted[0]
    assert_aligned(closed.trajectory, server.requests[:1])
    # the new sequence is the re-rendered prompt (think block gone, all masked) + the new reply
    assert_aligned(current.trajectory, server.requests[1:])
    assert "The user greets me" not in tok.decode(current.tokens)
    assert current.trajectory.num_trained == len(server.requests[1].samples[0].token_ids)


async def test_think_stripping_template_keep_raw(server_manager: Any, scripted: Any, tok: Any) -> None:
    server, script = scripted
    script.fn = chat_script
    async with managed_server(server_manager, tok, divergence_policy="keep_raw") as m:
        await two_user_turns(m)
        (branch,) = m.get_state()["branches"]
    first, second = server.requests
    raw = first.body["prompt"]["prompt_token_ids"] + first.samples[0].token_ids
    traj = branch.trajectory
    assert traj.tokens[: len(raw)] == raw, "the model's exact raw tokens are kept"
    assert_aligned(traj, [first, second])
    new_turn = traj.tokens[len(raw) : len(second.body["prompt"]["prompt_token_ids"])]
    assert tok.decode(new_turn) == "\n<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n"
    assert "The user greets me" in tok.decode(second.body["prompt"]["prompt_token_ids"])


async def test_non_canonical_tokens_are_kept_raw(server_manager: Any, scripted: Any, tok: Any) -> None:
    """The sampler may emit a split the tokenizer would not produce; keep_raw keeps it."""
    server, script = scripted
    split = tok.encode("Hel", add_special_tokens=False) + tok.encode("lo there", add_special_tokens=False)
    assert split != tok.encode("Hello there", add_special_tokens=False)
    eos = tok.eos_token_id

    def respond(r: ScriptedRequest) -> Any:
        if assistant_turn(r) == 0:
            return ScriptedCompletion(token_ids=[*split, eos])
        return "ok"

    script.fn = respond
    msgs = [{"role": "user", "content": "greet"}]
    async with managed_server(server_manager, tok, divergence_policy="keep_raw") as m:
        first = await m.chat_completion(messages=msgs, max_tokens=32)
        assert first.choices[0].message.content == "Hello there"
        msgs += [first.choices[0].message.model_dump(exclude_none=True), {"role": "user", "content": "again"}]
        await m.chat_completion(messages=msgs, max_tokens=32)
        (branch,) = m.get_state()["branches"]
    assert_aligned(branch.trajectory, server.requests)
    server.requests.clear()
    async with managed_server(server_manager, tok, divergence_policy="raise") as m:
        msgs = msgs[:1]
        first = await m.chat_completion(messages=msgs, max_tokens=32)
        msgs += [first.choices[0].message.model_dump(exclude_none=True), {"role": "user", "content": "again"}]
        with pytest.raises(TrajectoryDivergence):
            await m.chat_completion(messages=msgs, max_tokens=32)


async def test_length_cut_reply_extends_with_masked_end_token(server_manager: Any, scripted: Any, tok: Any) -> None:
    server, script = scripted
    script.fn = lambda r: "one two three four five six seven eight" if assistant_turn(r) == 0 else "fine"
    msgs: list[dict[str, Any]] = [{"role": "user", "content": "count"}]
    async with managed_server(server_manager, tok) as m:
        first = await m.chat_completion(messages=msgs, max_tokens=3)
        assert first.choices[0].finish_reason == "length"
        msgs += [first.choices[0].message.model_dump(exclude_none=True), {"role": "user", "content": "ok?"}]
        await m.chat_completion(messages=msgs, max_tokens=16)
        (branch,) = m.get_state()["branches"]
    assert_aligned(branch.trajectory, server.requests)
    first_req = server.requests[0]
    end = len(first_req.body["prompt"]["prompt_token_ids"]) + 3
    assert branch.tokens[end] == tok.eos_token_id and branch.masks[end] == MASK  # template's <|im_end|>, not trained


async def test_unknown_assistant_message_starts_a_new_branch(server_manager: Any, scripted: Any, tok: Any) -> None:
    server, script = scripted
    script.fn = lambda r: "reply"
    async with managed_server(server_manager, tok) as m:
        await m.chat_completion(messages=[{"role": "user", "content": "a"}])
        edited = [
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": "something the model never said"},
            {"role": "user", "content": "b"},
        ]
        await m.chat_completion(messages=edited)
        branches = m.get_state()["branches"]
    assert len(branches) == 2
    assert branches[1].trajectory.num_trained == len(server.requests[1].samples[0].token_ids)


async def test_none_content_is_rendered_as_empty_text(server_manager: Any, scripted: Any, tok: Any) -> None:
    # hermes-agent files send {"role": "system", "content": None} when no system prompt is set; vLLM renders it "".
    server, script = scripted
    script.fn = lambda r: "reply"
    async with managed_server(server_manager, tok) as m:
        messages = [{"role": "system", "content": None}, {"role": "user", "content": "a"}]
        await m.chat_completion(messages=messages)
    assert messages[0]["content"] is None, "the caller's message is left as it was"
    expected = tok.apply_chat_template([{"role": "system", "content": ""}, {"role": "user", "content": "a"}],
                                       tokenize=False, add_generation_prompt=True)  # fmt: skip
    assert server.requests[0].body["prompt"]["prompt_token_ids"] == tok.encode(expected, add_special_tokens=False)


async def test_bad_arguments(server_manager: Any, tok: Any) -> None:
    async with managed_server(server_manager, tok) as m:
        with pytest.raises(ValueError, match="messages is empty"):
            await m.chat_completion(messages=[])
        with pytest.raises(ValueError, match="n must be a positive integer"):
            await m.chat_completion(messages=[{"role": "user", "content": "x"}], n=0)
    with pytest.raises(TypeError, match="tokens_and_logprobs_completion"):
        async with managed_server(object(), tok):
            pass


async def test_text_completion_continues_its_branch(server_manager: Any, scripted: Any, tok: Any) -> None:
    server, script = scripted
    script.fn = lambda r: "four" if r.prompt_text.endswith("three") else "seven"
    async with managed_server(server_manager, tok) as m:
        first = await m.completion(prompt="one two three", max_tokens=8)
        assert first.choices[0].text == "four" and first.object == "text_completion"
        second = await m.completion(prompt="one two three" + first.choices[0].text + " five six", max_tokens=8)
        assert second.choices[0].text == "seven"
        (branch,) = m.get_state()["branches"]
    assert_aligned(branch.trajectory, server.requests)
    # the first reply's raw tokens, its EOS included, are what the model saw in the second prompt
    first_req, second_req = server.requests
    raw = first_req.body["prompt"]["prompt_token_ids"] + first_req.samples[0].token_ids
    assert raw[-1] == tok.eos_token_id
    assert second_req.body["prompt"]["prompt_token_ids"][: len(raw)] == raw


class _TerminalTool:
    name = "terminal"
    parallel_safe = True
    schema = TOOLS[0]

    async def run(self, args: dict[str, Any], ctx: Any) -> str:
        return f"$ {args['command']}\nok"


async def test_agent_loop_on_the_managed_server(server_manager: Any, scripted: Any, tok: Any) -> None:
    """HermesAgentLoop builds the follow-up messages itself; every turn still extends exactly."""
    from hermes_env.agent import HermesAgentLoop, ToolWorkerPool

    server, script = scripted
    turns = 6
    script.fn = lambda r: tool_turn(assistant_turn(r)) if assistant_turn(r) < turns - 1 else "Finished."
    async with managed_server(server_manager, tok) as m:
        loop = HermesAgentLoop(m, [_TerminalTool()], tool_context=None, pool=ToolWorkerPool(2), max_turns=10)
        result = await loop.run([SYSTEM, {"role": "user", "content": "Run the steps."}])
    assert result.finished_naturally and result.turns_used == turns and not result.tool_errors
    assert result.reasoning_per_turn[0] == "Step 0: run a command."
    (traj,) = result.managed_state["trajectories"]
    assert_aligned(traj, server.requests)
    assert traj.num_trained == sum(len(r.samples[0].token_ids) for r in server.requests)


async def test_enable_thinking_false_tool_loop_keeps_what_the_model_saw(
    server_manager: Any, scripted: Any, tok: Any
) -> None:
    """Qwen3 with enable_thinking=False puts an empty think block in each generation prompt but not in
    replayed turns; keep_raw keeps the block the model actually saw, raise reports it."""
    server, script = scripted

    def plain_tool_turn(r: ScriptedRequest) -> str:
        k = assistant_turn(r)
        return tool_turn(k).split("</think>\n\n", 1)[1] if k < 2 else "Done."

    script.fn = plain_tool_turn
    async with managed_server(
        server_manager, tok, divergence_policy="keep_raw", chat_template_kwargs={"enable_thinking": False}
    ) as m:
        _, replies = await run_tool_loop(m, 3)
        (branch,) = m.get_state()["branches"]
    assert [c.finish_reason for c in replies] == ["tool_calls", "tool_calls", "stop"]
    assert_aligned(branch.trajectory, server.requests)
    assert tok.decode(server.requests[2].body["prompt"]["prompt_token_ids"]).count("<think>\n\n</think>") == 3

    server.requests.clear()
    async with managed_server(
        server_manager, tok, divergence_policy="raise", chat_template_kwargs={"enable_thinking": False}
    ) as m:
        with pytest.raises(TrajectoryDivergence):
            await run_tool_loop(m, 3)


FRAGMENTS = ["\n", "\n\n", " ", "ok", "Done", "é", "日本", "😀", "{", "}", '"', "<tool_call>", "</think>", "x" * 40]


def random_reply(rng: Any, k: int) -> str:
    body = "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(0, 8)))
    think = f"<think>\n{body}\n</think>\n\n" if rng.random() < 0.5 else ""
    if rng.random() < 0.6:
        call = json.dumps({"name": "terminal", "arguments": {"command": body or "ls"}})
        return f"{think}{body if rng.random() < 0.3 else ''}<tool_call>\n{call}\n</tool_call>"
    return think + (body or "fine")


@pytest.mark.parametrize("policy", ["keep_raw", "raise", "warn_and_restart"])
async def test_random_conversations_never_mismask(server_manager: Any, scripted: Any, tok: Any, policy: str) -> None:
    """Seeded fuzz: random replies (think blocks, stray markers, odd whitespace, unicode), tool results
    and new user messages. keep_raw always extends exactly; raise either extends exactly or refuses;
    warn_and_restart's sequences are each exact. Never a silently wrong mask."""
    import random
    import warnings

    server, script = scripted
    rng = random.Random(f"managed-fuzz-{policy}")
    stats = {"requests": 0, "refused": 0, "restarts": 0}
    for case in range(6):
        server.requests.clear()
        replies = iter([random_reply(rng, k) for k in range(8)])
        script.fn = lambda r, replies=replies: next(replies)
        messages: list[dict[str, Any]] = [SYSTEM, {"role": "user", "content": f"case {case}"}]
        async with managed_server(server_manager, tok, divergence_policy=policy) as m:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", TrajectoryDivergenceWarning)
                    for _ in range(rng.randint(2, 6)):
                        c = await m.chat_completion(messages=messages, tools=TOOLS, max_tokens=200)
                        msg = c.choices[0].message
                        messages.append(msg.model_dump(exclude_none=True))
                        for call in msg.tool_calls or []:
                            messages.append({"role": "tool", "tool_call_id": call.id, "content": "out"})
                        if not msg.tool_calls or rng.random() < 0.3:
                            messages.append({"role": "user", "content": rng.choice(["more", "again\n", "日本"])})
            except TrajectoryDivergence:
                assert policy == "raise"
                stats["refused"] += 1
            state = m.get_state()
        (branch,) = state["branches"]
        stats["requests"] += len(server.requests)
        stats["restarts"] += len(branch.restarted)
        if policy == "warn_and_restart":
            # The sequences split the requests in order: each request extends the current sequence
            # exactly, or it is the first of the next one (earlier replies are masked prompt there).
            sequences = [*branch.restarted, branch]
            groups: list[list[Any]] = [[] for _ in sequences]
            j = 0
            for r in server.requests:
                sent = r.body["prompt"]["prompt_token_ids"] + r.samples[0].token_ids
                if sequences[j].tokens[: len(sent)] != sent:
                    j += 1
                groups[j].append(r)
            for seq, group in zip(sequences, groups, strict=True):
                assert_aligned(seq.trajectory, group)
        else:
            assert_aligned(branch.trajectory, server.requests)
    # the fuzz must actually hit template divergences, or it proves nothing about the policies
    assert stats["requests"] >= 12
    if policy == "raise":
        assert stats["refused"] > 0
    if policy == "warn_and_restart":
        assert stats["restarts"] > 0
