"""Building OpenAI ``ChatCompletion`` objects by hand, for in-process stand-ins of a chat server."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from openai.types.chat import ChatCompletion


def scripted_completion(
    content: str | None, calls: Sequence[tuple[str, Mapping[str, Any] | str]] = (), **message_fields: Any
) -> ChatCompletion:
    """A one-choice chat completion whose message says ``content`` and makes the tool ``calls``.

    Each call is ``(name, arguments)``; arguments given as a string are sent verbatim (so invalid
    JSON can be scripted), a mapping is JSON-encoded. Call ids are ``call_0``, ``call_1``, ...;
    ``message_fields`` (e.g. ``reasoning_content``) are added to the message.
    """
    message: dict[str, Any] = {"role": "assistant", "content": content, **message_fields}
    if calls:
        message["tool_calls"] = [
            {
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)},
            }
            for i, (name, args) in enumerate(calls)
        ]
    return ChatCompletion.model_validate(
        {
            "id": "scripted",
            "object": "chat.completion",
            "created": 0,
            "model": "scripted",
            "choices": [{"index": 0, "finish_reason": "tool_calls" if calls else "stop", "message": message}],
        }
    )
