"""The HTML view: hostile text stays text, token data rebuilds every rollout exactly, and a real browser shows it.

The browser test loads the page in Debian's headless ``chromium`` (installed by scripts/setup.sh), lets
its script open every token view (``#tokens``), dumps the DOM and checks what a reader sees; it also
writes a screenshot (path printed with ``-s``) for a human look.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from hermes_env.html_view import render_html, write_html, write_page
from hermes_env.resources import qwen3_tokenizer
from hypothesis import given
from hypothesis import strategies as st

MASKED = -100
HOSTILE = "</script><script>alert('x')</script> ``` <b>bold</b> <!-- & &amp; `code`"
SYSTEM = "You are a careful agent. <system> tags stay text."


class Element:
    def __init__(self, tag: str, attrs: dict[str, str | None]) -> None:
        self.tag, self.attrs, self.text = tag, attrs, ""

    @property
    def classes(self) -> set[str]:
        return set((self.attrs.get("class") or "").split())


class Dom(HTMLParser):
    """Every element with its attributes and its whole text content (enough to check what a reader sees)."""

    VOID = {"meta", "input", "br", "img", "link", "hr"}

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[Element] = []
        self._open: list[Element] = []
        self.feed(page)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, dict(attrs))
        self.elements.append(element)
        if tag not in self.VOID:
            self._open.append(element)

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self._open) - 1, -1, -1):
            if self._open[i].tag == tag:
                del self._open[i:]
                break

    def handle_data(self, data: str) -> None:
        for element in self._open:
            element.text += data

    def by_class(self, name: str) -> list[Element]:
        return [e for e in self.elements if name in e.classes]

    def by_tag(self, tag: str) -> list[Element]:
        return [e for e in self.elements if e.tag == tag]


def _call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _prompt_ids(tok: Any, messages: list[dict[str, Any]]) -> list[int]:
    text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return list(tok.encode(text, add_special_tokens=False))


def _rollout(
    tok: Any, prompt_ids: list[int], turns: list[str], lp_base: float
) -> tuple[list[int], list[int], list[float]]:
    tokens, masks, logprobs = list(prompt_ids), [MASKED] * len(prompt_ids), [1.0] * len(prompt_ids)
    for i, text in enumerate(turns):
        ids = tok.encode(text, add_special_tokens=False)
        tokens += ids
        masks += ids
        logprobs += [round(lp_base - 0.01 * j, 4) for j in range(len(ids))]
        if i < len(turns) - 1:
            tool = tok.encode("<|im_start|>tool\nok<|im_end|>", add_special_tokens=False)
            tokens += tool
            masks += [MASKED] * len(tool)
            logprobs += [1.0] * len(tool)
    return tokens, masks, logprobs


def hostile_groups() -> list[dict[str, Any]]:
    """Two groups: reasoning (separated and inline), a tool error, a failed reward check, hostile text everywhere."""
    tok = qwen3_tokenizer()
    prompt_a = f"Count the files. {HOSTILE}"
    conv_ok = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": prompt_a},
        {
            "role": "assistant",
            "content": "",
            "reasoning_content": f"think about {HOSTILE}",
            "tool_calls": [_call("c1", "terminal", json.dumps({"command": f"echo '{HOSTILE}'"}))],
        },
        {"role": "tool", "tool_call_id": "c1", "content": f"{HOSTILE}\n[exit code 0]"},
        {"role": "assistant", "content": "Done. ```python\nprint(1)\n``` still inside"},
    ]
    conv_bad = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": prompt_a},
        {
            "role": "assistant",
            "content": "<think>inline reasoning</script></think>calling",
            "tool_calls": [_call("c2", "shell", "{not json </script>")],
        },
        {"role": "tool", "tool_call_id": "c2", "content": "Error: unknown tool 'shell'. Available tools: terminal."},
        {"role": "assistant", "content": "I give up."},
    ]
    infos = [
        {
            "task_id": "count<files>",
            "finish_reasons": ["tool_calls", "stop"],
            "turns": 2,
            "tool_calls": 1,
            "toolsets": ["terminal"],
            "tool_errors": [],
            "reward": {
                "score": 1.0,
                "error": None,
                "checks": [
                    {"command": "test -f out/x", "exit_code": 0, "timed_out": False, "output": "", "output_cut": False}
                ],
            },
        },
        {
            "task_id": "count<files>",
            "finish_reasons": ["tool_calls", "length"],
            "turns": 2,
            "tool_calls": 1,
            "toolsets": ["terminal"],
            "tool_errors": [
                {
                    "turn": 0,
                    "tool": "shell",
                    "kind": "unknown_tool",
                    "message": "Error: unknown tool 'shell'. Available tools: terminal.",
                }
            ],
            "parse_issues": [{"turn": 0, "kind": "malformed_json", "message": "arguments are not JSON </script>"}],
            "reward": {
                "score": 0.0,
                "error": None,
                "checks": [
                    {
                        "command": "ls out | wc -l",
                        "exit_code": 1,
                        "timed_out": False,
                        "output": f"ls: cannot access 'out' {HOSTILE}",
                        "output_cut": True,
                    }
                ],
            },
        },
    ]
    prompt_ids = _prompt_ids(tok, conv_ok[:2])
    a = _rollout(tok, prompt_ids, ["<tool_call>{}</tool_call>", "Done."], -0.1)
    b = _rollout(tok, prompt_ids, ["<think>inline</think>calling", "I give up."], -2.0)
    group1 = {
        "tokens": [a[0], b[0]],
        "masks": [a[1], b[1]],
        "inference_logprobs": [a[2], b[2]],
        "scores": [1.0, 0.0],
        "messages": [conv_ok, conv_bad],
        "rollout_info": infos,
        "end_reasons": ["stop", "length"],
    }
    # Group 2: another prompt, no rollout_info (as atroposlib itself writes groups).
    conv = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Second task"},
            {"role": "assistant", "content": "ok"}]  # fmt: skip
    c = _rollout(tok, _prompt_ids(tok, conv[:2]), ["ok"], -0.5)
    group2 = {"tokens": [c[0]], "masks": [c[1]], "inference_logprobs": [c[2]], "scores": [0.5], "messages": [conv]}
    return [group1, group2]


def _token_payload(page: str) -> dict[str, Any]:
    match = re.search(r'<script type="application/json" id="token-data">(.*?)</script>', page, re.DOTALL)
    assert match is not None
    return json.loads(match.group(1))


def _rebuild(payload: dict[str, Any], group: int, rollout: int) -> tuple[list[int], str, list[float]]:
    g = payload["groups"][group]
    r = g["rollouts"][rollout]
    prompt = payload["filePrefix"] + g["prefix"]
    return prompt + r["ids"], "0" * len(prompt) + r["trained"], r["lp"]


def test_hostile_text_stays_text_and_the_page_is_self_contained() -> None:
    groups = hostile_groups()
    page = render_html(groups, tokenizer=qwen3_tokenizer(), title="t </title><b>x</b>")
    dom = Dom(page)
    assert len(dom.by_tag("script")) == 2  # the JSON block and the page's own script; none from the data
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)  # nothing fetched
    assert "<link" not in page
    assert not dom.by_tag("b")  # <b>bold</b> in the data is text, not markup
    assert any(HOSTILE in e.text for e in dom.by_class("prompt"))
    assert sum(HOSTILE in e.text for e in dom.by_class("reasoning")) == 1
    assert any("```python" in e.text for e in dom.by_class("content"))
    assert _token_payload(page)["groups"]  # the JSON block parses despite </script> in the data


def test_page_shows_what_a_reader_needs() -> None:
    groups = hostile_groups()
    dom = Dom(render_html(groups, tokenizer=qwen3_tokenizer()))
    headers = dom.by_tag("h2")
    assert "count<files>" in headers[0].text and "mean reward 0.50" in headers[0].text
    assert "group 2" in headers[1].text and "mean reward 0.50" in headers[1].text
    assert len(dom.by_class("system")) == 1 and SYSTEM in dom.by_class("system")[0].text  # shown once
    reasoning = [e.text for e in dom.by_class("reasoning")]
    assert any("inline reasoning</script>" in r for r in reasoning)  # <think> inside content is set apart too
    errors = dom.by_class("error")
    assert len(errors) == 1 and "unknown_tool" in errors[0].text and "shell" in errors[0].text
    calls = dom.by_class("call")
    assert any("not a JSON object" in c.text for c in calls)
    checks = dom.by_class("check")
    assert any("ls out | wc -l" in c.text and "exit 1" in c.text for c in checks)
    assert any("earlier output cut" in c.text for c in checks)
    summaries = [e.text for e in dom.by_tag("summary") if "rollout " in e.text and "ended" in e.text]
    assert "ended: answered" in summaries[0] and "ended: cut at max tokens" in summaries[1]
    assert "1 tool error" in summaries[1]
    (issue,) = dom.by_class("issue")
    assert "parse issue: malformed_json" in issue.text and "</script>" in issue.text
    assert any("finish: length" in e.text for e in dom.by_class("finish"))


def test_token_data_rebuilds_each_rollout() -> None:
    groups = hostile_groups()
    payload = _token_payload(render_html(groups, tokenizer=qwen3_tokenizer()))
    assert payload["filePrefix"]  # the system prompt's tokens are stored once
    for gi, group in enumerate(groups):
        for ri, (tokens, masks, logprobs) in enumerate(
            zip(group["tokens"], group["masks"], group["inference_logprobs"], strict=True)
        ):
            ids, trained, lps = _rebuild(payload, gi, ri)
            assert ids == tokens
            assert trained == "".join("0" if m == MASKED else "1" for m in masks)
            assert lps == [lp for lp, m in zip(logprobs, masks, strict=True) if m != MASKED]
    assert all(payload["text"][str(i)] == qwen3_tokenizer().decode([i]) for i in groups[0]["tokens"][0][:50])


@st.composite
def token_groups(draw: st.DrawFn) -> list[dict[str, Any]]:
    shared = draw(st.lists(st.integers(0, 9), max_size=6))
    groups = []
    for _ in range(draw(st.integers(1, 4))):
        group_prefix = draw(st.lists(st.integers(0, 9), max_size=4))
        tokens, masks, logprobs = [], [], []
        for _ in range(draw(st.integers(1, 3))):
            prompt = shared + group_prefix + draw(st.lists(st.integers(0, 9), max_size=3))
            rest = draw(st.lists(st.tuples(st.integers(0, 9), st.booleans()), max_size=8))
            tokens.append(prompt + [t for t, _ in rest])
            masks.append([MASKED] * len(prompt) + [t if trained else MASKED for t, trained in rest])
            logprobs.append([1.0] * len(prompt) + [-0.5 if trained else 1.0 for _, trained in rest])
        groups.append({"tokens": tokens, "masks": masks, "inference_logprobs": logprobs,
                       "scores": [0.0] * len(tokens)})  # fmt: skip
    return groups


@given(token_groups())
def test_shared_prefixes_never_change_what_a_rollout_shows(groups: list[dict[str, Any]]) -> None:
    payload = _token_payload(render_html(groups))
    for gi, group in enumerate(groups):
        for ri, (tokens, masks) in enumerate(zip(group["tokens"], group["masks"], strict=True)):
            ids, trained, lps = _rebuild(payload, gi, ri)
            assert ids == tokens
            assert trained == "".join("0" if m == MASKED else "1" for m in masks)
            assert len(lps) == trained.count("1")


def test_token_view_is_left_out_over_the_budget() -> None:
    groups = hostile_groups()
    page = render_html(groups, max_tokens=len(groups[0]["tokens"][0]) + len(groups[0]["tokens"][1]))
    dom = Dom(page)
    assert len(_token_payload(page)["groups"]) == 1
    assert any("token view left out for 1 rollouts" in e.text for e in dom.by_class("note"))
    assert len(dom.by_class("tokens-toggle")) == 2


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _chromium(*args: str, timeout: float = 120) -> str:
    assert CHROMIUM is not None
    with tempfile.TemporaryDirectory(prefix="hermes-chromium-") as profile:
        proc = subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
             f"--user-data-dir={profile}", *args],
            capture_output=True, text=True, timeout=timeout, check=False,
            env={**os.environ, "DBUS_SESSION_BUS_ADDRESS": "disabled:"},
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (scripts/setup.sh installs it on Debian)")
def test_page_in_headless_chromium(tmp_path: Path) -> None:
    jsonl = tmp_path / "run.jsonl"
    jsonl.write_text("".join(json.dumps(g) + "\n" for g in hostile_groups()))
    html = write_html(jsonl, tokenizer=qwen3_tokenizer())
    dom = Dom(_chromium("--dump-dom", html.as_uri() + "#tokens"))
    # The page's script ran (token views built) and the data's </script> did not cut it short.
    assert len(dom.by_tag("script")) == 2
    groups = hostile_groups()
    streams = dom.by_class("stream")
    assert len(streams) == 3
    tok_spans = dom.by_class("tok")
    assert len(tok_spans) == sum(len(t) for g in groups for t in g["tokens"])
    trained = [e for e in tok_spans if "t" in e.classes]
    assert len(trained) == sum(1 for g in groups for m in g["masks"] for x in m if x != MASKED)
    assert all("logprob" in (e.attrs.get("title") or "") for e in trained)
    assert "".join(e.text for e in tok_spans[: len(groups[0]["tokens"][0])]) == qwen3_tokenizer().decode(
        groups[0]["tokens"][0]
    )
    assert not dom.by_tag("b") and any(HOSTILE in e.text for e in dom.by_class("prompt"))
    shot = tmp_path / "view.png"
    _chromium("--hide-scrollbars", "--window-size=1280,1600", f"--screenshot={shot}", html.as_uri() + "#tokens")
    assert shot.stat().st_size > 10_000
    print(f"screenshot: {shot}")


# -- huge runs: streamed, capped, one group at a time ----------------------------------------------------------------
def _small_group(i: int) -> dict[str, Any]:
    conv = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": f"task {i}"},
            {"role": "assistant", "content": f"answer {i}"}]  # fmt: skip
    return {"tokens": [[1, 2, 3, 10 + i]], "masks": [[MASKED, MASKED, MASKED, 10 + i]],
            "inference_logprobs": [[1.0, 1.0, 1.0, -0.25]], "scores": [float(i % 2)], "messages": [conv],
            "rollout_info": [{"task_id": f"t-{i}"}]}  # fmt: skip


class _Tracked(dict):  # type: ignore[type-arg]
    """A group that counts how many of its kind are alive."""

    alive = 0
    most = 0

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        _Tracked.alive += 1
        _Tracked.most = max(_Tracked.most, _Tracked.alive)

    def __del__(self) -> None:
        _Tracked.alive -= 1


def test_the_page_is_written_holding_one_group_at_a_time() -> None:
    _Tracked.alive = _Tracked.most = 0

    def groups() -> Any:
        return ((i + 1, _Tracked(_small_group(i))) for i in range(300))

    out = io.StringIO()
    write_page(out, groups, max_groups=250)
    assert _Tracked.most <= 2  # the one being rendered, and at most the one the generator makes next
    page = out.getvalue()
    dom = Dom(page)
    assert len(dom.by_class("group")) == 250 and len(_token_payload(page)["groups"]) == 250
    assert "300 groups" in dom.by_class("meta")[0].text


def test_groups_over_the_cap_are_listed_and_each_can_be_viewed_alone(tmp_path: Path) -> None:
    jsonl = tmp_path / "run.jsonl"
    jsonl.write_text("".join(json.dumps(_small_group(i)) + "\n" for i in range(7)) + '{"torn": ')
    page = write_html(jsonl, max_groups=3).read_text()
    dom = Dom(page)
    assert [e.attrs["id"] for e in dom.by_class("group")] == ["group-1", "group-2", "group-3"]
    rows = [e for e in dom.by_tag("tr") if (e.attrs.get("id") or "").startswith("group-")]
    assert [r.attrs["id"] for r in rows] == ["group-4", "group-5", "group-6", "group-7"]
    assert rows[2].text == "6t-51.001"  # group 6 is task t-5, mean reward 1.00, scores 1
    (more,) = dom.by_class("more")
    assert f"python -m hermes_env.html_view {jsonl} --group N" in more.text
    assert "the first 3 of 7 groups are shown in full" in page

    from hermes_env.html_view.__main__ import main

    assert main([str(jsonl), "--group", "6", "--tokenizer", "none"]) == 0
    alone = Dom((tmp_path / "run.group-6.html").read_text())
    (section,) = alone.by_class("group")
    assert section.attrs["id"] == "group-6" and "task 5" in section.text and "t-5" in section.text
    assert main([str(jsonl), "--group", "8", "--tokenizer", "none"]) == 2  # 7 groups: a clear error, no page
    assert not (tmp_path / "run.group-8.html").exists()


def test_a_bad_line_is_named(tmp_path: Path) -> None:
    jsonl = tmp_path / "run.jsonl"
    jsonl.write_text(json.dumps(_small_group(0)) + "\n{not json\n")
    with pytest.raises(ValueError, match="line 2 of"):
        write_html(jsonl)
    assert not list(tmp_path.glob("*.html")) and not list(tmp_path.glob(".*partial"))
