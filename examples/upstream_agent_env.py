"""An ``AgentEnv`` as hermes-agent's ``atropos/`` integration writes them, running on hermes_env's slot pool.

Written as that integration's environments are: ``build_task`` gives the prompt, ``setup_trajectory_workspace``
prepares each trajectory's workspace through ``exec_tool(ToolCall(...))`` and returns metadata,
``verify_and_score_trajectory`` runs the tests in the same workspace before it is reset and returns
``(score, metadata)``, and the pool is configured with its fields (``tool_pool_mode``,
``slots_per_container``, ``min_containers``, ``max_containers``). The model fixes a small bug with
hermes-agent's file tools (``read_file``, ``patch``) or the terminal. The score metadata (tests
passed, exit code, test output) travels with each group as ``overrides[i]["score_metadata"]``.

    python examples/upstream_agent_env.py demo --out data/upstream_agent_env.jsonl   # scripted policy, no model
    python examples/upstream_agent_env.py process --openai.base_url http://localhost:9000/v1 ...
"""

from __future__ import annotations

import sys
from typing import Any

from atroposlib.envs.server_handling.server_manager import APIServerConfig
from hermes_env import AgentEnv, AgentEnvConfig
from hermes_env.agent_env import ToolCall
from hermes_env.env.defaults import DEFAULT_BASE_URL, DEFAULT_MODEL, default_tokenizer_name

TEST_FILE = "test_solution.py"

# Each task: the buggy module the workspace starts with, the tests that decide the score, and (for
# the scripted demo policy only) the reference fix as hermes-agent patch calls and as a command.
TASKS = [
    {
        "id": "clamp",
        "module": "mathx.py",
        "source": "def clamp(x, lo, hi):\n    return max(lo, min(x, lo))\n",
        "tests": "from mathx import clamp\n"
        "assert clamp(5, 0, 3) == 3\nassert clamp(-1, 0, 3) == 0\nassert clamp(2, 0, 3) == 2\n",
        "issue": "clamp(x, lo, hi) should return x limited to [lo, hi], but clamp(2, 0, 3) returns 0.",
        "solution_tool_calls": [
            {
                "name": "patch",
                "arguments": {"path": "mathx.py", "old_string": "min(x, lo)", "new_string": "min(x, hi)"},
            }
        ],
        "solution": "sed -i 's/min(x, lo)/min(x, hi)/' mathx.py",
    },
    {
        "id": "slug",
        "module": "text.py",
        "source": "def slug(title):\n    return title.lower().replace(' ', '_')\n",
        "tests": "from text import slug\n"
        "assert slug('Hello World') == 'hello-world'\nassert slug('a b c') == 'a-b-c'\n",
        "issue": "slug('Hello World') should be 'hello-world' (words joined by hyphens), but it gives 'hello_world'.",
        "solution_tool_calls": [
            {
                "name": "patch",
                "arguments": {"path": "text.py", "old_string": "replace(' ', '_')", "new_string": "replace(' ', '-')"},
            }
        ],
        "solution": "sed -i \"s/replace(' ', '_')/replace(' ', '-')/\" text.py",
    },
    {
        "id": "mean",
        "module": "stats.py",
        "source": "def mean(values):\n    return sum(values) / (len(values) + 1)\n",
        "tests": "from stats import mean\nassert mean([1, 2, 3]) == 2\nassert mean([4]) == 4\n",
        "issue": "mean([1, 2, 3]) should be 2 but returns 1.5.",
        "solution_tool_calls": [
            {
                "name": "patch",
                "arguments": {"path": "stats.py", "old_string": "(len(values) + 1)", "new_string": "len(values)"},
            }
        ],
        "solution": "sed -i 's/(len(values) + 1)/len(values)/' stats.py",
    },
]


class BugFixEnvConfig(AgentEnvConfig):
    """AgentEnv's fields with this environment's defaults."""


