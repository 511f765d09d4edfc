"""RepoFixEnv: a workspace prepared by ``setup_trajectory_workspace`` and checked by ``verify_and_score_trajectory``
through ``exec_tool`` when ``tool_pool_mode`` is not ``default`` (hermes-agent's older sandbox-hook base, as its
swe_smith_oracle environment uses it); in ``default`` mode a shaped ``compute_reward`` (0.05 a tool call).

Its ``evaluate`` builds the messages itself with ``system_prompt=None`` and runs ``HermesAgentLoop`` on
``self.server``, as hermes-agent's endless_terminals environment does. Every check runs ``python``.
"""

import logging
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

_repo_root = Path(__file__).resolve().parent.parent.parent
if str(_repo_root) not in sys.path:
    sys.path.insert(0, str(_repo_root))

from atroposlib.envs.server_handling.server_manager import APIServerConfig  # noqa: E402
from model_tools import cleanup_vm, get_tool_definitions  # noqa: E402
from pydantic import Field  # noqa: E402

from environments.agent_loop import AgentResult, HermesAgentLoop  # noqa: E402
from environments.hermes_base_env import HermesAgentBaseEnv, HermesAgentEnvConfig  # noqa: E402
from environments.tool_context import ToolContext  # noqa: E402

logger = logging.getLogger(__name__)

TASKS = [{"prompt": "Repair the project in ./proj: its state.txt must say fixed.", "repo_dir": "proj"}]
CHECK = "python -c \"import pathlib, sys; sys.exit(pathlib.Path('{dir}/state.txt').read_text().strip() != 'fixed')\""


class RepoFixConfig(HermesAgentEnvConfig):
    install_timeout_s: float = Field(default=120.0)


class RepoFixEnv(HermesAgentBaseEnv):
    name = "repo-fix"
    env_config_cls = RepoFixConfig

    @classmethod
    def config_init(cls) -> tuple[RepoFixConfig, list[APIServerConfig]]:
        env_config = RepoFixConfig(
            enabled_toolsets=["terminal", "file"],
            max_agent_turns=4,
            max_token_length=512,
            system_prompt=None,
            terminal_backend=os.getenv("TERMINAL_ENV", "local"),
            group_size=2,
            tokenizer_name="NousResearch/Hermes-4.3-36B",
            tool_call_parser="hermes",
            total_steps=1,
            use_wandb=False,
            ensure_scores_are_not_same=False,
            # Slot-pool settings upstream's older base reads when tool_pool_mode is not "default".
            sandbox_image="atropos-sandbox:local",
            purge_job_on_start=True,
        )
        server_configs = [
            APIServerConfig(
                base_url="http://127.0.0.1:8080/v1", model_name="Hermes-4.3-36B", server_type="vllm", api_key="local"
            )
        ]
        return env_config, server_configs

    async def setup(self):
        self.iter = 0

    async def get_next_item(self) -> dict[str, Any]:
        item = TASKS[self.iter % len(TASKS)]
        self.iter += 1
        return item

    def format_prompt(self, item: dict[str, Any]) -> str:
        return item["prompt"]

    async def setup_trajectory_workspace(self, item, *, trajectory_id: str, exec_tool) -> dict[str, Any]:
        repo_dir = item["repo_dir"]
        res = await exec_tool(
            "bash",
            {"command": f"mkdir -p {repo_dir} && echo broken > {repo_dir}/state.txt && touch {repo_dir}/.prepared"},
            timeout=self.config.install_timeout_s,
        )
        if not res.success:
            raise RuntimeError(f"workspace setup failed: {res.error}\n{res.output}")
        return {"repo_dir": repo_dir}

    async def verify_and_score_trajectory(
        self,
        item,
        result: AgentResult,
        *,
        trajectory_id: str,
        exec_tool,
        workspace_meta: dict[str, Any] | None = None,
    ) -> tuple[float, dict[str, Any]]:
        repo_dir = (workspace_meta or {}).get("repo_dir")
        if repo_dir is None:
            return 0.0, {"error": "no workspace_meta"}
        missing = await exec_tool("bash", {"command": "exit 3"}, timeout=5)
        if missing.success or missing.metadata.get("returncode") != 3:
            return 0.0, {"error": "a failing command was reported as a success"}
        prepared = await exec_tool("bash", {"command": f"test -f {repo_dir}/.prepared"}, timeout=30)
        res = await exec_tool("bash", {"command": CHECK.format(dir=repo_dir)}, timeout=30)
        if not prepared.success or not res.success:
            return 0.0, {"phase": "check", "error": res.error, "output": res.output}
        return 1.0, {"passed": True}

    async def compute_reward(self, item, result: AgentResult, ctx: ToolContext) -> float:
        calls = sum(len(m.get("tool_calls", [])) for m in result.messages if m.get("role") == "assistant")
        if calls == 0:
            return 0.0
        check = ctx.terminal(CHECK.format(dir=item["repo_dir"]), timeout=30)
        if check.get("exit_code", 1) != 0:
            return 0.0
        return min(calls * 0.05, 0.3)

    async def evaluate(self, *args, **kwargs):
        start = time.time()
        rewards = []
        for item in TASKS:
            task_id = str(uuid.uuid4())
            messages = [
                {"role": "system", "content": self.config.system_prompt},
                {"role": "user", "content": item["prompt"]},
            ]
            tools = get_tool_definitions(self.config.enabled_toolsets)
            agent = HermesAgentLoop(
                server=self.server,
                tool_schemas=tools,
                valid_tool_names={t["function"]["name"] for t in tools},
                max_turns=self.config.max_agent_turns,
                task_id=task_id,
                temperature=self.config.agent_temperature,
                max_tokens=self.config.max_token_length,
            )
            try:
                result = await agent.run(messages)
                ctx = ToolContext(task_id)
                try:
                    rewards.append(await self.compute_reward(item, result, ctx))
                finally:
                    ctx.cleanup()
            finally:
                cleanup_vm(task_id)
        await self.evaluate_log(
            metrics={"eval/avg_reward": sum(rewards) / len(rewards)},
            samples=[],
            start_time=start,
            end_time=time.time(),
        )


if __name__ == "__main__":
    RepoFixEnv.cli()
