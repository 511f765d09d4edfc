"""``todo``: a per-rollout task list the model keeps for itself (state lives in ``ctx.state``)."""

from __future__ import annotations

from typing import Any

from hermes_env.tools.registry import Tool, ToolCallError, ToolRunContext
from hermes_env.tools.schema import object_schema

STATUSES = ("pending", "in_progress", "completed")
_MARK = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}
STATE_KEY = "todo"
MAX_ITEMS = 100


def render_todo(items: list[dict[str, str]]) -> str:
    if not items:
        return "Todo list is empty."
    done = sum(1 for item in items if item["status"] == "completed")
    lines = [f"Todo list ({done}/{len(items)} completed):"]
    lines += [f"{i}. {_MARK[item['status']]} {item['content']}" for i, item in enumerate(items, start=1)]
    return "\n".join(lines)


class TodoTool(Tool):
    name = "todo"
    toolset = "todo"
    description = (
        "Keep a todo list for this task. Pass `items` to replace the whole list (each with "
        "`content` and `status`: pending, in_progress or completed); call with no arguments to see it."
    )
    parameters = object_schema(
        {
            "items": {
                "type": "array",
                "maxItems": MAX_ITEMS,
                "description": "The complete new list, in order.",
                "items": object_schema(
                    {
                        "content": {"type": "string", "minLength": 1, "maxLength": 500},
                        "status": {"type": "string", "enum": list(STATUSES)},
                    },
                    required=("content", "status"),
                ),
            }
        }
    )

    async def call(self, args: dict[str, Any], ctx: ToolRunContext) -> str:
        if "items" in args:
            items = [{"content": i["content"].strip(), "status": i["status"]} for i in args["items"]]
            if sum(1 for i in items if i["status"] == "in_progress") > 1:
                raise ToolCallError("todo: at most one item may be in_progress at a time")
            ctx.state[STATE_KEY] = items
        return render_todo(ctx.state.get(STATE_KEY, []))
