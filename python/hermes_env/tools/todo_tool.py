"""``todo``: hermes-agent's per-rollout task list (``todos`` to write, ``merge`` to update by id).

The list lives in the rollout's tool state; every call answers the whole list and a summary.
Semantics are hermes-agent's ``TodoStore``: replace mode validates every item (a missing id
becomes ``"?"``, a missing content ``"(no description)"``, an unknown status ``"pending"``);
merge mode updates existing ids field by field and appends new ones.
"""

from __future__ import annotations

from typing import Any

from hermes_env.tools.registry import Tool, ToolCallContext

STATUSES = ("pending", "in_progress", "completed", "cancelled")
STATE_KEY = "todo"


class TodoStore:
    """An ordered list of ``{id, content, status}`` items; position is priority."""

    def __init__(self) -> None:
        self.items: list[dict[str, str]] = []

    def write(self, todos: list[dict[str, Any]], merge: bool = False) -> list[dict[str, str]]:
        if not merge:
            self.items = [self._validate(t) for t in todos]
            return self.read()
        by_id = {item["id"]: item for item in self.items}
        for todo in todos:
            item_id = str(todo.get("id", "")).strip()
            if not item_id:
                continue  # nothing to merge into
            if item_id in by_id:
                if todo.get("content"):
                    by_id[item_id]["content"] = str(todo["content"]).strip()
                status = str(todo.get("status") or "").strip().lower()
                if status in STATUSES:
                    by_id[item_id]["status"] = status
            else:
                item = self._validate(todo)
                by_id[item["id"]] = item
                self.items.append(item)
        seen: set[str] = set()
        rebuilt = []
        for item in self.items:
            current = by_id.get(item["id"], item)
            if current["id"] not in seen:
                rebuilt.append(current)
                seen.add(current["id"])
        self.items = rebuilt
        return self.read()

    def read(self) -> list[dict[str, str]]:
        return [dict(item) for item in self.items]

    @staticmethod
    def _validate(todo: dict[str, Any]) -> dict[str, str]:
        status = str(todo.get("status", "pending")).strip().lower()
        return {
            "id": str(todo.get("id", "")).strip() or "?",
            "content": str(todo.get("content", "")).strip() or "(no description)",
            "status": status if status in STATUSES else "pending",
        }


def todo_result(items: list[dict[str, str]]) -> dict[str, Any]:
    summary: dict[str, int] = {"total": len(items)}
    for status in STATUSES:
        summary[status] = sum(1 for item in items if item["status"] == status)
    return {"todos": items, "summary": summary}


class TodoTool(Tool):
    name = "todo"
    toolset = "todo"
    description = (
        "Manage your task list for the current session. Use for complex tasks "
        "with 3+ steps or when the user provides multiple tasks. "
        "Call with no parameters to read the current list.\n\n"
        "Writing:\n"
        "- Provide 'todos' array to create/update items\n"
        "- merge=false (default): replace the entire list with a fresh plan\n"
        "- merge=true: update existing items by id, add any new ones\n\n"
        "Each item: {id: string, content: string, "
        "status: pending|in_progress|completed|cancelled}\n"
        "List order is priority. Only ONE item in_progress at a time.\n"
        "Mark items completed immediately when done. If something fails, "
        "cancel it and add a revised item.\n\n"
        "Always returns the full current list."
    )
    parameters = {
        "type": "object",
        "properties": {
            "todos": {
                "type": "array",
                "description": "Task items to write. Omit to read current list.",
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "description": "Unique item identifier"},
                        "content": {"type": "string", "description": "Task description"},
                        "status": {
                            "type": "string",
                            "enum": list(STATUSES),
                            "description": "Current status",
                        },
                    },
                    "required": ["id", "content", "status"],
                },
            },
            "merge": {
                "type": "boolean",
                "description": "true: update existing items by id, add new ones. false (default): replace the entire "
                "list.",
                "default": False,
            },
        },
        "required": [],
    }
    parallel_safe = False
    check_bounds = False

    def validate(self, args: Any) -> dict[str, Any]:
        # hermes-agent validates items leniently (see TodoStore); only the outer shape is checked here.
        if isinstance(args, dict) and isinstance(args.get("todos"), list):
            todos = args["todos"]
            if all(isinstance(t, dict) for t in todos):
                outer = {k: v for k, v in args.items() if k != "todos"}
                super().validate(outer)
                return args
        return super().validate(args)

    async def call(self, args: dict[str, Any], ctx: ToolCallContext) -> dict[str, Any]:
        store = ctx.state.get(STATE_KEY)
        if not isinstance(store, TodoStore):
            store = ctx.state[STATE_KEY] = TodoStore()
        todos = args.get("todos")
        items = store.write(todos, bool(args.get("merge", False))) if todos is not None else store.read()
        return todo_result(items)
