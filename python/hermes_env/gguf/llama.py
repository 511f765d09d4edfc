"""A thin wrapper over llama.cpp's C API (``llama_cpp.llama_cpp``): one model, one context, many sequences.

The server and the recompute check need only a few operations: decode a batch of tokens
spread over several sequences (each token with its position and sequence id), read the
logits of chosen positions, and drop / share a sequence's cached keys and values. The
high-level ``llama_cpp.Llama`` class runs one sequence at a time and samples with llama.cpp's
sampler chain, so it is not used. The KV cache is unified: a prefix copied from one sequence to
another shares its cells instead of being recomputed.

Not thread-safe: one thread owns a :class:`LlamaCpp` (the server's engine thread).
"""

from __future__ import annotations

import ctypes
import logging
from pathlib import Path
from typing import Any

import numpy as np

from hermes_env.errors import LlamaDecodeError

__all__ = ["LlamaCpp", "import_llama_cpp"]

logger = logging.getLogger(__name__)

_INSTALL_HINT = (
    "llama-cpp-python is not installed; install hermes_env's gguf extra: "
    'CMAKE_ARGS="-DGGML_NATIVE=OFF" .venv/bin/pip install -e ".[gguf]" (bash scripts/setup.sh does this)'
)
_LOG_CALLBACK: Any = None  # kept alive for as long as llama.cpp may call it


def import_llama_cpp() -> Any:
    """``llama_cpp.llama_cpp`` (the C API), with llama.cpp's own logging routed to Python logging."""
    global _LOG_CALLBACK
    try:
        import llama_cpp.llama_cpp as capi
    except ImportError as err:
        raise ModuleNotFoundError(_INSTALL_HINT) from err
    if _LOG_CALLBACK is None:

        @capi.llama_log_callback  # type: ignore[misc]
        def _log(level: int, text: bytes, _user: Any) -> None:
            # ggml_log_level: 3 = warn, 4 = error; the rest (info, debug, continuation) is noise here.
            if level in (3, 4) and text:
                message = text.decode(errors="replace").rstrip()
                logger.log(logging.ERROR if level == 4 else logging.DEBUG, "llama.cpp: %s", message)

        _LOG_CALLBACK = _log
        capi.llama_log_set(_LOG_CALLBACK, ctypes.c_void_p(0))
        capi.llama_backend_init()
    return capi