class BugFixEnv(AgentEnv):
    """Fix a one-line bug; the hidden tests run in the trajectory's workspace."""

    name = "upstream-agent-env"
    env_config_cls = BugFixEnvConfig

    @classmethod
    def config_init(cls) -> tuple[BugFixEnvConfig, list[APIServerConfig]]:
        env_config = BugFixEnvConfig(
            tool_pool_mode="local",
            slots_per_container=4,
            min_containers=1,
            max_containers=2,
            allow_network=False,
            enabled_toolsets=["terminal", "file"],
            agent_max_steps=6,
            agent_temperature=1.0,
            agent_max_tokens=1024,
            system_prompt="You fix bugs in Python code in your current directory. "
            "Reply with a short summary when done.",
            group_size=4,
            total_steps=3,
            max_token_length=8192,
            tokenizer_name=default_tokenizer_name(),
            include_messages=True,
            ensure_scores_are_not_same=False,
            use_wandb=False,
        )
        server = APIServerConfig(
            base_url=DEFAULT_BASE_URL,
            model_name=DEFAULT_MODEL,
            tokenizer_name=default_tokenizer_name(),
            server_type="vllm",
            api_key="x",
        )
        return env_config, [server]

    async def setup_agent_env(self) -> None:
        self.tasks = list(TASKS)
        self.iter = 0

    async def get_next_item(self) -> dict[str, Any]:
        item = self.tasks[self.iter % len(self.tasks)]
        self.iter += 1
        return item

    def build_task(self, item: dict[str, Any]) -> str:
        return f"Fix the bug in {item['module']}: {item['issue']}"

    async def setup_trajectory_workspace(self, item: dict[str, Any], *, trajectory_id: str, exec_tool: Any) -> dict:
        written = await exec_tool(
            ToolCall(name="write_file", arguments={"path": item["module"], "content": item["source"]})
        )
        if not written.success:
            raise RuntimeError(f"could not prepare {trajectory_id}: {written.error}")
        return {"module": item["module"], "bytes": written.metadata["bytes_written"]}

    async def verify_and_score_trajectory(
        self,
        item: dict[str, Any],
        final_response: str,
        *,
        trajectory_id: str,
        exec_tool: Any,
        agent_result: Any = None,
        workspace_meta: dict[str, Any] | None = None,
    ) -> tuple[float, dict[str, Any]]:
        if agent_result is not None and agent_result.total_tool_calls <= 0:
            return 0.0, {"tests_passed": False, "error": "No tool calls were made by the agent"}
        # The tests are written only now, so the model cannot have edited them.
        await exec_tool(ToolCall(name="write_file", arguments={"path": TEST_FILE, "content": item["tests"]}))
        run = await exec_tool(ToolCall(name="terminal", arguments={"command": f"python3 {TEST_FILE}", "timeout": 30}))
        metadata = {
            "tests_passed": run.success,
            "exit_code": run.metadata.get("exit_code"),
            "module": (workspace_meta or {}).get("module"),
            "verification_messages": [{"role": "user", "content": run.to_xml()}],
        }
        return (1.0 if run.success else 0.0), metadata

    async def score_trajectory(self, item: dict[str, Any], final_response: str) -> float:
        return 0.0  # scoring happens in verify_and_score_trajectory


def main() -> None:
    from hermes_env.env.cli import run_cli
    from hermes_env.environments import configure_logging

    configure_logging()
    if len(sys.argv) > 1 and sys.argv[1] == "demo":
        from hermes_env.testing.demo import run_demo

        run_demo(
            BugFixEnv,
            sys.argv[2:],
            prog="python examples/upstream_agent_env.py demo",
            description="Run `process` against a SCRIPTED vLLM /generate policy (no model) and write scored groups.",
            tasks=[{**t, "prompt": f"Fix the bug in {t['module']}: {t['issue']}"} for t in TASKS],
            default_out="data/upstream_agent_env_demo.jsonl",
            default_backend=None,
            default_groups=6,
            policy_options={"prefer_tool_calls": True},
        )
    else:
        run_cli(BugFixEnv, extra_commands={"demo": "run process against a scripted policy server (no model)"})


if __name__ == "__main__":
    main()
