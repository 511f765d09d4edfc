"""``python -m hermes_env.html_view RUN.jsonl [-o OUT.html] [--tokenizer NAME] [--group N] [--max-groups M]``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hermes_env.html_view",
        description="Render a jsonl of scored groups (as process writes them) to one self-contained HTML page.",
    )
    parser.add_argument("jsonl", type=Path, help="the scored groups, one JSON object per line")
    parser.add_argument("-o", "--out", type=Path, default=None, help="the HTML file (default: beside the jsonl)")
    parser.add_argument(
        "--tokenizer",
        default="bundled:qwen3",
        help="tokenizer that decodes each token of the token view (default: bundled:qwen3; 'none' shows ids)",
    )
    parser.add_argument(
        "--group",
        type=int,
        default=None,
        metavar="N",
        help="render only group N (numbered from 1, as the page numbers them) to RUN.group-N.html",
    )
    parser.add_argument(
        "--max-groups",
        type=int,
        default=None,
        metavar="M",
        help="groups shown in full (default 200); the others are listed one row each",
    )
    args = parser.parse_args(argv)
    if not args.jsonl.is_file():
        print(f"error: {args.jsonl} is not a file; pass the jsonl that process wrote", file=sys.stderr)
        return 2
    from hermes_env.errors import TokenizerUnavailable
    from hermes_env.html_view import DEFAULT_MAX_GROUPS, write_html
    from hermes_env.resources import load_tokenizer

    tokenizer = None
    if args.tokenizer.lower() != "none":
        try:
            tokenizer = load_tokenizer(args.tokenizer)
        except (TokenizerUnavailable, ModuleNotFoundError) as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
    max_groups = DEFAULT_MAX_GROUPS if args.max_groups is None else args.max_groups
    if max_groups < 0:
        print(f"error: --max-groups must be 0 or more, got {max_groups}", file=sys.stderr)
        return 2
    try:
        out = write_html(args.jsonl, args.out, tokenizer=tokenizer, group=args.group, max_groups=max_groups)
    except ValueError as err:  # json.JSONDecodeError included
        print(f"error: {args.jsonl}: {err}", file=sys.stderr)
        return 2
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
