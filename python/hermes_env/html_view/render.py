"""Render scored groups (a ``process`` jsonl) as one self-contained HTML page.

Everything the page needs is inside the file (its CSS and script are inlined; nothing is fetched),
and every piece of model or tool text is HTML-escaped, so ``</script>``, backticks or markup in a
rollout show as text and cannot break the layout. The conversation is rendered here, in Python; the
page's script only adds the filters and the token view, which it builds from a JSON block when a
rollout's "tokens" button is pressed (token text is the tokenizer's decode of each token id).

Shared text is shown once: the system prompt (on top, when every rollout has the same one) and
each group's user prompt (in the group header, when all its rollouts share it). Token data is
stored compactly: the prompt tokens every rollout of the file starts with, then those every rollout
of a group starts with, then each rollout's own tokens, trained flags and logprobs.

Huge runs: the jsonl is read as a stream, twice (a pass that plans the page, then one that writes it),
so memory is that of one group whatever the file's size. The page shows the first
:data:`DEFAULT_MAX_GROUPS` groups in full and the rest as one row each (task, scores); any group can
be viewed alone (``python -m hermes_env.html_view RUN.jsonl --group N``). The token view carries at
most :data:`DEFAULT_MAX_TOKENS` tokens.
"""

from __future__ import annotations

import html
import io
import json
import os
import re
import shlex
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, TextIO


# -- reading a groups jsonl (env.output writes it) ----------------------------------------------
def iter_lines(path: str | os.PathLike[str]) -> Iterator[bytes]:
    """The whole lines of a groups jsonl (``env.output.GroupJsonlWriter``'s), one at a time (memory: one line);
    a torn last line is skipped."""
    with open(path, "rb") as f:
        for line in f:
            if not line.endswith(b"\n"):
                return  # a torn tail (a killed run): not a group
            if line.strip():
                yield line


