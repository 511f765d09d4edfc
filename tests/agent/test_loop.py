"""HermesAgentLoop against a scripted in-process chat server and small test tools."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest
from hermes_env.agent import AgentResult, HermesAgentLoop, ToolError, ToolWorkerPool, extract_reasoning
from hermes_env.errors import ToolArgumentError
from hermes_env.testing.completions import scripted_completion as completion
from hypothesis import given
from hypothesis import strategies as st
from openai.types.chat import ChatCompletion
from openai.types.completion_usage import CompletionUsage


class ScriptedChat:
    """Answers turn i with script[i](messages); records what it was sent."""

    def __init__(self, script: list[Callable[[list[dict[str, Any]]], ChatCompletion]]) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []

    async def chat_completion(self, **kwargs: Any) -> ChatCompletion:
        self.requests.append({**kwargs, "messages": list(kwargs["messages"])})
        turn = sum(1 for m in kwargs["messages"] if m["role"] == "assistant")
        return self.script[min(turn, len(self.script) - 1)](kwargs["messages"])


class EchoTool:
    name = "echo"
    parallel_safe = True
    schema = {"type": "function", "function": {"name": "echo", "parameters": {"type": "object"}}}

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    async def run(self, args: dict[str, Any], ctx: Any) -> str:
        self.calls.append(args)
        await asyncio.sleep(0)
        return f"echo:{args.get('text', '')}"


class StrictTool(EchoTool):
    name = "strict"
    schema = {"type": "function", "function": {"name": "strict", "parameters": {"type": "object"}}}

    async def run(self, args: dict[str, Any], ctx: Any) -> str:
        if "path" not in args:
            raise ToolArgumentError("missing required argument 'path'")
        return "ok"


class HangTool(EchoTool):
    name = "hang"
    schema = {"type": "function", "function": {"name": "hang", "parameters": {"type": "object"}}}

    async def run(self, args: dict[str, Any], ctx: Any) -> str:
        await asyncio.Event().wait()
        return "never"


def make_loop(server: Any, tools: list[Any], **kwargs: Any) -> HermesAgentLoop:
    kwargs.setdefault("pool", ToolWorkerPool(4))
    return HermesAgentLoop(server, tools, tool_context=None, **kwargs)


async def test_tool_call_then_answer_builds_openai_messages() -> None:
    echo = EchoTool()
    server = ScriptedChat(
        [
            lambda m: completion("<think>look first</think>", [("echo", '{"text": "hi"}')]),
            lambda m: completion("done", reasoning_content="it said hi"),
        ]
    )
    result = await make_loop(server, [echo]).run([{"role": "user", "content": "say hi"}])
    assert isinstance(result, AgentResult)
    assert result.turns_used == 2 and result.finished_naturally and result.produced_output
    assert result.reasoning_per_turn == ["look first", "it said hi"]
    assert echo.calls == [{"text": "hi"}]
    roles = [m["role"] for m in result.messages]
    assert roles == ["user", "assistant", "tool", "assistant"]
    assert result.messages[1]["tool_calls"][0]["function"] == {"name": "echo", "arguments": '{"text": "hi"}'}
    assert result.messages[2] == {"role": "tool", "tool_call_id": "call_0", "content": "echo:hi"}
    assert result.messages[3]["reasoning_content"] == "it said hi"
    assert result.tool_errors == [] and result.tool_calls_made == 1
    # The tool schemas and sampling settings reach the server.
    assert server.requests[0]["tools"] == [EchoTool.schema] and server.requests[0]["temperature"] == 1.0


@pytest.mark.parametrize(
    ("name", "arguments", "kind", "needle"),
    [
        pytest.param("nope", "{}", "unknown_tool", "unknown tool 'nope'. Available tools: echo, strict", id="unknown"),
        pytest.param("echo", '{"text": "unterminated', "malformed_json", "not valid JSON", id="bad-json"),
        pytest.param("echo", '["a", "list"]', "bad_arguments", "must be a JSON object", id="not-object"),
        pytest.param("strict", '{"x": 1}', "bad_arguments", "missing required argument 'path'", id="rejected"),
    ],
)
async def test_bad_calls_are_answered_with_errors_the_model_sees(
    name: str, arguments: str, kind: str, needle: str
) -> None:
    echo = EchoTool()
    server = ScriptedChat([lambda m: completion(None, [(name, arguments)]), lambda m: completion("ok")])
    result = await make_loop(server, [echo, StrictTool()]).run([{"role": "user", "content": "go"}])
    assert echo.calls == []  # never called with silently-empty arguments
    tool_message = result.messages[2]
    assert tool_message["role"] == "tool" and needle in tool_message["content"]
    assert result.tool_errors == [
        ToolError(turn=0, tool_name=name, arguments=arguments, kind=kind, message=tool_message["content"])
    ]
    # The model saw the error on its next turn and the rollout went on.
    assert server.requests[1]["messages"][-1]["content"] == tool_message["content"]
    assert result.finished_naturally


async def test_hanging_tool_is_stopped_and_the_rollout_continues() -> None:
    server = ScriptedChat([lambda m: completion(None, [("hang", "{}")]), lambda m: completion("gave up")])
    result = await make_loop(server, [HangTool()], tool_timeout=0.05, tool_grace=0).run(
        [{"role": "user", "content": "go"}]
    )
    assert [e.kind for e in result.tool_errors] == ["timeout"]
    assert "did not finish" in result.messages[2]["content"]
    assert result.finished_naturally and result.turns_used == 2


class BarrierTool(EchoTool):
    """Finishes only when `parties` calls are inside run() at the same time."""

    def __init__(self, name: str, parallel_safe: bool, parties: int) -> None:
        super().__init__()
        self.name = name
        self.parallel_safe = parallel_safe
        self.schema = {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
        self.parties = parties
        self.inside = 0
        self.max_inside = 0
        self.all_in = asyncio.Event()

    async def run(self, args: dict[str, Any], ctx: Any) -> str:
        self.inside += 1
        self.max_inside = max(self.max_inside, self.inside)
        if self.inside >= self.parties:
            self.all_in.set()
        try:
            await asyncio.wait_for(self.all_in.wait(), 0.5)
            return "together"
        except TimeoutError:
            return "alone"
        finally:
            self.inside -= 1


async def test_parallel_safe_calls_of_one_turn_run_concurrently() -> None:
    tool = BarrierTool("b", parallel_safe=True, parties=3)
    calls = [("b", "{}")] * 3
    server = ScriptedChat([lambda m: completion(None, calls), lambda m: completion("ok")])
    result = await make_loop(server, [tool]).run([{"role": "user", "content": "go"}])
    assert [m["content"] for m in result.messages if m["role"] == "tool"] == ["together"] * 3
    assert [m["tool_call_id"] for m in result.messages if m["role"] == "tool"] == ["call_0", "call_1", "call_2"]


async def test_unsafe_calls_run_one_at_a_time_in_order() -> None:
    tool = BarrierTool("b", parallel_safe=False, parties=2)
    server = ScriptedChat([lambda m: completion(None, [("b", "{}"), ("b", "{}")]), lambda m: completion("ok")])
    result = await make_loop(server, [tool]).run([{"role": "user", "content": "go"}])
    assert tool.max_inside == 1
    assert [m["content"] for m in result.messages if m["role"] == "tool"] == ["alone", "alone"]


async def test_turn_limit_cuts_the_rollout() -> None:
    server = ScriptedChat([lambda m: completion(None, [("echo", "{}")])])
    result = await make_loop(server, [EchoTool()], max_turns=3).run([{"role": "user", "content": "go"}])
    assert result.turns_used == 3 and not result.finished_naturally and result.end_reason == "turn_limit"


async def test_length_finish_is_not_natural() -> None:
    c = completion("cut off mid")
    c.choices[0].finish_reason = "length"
    result = await make_loop(ScriptedChat([lambda m: c]), []).run([{"role": "user", "content": "go"}])
    assert result.turns_used == 1 and not result.finished_naturally and result.end_reason == "length"


async def test_reasoning_field_is_kept_for_the_chat_template() -> None:
    server = ScriptedChat([lambda m: completion("answer", reasoning="newer vLLM field")])
    result = await make_loop(server, []).run([{"role": "user", "content": "go"}])
    assert result.messages[-1]["reasoning_content"] == "newer vLLM field"
    assert result.reasoning_per_turn == ["newer vLLM field"]


async def test_empty_choices_end_the_rollout_with_a_reason() -> None:
    empty = completion("x")
    empty.choices = []
    result = await make_loop(ScriptedChat([lambda m: empty]), []).run([{"role": "user", "content": "go"}])
    assert result.error == "the model call on turn 1 returned no choices" and not result.produced_output
    assert result.failure is not None and result.failure.kind == "policy_bad_response"
    assert result.end_reason == "failed"


async def test_server_failure_ends_rollout_with_a_reason() -> None:
    class Down:
        async def chat_completion(self, **kwargs: Any) -> Any:
            raise ConnectionError("connection refused")

    result = await make_loop(Down(), [EchoTool()]).run([{"role": "user", "content": "go"}])
    assert not result.produced_output and result.turns_used == 0
    assert "connection refused" in (result.error or "")
    assert result.failure is not None and result.failure.kind == "policy_connection_error"


async def test_model_call_that_hangs_uses_up_the_budget() -> None:
    class Stuck:
        async def chat_completion(self, **kwargs: Any) -> Any:
            await asyncio.Event().wait()

    result = await make_loop(Stuck(), [], rollout_timeout=0.05).run([{"role": "user", "content": "go"}])
    assert result.budget_exhausted and not result.produced_output and "budget" in (result.error or "")
    assert result.failure is not None and result.failure.kind == "policy_timeout" and result.end_reason == "failed"


async def test_managed_state_is_collected_from_the_server() -> None:
    class Managed(ScriptedChat):
        def get_state(self) -> dict[str, Any]:
            return {"turns": len(self.requests)}

    result = await make_loop(Managed([lambda m: completion("hi")]), []).run([{"role": "user", "content": "go"}])
    assert result.managed_state == {"turns": 1}


async def test_128_rollouts_share_a_small_pool_without_starving() -> None:
    """128 concurrent rollouts, 3 turns of 3 parallel calls, a hanging call in every 4th rollout, pool of 4."""
    pool = ToolWorkerPool(4)
    inside = 0
    peak = 0

    class Quick(EchoTool):
        async def run(self, args: dict[str, Any], ctx: Any) -> str:
            nonlocal inside, peak
            inside += 1
            peak = max(peak, inside)
            try:
                await asyncio.sleep(0)  # yield while holding the slot, so rollouts interleave
                return "ok"
            finally:
                inside -= 1

    def script(hangs: bool) -> Callable[[list[dict[str, Any]]], ChatCompletion]:
        def turn(messages: list[dict[str, Any]]) -> ChatCompletion:
            done = sum(1 for m in messages if m["role"] == "assistant")
            if done == 3:
                return completion("finished")
            calls = [("echo", json.dumps({"text": str(i)})) for i in range(3)]
            if done == 0 and hangs:
                calls.append(("hang", "{}"))
            return completion(None, calls)

        return turn

    hang = HangTool()
    hang.parallel_safe = True
    # A hung call holds its slot for the whole timeout; quick calls must still get through.
    loops = [
        make_loop(ScriptedChat([script(i % 4 == 0)]), [Quick(), hang], pool=pool, tool_timeout=0.5, tool_grace=0)
        for i in range(128)
    ]
    results = await asyncio.wait_for(
        asyncio.gather(*(lp.run([{"role": "user", "content": "go"}]) for lp in loops)), 120
    )
    assert all(r.finished_naturally and r.turns_used == 4 for r in results)
    for i, r in enumerate(results):
        hung = [e for e in r.tool_errors if e.tool_name == "hang"]
        assert [e.kind for e in hung] == (["timeout"] if i % 4 == 0 else [])
    quick_outputs = [m["content"] for r in results for m in r.messages if m["role"] == "tool" and m["content"] == "ok"]
    assert len(quick_outputs) == 128 * 9  # every quick call ran
    assert peak <= 4 and pool.stats.max_in_flight <= 4
    assert pool.stats.completed == 128 * 9 + 32 and pool.stats.timed_out == 32
    assert pool.stats.in_flight == 0 and pool.stats.waiting == 0


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ({"content": "<think>a</think>b"}, "a"),
        ({"content": "<think>unclosed"}, "unclosed"),
        ({"content": "plain"}, None),
        ({"content": "x", "reasoning": "r"}, "r"),
        ({"content": "<think>t</think>", "reasoning_content": "rc"}, "rc"),
    ],
)
def test_extract_reasoning(message: dict[str, Any], expected: str | None) -> None:
    assert extract_reasoning(message) == expected


async def test_generation_is_clamped_to_the_context_and_stops_when_full() -> None:
    used = iter([900, 990])

    def big(messages: list[dict[str, Any]]) -> ChatCompletion:
        c = completion(None, [("echo", "{}")])
        total = next(used)
        c.usage = CompletionUsage(prompt_tokens=total - 50, completion_tokens=50, total_tokens=total)
        return c

    server = ScriptedChat([big])
    loop = make_loop(server, [EchoTool()], max_tokens=500, max_context_tokens=1000)
    result = await loop.run([{"role": "user", "content": "go"}])
    assert [r["max_tokens"] for r in server.requests] == [500, 100]  # the second turn may only fill the room left
    assert result.turns_used == 2 and result.context_exhausted and not result.finished_naturally
    assert result.end_reason == "context_limit"


async def test_a_failure_on_a_later_turn_fails_the_rollout() -> None:
    """Output from earlier turns does not make a rollout usable: any failed model call fails it."""

    def server_error(messages: list[dict[str, Any]]) -> ChatCompletion:
        import httpx
        import openai

        request = httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
        raise openai.InternalServerError("boom", response=httpx.Response(500, request=request), body=None)

    server = ScriptedChat([lambda m: completion(None, [("echo", '{"text": "a"}')]), server_error])
    result = await make_loop(server, [EchoTool()]).run([{"role": "user", "content": "go"}])
    assert result.produced_output and result.turns_used == 1
    assert result.failure is not None and result.failure.kind == "policy_http_error" and result.failure.turn == 1
    assert "turn 2" in result.failure.message and "InternalServerError" in result.failure.message
    assert result.end_reason == "failed" and not result.finished_naturally


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        pytest.param(TimeoutError(), "policy_timeout", id="timeout"),
        pytest.param(ConnectionResetError("reset"), "policy_connection_error", id="reset"),
        pytest.param(json.JSONDecodeError("Expecting value", "<html>", 0), "policy_bad_response", id="not-json"),
        pytest.param(RuntimeError("something else"), "policy_error", id="other"),
    ],
)
def test_policy_errors_are_classified(error: Exception, kind: str) -> None:
    import aiohttp
    import tenacity
    from hermes_env.errors import PolicyCallError, classify_policy_error

    assert classify_policy_error(error) == kind
    # atroposlib retries every call with tenacity; the kind is the last attempt's.
    attempt = tenacity.Future(3)
    attempt.set_exception(error)
    assert classify_policy_error(tenacity.RetryError(attempt)) == kind
    assert classify_policy_error(PolicyCallError("policy_bad_response", "x")) == "policy_bad_response"
    info = aiohttp.RequestInfo(aiohttp.client.URL("http://127.0.0.1:9/generate"), "POST", {})  # type: ignore[arg-type]
    assert classify_policy_error(aiohttp.ClientResponseError(info, (), status=500)) == "policy_http_error"
    assert classify_policy_error(aiohttp.ContentTypeError(info, (), status=200)) == "policy_bad_response"


class BrokenBackendTool(EchoTool):
    name = "broken"
    schema = {"type": "function", "function": {"name": "broken", "parameters": {"type": "object"}}}

    async def run(self, args: dict[str, Any], ctx: Any) -> str:
        from hermes_env.errors import BackendFailure

        raise BackendFailure("sandbox worker w1 did not answer (connection reset)")


async def test_a_tool_backend_that_fails_under_a_call_fails_the_rollout() -> None:
    server = ScriptedChat([lambda m: completion(None, [("broken", "{}")]), lambda m: completion("Done.")])
    result = await make_loop(server, [BrokenBackendTool()]).run([{"role": "user", "content": "go"}])
    assert result.failure is not None and result.failure.kind == "sandbox_failed" and result.failure.turn == 0
    assert "worker w1" in result.failure.message and result.end_reason == "failed"
    assert len(server.requests) == 1  # no further turn on a lost workspace


async def test_parse_issues_from_the_server_are_kept_per_turn() -> None:
    def with_issues(text: str, issues: list[dict[str, Any]], calls: list[Any] | None = None) -> ChatCompletion:
        c = completion(text, calls)
        c.choices[0].message.parse_issues = issues  # type: ignore[attr-defined]  # as the managed server sends them
        return c

    issue = {"kind": "malformed_json", "offset": 47, "message": "malformed JSON in tool call"}
    server = ScriptedChat(
        [
            lambda m: with_issues("x", [issue], [("echo", '{"text": ')]),
            lambda m: with_issues("Done.", []),
        ]
    )
    result = await make_loop(server, [EchoTool()]).run([{"role": "user", "content": "go"}])
    assert [(p.turn, p.kind, p.offset) for p in result.parse_issues] == [(0, "malformed_json", 47)]
    # The call's bad arguments are a tool error the model saw; the server already reported the parse issue.
    assert [e.kind for e in result.tool_errors] == ["malformed_json"]


async def test_phase1_parse_issues_are_the_loops_own_invalid_arguments() -> None:
    server = ScriptedChat(
        [lambda m: completion(None, [("echo", '{"text": '), ("echo", "[1]")]), lambda m: completion("Done.")]
    )
    result = await make_loop(server, [EchoTool()]).run([{"role": "user", "content": "go"}])
    found = [(p.turn, p.kind, p.offset) for p in result.parse_issues]
    assert found == [(0, "malformed_json", 9), (0, "bad_arguments", 0)]
    assert [e.kind for e in result.tool_errors] == ["malformed_json", "bad_arguments"]


async def test_repeated_identical_calls_are_counted_and_can_end_the_rollout() -> None:
    same = lambda m: completion(None, [("echo", '{"text": "a"}')])  # noqa: E731
    spaced = lambda m: completion(None, [("echo", '{ "text" :"a" }')])  # noqa: E731  # same call, other spacing
    other = lambda m: completion(None, [("echo", '{"text": "b"}')])  # noqa: E731
    script = [same, spaced, other, same, same, lambda m: completion("Done.")]
    result = await make_loop(ScriptedChat(script), [EchoTool()]).run([{"role": "user", "content": "go"}])
    assert result.end_reason == "stop" and result.repeated_tool_calls == 2 and result.longest_repeat == 2

    echo = EchoTool()
    limited = make_loop(ScriptedChat([same]), [echo], max_turns=20, max_repeated_tool_calls=3)
    result = await limited.run([{"role": "user", "content": "go"}])
    assert result.end_reason == "repeated_tool_calls" and result.turns_used == 3 and result.longest_repeat == 3
    assert len(echo.calls) == 2  # the third identical call is not run
    assert result.failure is None and not result.finished_naturally
    with pytest.raises(ValueError, match="max_repeated_tool_calls must be at least 2"):
        make_loop(ScriptedChat([same]), [echo], max_repeated_tool_calls=1)


async def test_end_reasons_of_finished_rollouts() -> None:
    result = await make_loop(ScriptedChat([lambda m: completion("hi")]), []).run([{"role": "user", "content": "go"}])
    assert result.end_reason == "stop" and result.finished_naturally and result.failure is None

    server = ScriptedChat([lambda m: completion(None, [("hang", "{}")])])
    loop = make_loop(server, [HangTool()], rollout_timeout=0.3, tool_grace=0.0)
    result = await loop.run([{"role": "user", "content": "go"}])
    assert result.end_reason == "rollout_budget" and result.budget_exhausted and result.failure is None


CALLS = [("echo", '{"text": "a"}'), ("echo", '{"text":"a"}'), ("echo", '{"text": "b"}'), ("echo", "[1]")]


@given(
    st.lists(st.lists(st.sampled_from(range(len(CALLS))), min_size=1, max_size=3), min_size=1, max_size=6),
    st.one_of(st.none(), st.integers(2, 4)),
)
def test_repeat_counting_matches_a_reference(turns: list[list[int]], limit: int | None) -> None:
    """Calls are identical when name and parsed arguments are (spacing aside); counted over turns, in order."""
    script = [lambda m, t=t: completion(None, [CALLS[i] for i in t]) for t in turns] + [lambda m: completion("Done.")]
    loop = make_loop(ScriptedChat(script), [EchoTool()], max_turns=len(turns) + 1, max_repeated_tool_calls=limit)
    result = asyncio.run(loop.run([{"role": "user", "content": "go"}]))
    signature = [0, 0, 2, 3]  # CALLS[0] and CALLS[1] are the same call
    repeated = longest = streak = 0
    previous = None
    for turn_number, turn in enumerate(turns, start=1):
        hit = False
        for i in turn:
            streak = streak + 1 if signature[i] == previous else 1
            previous = signature[i]
            repeated += streak > 1
            longest = max(longest, streak)
            hit = hit or (limit is not None and streak >= limit)
        if hit:
            assert result.end_reason == "repeated_tool_calls" and result.turns_used == turn_number
            break
    else:
        assert result.end_reason == "stop" and result.turns_used == len(turns) + 1
    assert (result.repeated_tool_calls, result.longest_repeat) == (repeated, longest)
