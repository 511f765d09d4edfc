"""The host end of a rollout container's call channel: FIFOs in a directory bind-mounted at ``/.hermes_env``.

A call through ``<engine> exec`` costs a run of the engine's client (about 0.2 s and most of a CPU core on podman,
serialised by its lock), which is most of a small tool call. Instead, the container's main process
(:data:`hermes_env.containers.shell.CHANNEL_LOOP`) reads requests from the FIFO ``req``, runs each in the
background, and answers on a per-call FIFO ``ID.done``; inputs and outputs are plain files beside them. The
host waits on those FIFOs with the event loop's reader callbacks: no thread, no polling, no engine command.

``alive`` is held open for writing by the loop only; end-of-file there means the container's processes are
gone, so every call in flight fails at once instead of waiting for its timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import itertools
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from hermes_env.containers.shell import CHANNEL_LOOP
from hermes_env.errors import ChannelClosedError

MOUNT = "/.hermes_env"
#: The loop's file in the channel directory (run as ``/bin/sh /.hermes_env/loop.sh WORKSPACE ...``; a file rather
#: than ``sh -c`` so that ``ps`` in the container shows one short line).
LOOP_SCRIPT = "loop.sh"


@dataclass(frozen=True, slots=True)
class CallAnswer:
    exit_code: int
    oom_kills: int | None
    output: bytes
    more_bytes: int  # output produced beyond what was kept


class Channel:
    """One container's channel; create it before the container (its directory is mounted at start)."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        directory.mkdir(mode=0o700)
        directory.chmod(0o777)  # the image's user, whoever it is, writes answers here
        for name in ("req", "alive"):
            os.mkfifo(directory / name)
            (directory / name).chmod(0o666)
        (directory / LOOP_SCRIPT).write_text(CHANNEL_LOOP)
        (directory / LOOP_SCRIPT).chmod(0o644)
        self._loop = asyncio.get_running_loop()
        self._alive_fd: int | None = os.open(directory / "alive", os.O_RDONLY | os.O_NONBLOCK)
        self._req_fd: int | None = None
        self._ids = itertools.count()
        self._pending: dict[int, asyncio.Future[bytes]] = {}  # done-FIFO fd -> its answer
        self.ready: asyncio.Future[None] = self._loop.create_future()
        self.dead: asyncio.Future[None] = self._loop.create_future()
        self._loop.add_reader(self._alive_fd, self._on_alive)

    # -- liveness ---------------------------------------------------------------------------------------------------
    def _on_alive(self) -> None:
        assert self._alive_fd is not None
        try:
            data = os.read(self._alive_fd, 256)
        except BlockingIOError:
            return
        if data:
            if not self.ready.done():
                self.ready.set_result(None)
            return
        self._close_alive()
        if not self.dead.done():
            self.dead.set_result(None)

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The event loop that made the channel: its calls can be awaited only there."""
        return self._loop

    def _close_alive(self) -> None:
        if self._alive_fd is not None:
            if not self._loop.is_closed():
                self._loop.remove_reader(self._alive_fd)
            os.close(self._alive_fd)
            self._alive_fd = None

    async def wait_ready(self, timeout: float) -> None:
        """Until the container's loop answers; ChannelClosedError if it ended first, TimeoutError past ``timeout``."""
        done, _ = await asyncio.wait({self.ready, self.dead}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        if self.ready.done():
            return
        if self.dead.done():
            raise ChannelClosedError("the container's main process ended before it was ready")
        raise TimeoutError(f"the container did not become ready within {timeout:g}s")

    # -- calls ------------------------------------------------------------------------------------------------------
    def _send(self, line: str) -> None:
        try:
            if self._req_fd is None:
                self._req_fd = os.open(self.dir / "req", os.O_WRONLY | os.O_NONBLOCK)
            os.write(self._req_fd, line.encode())  # one short line: atomic on a pipe
        except OSError as exc:
            if exc.errno in (errno.ENXIO, errno.EPIPE):
                raise ChannelClosedError("the container's main process is gone") from exc
            raise

    async def call(
        self, op: str, arg: str, inputs: dict[str, bytes], timeout: float, *, kill_grace: float = 5.0
    ) -> CallAnswer | None:
        """Run one request and return its answer.

        Past ``timeout`` the call's process group is killed and its answer awaited ``kill_grace`` more seconds;
        None if even that does not come (a process that escaped the group still holds its output open).
        ChannelClosedError if the container ends first.
        """
        if self.dead.done():
            raise ChannelClosedError("the container's main process is gone")
        call_id = f"{next(self._ids):x}"
        prefix = self.dir / call_id
        for suffix, data in inputs.items():
            path = self.dir / f"{call_id}.{suffix}"
            path.write_bytes(data)
            path.chmod(0o644)
        done_path = self.dir / f"{call_id}.done"
        os.mkfifo(done_path)
        done_path.chmod(0o666)
        fd = os.open(done_path, os.O_RDONLY | os.O_NONBLOCK)
        answer: asyncio.Future[bytes] = self._loop.create_future()
        self._pending[fd] = answer
        buffer = bytearray()
        abandoned = False

        def on_done() -> None:
            try:
                chunk = os.read(fd, 4096)
            except BlockingIOError:
                return
            if chunk:
                buffer.extend(chunk)
                return
            self._loop.remove_reader(fd)
            os.close(fd)
            self._pending.pop(fd, None)
            if not answer.done():
                answer.set_result(bytes(buffer))
            if abandoned:
                _remove_call_files(self.dir, call_id)

        self._loop.add_reader(fd, on_done)
        try:
            self._send(f"{op} {call_id} {arg}\n")
            for wait, kill in ((timeout, True), (kill_grace, False)):
                await asyncio.wait({answer, self.dead}, timeout=wait, return_when=asyncio.FIRST_COMPLETED)
                if answer.done():
                    return self._answer(answer.result(), prefix)
                if self.dead.done():
                    raise ChannelClosedError("the container's main process ended during the call")
                if kill:
                    self._send(f"kill {call_id} -\n")
            abandoned = True  # on_done removes its files if it ever ends
            return None
        except BaseException:
            abandoned = True
            if not answer.done() and not self.dead.done():
                # A cancelled call (process(action="kill") on a background job) stops what it runs, as on the
                # other backends; the container would otherwise keep it until the call's own timeout.
                with contextlib.suppress(ChannelClosedError, OSError):
                    self._send(f"kill {call_id} -\n")
            raise
        finally:
            if not abandoned:
                _remove_call_files(self.dir, call_id)

    def _answer(self, line: bytes, prefix: Path) -> CallAnswer:
        fields = line.split()
        code = int(fields[0]) if fields and fields[0].lstrip(b"-").isdigit() else -1
        oom = int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else None
        try:
            with open(f"{prefix}.out", "rb") as f:
                output = f.read()
        except FileNotFoundError:
            output = b""
        more = 0
        with contextlib.suppress(OSError, ValueError):
            more = int(Path(f"{prefix}.more").read_text().strip() or 0)
        return CallAnswer(exit_code=code, oom_kills=oom, output=output, more_bytes=more)

    def close(self) -> None:
        """Stop listening (after the container is removed) and delete the directory; from any thread (the readers
        are removed by the loop that made the channel, when it runs in another thread)."""
        try:
            here: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        if here is not self._loop and self._loop.is_running():
            self._loop.call_soon_threadsafe(self._close)
        else:
            self._close()

    def _close(self) -> None:
        self._close_alive()
        for fd, answer in list(self._pending.items()):
            if not self._loop.is_closed():
                self._loop.remove_reader(fd)
            os.close(fd)
            if not answer.done():
                # A call still waiting fails as if the container had ended (it is being removed); exception()
                # marks it seen, so a call nobody waits for any more is not reported as unhandled.
                answer.set_exception(ChannelClosedError("the container was removed during the call"))
                answer.exception()
        self._pending.clear()
        if self._req_fd is not None:
            os.close(self._req_fd)
            self._req_fd = None
        shutil.rmtree(self.dir, ignore_errors=True)


def _remove_call_files(directory: Path, call_id: str) -> None:
    for suffix in ("cmd", "in", "path", "data", "out", "more", "pid", "pipe", "done"):
        with contextlib.suppress(OSError):
            os.unlink(directory / f"{call_id}.{suffix}")
