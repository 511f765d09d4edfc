"""Reading a field of an OpenAI-shaped chat message, choice or tool call, whether a dict or an ``openai`` object.

Servers answer with either: atroposlib's ServerManager and hermes_env's managed server return ``openai``
pydantic objects, scripted stand-ins and replayed rollouts return dicts.
"""

from __future__ import annotations

from typing import Any


def message_field(obj: Any, name: str, default: Any = None) -> Any:
    """``obj[name]`` of a dict, else the attribute ``name`` (a field the ``openai`` model does not declare
    included: it keeps those in ``model_extra``); ``default`` when it is missing or None."""
    if isinstance(obj, dict):
        value = obj.get(name)
    else:
        value = getattr(obj, name, None)
        if value is None:
            value = (getattr(obj, "model_extra", None) or {}).get(name)
    return default if value is None else value
