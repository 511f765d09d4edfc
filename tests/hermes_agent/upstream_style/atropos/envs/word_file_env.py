"""An environment written as hermes-agent's atropos/ integration writes them: a file of its ``atropos/envs``
package (relative imports), ``AgentEnv[Config]``, upstream's ``verify_and_score_trajectory`` signature reading
``agent_result.steps`` / ``tool_results`` / ``trajectory_data``, and an ``evaluate`` that drives ``AtroposAgent``
through ``self._tool_executor``.

The agent is asked to write a word to ``word.txt``; the workspace starts with ``notes/hint.txt``. Test fixture:
``tests/hermes_agent/test_atropos_front.py`` ports it with ``python -m hermes_env.port`` and runs it.
"""

from __future__ import annotations

import os
import time
from typing import Any

from atroposlib.envs.base import APIServerConfig, Item
from pydantic import Field

from ..agent import AgentConfig, AgentResult, AtroposAgent
from ..tools import ToolCall
from .agent_env import AgentEnv, AgentEnvConfig

WORDS = ["amber", "basalt", "cobalt"]


class WordFileEnvConfig(AgentEnvConfig):
    hint_path: str = Field(default="notes/hint.txt", description="File the workspace starts with.")


class WordFileEnv(AgentEnv[WordFileEnvConfig]):
    name = "word_file_env"
    env_config_cls = WordFileEnvConfig

    def __init__(
        self,
        config: WordFileEnvConfig,
        server_configs: list[APIServerConfig],
        slurm: bool = False,
        testing: bool = False,
    ):
        super().__init__(config, server_configs, slurm, testing)
        self._iter = 0

    @classmethod
    def config_init(cls) -> tuple[WordFileEnvConfig, list[APIServerConfig]]:
        base_url = os.getenv("ATROPOS_SERVER_BASE_URL") or "http://127.0.0.1:8080"
        env_config = WordFileEnvConfig(
            tokenizer_name=os.getenv("ATROPOS_TOKENIZER_NAME") or "NousResearch/Hermes-4.3-36B",
            group_size=2,
            use_wandb=False,
            include_messages=True,
            ensure_scores_are_not_same=False,
            total_steps=2,
            batch_size=2,
            enabled_toolsets=["terminal", "file"],
            disabled_toolsets=[],
            sandbox_image=os.getenv("ATROPOS_SANDBOX_IMAGE") or "atropos-sandbox:local",
            purge_job_on_start=True,
        )
        server_configs = [
            APIServerConfig(
                model_name="hermes-4-36b",
                base_url=f"{base_url.rstrip('/')}/v1",
                api_key="local",
                num_max_requests_at_once=1,
                num_requests_for_eval=1,
                timeout=120,
            )
        ]
        return env_config, server_configs

    async def setup_agent_env(self) -> None:
        return None

    async def get_next_item(self) -> Item:
        word = WORDS[self._iter % len(WORDS)]
        self._iter += 1
        return {"word": word}

    def build_task(self, item: Item) -> str:
        return f"Write the word {item['word']} to word.txt with a tool, then answer with just the word."

    def build_agent_config(self, item: Item) -> AgentConfig:  # noqa: ARG002
        return AgentConfig(max_steps=4, temperature=0.2, max_tokens=None)

    async def setup_trajectory_workspace(self, item: Item, *, trajectory_id: str, exec_tool) -> dict[str, Any]:
        res = await exec_tool(
            ToolCall(name="write_file", arguments={"path": self.config.hint_path, "content": item["word"]})
        )
        if not res.success:
            raise RuntimeError(f"could not prepare {trajectory_id}: {res.error}")
        return {"hint": self.config.hint_path}

    async def score_trajectory(self, item: Item, final_response: str) -> float:
        return 0.0

    async def verify_and_score_trajectory(
        self,
        item: Item,
        final_response: str,
        *,
        trajectory_id: str,
        exec_tool,
        agent_result: AgentResult | None = None,
        workspace_meta: dict[str, Any] | None = None,
    ) -> tuple[float, dict[str, Any]]:
        if agent_result is None or workspace_meta is None:
            return 0.0, {"error": "missing agent_result or workspace_meta"}
        hint = await exec_tool(ToolCall(name="bash", arguments={"command": f"cat {workspace_meta['hint']}"}))
        written = await exec_tool(ToolCall(name="terminal", arguments={"command": "cat word.txt"}))
        # Upstream's sandbox image (python:3.11-slim) has a `python` command; reward code relies on it.
        python = await exec_tool(ToolCall(name="terminal", arguments={"command": "python -c 'print(6 * 7)'"}))
        data = agent_result.trajectory_data
        steps = agent_result.steps
        ok = (
            hint.success
            and written.success
            and written.output.strip() == item["word"]
            and python.output.strip() == "42"
            and (final_response or "").strip() == item["word"]
            and steps[-1].assistant_message == final_response
            and all(res.success for res in agent_result.tool_results)
            and data is not None
            and len(data.tokens) == len(data.masked_tokens) == len(data.logprobs) > 0
        )
        return (1.0 if ok else 0.0), {
            "steps": len(steps),
            "tool_calls": [c.name for s in steps for c in s.tool_calls],
            "tool_outputs": [r.output for r in agent_result.tool_results],
            "trained_tokens": sum(1 for t in (data.masked_tokens if data else []) if t != -100),
        }

    async def evaluate(self, *args, **kwargs):
        start = time.time()
        scores = []
        for word in WORDS[:2]:
            tid = f"eval-{word}"

            async def _exec(call, _tid=tid):
                return await self._tool_executor.execute(_tid, call)

            agent = AtroposAgent(
                server=self.server,
                tokenizer=self.tokenizer,
                tools=self.tools,
                config=AgentConfig(max_steps=4, temperature=0.0),
                execute_tool=_exec,
            )
            result = await agent.run(self.build_task({"word": word}))
            check = await _exec(ToolCall(name="terminal", arguments={"command": "cat word.txt"}))
            scores.append(1.0 if result.success and check.output.strip() == word else 0.0)
            await self._tool_executor.release_trajectory(tid, reset_workspace=True)
        metrics = {"eval/percent_correct": sum(scores) / len(scores), "eval/num_tasks": len(scores)}
        await self.evaluate_log(metrics=metrics, samples=[], start_time=start, end_time=time.time())
        return metrics


if __name__ == "__main__":
    WordFileEnv.cli()
