"""``local`` backend: a working directory per task on this machine, no isolation of commands.

Use it for development and for tasks you trust. Commands run with ``cwd`` = the workspace,
in their own process group (killed on timeout and at cleanup), with a small environment
(``HOME`` = the workspace). File methods are confined to the workspace; commands are not,
so use ``bwrap`` or the sandbox pool for model-generated commands you do not trust.
"""

from __future__ import annotations

import os
from typing import Any

from hermes_env.backends.host_workspace import HostWorkspaceBackend
from hermes_env.backends.options import LocalOptions
from hermes_env.isolation.process import run_limited
from hermes_env.isolation.result import ExecResult


class LocalBackend(HostWorkspaceBackend):
    name = "local"
    options_model = LocalOptions

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        *,
        shell: str = "/bin/bash",
        env: dict[str, str] | None = None,
        inherit_env: bool = False,
        **limit_options: Any,
    ) -> None:
        super().__init__(root, **limit_options)
        if not os.path.exists(shell):
            shell = "/bin/sh"
        self.shell = shell
        self.extra_env = dict(env or {})
        self.inherit_env = inherit_env

    def _env(self, task_id: str) -> dict[str, str]:
        base = dict(os.environ) if self.inherit_env else {}
        ws = str(self.workspace_path(task_id))
        base.update(
            {
                "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
                "HOME": ws,
                "PWD": ws,
                "LANG": "C.UTF-8",
                "TERM": "dumb",
                "PYTHONDONTWRITEBYTECODE": "1",
            }
        )
        base.update(self.extra_env)
        return base

    async def execute(self, task_id: str, command: str, timeout: float, *, stdin: str | None = None) -> ExecResult:
        await self.start(task_id)
        return await run_limited(
            [self.shell, "-c", command],
            cwd=str(self.workspace_path(task_id)),
            env=self._env(task_id),
            timeout=timeout,
            stdin=stdin,
            max_output_bytes=int(self.limits.max_output_bytes),
            kill_output_bytes=int(self.limits.kill_output_bytes),
            running=self.running_set(task_id),
        )
