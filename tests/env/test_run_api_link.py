"""``serve``'s link to run-api: finished groups held through an outage and a restart, each sent once, in order,
with a unique id and the environment's current ``env_id`` (a stand-in run-api here; the real one is in the soak)."""

from __future__ import annotations

import asyncio
import socket
from types import SimpleNamespace
from typing import Any

import pytest
from aiohttp import web
from atroposlib.envs.base import BaseEnv
from hermes_env.env.run_api_link import GROUP_ID_KEY, RunApiLinkMixin


class FakeRunApi:
    """run-api's endpoints the link uses; ``fail_posts`` answers the next sends 503; a restart forgets the envs."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.received: list[dict[str, Any]] = []
        self.envs = 0
        self.fail_posts = 0
        self.runner: web.AppRunner | None = None

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/scored_data", self.scored_data)
        app.router.add_post("/register-env", self.register_env)
        app.router.add_get("/status-env", self.status_env)
        app.router.add_get("/status", self.status)
        app.router.add_get("/info", self.info)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", self.port).start()

    async def restart_forgetting(self) -> None:
        assert self.runner is not None
        await self.runner.cleanup()
        self.envs = 0
        await asyncio.sleep(0.3)
        await self.start()

    async def scored_data(self, request: web.Request) -> web.Response:
        if self.fail_posts:
            self.fail_posts -= 1
            return web.Response(status=503, text="busy")
        self.received.append(await request.json())
        return web.json_response({"status": "received"})

    async def register_env(self, request: web.Request) -> web.Response:
        self.envs += 1
        return web.json_response({"status": "success", "env_id": self.envs + 10, "wandb_name": "x",
                                  "checkpoint_dir": "", "starting_step": 0, "checkpoint_interval": -1,
                                  "num_steps": 100})  # fmt: skip

    async def status_env(self, request: web.Request) -> web.Response:
        env_id = (await request.json())["env_id"]
        if env_id != self.envs + 10:
            return web.Response(status=500, text="Internal Server Error")  # run-api's IndexError
        return web.json_response({"current_step": 0, "queue_size": 0, "env_weight": 1.0})

    async def status(self, request: web.Request) -> web.Response:
        return web.json_response({"current_step": 0, "queue_size": 0})

    async def info(self, request: web.Request) -> web.Response:
        return web.json_response({"batch_size": 8, "max_token_len": 8192})


class LinkOnly(RunApiLinkMixin, BaseEnv):
    """The link's methods with BaseEnv's, without an environment behind them."""


LinkOnly.__abstractmethods__ = frozenset()  # never rolls out: no get_next_item or evaluate needed


def make_env(url: str) -> LinkOnly:
    env = object.__new__(LinkOnly)

    async def update_weight(weight: float) -> None:
        return None

    env.config = SimpleNamespace(rollout_server_url=url, max_token_length=8192, wandb_name="t", inference_weight=1.0,
                                 min_batch_allocation=None, group_size=2, batch_size=8, total_steps=100,
                                 max_num_workers=2)  # fmt: skip
    env.server = SimpleNamespace(update_weight=update_weight, servers=[None])
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def group(n: int) -> dict[str, Any]:
    return {"tokens": [[n], [n]], "masks": [[n], [n]], "scores": [0.0, 1.0], "group_overrides": None}


async def wait_for(predicate: Any, timeout: float = 30) -> None:
    async def poll() -> None:
        while not predicate():
            await asyncio.sleep(0.05)

    await asyncio.wait_for(poll(), timeout)


@pytest.mark.timeout(120)
async def test_groups_are_held_through_errors_and_a_restart_and_sent_once_in_order() -> None:
    api = FakeRunApi(free_port())
    await api.start()
    env = make_env(f"http://127.0.0.1:{api.port}")
    await env.register_env()
    assert env.env_id == 11
    try:
        api.fail_posts = 3  # server errors: the first group waits at the head of the outbox
        for n in range(3):
            await env._send_scored_data_to_api(group(n))
        await wait_for(lambda: len(api.received) == 3)

        assert api.runner is not None
        await api.runner.cleanup()  # run-api down: groups are held, the status call waits
        for n in range(3, 6):
            await env._send_scored_data_to_api(group(n))
        status = asyncio.create_task(env.get_status())
        await asyncio.sleep(1.5)
        assert not status.done() and len(api.received) == 3
        await api.restart_forgetting()  # back without this env: it registers again and sends what it held
        await asyncio.wait_for(status, 30)
        assert env.env_id == 11  # the fresh run-api's first registration
        await wait_for(lambda: len(api.received) == 6)

        await env._send_scored_data_to_api(group(6))
        await api.restart_forgetting()  # a restart the status poll sees only as an unknown env
        api.envs = 5  # five others registered first: this one gets a new id
        await env.get_status()
        assert env.env_id == 16
        await wait_for(lambda: len(api.received) == 7)
    finally:
        await env.stop_run_api_link()
        assert api.runner is not None
        await api.runner.cleanup()

    assert [g["tokens"][0][0] for g in api.received] == list(range(7))
    ids = [g["group_overrides"][GROUP_ID_KEY] for g in api.received]
    assert len(set(ids)) == 7
    assert [g["env_id"] for g in api.received][:3] == [11, 11, 11]
    assert api.received[-1]["env_id"] in (11, 16)
