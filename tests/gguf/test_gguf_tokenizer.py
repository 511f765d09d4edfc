"""The tokenizer built from the GGUF's metadata is llama.cpp's tokenizer, as a Hugging Face fast tokenizer."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hermes_env.errors import GGUFError
from hermes_env.gguf import CHAT_TEMPLATES, gguf_tokenizer_dir, load_gguf_tokenizer, read_gguf_metadata
from hermes_env.gguf.gguf_tokenizer import _build
from hypothesis import assume, example, given
from hypothesis import strategies as st

SPECIALS = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<file_sep>", "<jupyter_code>"]

# Text that stresses the pre-tokenizer: digits (split one by one), whitespace runs before words and
# at the end, contractions, punctuation runs, non-ASCII letters, emoji, and special tokens in the text.
pieces = st.one_of(
    st.text(max_size=12),
    st.sampled_from(
        [" ", "  ", "\n", "\n\n", "\t", " \n ", "12345", " 3.14", "'s", "'ll", "don't", "...", "!?", "é", "日本語",
         "👍🏽", "\u00a0", "\r\n", "<tool_call>", '{"a": 1}', "x" * 40, *SPECIALS]
    ),
)  # fmt: skip
texts = st.lists(pieces, max_size=12).map("".join)


def test_metadata_matches_llama_cpp(smollm2: Path, llama: Any) -> None:
    meta = read_gguf_metadata(smollm2)
    assert meta["general.architecture"] == "llama"
    assert len(meta["tokenizer.ggml.tokens"]) == llama.n_vocab == 49152
    assert meta["llama.context_length"] == llama.n_ctx_train == 8192
    assert isinstance(meta["tokenizer.ggml.token_type"], np.ndarray)


@given(texts)
@example("hi 12345 there")
@example("a  b\n\nc   ")
@example("<|im_start|>user\nhello<|im_end|>\n")
@example("\n\n\n")
@example(" ")
@example("a\x1db")  # a byte SmolLM2's vocabulary has no token for
def test_encoding_equals_llama_cpp(gguf_tokenizer: Any, llama: Any, text: str) -> None:
    ours = gguf_tokenizer.encode(text, add_special_tokens=False)
    assert ours == llama.tokenize(text, parse_special=True)
    # Decoding is llama.cpp's detokenization too (special tokens as their text).
    assert gguf_tokenizer.decode(ours) == b"".join(llama.piece(t, special=True) for t in ours).decode(
        "utf-8", errors="replace"
    )


@given(texts)
def test_offsets_cover_the_text(gguf_tokenizer: Any, text: str) -> None:
    enc = gguf_tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    offsets = enc["offset_mapping"]
    assert len(offsets) == len(enc["input_ids"])
    # A byte the vocabulary has no token for (SmolLM2 lacks "\x1d" and UTF-8 lead bytes above 0xF0) is
    # dropped, by llama.cpp too, and shifts Hugging Face's offsets; such text is outside this property.
    assume(all(gguf_tokenizer.decode(gguf_tokenizer.encode(c, add_special_tokens=False)) == c for c in text))
    covered = set()
    last_end = 0
    for start, end in offsets:
        assert 0 <= start <= end <= len(text)
        assert end >= last_end or start == end
        last_end = max(last_end, end)
        covered.update(range(start, end))
    assert covered == set(range(len(text)))


def test_special_tokens_and_interface(gguf_tokenizer: Any) -> None:
    tok = gguf_tokenizer
    assert len(tok) == 49152 and tok.is_fast
    assert tok.eos_token == "<|im_end|>" and tok.eos_token_id == 2 and tok.bos_token_id == 1
    assert set(tok.all_special_ids) == set(range(17))  # the 17 CONTROL tokens of SmolLM2's vocabulary
    assert tok.convert_ids_to_tokens([1, 9690, 198]) == ["<|im_start|>", "system", "Ċ"]
    assert tok.encode("hi", add_special_tokens=True) == tok.encode("hi", add_special_tokens=False)  # no BOS added
    ids = tok.encode("<|im_start|>assistant\nok<|im_end|>", add_special_tokens=False)
    assert tok.decode(ids, skip_special_tokens=True) == "assistant\nok"


def test_chat_template_is_the_ggufs(smollm2: Path, gguf_tokenizer: Any) -> None:
    assert gguf_tokenizer.chat_template == read_gguf_metadata(smollm2)["tokenizer.chat_template"]
    text = gguf_tokenizer.apply_chat_template(
        [{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True
    )
    assert text == (
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
        "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    )


messages_st = st.lists(
    st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "tool"]), "content": st.text(max_size=30)}),
    min_size=1,
    max_size=5,
)


@given(messages_st, st.booleans(), st.booleans())
def test_tools_template_renders_tool_free_chats_like_smollm2s(
    gguf_tokenizer: Any, tools_tokenizer: Any, messages: list[dict[str, str]], system: bool, gen: bool
) -> None:
    if system:
        messages = [{"role": "system", "content": "Be brief."}, *messages]
    kwargs = {"tokenize": False, "add_generation_prompt": gen}
    assert tools_tokenizer.apply_chat_template(messages, **kwargs) == gguf_tokenizer.apply_chat_template(
        messages, **kwargs
    )


def test_tools_template_renders_tools_and_calls(tools_tokenizer: Any) -> None:
    from hermes_env.parsers import detect_parser, get_parser

    tools = [{"type": "function", "function": {"name": "terminal", "parameters": {"type": "object"}}}]
    call = {"id": "c1", "type": "function", "function": {"name": "terminal", "arguments": '{"command": "ls"}'}}
    messages = [
        {"role": "user", "content": "list"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "a.txt"},
    ]
    text = tools_tokenizer.apply_chat_template(messages, tools=tools, tokenize=False, add_generation_prompt=True)
    assert json.dumps(tools[0]) in text and "<tools>" in text
    turn = '<|im_start|>assistant\n<tool_call>\n{"name": "terminal", "arguments": {"command": "ls"}}\n</tool_call>'
    assert turn + "<|im_end|>\n<|im_start|>tool\na.txt<|im_end|>\n<|im_start|>assistant\n" in text
    # What the template writes, the hermes parser reads back; detect_parser finds it from the template.
    assert detect_parser(tools_tokenizer) == "hermes"
    body = text[text.rindex("<tool_call>\n{") : text.rindex("</tool_call><|im_end|>") + len("</tool_call>")]
    parsed = get_parser("hermes", tools=tools).parse(body)
    assert [(c.name, json.loads(c.arguments)) for c in parsed.tool_calls] == [("terminal", {"command": "ls"})]


def test_detect_parser_on_smollm2s_own_template(gguf_tokenizer: Any) -> None:
    from hermes_env.parsers import detect_parser

    with pytest.raises(ValueError, match="no tool-call format recognised"):
        detect_parser(gguf_tokenizer)


def test_exported_folder_loads_with_autotokenizer(smollm2: Path, tools_tokenizer: Any, tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    folder = gguf_tokenizer_dir(smollm2, chat_template="smollm2-tools", cache_dir=tmp_path)
    assert gguf_tokenizer_dir(smollm2, chat_template="smollm2-tools", cache_dir=tmp_path) == folder  # cached
    assert gguf_tokenizer_dir(smollm2, cache_dir=tmp_path) != folder  # another template, another folder
    loaded = AutoTokenizer.from_pretrained(str(folder))
    text = "<|im_start|>user\nCount 1 to 12.<|im_end|>\n"
    assert loaded.encode(text, add_special_tokens=False) == tools_tokenizer.encode(text, add_special_tokens=False)
    assert loaded.chat_template == CHAT_TEMPLATES["smollm2-tools"].read_text()
    assert loaded.eos_token_id == 2 and len(loaded) == len(tools_tokenizer)


def test_bad_files_and_unsupported_tokenizers(smollm2: Path, tmp_path: Path) -> None:
    not_gguf = tmp_path / "x.gguf"
    not_gguf.write_bytes(b"PK\x03\x04 not a model")
    with pytest.raises(GGUFError, match="not a GGUF file"):
        read_gguf_metadata(not_gguf)
    old = tmp_path / "old.gguf"
    old.write_bytes(b"GGUF" + struct.pack("<I", 1) + bytes(16))
    with pytest.raises(GGUFError, match="version 1"):
        read_gguf_metadata(old)
    meta = read_gguf_metadata(smollm2)
    with pytest.raises(GGUFError, match="'llama' tokenizer"):
        _build({**meta, "tokenizer.ggml.model": "llama"}, smollm2, None)
    with pytest.raises(GGUFError, match="'qwen2' pre-tokenizer"):
        _build({**meta, "tokenizer.ggml.pre": "qwen2"}, smollm2, None)
    with pytest.raises(ValueError, match="neither a shipped template"):
        load_gguf_tokenizer(smollm2, chat_template="no-such-template")


@given(st.integers(min_value=0, max_value=4096))
def test_truncated_headers_fail_with_gguf_error(smollm2_header: bytes, tmp_path_factory: Any, cut: int) -> None:
    path = tmp_path_factory.mktemp("cut") / "cut.gguf"
    path.write_bytes(smollm2_header[:cut])
    with pytest.raises(GGUFError):
        read_gguf_metadata(path)


@pytest.fixture(scope="module")
def smollm2_header(smollm2: Path) -> bytes:
    with smollm2.open("rb") as f:
        return f.read(4097)


def test_command_prints_the_tokenizer_folder(smollm2: Path) -> None:
    from gguf_helpers import run_module

    proc = run_module("hermes_env.gguf.gguf_tokenizer", "smollm2", "--chat-template", "smollm2-tools")
    assert proc.returncode == 0, proc.stderr
    folder = Path(proc.stdout.strip().splitlines()[-1])
    assert (folder / "tokenizer.json").is_file() and (folder / "tokenizer_config.json").is_file()
    bad = run_module("hermes_env.gguf.gguf_tokenizer", str(smollm2.parent / "nope.gguf"))
    assert bad.returncode == 1 and "error: no GGUF file at" in bad.stderr