def iter_groups(path: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """The groups of a groups jsonl, parsed one at a time; a torn last line is skipped, any other bad line
    raises ``ValueError`` naming its line number."""
    for number, line in enumerate(iter_lines(path), 1):
        try:
            yield json.loads(line)
        except ValueError as err:
            raise ValueError(f"line {number} of {path} is not a JSON group: {err}") from err


def read_groups(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """All the groups of a (small) jsonl: :func:`iter_groups` as a list."""
    return list(iter_groups(path))


MASKED = -100
#: Token data stops being embedded after this many tokens (the page says so); conversations are always shown.
DEFAULT_MAX_TOKENS = 3_000_000

_THINK = re.compile(r"<think>(.*?)(?:</think>|$)", re.DOTALL)


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _json_for_script(value: Any) -> str:
    """JSON that is safe inside ``<script type="application/json">`` (no ``</script>``, no ``<!--``)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _score_class(score: float) -> str:
    if score >= 1.0:
        return "good"
    if score <= 0.0:
        return "bad"
    return "mid"


def _fmt_score(score: float) -> str:
    return f"{score:.3g}"


def _think_blocks(content: str) -> tuple[list[str], str]:
    """Every ``<think>`` block left inside a message's content (reasoning the server did not separate), and the
    rest. Unlike ``parsers.reasoning.split_reasoning``, which splits a model's raw output at its one block, the
    page keeps any text around the blocks and shows each block."""
    thoughts = [m.group(1).strip() for m in _THINK.finditer(content)]
    return thoughts, _THINK.sub("", content).strip() if thoughts else content


def _common_prefix(seqs: Sequence[Sequence[int]], masks: Sequence[Sequence[int]]) -> int:
    """Length of the prompt prefix (masked everywhere) that all ``seqs`` share."""
    if not seqs:
        return 0
    limit = min(len(s) for s in seqs)
    first = seqs[0]
    n = 0
    while n < limit and all(s[n] == first[n] for s in seqs) and all(m[n] == MASKED for m in masks):
        n += 1
    return n


def _shrink_prefix(prefix: list[int], tokens: Sequence[Sequence[int]], masks: Sequence[Sequence[int]]) -> None:
    """Cut ``prefix`` to the part every rollout of a group starts with, as prompt (masked) tokens."""
    keep = 0
    while keep < len(prefix) and all(
        keep < len(t) and t[keep] == prefix[keep] and m[keep] == MASKED for t, m in zip(tokens, masks, strict=True)
    ):
        keep += 1
    del prefix[keep:]


class _TokenData:
    """What the page's token view reads, written out group by group (nothing of a group is kept once written).

    The page's ``#token-data`` block is ``{"filePrefix", "groups", "text", "decoded"}``: ``filePrefix`` the prompt
    tokens every embedded rollout of the file starts with (found by :func:`_plan` before anything is written), each
    group the further ``prefix`` its rollouts share and per rollout its own ``ids``, ``trained`` flags and the
    logprobs of its trained tokens (``lp``); ``text`` decodes each distinct id once. Groups go to a spool file as
    they come and are copied into the page at its end.
    """

    def __init__(self, file_prefix: list[int]) -> None:
        self.file_prefix = file_prefix
        self.count = 0
        self.ids: set[int] = set(file_prefix)  # at most the vocabulary
        self._spool = tempfile.TemporaryFile("w+", encoding="utf-8")

    def add_group(
        self,
        tokens: list[list[int]],
        masks: list[list[int]],
        logprobs: list[list[float]] | None,
        extras: Mapping[str, Any] | None = None,
    ) -> int:
        """Store one group's tokens (every rollout starts with ``file_prefix``); returns its index. ``extras``: the
        group's ``advantages`` / ``distill_token_ids`` / ``distill_logprobs`` when it has them (shown per trained
        token)."""
        keep = len(self.file_prefix)
        group_len = _common_prefix([t[keep:] for t in tokens], [m[keep:] for m in masks])
        group_prefix = list(tokens[0][keep : keep + group_len])
        start = keep + group_len
        rollouts = []
        for i, (t, m) in enumerate(zip(tokens, masks, strict=True)):
            own = t[start:]
            trained = "".join("1" if x != MASKED else "0" for x in m[start:])
            lps = logprobs[i][start:] if logprobs else []
            rollout: dict[str, Any] = {
                "ids": own,
                "trained": trained,
                # logprobs only where trained (elsewhere they are the 1.0 placeholder)
                "lp": [round(float(lp), 4) for lp, f in zip(lps, trained, strict=False) if f == "1"],
            }
            rollout.update(_trained_extras(extras or {}, i, start, trained))
            self.ids.update(own)
            self.ids.update(x for x in rollout.get("t1") or [] if x >= 0)
            rollouts.append(rollout)
        self.ids.update(group_prefix)
        if self.count:
            self._spool.write(",")
        self._spool.write(_json_for_script({"prefix": group_prefix, "rollouts": rollouts}))
        self.count += 1
        return self.count - 1

    def write_payload(self, out: TextIO, tokenizer: Any) -> None:
        ids = sorted(self.ids)
        text: dict[str, str] = {}
        if tokenizer is not None and ids:
            pieces = tokenizer.batch_decode([[i] for i in ids], skip_special_tokens=False)
            text = {str(i): piece for i, piece in zip(ids, pieces, strict=True)}
        out.write(f'{{"filePrefix":{_json_for_script(self.file_prefix)},"groups":[')
        self._spool.seek(0)
        shutil.copyfileobj(self._spool, out)
        out.write(f'],"text":{_json_for_script(text)},"decoded":{_json_for_script(tokenizer is not None)}}}')
        self._spool.close()


def _trained_extras(extras: Mapping[str, Any], i: int, start: int, trained: str) -> dict[str, list[Any]]:
    """Per trained token of rollout ``i``: its advantage (``adv``), the teacher's top-1 id and logprob (``t1``,
    ``t1lp``), for the groups that carry them."""
    out: dict[str, list[Any]] = {}
    keep = [start + j for j, f in enumerate(trained) if f == "1"]
    advantages, top_ids, top_lps = (extras.get(k) for k in ("advantages", "distill_token_ids", "distill_logprobs"))
    if advantages and i < len(advantages):
        out["adv"] = [round(float(advantages[i][p]), 4) for p in keep]
    if top_ids and top_lps and i < len(top_ids):
        out["t1"] = [int(top_ids[i][p][0]) if top_ids[i][p] else -1 for p in keep]
        out["t1lp"] = [round(float(top_lps[i][p][0]), 4) if top_lps[i][p] else 0.0 for p in keep]
    return out


def _tool_call_html(call: Mapping[str, Any]) -> str:
    function = call.get("function") or {}
    name = function.get("name") or "?"
    raw = function.get("arguments")
    raw_text = raw if isinstance(raw, str) else json.dumps(raw)
    try:
        args = json.loads(raw_text) if raw_text.strip() else {}
        shown = json.dumps(args, indent=2, ensure_ascii=False)
        bad = not isinstance(args, dict)
    except json.JSONDecodeError:
        shown, bad = raw_text, True
    flag = ' <span class="flag">arguments are not a JSON object</span>' if bad else ""
    return (
        f'<div class="call"><div class="call-head">tool call <span class="name">{_e(name)}</span>{flag}</div>'
        f'<pre class="args">{_e(shown)}</pre></div>'
    )


#: AgentResult.end_reason, in words.
ENDED = {
    "stop": "answered",
    "length": "cut at max tokens",
    "turn_limit": "out of turns",
    "context_limit": "context full",
    "rollout_budget": "out of time",
    "repeated_tool_calls": "repeated the same tool call",
}


def _assistant_html(
    message: Mapping[str, Any], turn: int, finish: str | None, issues: Sequence[Mapping[str, Any]] = ()
) -> str:
    content = str(message.get("content") or "")
    thoughts, content = _think_blocks(content)
    if message.get("reasoning_content"):
        thoughts.insert(0, str(message["reasoning_content"]))
    parts = [f'<div class="msg assistant"><div class="label">assistant · turn {turn}']
    if finish:
        parts.append(f' · <span class="finish finish-{_e(finish)}">finish: {_e(finish)}</span>')
    parts.append("</div>")
    for thought in thoughts:
        parts.append(f'<details class="reasoning" open><summary>reasoning</summary><pre>{_e(thought)}</pre></details>')
    if content.strip():
        parts.append(f'<pre class="content">{_e(content)}</pre>')
    for call in message.get("tool_calls") or []:
        parts.append(_tool_call_html(call))
    for issue in issues:
        parts.append(
            f'<div class="issue"><span class="flag">parse issue: {_e(issue.get("kind"))}</span> '
            f"{_e(issue.get('message') or '')}</div>"
        )
    parts.append("</div>")
    return "".join(parts)


def _tool_html(message: Mapping[str, Any], name: str | None, error_kind: str | None) -> str:
    cls = "msg tool error" if error_kind else "msg tool"
    label = f"tool result · {_e(name)}" if name else "tool result"
    if error_kind:
        label += f' · <span class="flag">error: {_e(error_kind)}</span>'
    return f'<div class="{cls}"><div class="label">{label}</div><pre>{_e(message.get("content") or "")}</pre></div>'


def _reward_html(info: Mapping[str, Any], score: float) -> str:
    reward = info.get("reward") or {}
    parts = [f'<div class="reward {_score_class(score)}"><div class="label">reward {_e(_fmt_score(score))}']
    if reward.get("error"):
        parts.append(f' · <span class="flag">reward failed: {_e(reward["error"])}</span>')
    parts.append("</div>")
    checks = reward.get("checks") or []
    if not checks and not reward.get("error"):
        parts.append('<div class="note">the reward ran no shell command (ctx.terminal)</div>')
    for check in checks:
        ok = check.get("exit_code") == 0 and not check.get("timed_out")
        status = "timed out" if check.get("timed_out") else f"exit {check.get('exit_code')}"
        parts.append(
            f'<div class="check {"ok" if ok else "failed"}"><div class="check-head">$ <code>{_e(check.get("command"))}'
            f'</code> <span class="status">{_e(status)}</span></div>'
        )
        output = check.get("output") or ""
        if output:
            cut = "… (earlier output cut)\n" if check.get("output_cut") else ""
            parts.append(f"<pre>{_e(cut + output)}</pre>")
        parts.append("</div>")
    parts.append("</div>")
    parts.extend(_credit_html(info))
    return "".join(parts)


def _credit_html(info: Mapping[str, Any]) -> list[str]:
    """Turn rewards, the reward judge's verdict and the hint judge's hints, when the rollout has them."""
    parts = []
    if info.get("turn_rewards") is not None:
        values = ", ".join(f"{r:g}" for r in info["turn_rewards"])
        parts.append(f'<div class="note">turn rewards (turn 1, 2, ...): {_e(values)}</div>')
    judge = info.get("judge")
    if judge:
        head = f"judge ({judge.get('kind')}) score {_e(_fmt_score(float(judge.get('score') or 0.0)))}"
        if judge.get("unreadable"):
            head += ' · <span class="flag">unreadable verdict</span>'
        replies = judge.get("replies") or ([judge["reply"]] if judge.get("reply") is not None else [])
        parts.append(f'<div class="check"><div class="check-head">{head}</div>')
        parts.extend(f"<pre>{_e(r)}</pre>" for r in replies)
        parts.append("</div>")
    for hint in (info.get("distill") or {}).get("hints") or []:
        if hint.get("hint"):
            parts.append(f'<div class="note">teacher hint for turn {int(hint["turn"]) + 1}: {_e(hint["hint"])}</div>')
    return parts


def _rollout_html(
    messages: list[Mapping[str, Any]],
    skip: int,
    info: Mapping[str, Any],
    ended: str | None,
    score: float,
    masks: list[int] | None,
    index: int,
    token_ref: str | None,
) -> str:
    errors = {(e.get("turn"), e.get("message")) for e in info.get("tool_errors") or []}
    error_kinds = {(e.get("turn"), e.get("message")): e.get("kind") for e in info.get("tool_errors") or []}
    finishes = info.get("finish_reasons") or []
    trained = sum(1 for m in masks if m != MASKED) if masks is not None else None
    n_errors = len(info.get("tool_errors") or [])
    summary = [f'<span class="score {_score_class(score)}">{_e(_fmt_score(score))}</span> rollout {index + 1}']
    if ended:
        words = ENDED.get(ended, ended)
        summary.append(f'<span class="ended ended-{_e(ended)}">ended: {_e(words)}</span>')
    if "turns" in info:
        summary.append(f"{info['turns']} turn{'s' if info['turns'] != 1 else ''}")
    if "tool_calls" in info:
        summary.append(f"{info['tool_calls']} tool call{'s' if info['tool_calls'] != 1 else ''}")
    if n_errors:
        summary.append(f'<span class="flag">{n_errors} tool error{"s" if n_errors != 1 else ""}</span>')
    if trained is not None and masks is not None:
        summary.append(f"{trained} of {len(masks)} tokens trained")
    attrs = f'class="rollout" data-score="{score}" data-errors="{n_errors}"' + (" data-zero" if score == 0 else "")
    out = [f"<details {attrs} open><summary>{' · '.join(summary)}</summary>"]
    if token_ref is not None:
        out.append(
            f'<div class="tools-row"><button type="button" class="tokens-toggle" data-ref="{token_ref}">'
            "show tokens</button></div>"
        )
    out.append('<div class="tokens" hidden></div><div class="conversation">')
    turn, call_names = 0, {}
    for message in messages[skip:]:
        role = message.get("role")
        if role == "assistant":
            turn += 1
            for call in message.get("tool_calls") or []:
                call_names[call.get("id")] = (call.get("function") or {}).get("name")
            finish = finishes[turn - 1] if turn - 1 < len(finishes) else None
            issues = [i for i in info.get("parse_issues") or [] if i.get("turn") == turn - 1]
            out.append(_assistant_html(message, turn, finish, issues))
        elif role == "tool":
            key = (turn - 1, message.get("content"))
            out.append(
                _tool_html(
                    message,
                    call_names.get(message.get("tool_call_id")),
                    error_kinds.get(key) if key in errors else None,
                )
            )
        else:
            out.append(
                f'<div class="msg {_e(role)}"><div class="label">{_e(role)}</div>'
                f"<pre>{_e(message.get('content') or '')}</pre></div>"
            )
    out.append("</div>")
    if info:
        out.append(_reward_html(info, score))
    out.append("</details>")
    return "".join(out)


def _leading(messages: list[Mapping[str, Any]], role: str, start: int) -> str | None:
    if len(messages) > start and messages[start].get("role") == role:
        return str(messages[start].get("content") or "")
    return None


def _asset(name: str) -> str:
    return resources.files("hermes_env.html_view").joinpath(name).read_text(encoding="utf-8")


#: Groups shown in full on one page; the others get a row each (task, scores) and are viewed one at a time.
DEFAULT_MAX_GROUPS = 200


@dataclass
class _Plan:
    """What the page needs to know about the whole file before writing it (one streaming pass)."""

    groups: int = 0
    rollouts: int = 0
    score_sum: float = 0.0
    system: str | None = None  # the system prompt, while every shown rollout has the same one
    system_varies: bool = False
    embedded: set[int] = field(default_factory=set)  # numbers of the groups whose tokens the page carries
    omitted_rollouts: int = 0  # rollouts of shown groups left out of the token view (over the budget)
    file_prefix: list[int] | None = None

    @property
    def shared_system(self) -> str | None:
        return None if self.system_varies else self.system


def _plan(groups: Iterable[tuple[int, Mapping[str, Any]]], max_groups: int, max_tokens: int) -> _Plan:
    plan = _Plan()
    used = 0
    seen_system = False
    for shown, (number, group) in enumerate(groups):
        scores = [float(s) for s in group.get("scores") or []]
        plan.groups += 1
        plan.rollouts += len(scores)
        plan.score_sum += sum(scores)
        if shown >= max_groups:
            continue
        for conv in group.get("messages") or []:
            text = _leading(conv, "system", 0)
            if not seen_system:
                plan.system, seen_system = text, True
            elif text != plan.system:
                plan.system_varies = True
        tokens, masks = group.get("tokens"), group.get("masks")
        if not (tokens and masks):
            continue
        total = sum(len(t) for t in tokens)
        if used + total > max_tokens:
            plan.omitted_rollouts += len(tokens)
            continue
        used += total
        plan.embedded.add(number)
        if plan.file_prefix is None:
            plan.file_prefix = list(tokens[0][: _common_prefix(tokens, masks)])
        else:
            _shrink_prefix(plan.file_prefix, tokens, masks)
    return plan


def _group_html(number: int, group: Mapping[str, Any], shared_system: str | None, token_index: int) -> str:
    scores = [float(s) for s in group.get("scores") or []]
    n = len(scores)
    messages: list[list[Mapping[str, Any]]] = list(group.get("messages") or [[] for _ in range(n)])
    infos: list[Mapping[str, Any]] = list(group.get("rollout_info") or [{} for _ in range(n)])
    end_reasons: list[str | None] = list(group.get("end_reasons") or [])
    masks = group.get("masks") or [None] * n
    task = next((i.get("task_id") for i in infos if i.get("task_id")), None)
    mean = sum(scores) / n if n else 0.0
    head = [f'<span class="gid">group {number}</span>']
    if task:
        head.append(f'<span class="task">task <code>{_e(task)}</code></span>')
    head.append(f'<span class="score {_score_class(mean)}">mean reward {mean:.2f}</span>')
    head.append(f'<span class="scores">scores {" ".join(_e(_fmt_score(s)) for s in scores)}</span>')
    toolsets = next((i.get("toolsets") for i in infos if i.get("toolsets")), None)
    if toolsets:
        head.append(f'<span class="toolsets">tools: {_e(", ".join(toolsets))}</span>')
    skip = 1 if shared_system is not None else 0  # otherwise each rollout shows its own system message
    prompts = {_leading(c, "user", skip) for c in messages}
    shared_prompt = next(iter(prompts)) if len(prompts) == 1 and None not in prompts else None
    section = [f'<section class="group" id="group-{number}" data-mean="{mean}"><h2>{" · ".join(head)}</h2>']
    if shared_prompt is not None:
        prompt = _e(shared_prompt)
        section.append(f'<div class="msg user prompt"><div class="label">user</div><pre>{prompt}</pre></div>')
        skip += 1
    for ri in range(n):
        conv = messages[ri] if ri < len(messages) else []
        ref = f"{token_index}:{ri}" if token_index >= 0 else None
        info = infos[ri] if ri < len(infos) else {}
        ended = end_reasons[ri] if ri < len(end_reasons) else None
        section.append(_rollout_html(conv, skip, info, ended, scores[ri], masks[ri], ri, ref))
    section.append("</section>")
    return "".join(section)


def _index_row(number: int, group: Mapping[str, Any]) -> str:
    """One line for a group not shown in full."""
    scores = [float(s) for s in group.get("scores") or []]
    mean = sum(scores) / len(scores) if scores else 0.0
    infos = group.get("rollout_info") or []
    task = next((i.get("task_id") for i in infos if isinstance(i, Mapping) and i.get("task_id")), None)
    return (
        f'<tr id="group-{number}"><td>{number}</td><td><code>{_e(task or "")}</code></td>'
        f'<td><span class="score {_score_class(mean)}">{mean:.2f}</span></td>'
        f"<td>{' '.join(_e(_fmt_score(s)) for s in scores)}</td></tr>"
    )


def write_page(
    out: TextIO,
    groups: Callable[[], Iterable[tuple[int, Mapping[str, Any]]]],
    *,
    tokenizer: Any = None,
    title: str = "hermes_env rollouts",
    source: str | None = None,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    max_groups: int = DEFAULT_MAX_GROUPS,
    one_group_command: str | None = None,
) -> None:
    """Write the page for ``groups()`` (numbered ScoredDataGroups, as ``process`` writes them) to ``out``.

    ``groups`` is called twice (a planning pass, then the writing pass) and must yield the same groups each
    time; only one group is in memory at a time. The first ``max_groups`` are shown in full, the others as a
    row each; ``one_group_command`` tells the reader how to view one of those.
    """
    plan = _plan(groups(), max_groups, max_tokens)
    shared_system = plan.shared_system
    tokens = _TokenData(plan.file_prefix or [])
    mean_all = plan.score_sum / plan.rollouts if plan.rollouts else 0.0
    header = [
        f"<h1>{_e(title)}</h1>",
        '<div class="meta">',
        f"<span>{plan.groups} groups</span> · <span>{plan.rollouts} rollouts</span> · ",
        f'<span class="score {_score_class(mean_all)}">mean reward {mean_all:.3f}</span>',
        f" · <span>{_e(source)}</span>" if source else "",
        "</div>",
        '<div class="controls">show <label><input type="radio" name="show" value="all" checked> all</label> '
        '<label><input type="radio" name="show" value="zero"> reward 0</label> '
        '<label><input type="radio" name="show" value="errors"> with tool errors</label> · '
        '<button type="button" id="collapse-all">collapse all</button> '
        '<button type="button" id="expand-all">expand all</button> · token colours '
        '<select id="token-colour"><option value="mask">trained / not trained</option>'
        '<option value="logprob">logprob of trained tokens</option></select></div>',
    ]
    if plan.groups > max_groups:
        header.append(
            f'<div class="note">the first {max_groups:,} of {plan.groups:,} groups are shown in full; the others are '
            '<a href="#more-groups">listed below</a> with their scores</div>'
        )
    if plan.omitted_rollouts:
        header.append(
            f'<div class="note">token view left out for {plan.omitted_rollouts} rollouts '
            f"(over {max_tokens:,} tokens in this file)</div>"
        )
    out.write(
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{_asset('page.css')}</style></head><body>"
        f'<header id="top">{"".join(header)}</header><main>'
    )
    if shared_system is not None:
        out.write(
            '<details class="msg system" open><summary class="label">system prompt (the same in every rollout)'
            f"</summary><pre>{_e(shared_system)}</pre></details>"
        )
    listed = 0
    for shown, (number, group) in enumerate(groups()):
        if shown < max_groups:
            token_index = -1
            if number in plan.embedded:
                token_index = tokens.add_group(group["tokens"], group["masks"], group.get("inference_logprobs"), group)
            out.write(_group_html(number, group, shared_system, token_index))
            continue
        if not listed:
            how = f"; to view one: <code>{_e(one_group_command)}</code>" if one_group_command else ""
            out.write(
                f'<section class="more" id="more-groups"><h2>groups not shown in full{how}</h2>'
                "<table><thead><tr><th>group</th><th>task</th><th>mean reward</th><th>scores</th></tr></thead>"
                "<tbody>"
            )
        listed += 1
        out.write(_index_row(number, group))
    if listed:
        out.write("</tbody></table></section>")
    if not plan.groups:
        out.write('<p class="note">no groups</p>')
    out.write('</main><script type="application/json" id="token-data">')
    tokens.write_payload(out, tokenizer)
    out.write(f"</script><script>{_asset('page.js')}</script></body></html>")


def render_html(
    groups: Iterable[Mapping[str, Any]],
    *,
    tokenizer: Any = None,
    title: str = "hermes_env rollouts",
    source: str | None = None,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    max_groups: int = DEFAULT_MAX_GROUPS,
) -> str:
    """The whole page for ``groups`` held in memory (for a file, :func:`write_html` streams it)."""
    held = list(groups)
    out = io.StringIO()
    write_page(
        out,
        lambda: enumerate(held, 1),
        tokenizer=tokenizer,
        title=title,
        source=source,
        max_tokens=max_tokens,
        max_groups=max_groups,
    )
    return out.getvalue()


def write_html(
    jsonl_path: str | Path,
    html_path: str | Path | None = None,
    *,
    tokenizer: Any = None,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    max_groups: int = DEFAULT_MAX_GROUPS,
    group: int | None = None,
) -> Path:
    """Render the groups in ``jsonl_path`` to HTML and return its path, reading the file as a stream.

    The default target is the jsonl's path with ``.html`` (``.group-N.html`` for one ``group``, numbered from 1
    as the page numbers them). Memory stays that of one group, whatever the file's size.
    """
    source = Path(jsonl_path)
    if group is not None:
        chosen = _nth_group(source, group)
        default = source.with_name(f"{source.stem}.group-{group}.html")

        def numbered() -> Iterable[tuple[int, Mapping[str, Any]]]:
            return [(group, chosen)]

        title = f"{source.stem} · group {group}"
    else:
        default = source.with_suffix(".html")

        def numbered() -> Iterable[tuple[int, Mapping[str, Any]]]:
            return enumerate(iter_groups(source), 1)

        title = source.stem
    target = Path(html_path) if html_path is not None else default
    command = f"python -m hermes_env.html_view {shlex.quote(str(source))} --group N"
    partial = target.with_name(f".{target.name}.partial")
    try:
        with partial.open("w", encoding="utf-8") as out:
            write_page(
                out,
                numbered,
                tokenizer=tokenizer,
                title=title,
                source=str(source),
                max_tokens=max_tokens,
                max_groups=max_groups,
                one_group_command=command,
            )
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)
    return target


def _nth_group(path: Path, number: int) -> dict[str, Any]:
    """Group ``number`` (from 1) of the jsonl, parsing no other line; ValueError when there is no such group."""
    if number < 1:
        raise ValueError(f"group numbers start at 1, got {number}")
    count = 0
    for count, line in enumerate(iter_lines(path), 1):  # noqa: B007 - count is the answer when it runs out
        if count == number:
            return json.loads(line)
    raise ValueError(f"{path} has {count} groups; there is no group {number}")
