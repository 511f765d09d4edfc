"""BenchTasksEnv: an evaluation-only benchmark in hermes-agent's TerminalBench2 style.

Each row carries an instruction, an image (``docker_image``, or a Dockerfile in ``environment_tar``), its tests
(``tests_tar``) and a ``test_sh`` that writes ``/logs/verifier/reward.txt``. Per task: register the image for a
task id of its own, run ``HermesAgentLoop`` on it, upload the tests to ``/tests``, run them in the same sandbox
from a worker thread, download ``/logs/verifier`` and read the reward; then clean everything up.
"""

import asyncio
import base64
import io
import json
import logging
import shutil
import sys
import tarfile
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

_repo_root = Path(__file__).resolve().parent.parent.parent.parent
if str(_repo_root) not in sys.path:
    sys.path.insert(0, str(_repo_root))

from atroposlib.envs.base import EvalHandlingEnum  # noqa: E402
from atroposlib.envs.server_handling.server_manager import APIServerConfig  # noqa: E402
from pydantic import Field  # noqa: E402
from tools.terminal_tool import cleanup_vm, clear_task_env_overrides, register_task_env_overrides  # noqa: E402

from environments.agent_loop import HermesAgentLoop  # noqa: E402
from environments.hermes_base_env import HermesAgentBaseEnv, HermesAgentEnvConfig  # noqa: E402
from environments.tool_context import ToolContext  # noqa: E402

logger = logging.getLogger(__name__)


def unpack(b64: str, into: Path) -> None:
    if b64:
        with tarfile.open(fileobj=io.BytesIO(base64.b64decode(b64)), mode="r:gz") as tar:
            tar.extractall(path=str(into), filter="data")


class BenchTasksConfig(HermesAgentEnvConfig):
    dataset_name: str = Field(default="someone/bench-tasks")
    test_timeout: int = Field(default=60)
    results_file: str | None = Field(default=None, description="jsonl of per-task results")
    force_build: bool = Field(default=False, description="build from environment_tar even when docker_image is set")


class BenchTasksEnv(HermesAgentBaseEnv):
    name = "bench-tasks"
    env_config_cls = BenchTasksConfig

    @classmethod
    def config_init(cls) -> tuple[BenchTasksConfig, list[APIServerConfig]]:
        env_config = BenchTasksConfig(
            enabled_toolsets=["terminal", "file"],
            max_agent_turns=8,
            max_token_length=2048,
            agent_temperature=0.6,
            terminal_backend="modal",
            eval_handling=EvalHandlingEnum.STOP_TRAIN,
            group_size=1,
            steps_per_eval=1,
            total_steps=1,
            tokenizer_name="NousResearch/Hermes-3-Llama-3.1-8B",
            use_wandb=False,
            ensure_scores_are_not_same=False,
        )
        server_configs = [
            APIServerConfig(base_url="https://openrouter.ai/api/v1", model_name="m", server_type="openai")
        ]
        return env_config, server_configs

    async def setup(self):
        from datasets import load_dataset

        self.items = list(load_dataset(self.config.dataset_name, split="train"))
        self.iter = 0

    async def get_next_item(self):
        item = self.items[self.iter % len(self.items)]
        self.iter += 1
        return item

    def format_prompt(self, item: dict[str, Any]) -> str:
        return item["instruction"]

    async def compute_reward(self, item, result, ctx) -> float:
        return 0.0

    async def collect_trajectories(self, item):
        return None, []

    def _image(self, item: dict[str, Any]) -> tuple[str, Path | None]:
        if item.get("docker_image") and not (self.config.force_build and item.get("environment_tar")):
            return item["docker_image"], None
        folder = Path(tempfile.mkdtemp(prefix="bench-env-"))
        unpack(item["environment_tar"], folder)
        return str(folder / "Dockerfile"), folder

    def _run_tests(self, item: dict[str, Any], ctx: ToolContext) -> float:
        ctx.terminal("mkdir -p /tests /logs/verifier")
        tests = Path(tempfile.mkdtemp(prefix="bench-tests-"))
        try:
            unpack(item["tests_tar"], tests)
            uploaded = ctx.upload_dir(str(tests), "/tests")
            assert all(r["exit_code"] == 0 for r in uploaded), uploaded
        finally:
            shutil.rmtree(tests, ignore_errors=True)
        ctx.write_file("/tests/test.sh", item["test_sh"])
        ran = ctx.terminal("bash /tests/test.sh", timeout=self.config.test_timeout)
        verifier = Path(tempfile.mkdtemp(prefix="bench-verifier-"))
        try:
            downloaded = ctx.download_dir("/logs/verifier", str(verifier))
            reward_file = verifier / "reward.txt"
            if not reward_file.is_file():
                raise RuntimeError(f"no reward.txt (download: {downloaded}; test output: {ran['output'][-300:]})")
            return float(reward_file.read_text().strip())
        finally:
            shutil.rmtree(verifier, ignore_errors=True)

    async def rollout_and_score_eval(self, item: dict[str, Any]) -> dict[str, Any]:
        task_id = str(uuid.uuid4())
        image, folder = self._image(item)
        try:
            register_task_env_overrides(task_id, {"modal_image": image})
            tools, valid_names = self._resolve_tools_for_group()
            messages = [{"role": "user", "content": self.format_prompt(item)}]
            agent = HermesAgentLoop(
                server=self.server,
                tool_schemas=tools,
                valid_tool_names=valid_names,
                max_turns=self.config.max_agent_turns,
                task_id=task_id,
                temperature=self.config.agent_temperature,
                max_tokens=self.config.max_token_length,
                extra_body=self.config.extra_body,
            )
            result = await agent.run(messages)
            ctx = ToolContext(task_id)
            try:
                loop = asyncio.get_event_loop()
                reward = await loop.run_in_executor(None, self._run_tests, item, ctx)
            finally:
                ctx.cleanup()
            return {"task_name": item["task_name"], "reward": reward, "turns": result.turns_used, "error": None}
        except Exception as err:  # an evaluation records the failure and goes on, as upstream's does
            logger.error("task %s failed: %s", item["task_name"], err, exc_info=True)
            return {"task_name": item["task_name"], "reward": 0.0, "turns": 0, "error": f"{type(err).__name__}: {err}"}
        finally:
            clear_task_env_overrides(task_id)
            cleanup_vm(task_id)
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)

    async def evaluate(self, *args, **kwargs) -> None:
        start = time.time()
        results = await asyncio.gather(*(self.rollout_and_score_eval(item) for item in self.items))
        if self.config.results_file:
            with open(self.config.results_file, "w") as out:
                for r in results:
                    out.write(json.dumps(r) + "\n")
        from tools.terminal_tool import cleanup_all_environments

        cleanup_all_environments()
        from environments.agent_loop import _tool_executor

        _tool_executor.shutdown(wait=False, cancel_futures=True)
        passed = sum(r["reward"] == 1.0 for r in results)
        await self.evaluate_log(
            metrics={"eval/pass_rate": passed / len(results)}, samples=results, start_time=start, end_time=time.time()
        )


if __name__ == "__main__":
    BenchTasksEnv.cli()
