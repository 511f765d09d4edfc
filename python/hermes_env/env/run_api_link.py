"""``serve``'s link to atroposlib's ``run-api``: finished groups held until sent, re-registration after a restart.

atroposlib's ``BaseEnv`` tries each send three times (at most about 20 s) and then drops the group with a log line,
and its ``get_status`` raises after three failures, which ends ``serve``. ``run-api`` keeps everything in memory, so
a restart forgets the environment's registration (``/status-env`` then fails) and the trainer's. Here:

- every group gets a unique id, ``group_overrides["hermes_env_group_id"]``, that the trainer sees (a trainer can
  find a group it got twice);
- finished groups go to an outbox, sent one at a time in order by one task: on a connection error or a server
  error the group stays at the head of the outbox and is sent again after a backoff (0.5 s doubling to 10 s); a
  group is removed only once ``run-api`` answered 2xx (or refused it with a 4xx, logged as an error);
- ``get_status`` waits while ``run-api`` is unreachable (a warning every 30 s); once it answers again, or when it
  answers that it does not know this environment, the environment registers again (a new ``env_id``) and the
  outbox is sent with that id. ``run-api`` cannot say whether it restarted or was only unreachable, so any outage
  ends in a new registration (after a mere network outage the old one stays listed, idle);
- when ``serve`` stops, the outbox gets a few seconds to empty, and one line says how many groups were sent and how
  many finished groups were not.

A group ``run-api`` had queued when it was killed is lost with its queue (that queue is in memory); such a group
was sent once and is not sent again.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import sys
import time
import uuid
from typing import Any

import aiohttp
from atroposlib.envs.base import BaseEnv

logger = logging.getLogger(__name__)

#: The key of ``group_overrides`` holding the group's unique id (a uuid4 hex).
GROUP_ID_KEY = "hermes_env_group_id"
RETRY_FIRST_S = 0.5
RETRY_MAX_S = 10.0
WARN_EVERY_S = 30.0
#: How long a stopping ``serve`` keeps sending held groups.
FLUSH_ON_STOP_S = 10.0
_UNREACHABLE = (aiohttp.ClientError, asyncio.TimeoutError, OSError)


class RunApiLinkMixin:
    """Overrides ``BaseEnv``'s send, status and registration calls (mixed in before ``BaseEnv``)."""

    config: Any
    env_id: Any

    def _link_state(self) -> dict[str, Any]:
        state: dict[str, Any] | None = self.__dict__.get("_run_api_link")
        if state is None:
            state = {
                "outbox": collections.deque(),
                "wake": asyncio.Event(),
                "registered": asyncio.Event(),
                "reregister": False,
                "sender": None,
                "sent": 0,
                "refused": 0,
                "down_since": None,
            }
            self.__dict__["_run_api_link"] = state
        return state

    # ------------------------------------------------------------------ BaseEnv overrides
    async def _send_scored_data_to_api(self, scored_data: Any) -> None:
        """Hold the groups in the outbox; the sender task delivers them (``handle_send_to_api`` calls this)."""
        state = self._link_state()
        for group in scored_data if isinstance(scored_data, list) else [scored_data]:
            overrides = dict(group.get("group_overrides") or {})
            overrides.setdefault(GROUP_ID_KEY, uuid.uuid4().hex)
            group["group_overrides"] = overrides
            state["outbox"].append(group)
        state["wake"].set()
        if state["sender"] is None or state["sender"].done():
            state["sender"] = asyncio.create_task(self._send_held_groups(), name="run-api sender")

    async def register_env(self) -> None:
        state = self._link_state()
        while True:
            try:
                await BaseEnv.register_env(self)  # type: ignore[arg-type]
                break
            except Exception as err:  # noqa: BLE001 - tenacity's RetryError after 3 failed tries: run-api down
                self._note_unreachable(err)
                await asyncio.sleep(RETRY_MAX_S / 2)
        state["reregister"] = False
        state["down_since"] = None
        state["registered"].set()

    async def get_status(self) -> None:
        """``BaseEnv.get_status`` without giving up: wait for ``run-api``, register again after an outage."""
        state = self._link_state()
        delay = RETRY_FIRST_S
        while True:
            if state["reregister"]:
                try:
                    await self._probe()
                except _UNREACHABLE as err:
                    self._note_unreachable(err)
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, RETRY_MAX_S)
                    continue
                await self.register_env()
                await self.get_server_info()  # type: ignore[attr-defined]
                logger.warning(
                    "run-api answers again: registered as env %s; sending the %d finished groups held",
                    self.env_id,
                    len(state["outbox"]),
                )
            try:
                await BaseEnv.get_status.__wrapped__(self)  # type: ignore[attr-defined] # without tenacity's 3 tries
                return
            except _UNREACHABLE as err:
                self._note_unreachable(err)
            except Exception as err:  # noqa: BLE001 - run-api answered with an error: it does not know this env
                logger.warning("run-api's /status-env failed (%s): registering again", err)
                state["reregister"] = True
                state["registered"].clear()
            await asyncio.sleep(delay)
            delay = min(delay * 2, RETRY_MAX_S)

    # ------------------------------------------------------------------ the sender
    async def _probe(self) -> None:
        async with aiohttp.ClientSession() as session, session.get(f"{self.config.rollout_server_url}/status") as r:
            r.raise_for_status()

    def _note_unreachable(self, err: BaseException) -> None:
        state = self._link_state()
        state["reregister"] = True
        state["registered"].clear()
        now = time.monotonic()
        if state["down_since"] is None:
            state["down_since"] = now
            state["warned_at"] = now
            logger.warning(
                "run-api at %s unreachable (%s): holding finished groups until it answers",
                self.config.rollout_server_url,
                err or type(err).__name__,
            )
        elif now - state["warned_at"] >= WARN_EVERY_S:
            state["warned_at"] = now
            logger.warning(
                "run-api unreachable for %.0f s; %d finished groups held",
                now - state["down_since"],
                len(state["outbox"]),
            )

    async def _send_held_groups(self) -> None:
        state = self._link_state()
        url = f"{self.config.rollout_server_url}/scored_data"
        delay = RETRY_FIRST_S
        async with aiohttp.ClientSession() as session:
            while True:
                if not state["outbox"]:
                    state["wake"].clear()
                    await state["wake"].wait()
                    continue
                await state["registered"].wait()
                group = state["outbox"][0]
                group["env_id"] = self.env_id
                try:
                    async with self._post_json_with_compression(session, url, group) as resp:  # type: ignore[attr-defined]
                        status, text = resp.status, await resp.text()
                except _UNREACHABLE as err:
                    self._note_unreachable(err)
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, RETRY_MAX_S)
                    continue
                if status >= 500:
                    logger.warning("run-api answered HTTP %d to a group (%s); sending it again", status, text[:200])
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, RETRY_MAX_S)
                    continue
                state["outbox"].popleft()
                delay = RETRY_FIRST_S
                if status >= 400:
                    state["refused"] += 1
                    logger.error("run-api refused group %s (HTTP %d: %s)", group["group_overrides"][GROUP_ID_KEY],
                                 status, text[:300])  # fmt: skip
                else:
                    state["sent"] += 1

    async def stop_run_api_link(self) -> None:
        """Give the held groups ``FLUSH_ON_STOP_S`` to go out, stop the sender and say what was sent."""
        state = self._link_state()
        sender = state["sender"]
        deadline = time.monotonic() + FLUSH_ON_STOP_S
        while state["outbox"] and sender is not None and not sender.done() and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        if sender is not None:
            sender.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sender
        unsent = len(state["outbox"])
        refused = f", {state['refused']} refused by it" if state["refused"] else ""
        print(
            f"serve: {state['sent']} groups sent to run-api{refused}; {unsent} finished groups not sent"
            + (" (run-api unreachable while stopping)" if unsent else ""),
            file=sys.stderr,
            flush=True,
        )
        state["outbox"].clear()
