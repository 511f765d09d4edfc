"""The exact tokenizer of a GGUF model as a Hugging Face fast tokenizer, built from the file's own metadata.

llama.cpp keeps a model's tokenizer in the GGUF header (``tokenizer.ggml.tokens``, ``merges``,
``token_type``, the special ids, the pre-tokenizer name) together with its chat template. Built
from those with ``tokenizers``, the environment gets a ``PreTrainedTokenizerFast`` that
tokenizes exactly as the server does (``tests/gguf`` checks it against llama.cpp's own
tokenizer) and works wherever an HF tokenizer does: ``apply_chat_template`` (tools included),
``encode``/``decode``, offsets for Phase-1 masks, ``detect_parser``. atroposlib loads tokenizers
by name, so :func:`gguf_tokenizer_dir` also saves it as a folder ``AutoTokenizer`` can open;
``python -m hermes_env.gguf.gguf_tokenizer MODEL.gguf [--chat-template NAME]`` prints that folder.

Supported: byte-level BPE vocabularies (``tokenizer.ggml.model == "gpt2"``) with the ``gpt-2``
or ``smollm`` pre-tokenizer; anything else is refused with a message rather than approximated.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hermes_env.errors import GGUFError
from hermes_env.gguf.gguf_file import read_gguf_metadata, resolve_gguf

__all__ = ["CHAT_TEMPLATES", "gguf_tokenizer_dir", "load_gguf_tokenizer", "resolve_chat_template"]

TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"
#: Chat templates shipped with hermes_env, by name (``chat_template=`` of the functions below).
CHAT_TEMPLATES = {"smollm2-tools": TEMPLATES_DIR / "smollm2_tools.jinja"}

# llama.cpp token types (enum llama_token_type in gguf's constants).
_CONTROL, _USER_DEFINED = 3, 4
# llama.cpp's pre-tokenizer names -> whether digits are split one by one before the GPT-2 regex
# (llama-vocab.cpp: SMOLLM and friends run "\p{N}" first, GPT2 runs the GPT-2 regex alone).
_PRE_TOKENIZERS = {"gpt-2": False, "smollm": True}
# Bump when the exported folder's content changes for the same GGUF, so stale caches are not reused.
_EXPORT_VERSION = "1"


def resolve_chat_template(chat_template: str | None, gguf_template: str | None) -> str | None:
    """The template text: the GGUF's own (``None``), a shipped one by name, or a ``.jinja`` file's content."""
    if chat_template is None:
        return gguf_template
    if chat_template in CHAT_TEMPLATES:
        return CHAT_TEMPLATES[chat_template].read_text(encoding="utf-8")
    path = Path(chat_template)
    if path.is_file():
        return path.read_text(encoding="utf-8")
    raise ValueError(
        f"chat template {chat_template!r} is neither a shipped template ({', '.join(sorted(CHAT_TEMPLATES))}) "
        "nor a readable file; pass one of those names, a .jinja path, or nothing for the GGUF's own template"
    )


def _special(meta: Mapping[str, Any], key: str, tokens: list[str]) -> str | None:
    value = meta.get(f"tokenizer.ggml.{key}_token_id")
    if value is None or not 0 <= int(value) < len(tokens):
        return None
    return tokens[int(value)]


def _build(meta: Mapping[str, Any], path: Path, chat_template: str | None) -> Any:
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    kind = meta.get("tokenizer.ggml.model")
    if kind != "gpt2":
        raise GGUFError(
            f"{path} has a {kind!r} tokenizer; only byte-level BPE ('gpt2') GGUF tokenizers are supported — use "
            "the model's Hugging Face tokenizer instead"
        )
    pre = meta.get("tokenizer.ggml.pre", "gpt-2")
    if pre not in _PRE_TOKENIZERS:
        raise GGUFError(
            f"{path} uses llama.cpp's {pre!r} pre-tokenizer, which hermes_env does not reproduce (supported: "
            f"{', '.join(sorted(_PRE_TOKENIZERS))}); use the model's Hugging Face tokenizer instead"
        )
    tokens: list[str] = list(meta["tokenizer.ggml.tokens"])
    vocab = {tok: i for i, tok in enumerate(tokens)}
    if len(vocab) != len(tokens):
        raise GGUFError(f"{path}: its vocabulary lists the same token twice, so ids cannot be reproduced")
    merges = [tuple(m.split(" ", 1)) for m in meta.get("tokenizer.ggml.merges", [])]
    if any(len(m) != 2 for m in merges):
        raise GGUFError(f"{path}: a BPE merge is not two space-separated tokens")
    tk = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=False))
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    if _PRE_TOKENIZERS[pre]:
        tk.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), byte_level])
    else:
        tk.pre_tokenizer = byte_level
    tk.decoder = decoders.ByteLevel()
    types = meta.get("tokenizer.ggml.token_type")
    added = []
    if types is not None:
        for i, t in enumerate(types.tolist()):
            if t in (_CONTROL, _USER_DEFINED):
                added.append(AddedToken(tokens[i], special=t == _CONTROL, normalized=False))
    tk.add_tokens(added)
    bos = _special(meta, "bos", tokens)
    post = [processors.ByteLevel(trim_offsets=False)]
    if meta.get("tokenizer.ggml.add_bos_token") and bos is not None:
        post.append(
            processors.TemplateProcessing(
                single=f"{bos}:0 $A:0", pair=f"{bos}:0 $A:0 {bos}:1 $B:1", special_tokens=[(bos, vocab[bos])]
            )
        )
    tk.post_processor = processors.Sequence(post)
    named = {_special(meta, k, tokens) for k in ("bos", "eos", "unknown", "padding")}
    extra = [a.content for a in added if a.special and a.content not in named]
    context = meta.get(f"{meta.get('general.architecture')}.context_length")
    return PreTrainedTokenizerFast(
        tokenizer_object=tk,
        bos_token=bos,
        eos_token=_special(meta, "eos", tokens),
        unk_token=_special(meta, "unknown", tokens),
        pad_token=_special(meta, "padding", tokens),
        additional_special_tokens=extra,
        chat_template=chat_template,
        model_max_length=int(context) if context else int(1e30),
        clean_up_tokenization_spaces=False,
        name_or_path=str(path),
    )


def load_gguf_tokenizer(path: str | Path, *, chat_template: str | None = None) -> Any:
    """The GGUF model's tokenizer as a ``transformers.PreTrainedTokenizerFast``.

    ``chat_template``: ``None`` for the template stored in the GGUF, a name from
    :data:`CHAT_TEMPLATES`, or a path to a ``.jinja`` file. Raises ``GGUFError`` (a
    ``ValueError``) for a file that is not GGUF or a tokenizer kind that cannot be reproduced.
    """
    path = Path(path)
    meta = read_gguf_metadata(path)
    return _build(meta, path, resolve_chat_template(chat_template, meta.get("tokenizer.chat_template")))


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hermes_env" / "gguf_tokenizers"


def _fingerprint(meta: Mapping[str, Any], template: str | None) -> str:
    h = hashlib.sha256(_EXPORT_VERSION.encode())
    for key in sorted(k for k in meta if k.startswith("tokenizer.ggml.") or k.endswith(".context_length")):
        value = meta[key]
        h.update(key.encode())
        h.update(value.tobytes() if hasattr(value, "tobytes") else json.dumps(value).encode())
    h.update((template or "").encode())
    return h.hexdigest()[:16]


def gguf_tokenizer_dir(
    path: str | Path, *, chat_template: str | None = None, cache_dir: str | Path | None = None
) -> Path:
    """A folder holding the GGUF's tokenizer (``tokenizer.json``, ``tokenizer_config.json``), for ``AutoTokenizer``.

    atroposlib's ``BaseEnv`` and ``VLLMServer`` load tokenizers by name, so this is what goes in
    ``--env.tokenizer_name`` / ``--openai.tokenizer_name``. Written once under
    ``$XDG_CACHE_HOME/hermes_env/gguf_tokenizers`` (or ``cache_dir``), keyed by the tokenizer's
    content and the chat template, and re-used afterwards.
    """
    path = Path(path)
    meta = read_gguf_metadata(path)
    template = resolve_chat_template(chat_template, meta.get("tokenizer.chat_template"))
    root = Path(cache_dir) if cache_dir is not None else _cache_root()
    name = meta.get("general.basename") or path.stem
    out = root / f"{''.join(c if c.isalnum() or c in '-_.' else '_' for c in str(name))}-{_fingerprint(meta, template)}"
    if (out / "tokenizer.json").is_file() and (out / "tokenizer_config.json").is_file():
        return out
    tokenizer = _build(meta, path, template)
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".export-", dir=root))
    try:
        tokenizer.save_pretrained(str(tmp))
        try:
            tmp.rename(out)
        except OSError:  # another process exported the same tokenizer first; theirs is identical
            if not (out / "tokenizer.json").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def main(argv: Sequence[str] | None = None) -> None:
    """Prints the folder holding a GGUF's tokenizer (for --env.tokenizer_name / --openai.tokenizer_name)."""
    parser = argparse.ArgumentParser(prog="python -m hermes_env.gguf.gguf_tokenizer", description=main.__doc__)
    parser.add_argument("model", help="a .gguf file, or 'smollm2' for the bundled SmolLM2-135M-Instruct")
    parser.add_argument("--chat-template", default=None, help="'smollm2-tools', a .jinja file, or the GGUF's own")
    args = parser.parse_args(argv)

    try:
        print(gguf_tokenizer_dir(resolve_gguf(args.model), chat_template=args.chat_template))
    except (OSError, ValueError, ModuleNotFoundError) as err:
        raise SystemExit(f"error: {err}") from None


if __name__ == "__main__":
    main()
