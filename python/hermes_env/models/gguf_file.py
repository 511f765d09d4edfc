"""Reads the key/value metadata of a GGUF file (llama.cpp's model format), without loading any tensor.

The tokenizer (``tokenizer.ggml.*``: vocabulary, merges, token types, special ids) and the chat
template (``tokenizer.chat_template``) live in this header, so the environment side can build
the model's exact tokenizer without llama.cpp installed. Layout (GGUF v2/v3, little-endian):
magic ``GGUF``, ``uint32`` version, ``uint64`` tensor count, ``uint64`` key/value count, then
each pair as a length-prefixed UTF-8 key, a ``uint32`` value type and the value.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from hermes_env.errors import GGUFError

__all__ = ["GGUFError", "read_gguf_metadata"]

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
