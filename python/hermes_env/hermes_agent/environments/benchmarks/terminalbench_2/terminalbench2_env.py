"""hermes-agent's ``environments.benchmarks.terminalbench_2.terminalbench2_env``: Terminal-Bench 2 evaluation over
rows in TB2's Hub schema, on hermes_env's Harbor machinery.

``TerminalBench2EvalEnv`` / ``TerminalBench2EvalConfig`` keep upstream's names, configuration fields and defaults
(``dataset_name``, ``test_timeout``, ``force_build``, ``task_filter``, ``skip_tasks``, ``task_timeout``) and the
methods environment files subclass or call (``config_init``, ``setup``, ``evaluate``, ``rollout_and_score_eval``,
``_run_tests``, ``_resolve_task_image``, ``_eval_with_timeout``, ``_save_result``, ``wandb_log``), so that an
upstream file such as ``tblite_env.py``, ported as a single file, runs on it. The rows are those of upstream's
Hub dataset, or of ``python -m hermes_env.environments.harbor export-tb2 TASKS_DIR OUT`` (``--env.dataset_name OUT``).

Each task runs as :mod:`hermes_env.environments.harbor` runs a Harbor task: its image is built from ``environment_tar``
(base images mapped to local ones, cached by content), the agent loop works in one container of it on the
``docker`` backend, and ``test_sh`` with ``tests_tar`` is the verifier, run offline with the provisioned
toolbox, its reward read from ``/logs/verifier``. A prebuilt ``docker_image`` is used only where this machine
already holds it (nothing is pulled); otherwise, or with ``force_build``, the image is built. A task whose image
does not build fails with the end of its build log; the others go on. On a backend without images (``bwrap``,
``local``) each task runs in that backend's sandbox with the host's tools, said once at start, and its verifier
runs there as upstream runs it (tests uploaded to ``/tests``, ``bash /tests/test.sh``, the reward from
``/logs/verifier``, else the script's exit status), with whatever network the sandbox has.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import logging
import os
import shutil
import tarfile
import tempfile
import threading
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any, TextIO

from atroposlib.envs.base import EvalHandlingEnum
from atroposlib.envs.server_handling.server_manager import APIServerConfig
from pydantic import Field

from hermes_env.env.dataset import load_rows
from hermes_env.environments.harbor.runner import TESTS_DIR, VERIFIER_LOGS, HarborRunner, PreparedTask, VerifyResult
from hermes_env.environments.harbor.task import EnvironmentSection, HarborTask, TaskConfig, TimeoutSection
from hermes_env.errors import ContainerError, DatasetError
from hermes_env.hermes_agent.environments.agent_loop import HermesAgentLoop
from hermes_env.hermes_agent.environments.hermes_base_env import HermesAgentBaseEnv, HermesAgentEnvConfig
from hermes_env.hermes_agent.environments.tool_context import ToolContext
from hermes_env.hermes_agent.tools import terminal_tool

logger = logging.getLogger(__name__)

#: Upstream leaves these out on Modal (they need KVM or run past a cloud sandbox's limits); here they run.
MODAL_INCOMPATIBLE_TASKS = frozenset({"qemu-startup", "qemu-alpine-ssh", "crack-7z-hash"})


class TerminalBench2EvalConfig(HermesAgentEnvConfig):
    """Upstream's Terminal-Bench 2 settings over hermes_env's environment configuration."""

    dataset_name: str = Field(
        default="NousResearch/terminal-bench-2",
        description="TB2-schema rows: a Hub id, or a local folder such as export-tb2 writes.",
    )
    test_timeout: int = Field(default=180, description="Seconds the task's test.sh may run.")
    force_build: bool = Field(
        default=False, description="Always build the image from environment_tar, even where docker_image is local."
    )
    task_filter: str | None = Field(default=None, description="Comma-separated task names to run (default: all).")
    skip_tasks: str | None = Field(default=None, description="Comma-separated task names to leave out.")
    task_timeout: int = Field(
        default=1800, description="Wall-clock seconds per task (image, agent loop and tests); past it the task fails."
    )


def _names(text: str | None) -> set[str]:
    return {name.strip() for name in (text or "").split(",") if name.strip()}


def _unpack(b64: str, target: Path) -> None:
    """A base64 tar.gz (the rows' ``*_tar`` columns) unpacked into ``target``; members escaping it are refused."""
    target.mkdir(parents=True, exist_ok=True)
    if not b64:
        return
    with tarfile.open(fileobj=io.BytesIO(base64.b64decode(b64)), mode="r:gz") as tar:
        tar.extractall(target, filter="data")


class TerminalBench2EvalEnv(HermesAgentBaseEnv):
    """Terminal-Bench 2 evaluation (eval only): ``python ENV.py evaluate --env.dataset_name ROWS``."""

    name = "terminal-bench-2"
    env_config_cls = TerminalBench2EvalConfig
    config: TerminalBench2EvalConfig

    @classmethod
    def config_init(cls) -> tuple[TerminalBench2EvalConfig, list[APIServerConfig]]:
        """Upstream's defaults, except the backend: ``docker`` (each task runs in its own image here)."""
        env_config = TerminalBench2EvalConfig(
            enabled_toolsets=["terminal", "file"],
            disabled_toolsets=None,
            distribution=None,
            max_agent_turns=60,
            max_token_length=16000,
            agent_temperature=0.6,
            system_prompt=None,
            terminal_backend="docker",
            terminal_timeout=300,
            test_timeout=180,
            tool_pool_size=128,
            eval_handling=EvalHandlingEnum.STOP_TRAIN,
            group_size=1,
            steps_per_eval=1,
            total_steps=1,
            tokenizer_name="NousResearch/Hermes-3-Llama-3.1-8B",
            use_wandb=True,
            wandb_name="terminal-bench-2",
            ensure_scores_are_not_same=False,
        )
        server_configs = [
            APIServerConfig(
                base_url="https://openrouter.ai/api/v1",
                model_name="anthropic/claude-sonnet-4",
                server_type="openai",
                api_key=os.getenv("OPENROUTER_API_KEY", ""),
                health_check=False,
            )
        ]
        return env_config, server_configs

    # ------------------------------------------------------------------ setup
    async def setup(self) -> None:
        """Read the rows, apply ``task_filter`` / ``skip_tasks``, index categories, make the task runner."""
        if not self.backend.supports_images:
            logger.warning(
                "terminal_backend %r runs no images: each task runs in its sandbox with the host's tools, not in the "
                "task's image (--env.terminal_backend docker runs each task in its image)",
                self.config.terminal_backend,
            )
        lifetime = self.config.task_timeout + 120  # sandboxes outlive a task that runs to its time limit
        self.config.terminal_lifetime = lifetime
        os.environ["TERMINAL_LIFETIME_SECONDS"] = str(lifetime)
        rows = load_rows(self.config.dataset_name, "train", prompt_field="instruction")
        missing = [i for i, row in enumerate(rows) if not row.get("task_name")]
        if missing:
            raise DatasetError(
                f"dataset {self.config.dataset_name!r}: row {missing[0]} has no task_name; TB2 rows need task_name, "
                "instruction, environment_tar (or docker_image) and test_sh (python -m hermes_env.environments.harbor "
                "export-tb2 writes them)"
            )
        tasks = rows
        wanted = _names(self.config.task_filter)
        if wanted:
            unknown = sorted(wanted - {row["task_name"] for row in rows})
            if unknown:
                logger.warning("task_filter names tasks the dataset does not have: %s", ", ".join(unknown))
            tasks = [row for row in tasks if row["task_name"] in wanted]
        skip = _names(self.config.skip_tasks)
        if skip:
            before = len(tasks)
            tasks = [row for row in tasks if row["task_name"] not in skip]
            if before > len(tasks):
                print(f"  Skipped {before - len(tasks)} task(s): {sorted(skip)}")
        if not tasks:
            raise DatasetError(
                f"no task of {self.config.dataset_name!r} is left to run (task_filter={self.config.task_filter!r}, "
                f"skip_tasks={self.config.skip_tasks!r}); name tasks the dataset has"
            )
        self.all_eval_items: list[dict[str, Any]] = tasks
        self.iter = 0
        self.category_index: dict[str, list[int]] = defaultdict(list)
        for index, row in enumerate(tasks):
            self.category_index[row.get("category") or "unknown"].append(index)
        self.eval_metrics: list[tuple[str, float]] = []
        self.runner = HarborRunner(self.backend.engine) if self.backend.supports_images else None
        self._prepared: dict[str, tuple[HarborTask, PreparedTask | None]] = {}
        self._loop = asyncio.get_running_loop()
        self._streaming_lock = threading.Lock()
        self._streaming_file: TextIO | None = None
        if self.config.data_dir_to_save_evals:
            folder = Path(self.config.data_dir_to_save_evals)
            folder.mkdir(parents=True, exist_ok=True)
            self._streaming_path = str(folder / f"samples_{time.strftime('%Y%m%d_%H%M%S')}.jsonl")
            self._streaming_file = open(self._streaming_path, "w", encoding="utf-8")  # noqa: SIM115 - closed in evaluate
            print(f"  Streaming results to: {self._streaming_path}")
        print(f"TB2 ready: {len(tasks)} tasks across {len(self.category_index)} categories")
        for category, indices in sorted(self.category_index.items()):
            print(f"  {category}: {len(indices)} tasks")

    def _save_result(self, result: dict[str, Any]) -> None:
        """One task's result, appended to the streaming JSONL (with ``--env.data_dir_to_save_evals``) at once."""
        stream = self._streaming_file if hasattr(self, "_streaming_file") else None
        if stream is None or stream.closed:
            return
        with self._streaming_lock:
            stream.write(json.dumps(result, ensure_ascii=False, default=str) + "\n")
            stream.flush()

    # ------------------------------------------------------------------ training path (evaluation only)
    async def get_next_item(self) -> dict[str, Any]:
        item = self.all_eval_items[self.iter % len(self.all_eval_items)]
        self.iter += 1
        return item

    def format_prompt(self, item: dict[str, Any]) -> str:
        return item["instruction"]

    async def compute_reward(self, item: Any, result: Any, ctx: Any) -> float:
        return 0.0  # the reward is the task's verifier, run in rollout_and_score_eval

    async def collect_trajectories(self, item: Any) -> tuple[None, list[Any]]:
        return None, []  # evaluation only: no training groups, as upstream

    async def score(self, rollout_group_data: Any) -> None:
        return None

    # ------------------------------------------------------------------ images
    def _resolve_task_image(self, item: dict[str, Any], task_name: str) -> tuple[str, Path | None]:
        """``(image, temp_dir)``: ``docker_image`` when this machine holds it and ``force_build`` is off, else the
        path of the Dockerfile unpacked from ``environment_tar`` into ``temp_dir`` (the caller removes it);
        ``("", None)`` when the row has neither."""
        docker_image = item.get("docker_image") or ""
        if docker_image and (not self.config.force_build or not self.backend.supports_images):
            if not self.backend.supports_images:
                return docker_image, None  # named only: this backend runs the task in its own sandbox
            if self.backend.engine.image_id_sync(docker_image) is not None:
                logger.info("Task %s: using local image %s", task_name, docker_image)
                return docker_image, None
            logger.info("Task %s: image %s is not on this machine (nothing is pulled): building", task_name,
                        docker_image)  # fmt: skip
        if item.get("environment_tar"):
            task_dir = Path(tempfile.mkdtemp(prefix=f"tb2-{task_name}-"))
            _unpack(item["environment_tar"], task_dir / "environment")
            dockerfile = task_dir / "environment" / "Dockerfile"
            if dockerfile.is_file():
                return str(dockerfile), task_dir
            shutil.rmtree(task_dir, ignore_errors=True)
            logger.warning("Task %s: environment_tar holds no Dockerfile at its root", task_name)
        return "", None

    def _harbor_task(self, item: dict[str, Any], task_name: str, task_dir: Path) -> HarborTask:
        """The row as a Harbor task under ``task_dir`` (its ``tests/`` unpacked, ``test_sh`` as tests/test.sh)."""
        tests = task_dir / "tests"
        _unpack(item.get("tests_tar") or "", tests)
        test_sh = item.get("test_sh") or ""
        (tests / "test.sh").write_text(test_sh)
        (tests / "test.sh").chmod(0o755)
        environment = EnvironmentSection(
            docker_image=item.get("docker_image") or None,
            cpus=float(item.get("cpus") or 1.0),
            memory_mb=int(item.get("memory_mb") or 2048),
            allow_internet=bool(item.get("allow_internet", True)),
        )
        config = TaskConfig(
            metadata={"category": item.get("category") or "unknown"},
            environment=environment,
            agent=TimeoutSection(timeout_sec=float(self.config.task_timeout)),
            verifier=TimeoutSection(timeout_sec=float(self.config.test_timeout)),
        )
        return HarborTask(name=task_name, path=task_dir, instruction=item.get("instruction") or "", config=config,
                          test_sh=test_sh)  # fmt: skip

    # ------------------------------------------------------------------ one task
    async def rollout_and_score_eval(self, eval_item: dict[str, Any]) -> dict[str, Any]:
        """One task: its image, the agent loop in its container, its tests. ``passed``, ``reward``, ``task_name``,
        ``category``, ``turns_used``, ``finished_naturally``, ``messages`` (``error`` instead when it failed)."""
        task_name = eval_item.get("task_name", "unknown")
        category = eval_item.get("category", "unknown")
        task_id = str(uuid.uuid4())
        task_dir: Path | None = None
        started = time.time()
        print(f"  [START] {task_name} (task_id={task_id[:8]})")
        try:
            image, task_dir = await asyncio.to_thread(self._resolve_task_image, eval_item, task_name)
            if not image:
                logger.error("Task %s: no docker_image or environment_tar, skipping", task_name)
                out = {"passed": False, "reward": 0.0, "task_name": task_name, "category": category,
                       "error": "no_image"}  # fmt: skip
                self._save_result(out)
                return out
            if task_dir is None:
                task_dir = Path(tempfile.mkdtemp(prefix=f"tb2-{task_name}-"))
                local_image: str | None = image
            else:
                local_image = None
            task = self._harbor_task(eval_item, task_name, task_dir)
            prepared = None
            if self.runner is not None:
                prepared = await self.runner.prepare(task, image=local_image)
                for note in prepared.notes:
                    logger.info("Task %s: not honoured here: %s", task_name, note)
                HarborRunner.use(self.backend, task_id, prepared)
            self._prepared[task_id] = (task, prepared)

            tools, valid_names = self._resolve_tools_for_group()
            messages: list[dict[str, Any]] = []
            if self.config.system_prompt:
                messages.append({"role": "system", "content": self.config.system_prompt})
            messages.append({"role": "user", "content": self.format_prompt(eval_item)})
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

            if result.turns_used == 0 or all(m.get("role") in ("system", "user") for m in result.messages):
                logger.warning("Task %s: the agent produced no output (turns=%d); reward 0", task_name,
                               result.turns_used)  # fmt: skip
                reward = 0.0
            else:
                ctx = ToolContext(task_id)
                try:
                    # In a worker thread, as upstream: a subclass's _run_tests may block on its calls.
                    reward = await asyncio.get_running_loop().run_in_executor(
                        None, self._run_tests, eval_item, ctx, task_name
                    )
                except Exception as exc:  # noqa: BLE001 - a failed verifier fails this task, not the run
                    logger.error("Task %s: test verification failed: %s", task_name, exc)
                    reward = 0.0
            passed = reward == 1.0
            elapsed = time.time() - started
            print(f"  [{'PASS' if passed else 'FAIL'}] {task_name} (turns={result.turns_used}, {elapsed:.0f}s)")
            out = {
                "passed": passed,
                "reward": reward,
                "task_name": task_name,
                "category": category,
                "turns_used": result.turns_used,
                "finished_naturally": result.finished_naturally,
                "messages": result.messages,
            }
            self._save_result(out)
            return out
        except Exception as exc:  # noqa: BLE001 - one task's failure (an image that does not build) is its own
            # An image that does not build says why in its message; anything else gets its traceback.
            logger.error("Task %s: rollout failed: %s", task_name, exc, exc_info=not isinstance(exc, ContainerError))
            print(f"  [ERROR] {task_name}: {exc} ({time.time() - started:.0f}s)")
            out = {"passed": False, "reward": 0.0, "task_name": task_name, "category": category, "error": str(exc)}
            self._save_result(out)
            return out
        finally:
            self._prepared.pop(task_id, None)
            try:
                if terminal_tool.has_task_context(task_id):
                    await ToolContext(task_id).cleanup()  # the container and what runs in it
                    terminal_tool.forget_context(task_id)
                await self.backend.cleanup(task_id)  # the task's image and settings, with or without a container
            except Exception as exc:  # noqa: BLE001 - cleanup must not hide the task's result
                logger.debug("cleanup of %s: %s", task_id[:8], exc)
            if task_dir is not None:
                shutil.rmtree(task_dir, ignore_errors=True)

    def _run_tests(self, item: dict[str, Any], ctx: ToolContext, task_name: str) -> float:
        """The task's verifier in its container, as Harbor runs it (``tests/`` at ``/tests``, ``bash
        /tests/test.sh`` offline with the toolbox, the reward from ``/logs/verifier``); 0.0 when it gives none.
        Called from a worker thread (as ``rollout_and_score_eval`` does), like upstream's."""
        if not (item.get("test_sh") or ""):
            logger.warning("Task %s: no test_sh content, reward=0", task_name)
            return 0.0
        found = self._prepared.get(ctx.task_id)
        if found is None:
            raise RuntimeError(f"task {task_name}: {ctx.task_id} is not a running task of rollout_and_score_eval")
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise RuntimeError("_run_tests blocks: call it from a worker thread (run_in_executor), not the event loop")
        task, prepared = found
        if self.runner is not None and prepared is not None:
            verify = self.runner.verify(self.backend, ctx.task_id, task, prepared)
        else:
            verify = self._verify_in_sandbox(ctx, task)
        verified = asyncio.run_coroutine_threadsafe(verify, self._loop).result()
        if verified.error:
            logger.info("Task %s: verifier: %s\n%s", task_name, verified.error, verified.output[-500:])
        elif not verified.reward:
            logger.info("Task %s: FAIL\n%s", task_name, verified.output[-500:])
        return float(verified.reward or 0.0)

    async def _verify_in_sandbox(self, ctx: ToolContext, task: HarborTask) -> VerifyResult:
        """The verifier on a backend without images, as upstream runs it: the reward from ``/logs/verifier``, else
        1.0 when test.sh exits 0 (upstream's fallback)."""
        started = time.monotonic()
        await ctx.terminal(f"rm -rf {TESTS_DIR} {VERIFIER_LOGS} && mkdir -p {TESTS_DIR} {VERIFIER_LOGS}")
        await ctx.upload_dir(str(task.tests_dir), TESTS_DIR)
        result = await ctx.terminal(f"bash {TESTS_DIR}/test.sh", timeout=self.config.test_timeout)
        output = str(result.get("output") or "")
        reward, error = await HarborRunner.read_reward(self.backend, ctx.task_id)
        if reward is None:
            exit_code = result.get("exit_code", -1)
            logger.info("Task %s: %s; the reward is test.sh's exit status (%s)", task.name, error, exit_code)
            reward, error = (1.0 if exit_code == 0 else 0.0), None
        return VerifyResult(reward, time.monotonic() - started, output, error)

    # ------------------------------------------------------------------ evaluation
    async def _eval_with_timeout(self, item: dict[str, Any]) -> dict[str, Any]:
        """``rollout_and_score_eval`` bounded by ``task_timeout``; past it the task fails with ``error``."""
        task_name = item.get("task_name", "unknown")
        try:
            return await asyncio.wait_for(self.rollout_and_score_eval(item), timeout=self.config.task_timeout)
        except TimeoutError:
            limit = self.config.task_timeout
            print(f"  [TIMEOUT] {task_name} (exceeded {limit}s wall-clock limit)")
            out = {"passed": False, "reward": 0.0, "task_name": task_name,
                   "category": item.get("category", "unknown"), "error": f"timeout ({limit}s)"}  # fmt: skip
            self._save_result(out)
            return out

    async def evaluate(self, *args: Any, **kwargs: Any) -> None:
        """Every task at once (images built a few at a time); pass rates overall and per category, printed and
        logged with ``evaluate_log``."""
        start_time = time.time()
        print(f"\n{'=' * 60}\nStarting Terminal-Bench 2.0 Evaluation\n{'=' * 60}")
        print(f"  Dataset: {self.config.dataset_name}\n  Total tasks: {len(self.all_eval_items)}")
        print(f"  Max agent turns: {self.config.max_agent_turns}\n  Task timeout: {self.config.task_timeout}s")
        print(f"  Terminal backend: {self.config.terminal_backend}\n{'=' * 60}\n")
        results = await asyncio.gather(*(self._eval_with_timeout(item) for item in self.all_eval_items))
        end_time = time.time()
        valid = [r for r in results if r is not None]
        if not valid:
            print("Warning: No valid evaluation results obtained")
            return
        total = len(valid)
        passed = sum(1 for r in valid if r.get("passed"))
        by_category: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in valid:
            by_category[r.get("category") or "unknown"].append(r)
        metrics: dict[str, float] = {
            "eval/pass_rate": passed / total,
            "eval/total_tasks": total,
            "eval/passed_tasks": passed,
            "eval/evaluation_time_seconds": end_time - start_time,
        }
        for category, items in sorted(by_category.items()):
            key = category.replace(" ", "_").replace("-", "_").lower()
            metrics[f"eval/pass_rate_{key}"] = sum(1 for r in items if r.get("passed")) / len(items)
        self.eval_metrics = list(metrics.items())

        print(f"\n{'=' * 60}\nTerminal-Bench 2.0 Evaluation Results\n{'=' * 60}")
        print(f"Overall Pass Rate: {passed / total:.4f} ({passed}/{total})")
        print(f"Evaluation Time: {end_time - start_time:.1f} seconds\n\nCategory Breakdown:")
        for category, items in sorted(by_category.items()):
            ok = sum(1 for r in items if r.get("passed"))
            print(f"  {category}: {ok / len(items):.1%} ({ok}/{len(items)})")
        print("\nTask Results:")
        for r in sorted(valid, key=lambda x: x.get("task_name", "")):
            extra = f" (error: {r['error']})" if r.get("error") else ""
            status = "PASS" if r.get("passed") else "FAIL"
            print(f"  [{status}] {r['task_name']} (turns={r.get('turns_used', '?')}){extra}")
        print("=" * 60 + "\n")

        keys = ("task_name", "category", "passed", "reward", "turns_used", "error", "messages")
        samples = [{key: r.get(key) for key in keys} for r in valid]
        try:
            await self.evaluate_log(
                metrics=metrics,
                samples=samples,
                start_time=start_time,
                end_time=end_time,
                generation_parameters={
                    "temperature": self.config.agent_temperature,
                    "max_tokens": self.config.max_token_length,
                    "max_agent_turns": self.config.max_agent_turns,
                    "terminal_backend": self.config.terminal_backend,
                },
            )
        except Exception as exc:  # noqa: BLE001 - the results are printed above either way
            print(f"Error logging evaluation results: {exc}")
        stream = getattr(self, "_streaming_file", None)
        if stream is not None and not stream.closed:
            stream.close()
            print(f"  Live results saved to: {self._streaming_path}")
        await terminal_tool.cleanup_all_environments_async()

    async def wandb_log(self, wandb_metrics: dict[str, Any] | None = None) -> None:
        """The last evaluation's metrics, added to ``wandb_metrics``."""
        wandb_metrics = dict(wandb_metrics or {})
        for name, value in self.eval_metrics if hasattr(self, "eval_metrics") else []:
            wandb_metrics[name] = value
        self.eval_metrics = []
        await super().wandb_log(wandb_metrics)


__all__ = ["MODAL_INCOMPATIBLE_TASKS", "TerminalBench2EvalConfig", "TerminalBench2EvalEnv"]


if __name__ == "__main__":
    TerminalBench2EvalEnv.cli()
