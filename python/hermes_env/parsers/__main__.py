"""``python -m hermes_env.parsers --parser hermes FILE``: stream a model output through a parser.

Prints every event as it is produced (one line per ``feed`` that produced events), then the
issues and the final OpenAI assistant message. ``--chunk N`` feeds N characters at a time;
``--tokenizer qwen3`` feeds one Qwen3 token's text at a time, as a server streams it.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path

from hermes_env.parsers import (
    ContentDelta,
    Event,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
    get_parser,
    list_parsers,
)
from hermes_env.parsers.token_deltas import char_chunks, qwen3_deltas


def describe(event: Event) -> str:
    match event:
        case ContentDelta(text):
            return f"content       {text!r}"
        case ToolCallStart(index, id, name):
            return f"call #{index} start  {name} ({id})"
        case ToolCallArgsDelta(index, text):
            return f"call #{index} args   {text!r}"
        case ToolCallEnd(index):
            return f"call #{index} end"
    return repr(event)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m hermes_env.parsers", description=__doc__.splitlines()[0])
    ap.add_argument("file", help="a raw model output (text file), or - for stdin")
    ap.add_argument("--parser", default="hermes", help=f"parser name, one of: {', '.join(list_parsers())}")
    how = ap.add_mutually_exclusive_group()
    how.add_argument("--chunk", type=int, metavar="N", help="feed N characters at a time (default 16)")
    how.add_argument("--tokenizer", choices=["qwen3"], help="feed one token's text at a time")
    ap.add_argument("--tools", type=Path, help="JSON file with the request's OpenAI tool schemas (a list)")
    ap.add_argument("--json", action="store_true", help="print each event as its OpenAI streaming delta (JSON)")
    args = ap.parse_args(argv)

    try:
        text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text(encoding="utf-8")
        tools = json.loads(args.tools.read_text(encoding="utf-8")) if args.tools else None
        parser = get_parser(args.parser, tools=tools)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    deltas = qwen3_deltas(text) if args.tokenizer else char_chunks(text, args.chunk or 16)
    if "".join(deltas) != text:
        print("note: the tokenizer normalised the text; parsing what the tokens say", file=sys.stderr)

    stream = parser.stream()
    n_events = 0
    for i, delta in enumerate([*deltas, None]):
        events = stream.finish() if delta is None else stream.feed(delta)
        for e in events:
            n_events += 1
            line = json.dumps(e.to_openai_delta(), ensure_ascii=False) if args.json else describe(e)
            where = "finish" if delta is None else f"delta {i}"
            print(f"[{where:>11}] {line}")
    result = stream.result()
    print(f"\n{len(deltas)} deltas -> {n_events} events, {len(result.tool_calls)} tool calls")
    for issue in result.issues:
        print(f"issue: {issue.kind} at char {issue.char_offset}: {issue.message}")
    print("\nOpenAI message:")
    print(json.dumps(result.to_message(), indent=2, ensure_ascii=False))
    return 0


def run() -> int:
    """:func:`main` as a command: a reader that stops early (``| head``) ends it quietly, as it does Unix tools."""
    try:
        code = main()
        sys.stdout.flush()  # a closed pipe shows here rather than in the interpreter's flush at exit
    except BrokenPipeError:
        # The flush at exit would fail on the same pipe and print a traceback: point stdout at /dev/null first.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE  # the status a shell reports for a tool that SIGPIPE stopped
    return code


if __name__ == "__main__":
    sys.exit(run())
