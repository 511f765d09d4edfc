"""ThreadedHTTPServer: an aiohttp app served from its own event loop in a daemon thread, on 127.0.0.1.

The scripted servers run this way so that one process can host them next to the code under test,
whether that code is synchronous (a CLI run) or an asyncio program with its own loop.
"""

from __future__ import annotations

import abc
import asyncio
import threading
from typing import Self

from aiohttp import web

START_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0


class ThreadedHTTPServer(abc.ABC):
    """Base of the scripted servers: subclasses add their routes in :meth:`add_routes`."""

    #: Name of the serving thread and of the server in error messages.
    server_name = "scripted server"

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host = host
        self._port = port
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None

    @abc.abstractmethod
    def add_routes(self, app: web.Application) -> None:
        """Register the server's handlers on ``app``."""

    @property
    def port(self) -> int:
        """The port listened on (the one picked by the OS when constructed with ``port=0``)."""
        if not self._ready.is_set() or self._error is not None:
            raise RuntimeError(f"{self.server_name} is not running; call start() or use it as a context manager")
        return self._port

    def start(self) -> Self:
        """Listen and serve in a background thread; returns self once requests are accepted."""
        if self._thread is not None:
            raise RuntimeError(f"{self.server_name} already started; stop() it before starting it again")
        self._thread = threading.Thread(target=self._serve, name=self.server_name, daemon=True)
        self._thread.start()
        if not self._ready.wait(START_TIMEOUT):
            raise RuntimeError(f"{self.server_name} did not start within {START_TIMEOUT:g} s")
        if self._error is not None:
            raise RuntimeError(
                f"{self.server_name} could not listen on {self.host}:{self._port}: {self._error}"
            ) from self._error
        return self

    def stop(self) -> None:
        """Close the listening socket and end the serving thread (a no-op when not running)."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), loop).result(timeout=STOP_TIMEOUT)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=STOP_TIMEOUT)
        self._thread = None
        self._loop = None
        self._runner = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _serve(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._open())
        except BaseException as err:  # noqa: BLE001 - reported to start()
            self._error = err
            self._ready.set()
            loop.close()
            return
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            loop.close()

    async def _open(self) -> None:
        app = web.Application()
        self.add_routes(app)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, self.host, self._port).start()
        self._port = int(self._runner.addresses[0][1])
