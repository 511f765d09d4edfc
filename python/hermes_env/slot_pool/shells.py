"""Long-lived shells of a slot: ``bash_stateful`` (a bash over pipes) and ``tmux`` (a tmux server).

Both live inside the slot's sandbox for as long as the slot is leased, so ``cd``, exported
variables and background jobs persist between calls. A call that times out, or floods the
output, kills the shell; the next call starts a fresh one and says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import secrets
import shutil
from collections.abc import Callable
from pathlib import Path

from hermes_env.isolation.process import spawn, stop_tree
from hermes_env.isolation.result import ExecResult
from hermes_env.isolation.users import SandboxUser

ArgvBuilder = Callable[[list[str], list[tuple[str, str]]], list[str]]
_DRAIN_FACTOR = 16


async def _spawn(
    argv: list[str], user: SandboxUser, cwd: str, env: dict[str, str], *, pipes: bool
) -> asyncio.subprocess.Process:
    return await spawn(
        *argv,
        user=user,
        cwd=cwd,
        env=env,
        stdin=asyncio.subprocess.PIPE if pipes else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE if pipes else asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.STDOUT if pipes else asyncio.subprocess.DEVNULL,
    )


async def _end(proc: asyncio.subprocess.Process) -> None:
    """Kill the shell's whole tree (its sandbox) and wait for it, draining its pipe meanwhile
    (asyncio reports a process as finished only once its pipes are closed)."""
    if proc.returncode is None:
        await stop_tree(proc.pid)
    if proc.stdout is not None:
        with contextlib.suppress(Exception):
            while await asyncio.wait_for(proc.stdout.read(65536), 5.0):
                pass
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(proc.wait(), 5.0)


async def bash_syntax_error(command: str) -> str | None:
    """bash's complaint when ``command`` does not parse (``bash -n`` only parses, it runs nothing)."""
    proc = await spawn(
        "/bin/bash",
        "-n",
        "-c",
        command,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await proc.communicate()
    return None if proc.returncode == 0 else err.decode("utf-8", "replace").strip()


class StatefulShell:
    """One bash per slot; each call is framed by a random end marker carrying the exit status."""

    def __init__(self, build_argv: ArgvBuilder, user: SandboxUser, cwd: str, env: dict[str, str]) -> None:
        self._build_argv = build_argv
        self._user = user
        self._cwd = cwd
        self._env = env
        self._proc: asyncio.subprocess.Process | None = None
        self._restarted_note = ""

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.returncode is None

    async def _ensure(self) -> asyncio.subprocess.Process:
        if self._proc is not None and self._proc.returncode is None:
            return self._proc
        if self._proc is not None:
            self._restarted_note = "[the previous shell ended; this is a fresh shell, earlier state is gone]\n"
        argv = self._build_argv(["/bin/bash", "--noprofile", "--norc"], [])
        self._proc = await _spawn(argv, self._user, self._cwd, self._env, pipes=True)
        return self._proc

    async def run(self, command: str, timeout: float, max_output: int) -> ExecResult:
        problem = await bash_syntax_error(command)
        if problem is not None:
            return ExecResult(output=f"bash: syntax error, command not run: {problem}", exit_code=2)
        proc = await self._ensure()
        assert proc.stdin is not None and proc.stdout is not None
        marker = f"__HERMES_END_{secrets.token_hex(8)}_"
        pattern = re.compile(re.escape(marker.encode()) + rb"(-?\d+)__\n")
        script = f"{{\n{command}\n}} </dev/null 2>&1\nprintf '\\n%s%d__\\n' '{marker}' \"$?\"\n"
        try:
            proc.stdin.write(script.encode())
            await proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            await self.close()
            return ExecResult.failure("internal", "the stateful shell died before the command could be sent; retry")

        kept = bytearray()
        pending = bytearray()
        dropped = 0
        code: int | None = None
        flooded = False

        def keep(data: bytes) -> None:
            nonlocal dropped
            room = max_output - len(kept)
            if room > 0:
                kept.extend(data[:room])
            dropped += max(0, len(data) - max(room, 0))

        async def pump() -> None:
            nonlocal code, flooded
            tail = len(marker) + 32
            while True:
                chunk = await proc.stdout.read(65536)
                if not chunk:
                    return
                pending.extend(chunk)
                m = pattern.search(pending)
                if m:
                    keep(bytes(pending[: m.start()]))
                    code = int(m.group(1))
                    return
                if len(pending) > tail:
                    keep(bytes(pending[:-tail]))
                    del pending[:-tail]
                if dropped > _DRAIN_FACTOR * max_output:
                    flooded = True
                    return

        timed_out = False
        try:
            await asyncio.wait_for(pump(), timeout)
        except TimeoutError:
            timed_out = True
        note, self._restarted_note = self._restarted_note, ""
        if code is None:
            await self.close()  # hung, flooding or exited: the next call gets a fresh shell
            if not timed_out and not flooded:
                keep(bytes(pending))
        text = bytes(kept)
        if code is not None and text.endswith(b"\n"):
            text = text[:-1]  # the newline printed before the marker
        output = note + text.decode("utf-8", "replace")
        if dropped:
            output += f"\n[output truncated: {dropped} more bytes over the {max_output}-byte limit were dropped]"
        if timed_out:
            output += f"\n[command timed out after {timeout:g}s; the shell was restarted]"
            return ExecResult(output=output, exit_code=124, timed_out=True, truncated=dropped > 0)
        if flooded:
            output += "\n[the command kept flooding output and the shell was restarted]"
            return ExecResult(output=output, exit_code=137, truncated=True)
        if code is None:
            return ExecResult(output=output + "\n[the shell exited]", exit_code=proc.returncode or 0)
        return ExecResult(output=output, exit_code=code, truncated=dropped > 0)

    async def close(self) -> None:
        if self._proc is not None:
            await _end(self._proc)


class TmuxSession:
    """A tmux server in the slot's sandbox; its socket sits in a per-slot control directory.

    The server runs in the foreground (``tmux -D``) as the sandbox's main process, and the
    worker drives it from outside with ``tmux -S <socket>`` client commands.
    """

    SOCKET_IN_SANDBOX = "/run/hermes/tmux.sock"

    def __init__(
        self, build_argv: ArgvBuilder, user: SandboxUser, cwd: str, env: dict[str, str], control_dir: Path
    ) -> None:
        self._build_argv = build_argv
        self._user = user
        self._cwd = cwd
        self._env = env
        self._control_dir = control_dir
        self._proc: asyncio.subprocess.Process | None = None

    @property
    def socket(self) -> Path:
        return self._control_dir / "tmux.sock"

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.returncode is None

    async def _client(self, *args: str, timeout: float = 10.0) -> tuple[int, str]:
        tmux = shutil.which("tmux")
        if tmux is None:
            return 127, "tmux is not installed on the worker; install it (apt install tmux)"
        proc = await spawn(
            tmux,
            "-S",
            str(self.socket),
            *args,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            # The server lives in the sandbox's user namespace and only admits its own uid.
            user=self._user,
        )
        try:
            out, _ = await asyncio.wait_for(proc.communicate(), timeout)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            return 124, "tmux client timed out"
        return proc.returncode or 0, out.decode("utf-8", "replace")

    async def _ensure(self) -> str | None:
        if self.alive:
            return None
        await self.close()
        self._control_dir.mkdir(parents=True, exist_ok=True)
        if self._user.owner is not None:
            os.chown(self._control_dir, *self._user.owner)
        self.socket.unlink(missing_ok=True)
        argv = self._build_argv(
            ["tmux", "-D", "-S", self.SOCKET_IN_SANDBOX],
            [(str(self._control_dir), str(Path(self.SOCKET_IN_SANDBOX).parent))],
        )
        self._proc = await _spawn(argv, self._user, self._cwd, self._env, pipes=False)
        for _ in range(100):
            if self.socket.exists():
                break
            if self._proc.returncode is not None:
                return f"tmux server exited with {self._proc.returncode}"
            await asyncio.sleep(0.05)
        else:
            return "tmux server did not create its socket within 5s"
        code, out = await self._client("new-session", "-d", "-s", "main", "-x", "200", "-y", "50", "-c", "/workspace")
        return None if code == 0 else f"tmux new-session failed: {out.strip()}"

    async def run(self, args: dict[str, object], max_output: int) -> ExecResult:
        action = str(args.get("action", "send"))
        if action not in ("send", "capture", "interrupt", "restart"):
            return ExecResult.failure(
                "bad_arguments", f"unknown tmux action {action!r}; use send, capture, interrupt or restart"
            )
        if action == "restart":
            await self.close()
        problem = await self._ensure()
        if problem is not None:
            return ExecResult.failure("internal", problem)
        if action == "send":
            keys = args.get("keys", args.get("command"))
            if not isinstance(keys, str):
                return ExecResult.failure("bad_arguments", "tmux send needs 'keys' (a string of text to type)")
            code, out = await self._client("send-keys", "-t", "main", "-l", keys)
            if code == 0 and args.get("enter", True):
                code, out = await self._client("send-keys", "-t", "main", "Enter")
            if code != 0:
                return ExecResult.failure("internal", f"tmux send-keys failed: {out.strip()}")
        elif action == "interrupt":
            await self._client("send-keys", "-t", "main", "C-c")
        wait_ms = args.get("wait_ms", 300 if action != "capture" else 0)
        if isinstance(wait_ms, int | float) and wait_ms > 0:
            await asyncio.sleep(min(float(wait_ms), 30_000.0) / 1000.0)
        code, screen = await self._client("capture-pane", "-p", "-t", "main", "-S", "-200")
        if code != 0:
            return ExecResult.failure("internal", f"tmux capture-pane failed: {screen.strip()}")
        screen = screen.rstrip("\n")
        truncated = len(screen) > max_output
        if truncated:
            screen = screen[-max_output:]
        return ExecResult(output=screen, exit_code=0, truncated=truncated)

    async def close(self) -> None:
        if self._proc is not None:
            await _end(self._proc)
            self._proc = None
