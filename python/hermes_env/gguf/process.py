"""Running ``serve_gguf`` as a child process: started on a free port of 127.0.0.1, stopped on exit, never left behind.

    with GGUFServerProcess(smollm2_gguf(), chat_template="smollm2-tools") as server:
        server.base_url        # http://127.0.0.1:<port>/v1, for --openai.base_url
        server.tokenizer_dir   # for --openai.tokenizer_name / --env.tokenizer_name
        server.server_config() # an atroposlib APIServerConfig (server_type vllm)

The child prints one line when it listens (its port and tokenizer folder); until then its
output is kept so that a failed start can say why.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Self

__all__ = ["GGUFServerProcess"]

_READY = re.compile(r"^serving (?P<name>.+?) on (?P<url>http://\S+) .*tokenizer: (?P<tok>.+?); tool_call_parser")


class GGUFServerProcess:
    """``python -m hermes_env.gguf.serve_gguf`` in a child process (see the module docstring)."""

    def __init__(
        self,
        model: str | Path,
        *,
        chat_template: str | None = None,
        args: Sequence[str] = (),
        start_timeout: float = 120.0,
    ) -> None:
        self.model = str(model)
        self.chat_template = chat_template
        self.args = list(args)
        self.start_timeout = start_timeout
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""
        self.model_name = ""
        self.tokenizer_dir = Path()
        self._lines: deque[str] = deque(maxlen=200)
        self._reader: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def server_config(self, **overrides: Any) -> Any:
        """An atroposlib ``APIServerConfig`` pointing ``VLLMServer`` at this server (Phase 2)."""
        from hermes_env.env.defaults import default_server_config

        fields: dict[str, Any] = {
            "base_url": self.base_url,
            "model_name": self.model_name,
            "tokenizer_name": str(self.tokenizer_dir),
            "timeout": 900,  # a CPU server queues requests; waiting is normal
        }
        return default_server_config(**{**fields, **overrides})

    def start(self) -> Self:
        cmd = [sys.executable, "-m", "hermes_env.gguf.serve_gguf", self.model, "--port", "0", *self.args]
        if self.chat_template:
            cmd += ["--chat-template", self.chat_template]
        self.proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        ready = threading.Event()

        def read() -> None:
            assert self.proc is not None and self.proc.stdout is not None
            for line in self.proc.stdout:
                self._lines.append(line.rstrip("\n"))
                match = _READY.match(line)
                if match and not ready.is_set():
                    self.model_name, self.url, self.tokenizer_dir = match["name"], match["url"], Path(match["tok"])
                    ready.set()
            ready.set()

        self._reader = threading.Thread(target=read, name="serve_gguf output", daemon=True)
        self._reader.start()
        deadline = time.monotonic() + self.start_timeout
        while not ready.wait(0.2):
            if time.monotonic() > deadline:
                break
        if not self.url:
            self.stop()
            tail = "\n".join(list(self._lines)[-20:])
            raise RuntimeError(f"the GGUF server did not start ({' '.join(cmd)}); its output:\n{tail}")
        return self

    @property
    def output(self) -> str:
        """What the server printed so far (the last 200 lines)."""
        return "\n".join(self._lines)

    def stop(self) -> None:
        """Terminate the child (SIGTERM, then SIGKILL after 10 s) and wait for it."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        if self._reader is not None:
            self._reader.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