class LlamaCpp:
    """A GGUF model loaded by llama.cpp with a context of ``n_ctx`` KV cells shared by ``n_seq`` sequences."""

    def __init__(
        self, path: str | Path, *, n_ctx: int = 8192, n_seq: int = 1, n_batch: int = 512, n_threads: int | None = None
    ) -> None:
        capi = import_llama_cpp()
        self._capi = capi
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"no GGUF model at {path}; pass the path of a .gguf file")
        mparams = capi.llama_model_default_params()
        self._model = capi.llama_model_load_from_file(str(path).encode(), mparams)
        if not self._model:
            raise ValueError(f"llama.cpp could not load {path}; is it a GGUF model file?")
        self._ctx = None
        self._batch = None
        cparams = capi.llama_context_default_params()
        cparams.n_ctx = n_ctx
        cparams.n_batch = n_batch
        cparams.n_ubatch = n_batch
        cparams.n_seq_max = n_seq
        cparams.kv_unified = True
        threads = n_threads or 1
        cparams.n_threads = threads
        cparams.n_threads_batch = threads
        cparams.no_perf = True
        self._ctx = capi.llama_init_from_model(self._model, cparams)
        if not self._ctx:
            self.close()
            raise RuntimeError(f"llama.cpp could not create a context of {n_ctx} tokens for {path}")
        self._vocab = capi.llama_model_get_vocab(self._model)
        self._mem = capi.llama_get_memory(self._ctx)
        self.path = path
        self.n_vocab = int(capi.llama_vocab_n_tokens(self._vocab))
        self.n_ctx = int(capi.llama_n_ctx(self._ctx))
        self.n_ctx_train = int(capi.llama_model_n_ctx_train(self._model))
        self.n_seq = n_seq
        self.n_batch = int(capi.llama_n_batch(self._ctx))
        self._batch = capi.llama_batch_init(self.n_batch, 0, 1)
        self._tokens = np.ctypeslib.as_array(self._batch.token, shape=(self.n_batch,))
        self._pos = np.ctypeslib.as_array(self._batch.pos, shape=(self.n_batch,))
        self._n_seq_id = np.ctypeslib.as_array(self._batch.n_seq_id, shape=(self.n_batch,))
        self._outputs = np.ctypeslib.as_array(self._batch.logits, shape=(self.n_batch,))
        self._seq_ptrs = [self._batch.seq_id[i] for i in range(self.n_batch)]
        self.eog_ids = frozenset(t for t in range(self.n_vocab) if capi.llama_vocab_is_eog(self._vocab, t))

    # -- vocabulary --------------------------------------------------------------------------

    def tokenize(self, text: str, *, add_special: bool = False, parse_special: bool = True) -> list[int]:
        """llama.cpp's own tokenization of ``text`` (what llama-server would send the model)."""
        raw = text.encode("utf-8")
        size = len(raw) + 16
        while True:
            buf = (self._capi.llama_token * size)()
            n = self._capi.llama_tokenize(self._vocab, raw, len(raw), buf, size, add_special, parse_special)
            if n >= 0:
                return list(buf[:n])
            size = -n

    def piece(self, token: int, *, special: bool = False) -> bytes:
        """The bytes token ``token`` stands for (special tokens: empty unless ``special``)."""
        buf = ctypes.create_string_buffer(64)
        n = self._capi.llama_token_to_piece(self._vocab, token, buf, len(buf), 0, special)
        if n < 0:
            buf = ctypes.create_string_buffer(-n)
            n = self._capi.llama_token_to_piece(self._vocab, token, buf, len(buf), 0, special)
        return buf.raw[:n]

    # -- decoding ----------------------------------------------------------------------------

    def decode(self, tokens: np.ndarray, positions: np.ndarray, seqs: np.ndarray, outputs: np.ndarray) -> np.ndarray:
        """Runs the model on one batch; returns the logits (float32, one row per ``outputs`` entry that is true).

        Entry ``i`` puts ``tokens[i]`` at position ``positions[i]`` of sequence ``seqs[i]``; each
        sequence's positions must continue right after what its cache already holds.
        """
        n = int(tokens.shape[0])
        if not 0 < n <= self.n_batch:
            raise ValueError(f"a batch holds 1..{self.n_batch} tokens, got {n}")
        self._tokens[:n] = tokens
        self._pos[:n] = positions
        self._n_seq_id[:n] = 1
        self._outputs[:n] = outputs
        for i in range(n):
            self._seq_ptrs[i][0] = int(seqs[i])
        self._batch.n_tokens = n
        code = int(self._capi.llama_decode(self._ctx, self._batch))
        if code != 0:
            what = "no room left in the KV cache" if code == 1 else "see the llama.cpp error above"
            raise LlamaDecodeError(code, f"llama_decode returned {code} ({what})")
        rows = np.flatnonzero(outputs)
        out = np.empty((rows.shape[0], self.n_vocab), dtype=np.float32)
        for j, i in enumerate(rows):
            ptr = self._capi.llama_get_logits_ith(self._ctx, int(i))
            out[j] = np.ctypeslib.as_array(ptr, shape=(self.n_vocab,))
        return out

    def seq_rm(self, seq: int, p0: int = 0, p1: int = -1) -> None:
        """Forget positions ``[p0, p1)`` of sequence ``seq`` (``p1 = -1``: to the end)."""
        if not self._capi.llama_memory_seq_rm(self._mem, seq, p0, p1):
            raise RuntimeError(f"llama.cpp could not remove positions [{p0}, {p1}) of sequence {seq}")

    def seq_cp(self, src: int, dst: int, p0: int = 0, p1: int = -1) -> None:
        """Let sequence ``dst`` share ``src``'s cached positions ``[p0, p1)`` (no copy: the cells are shared)."""
        self._capi.llama_memory_seq_cp(self._mem, src, dst, p0, p1)

    def clear(self) -> None:
        """Empty the whole KV cache."""
        self._capi.llama_memory_clear(self._mem, True)

    def close(self) -> None:
        """Free the batch, context and model (idempotent)."""
        capi = self._capi
        if getattr(self, "_batch", None) is not None:
            capi.llama_batch_free(self._batch)
            self._batch = None
        if getattr(self, "_ctx", None):
            capi.llama_free(self._ctx)
            self._ctx = None
        if getattr(self, "_model", None):
            capi.llama_model_free(self._model)
            self._model = None

    def __enter__(self) -> LlamaCpp:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
