"""HermesAgentEnvConfig: the fields a researcher sets for a tool-using environment.

It extends atroposlib's ``BaseEnvConfig``, so every field is also a ``--env.<name>`` flag and a
key under ``env:`` in the YAML file beside each environment. Validation happens here, at
parse time, so a typo in a toolset name or a dataset path stops the run before any server,
sandbox or tokenizer is touched.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from atroposlib.envs.base import BaseEnvConfig
from pydantic import BaseModel, Field, field_validator, model_validator

from hermes_env.env.turn_credit import BUILTIN_TURN_REWARDS, TurnCredit
from hermes_env.trajectory import DivergencePolicy

Phase = Literal["auto", "openai", "managed"]

# File suffixes read as local datasets; anything else is a Hugging Face dataset name (or a local folder).
LOCAL_DATASET_SUFFIXES = (".jsonl", ".json", ".parquet", ".csv")


def json_option(value: Any, expected: str) -> Any:
    """``value`` parsed when it is text (atroposlib's command line passes a dict or list option as one JSON string),
    else as it is. Text that is not JSON is a ValueError: ``expected`` (what the option must be) and why."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError as err:
        raise ValueError(f"{expected} ({err})") from None


def is_local_dataset(name: str) -> bool:
    """True when ``name`` names a local file rather than a Hugging Face dataset id."""
    return name.endswith(LOCAL_DATASET_SUFFIXES) or name.startswith((".", "/", "~")) or Path(name).exists()


class HermesAgentEnvConfig(BaseEnvConfig):
    """Configuration shared by every hermes_env environment."""

    # --- tools ---------------------------------------------------------------------------
    # `| str`: atroposlib's command line passes list fields as one string ("terminal,file"), split below.
    enabled_toolsets: list[str] | str | None = Field(
        default=None,
        description="hermes-agent toolsets offered to the model (e.g. terminal, file, todo). None: every available "
        "toolset. Mutually exclusive with distribution. Toolsets that need the network (web, browser, vision...) "
        "are an error unless the tool server provides them.",
    )
    disabled_toolsets: list[str] | str | None = Field(
        default=None, description="Toolsets removed after enabled_toolsets/distribution are resolved."
    )
    distribution: str | None = Field(
        default=None,
        description="hermes-agent toolset distribution (development, terminal_tasks, ...) sampled once per group: "
        "each toolset included with its weight/100. Toolsets that cannot run here are left out of the draw. "
        "Mutually exclusive with enabled_toolsets.",
    )
    tool_pool_size: int = Field(
        default=128, ge=1, description="Tool calls executing at once across all rollouts of this process."
    )
    tool_server_url: str | None = Field(
        default=None,
        description="URL of the tool server whose tools are offered to the model by name (web search, APIs with "
        "keys...), or 'inprocess' to run it inside this process with tool_server_tools. (The sandbox backend's "
        "own tool_server_url option is another route: it sends backend.call_tool calls of its external_tools "
        "names to a server from the slot pool's executor.)",
    )
    tool_server_token: str | None = Field(
        default=None, description="Bearer token of the tool server (or set HERMES_TOOL_SERVER_TOKEN)."
    )
    tool_server_tools: str | None = Field(
        default=None, description="tool_server_url: inprocess: module:attribute holding the list of ExternalTool."
    )
    tool_call_parser: str | None = Field(
        default=None,
        description="hermes_env.parsers name used in Phase 2 to turn raw model text into tool calls. "
        "None: detected from the tokenizer's chat template (falls back to 'auto': the format is picked from each "
        "output's markers).",
    )

    # --- agent loop ------------------------------------------------------------------------
    max_agent_turns: int = Field(default=30, ge=1, description="Model turns per rollout before it is cut off.")
    system_prompt: str | None = Field(default=None, description="System message put before the task prompt.")
    agent_temperature: float = Field(default=1.0, ge=0.0, description="Sampling temperature of the policy.")
    max_tokens_per_turn: int | None = Field(
        default=2048,
        ge=1,
        description="max_tokens of each model call. None sends none: beware, vLLM's /generate then stops at 16.",
    )
    rollout_timeout: float = Field(
        default=600.0, gt=0, description="Wall-clock budget of one rollout (model calls and tools), in seconds."
    )
    max_repeated_tool_calls: int | None = Field(
        default=None,
        ge=2,
        description="End a rollout when the model makes this many identical tool calls (same name and arguments) "
        "in a row; that turn's calls are not run and end_reason is 'repeated_tool_calls'. None: no limit.",
    )
    extra_body: dict[str, Any] | None = Field(
        default=None, description="Extra request fields sent with every model call (e.g. chat_template_kwargs)."
    )
    divergence_policy: DivergencePolicy = Field(
        default="keep_raw",
        description="Phase 2: what the managed server does when a re-rendered prompt disagrees with the tokens "
        "already sampled (keep_raw: keep the exact sampled tokens, what training needs).",
    )
    phase: Phase = Field(
        default="auto",
        description="'openai': the server parses tool calls (Phase 1, masks from assistant spans); 'managed': "
        "hermes_env's managed server (Phase 2, exact tokens and logprobs); 'auto': managed unless "
        "--openai.server_type is openai.",
    )

    # --- turn-level credit (hermes_env.env.turn_credit) -------------------------------------
    # `| str`: atroposlib's command line passes it as one JSON string ('{"tool_failed": -0.5}').
    turn_reward_builtins: dict[str, float] | str | None = Field(
        default=None,
        description='Built-in turn rewards and their weights, e.g. {"tool_failed": -0.5, "command_failed": -0.5, '
        '"parse_issue": -0.5, "repeated_call": -0.25}: each turn\'s reward is the sum of weight x count on that '
        "turn. Used by the default compute_turn_rewards; None: no turn rewards (no advantages are written).",
    )
    turn_credit: TurnCredit = Field(
        default="return_to_go",
        description="How turn rewards become each turn's credit: immediate (the turn's own reward) or return_to_go "
        "(the discounted sum of this and later turns' rewards).",
    )
    turn_credit_gamma: float = Field(default=1.0, ge=0.0, le=1.0, description="Discount of return_to_go credit.")
    turn_credit_weight: float = Field(
        default=1.0, ge=0.0, description="Weight of the turn advantage added to the outcome advantage."
    )
    turn_credit_normalize: bool = Field(
        default=True, description="Normalise turn credits over all turns of the group (mean 0, std 1)."
    )

    # --- on-policy distillation (hermes_env.distill) -----------------------------------------
    teacher_base_url: str | None = Field(
        default=None,
        description="A /generate server (vLLM, SGLang, serve_gguf; http://host:port or .../v1) that scores the "
        "student's tokens with prompt_logprobs; every written group then carries distill_token_ids / "
        "distill_logprobs. None: no distillation.",
    )
    teacher_top_k: int = Field(default=20, ge=1, description="Teacher logprobs kept per trained position.")
    teacher_context: Literal["same", "hint"] = Field(
        default="same",
        description="What the teacher sees before each assistant turn: the student's own context (same), or that "
        "context plus a hindsight hint a judge drew from the turn's outcome (hint; needs hint_judge_base_url).",
    )
    teacher_tokenizer_name: str | None = Field(
        default=None,
        description="The teacher's tokenizer (a Hub id, local folder or bundled:NAME); it must be the student's, "
        "checked at start. None: the teacher is declared to use the student's tokenizer.",
    )
    teacher_max_concurrency: int = Field(default=4, ge=1, description="Teacher requests in flight at once.")
    teacher_timeout: float = Field(default=600.0, gt=0, description="Time limit of one teacher request, seconds.")
    hint_judge_base_url: str | None = Field(
        default=None, description="An OpenAI-compatible chat server (…/v1) that extracts hindsight hints."
    )
    hint_judge_model: str = Field(default="default", description="Model name sent to the hint judge.")
    hint_votes: int = Field(default=3, ge=1, description="Judge samples per turn; a hint needs a majority.")
    hint_max_next_state_chars: int = Field(
        default=4000, ge=100, description="Characters of the next state (tool output) shown to the hint judge."
    )
    hint_max_tokens: int = Field(default=256, ge=16, description="max_tokens of each hint judge call.")
    hint_temperature: float = Field(default=0.7, ge=0.0, description="Temperature of the hint judge.")

    # --- LLM-judge rewards (hermes_env.judges.rewards) ----------------------------------------
    judge_reward: Literal["off", "rubric", "ranking"] = Field(
        default="off",
        description="An LLM judge's score added to each rollout's outcome: rubric (each rollout graded against "
        "judge_rubric) or ranking (a group's rollouts scored against each other in one call, RULER-like).",
    )
    judge_base_url: str | None = Field(default=None, description="The judge's OpenAI-compatible chat server (…/v1).")
    judge_model: str = Field(default="default", description="Model name sent to the judge.")
    judge_rubric: str | None = Field(default=None, description="What a good rollout does (rubric judge).")
    judge_votes: int = Field(default=1, ge=1, description="Rubric verdicts per rollout, averaged.")
    judge_weight: float = Field(default=1.0, description="Weight of the judge's score (in [0, 1]) in the reward.")
    judge_max_tokens: int = Field(default=512, ge=16, description="max_tokens of each judge call.")
    judge_temperature: float = Field(default=0.0, ge=0.0, description="Temperature of the judge.")

    # --- sandbox ---------------------------------------------------------------------------
    reward_timeout: float = Field(
        default=300.0, gt=0, description="Time limit of compute_reward for one rollout; a reward that hangs scores 0.0."
    )
    # hermes-agent's names: they govern every tool (terminal, files, code execution...), not only the terminal.
    terminal_backend: str = Field(
        default="local",
        description="Where every tool runs (not only the terminal; hermes-agent's name): local, bwrap, docker or "
        "sandbox (the slot pool), or a backend registered with hermes_env.backends.register_backend.",
    )
    terminal_timeout: float = Field(
        default=120.0,
        gt=0,
        description="Time limit of one tool call, any tool (and the most a model may ask for), in seconds; the "
        "layers under the call derive theirs from it (hermes_env.tools.budget.CallBudget).",
    )
    # `| str`: atroposlib's command line passes it as one JSON string ('{"allow_network": true}'), parsed below.
    terminal_backend_options: dict[str, Any] | str = Field(
        default_factory=dict,
        description="Options of terminal_backend, checked at load against that backend's model "
        "(hermes_env.backends.options: e.g. allow_network for bwrap, slots_per_worker for sandbox); an unknown "
        "one is an error naming it and listing the valid ones.",
    )
    terminal_lifetime: float = Field(
        default=3600.0,
        gt=0,
        description="Idle lifetime of a rollout's workspace, in seconds: one that goes this long without a tool call "
        "(waiting for the model counts as idle, a running background process does not) is destroyed and its "
        "rollout fails. Must exceed the longest wait for the model. The rollout's own budget is rollout_timeout.",
    )

    # --- data ------------------------------------------------------------------------------
    dataset_name: str | None = Field(
        default=None,
        description="A local .jsonl/.json/.parquet/.csv file, a local folder of data files in a Hugging Face "
        "dataset's layout (read by datasets.load_dataset), or a Hugging Face dataset name.",
    )
    dataset_split: str = Field(default="train", description="Split of a Hugging Face dataset.")
    prompt_field: str = Field(default="prompt", description="Field of each dataset row that holds the task prompt.")
    server_check_timeout: float = Field(
        default=10.0,
        ge=0,
        description="process/evaluate: seconds to wait for the inference server before giving up "
        "(serve waits as long as it takes, warning every 30 s).",
    )
    process_concurrency: int = Field(
        default=4, ge=1, description="process mode: groups rolled out at once (each runs group_size rollouts)."
    )
    max_failed_groups_in_a_row: int = Field(
        default=3, ge=1, description="process mode stops (cleanly) after this many consecutive dropped groups."
    )
    seed: int = Field(default=0, description="Seed for dataset shuffling and toolset sampling.")

    @field_validator("enabled_toolsets", "disabled_toolsets", mode="before")
    @classmethod
    def _split_comma_list(cls, value: Any) -> Any:
        # `--env.enabled_toolsets terminal,file` (or a JSON list) and YAML lists all work.
        if isinstance(value, str):
            text = value.strip()
            if text.startswith("["):
                try:
                    return json.loads(text)
                except json.JSONDecodeError:
                    pass
            return [part.strip().strip("'\"") for part in text.strip("[]").split(",") if part.strip()]
        return value

    @field_validator("terminal_backend_options", mode="before")
    @classmethod
    def _parse_backend_options(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = json_option(
                value if value.strip() else "{}",
                'terminal_backend_options must be a JSON object such as {"allow_network": true}',
            )
            if not isinstance(value, dict):
                raise ValueError(f"terminal_backend_options must be a JSON object, got {type(value).__name__}")
        return value

    @field_validator("turn_reward_builtins", mode="before")
    @classmethod
    def _parse_turn_reward_builtins(cls, value: Any) -> Any:
        value = json_option(value, 'turn_reward_builtins must be a JSON object such as {"tool_failed": -0.5}')
        if isinstance(value, dict):
            unknown = sorted(set(value) - set(BUILTIN_TURN_REWARDS))
            if unknown:
                known = ", ".join(BUILTIN_TURN_REWARDS)
                raise ValueError(f"unknown built-in turn reward(s) {', '.join(unknown)}; available: {known}")
        return value

    def backend_options(self) -> dict[str, Any]:
        """The options the backend is built with (``terminal_backend_options``; subclasses add their own)."""
        return dict(self.terminal_backend_options)  # type: ignore[arg-type]  # a dict once validated

    @property
    def backend_config(self) -> BaseModel | dict[str, Any]:
        """``terminal_backend`` with its options, typed (a ``hermes_env.backends.options.BackendConfig`` member for
        a built-in backend); BackendOptionsError naming the field of a wrong option."""
        from hermes_env.backends.registry import backend_config

        return backend_config(self.terminal_backend, self.backend_options())

    @model_validator(mode="after")
    def _check_backend(self) -> HermesAgentEnvConfig:
        self.check_backend_options()
        return self

    def check_backend_options(self) -> None:
        """Validate ``terminal_backend_options`` against the backend's model (at load, so a misspelt option stops
        the run before anything starts)."""
        self.backend_config  # noqa: B018 - validates; BackendOptionsError naming the field

    @model_validator(mode="after")
    def _check_tools_and_data(self) -> HermesAgentEnvConfig:
        if self.distribution is not None and self.enabled_toolsets is not None:
            raise ValueError(
                "set either enabled_toolsets or distribution, not both: a distribution samples the toolsets "
                f"itself (got enabled_toolsets={self.enabled_toolsets}, distribution={self.distribution!r})"
            )
        from hermes_env.tools.distributions import check_distribution
        from hermes_env.tools.toolsets import resolve_toolsets, tools_for_toolsets, validate_toolset

        if self.distribution is not None:
            # Unknown name, or nothing left to draw once unavailable and disabled toolsets are out: ValueError.
            check_distribution(self.distribution, self.disabled_toolsets)
            resolve_toolsets([], self.disabled_toolsets)  # names in disabled_toolsets must exist
        elif self.tool_server_url is not None:
            # The server's tools are registered at start-up; only the names can be checked now.
            resolve_toolsets([], self.disabled_toolsets)
            for name in self.enabled_toolsets or ():
                if not validate_toolset(name):
                    resolve_toolsets([name])  # raises, listing the valid toolsets
        elif self.enabled_toolsets is not None or self.disabled_toolsets is not None:
            # Unknown toolsets, or enabled ones that cannot run here: ValueError naming them and why.
            toolsets = resolve_toolsets(self.enabled_toolsets, self.disabled_toolsets)
            pool_only = [
                t.name
                for t in tools_for_toolsets(toolsets, self.disabled_toolsets)
                if getattr(t, "needs_slot_pool", False)
            ]
            if pool_only and self.terminal_backend != "sandbox":
                raise ValueError(
                    f"{', '.join(pool_only)} run in the slot pool's stateful shells, but terminal_backend is "
                    f"{self.terminal_backend!r}; set terminal_backend: sandbox or drop the terminal_stateful toolset"
                )
        if self.teacher_context == "hint" and self.teacher_base_url is not None and self.hint_judge_base_url is None:
            raise ValueError(
                "teacher_context 'hint' needs a judge that writes the hints; set hint_judge_base_url (any "
                "OpenAI-compatible chat server) or use teacher_context 'same'"
            )
        if self.judge_reward != "off" and self.judge_base_url is None:
            raise ValueError(
                f"judge_reward {self.judge_reward!r} needs judge_base_url (an OpenAI-compatible chat server)"
            )
        if self.judge_reward == "rubric" and not (self.judge_rubric or "").strip():
            raise ValueError("judge_reward 'rubric' needs judge_rubric: what a good rollout does, in words")
        if self.tool_call_parser is not None:
            from hermes_env.parsers import list_parsers

            known = list_parsers()
            if self.tool_call_parser not in known:
                raise ValueError(
                    f"unknown tool_call_parser {self.tool_call_parser!r}; available parsers: {', '.join(known)} "
                    "(leave it unset to detect the parser from the tokenizer)"
                )
        if self.dataset_name is not None and is_local_dataset(self.dataset_name):
            path = Path(self.dataset_name).expanduser()
            if not path.is_file() and not path.is_dir():
                raise ValueError(
                    f"dataset {self.dataset_name!r} not found (resolved to {path.resolve()}); pass "
                    "--env.dataset_name with an existing .jsonl/.json/.parquet file, a folder of data files, "
                    "or a Hugging Face dataset name"
                )
        return self
