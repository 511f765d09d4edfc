"""The two ways a rollout becomes trainer data.

Phase 1 (``openai``): an OpenAI-compatible server parses tool calls itself and returns no token
ids. The finished conversation is rendered once with the tokenizer's chat template, and the
mask marks exactly the tokens inside the assistant turns' character spans
(``hermes_env.trajectory``). There are no sampler logprobs.

Phase 2 (``managed``): hermes_env's managed server talks to vLLM ``/generate`` or SGLang, keeps a
token-exact trajectory, and the item carries the exact ``tokens``/``masks`` and the sampler's
``inference_logprobs``.
"""

from __future__ import annotations

from typing import Any, Literal

from atroposlib.envs.server_handling.openai_server import OpenAIServer
from atroposlib.envs.server_handling.server_manager import ServerManager

from hermes_env.errors import PhaseError
from hermes_env.trajectory import MASK, PROMPT_LOGPROB

ResolvedPhase = Literal["openai", "managed"]


def resolve_phase(requested: str, server: ServerManager) -> ResolvedPhase:
    """``openai`` or ``managed`` from ``--env.phase`` and the server classes ServerManager chose."""
    has_openai = any(isinstance(s, OpenAIServer) for s in server.servers)
    if requested == "auto":
        return "openai" if has_openai else "managed"
    if requested == "managed" and has_openai:
        raise PhaseError(
            "phase 'managed' needs token ids and logprobs, which an OpenAI chat endpoint does not return; "
            "use --openai.server_type vllm or sglang, or --env.phase openai"
        )
    if requested not in ("openai", "managed"):
        raise PhaseError(f"unknown phase {requested!r}; use auto, openai or managed")
    return requested  # type: ignore[return-value]


def phase1_item(tokenizer: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> dict[str, Any]:
    """tokens and masks of a finished conversation: assistant-turn tokens trained, the rest -100."""
    from hermes_env.trajectory import assistant_token_mask, render_with_assistant_spans

    ids, offsets, spans = render_with_assistant_spans(tokenizer, messages, tools)
    masks = assistant_token_mask(offsets, spans, ids)
    return {"tokens": list(ids), "masks": list(masks)}


def prompt_only_item(
    tokenizer: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
) -> dict[str, Any]:
    """The prompt alone, nothing trained: a rollout in which the model produced no output."""
    ids = tokenizer.apply_chat_template(messages, tools=tools or None, tokenize=True, add_generation_prompt=True)
    if isinstance(ids, dict):  # newer transformers return a BatchEncoding
        ids = ids["input_ids"]
    ids = list(ids)
    return {"tokens": ids, "masks": [MASK] * len(ids), "inference_logprobs": [PROMPT_LOGPROB] * len(ids)}


def _trajectories(state: Any) -> list[Any]:
    if state is None:
        return []
    if isinstance(state, dict):
        for key in ("trajectories", "nodes", "sequences"):
            if key in state:
                value = state[key]
                return list(value.values()) if isinstance(value, dict) else list(value)
        return []
    return list(state)


def phase2_item(managed_state: Any, score: float) -> dict[str, Any] | None:
    """tokens/masks/inference_logprobs of the rollout's (last) trajectory, or None if it has none."""
    trajectories = _trajectories(managed_state)
    if not trajectories:
        return None
    trajectory = trajectories[-1]
    if hasattr(trajectory, "to_scored_item"):
        item = dict(trajectory.to_scored_item(score))
    else:
        logprobs = trajectory.get("logprobs") or trajectory.get("inference_logprobs")
        if logprobs is None:
            raise ValueError(
                "the managed state's last trajectory has no 'logprobs'; Phase 2 needs a managed server that "
                "records sampler logprobs (hermes_env.managed.ManagedServer does)"
            )
        item = {
            "tokens": list(trajectory["tokens"]),
            "masks": list(trajectory["masks"]),
            "inference_logprobs": list(logprobs),
        }
    lengths = {len(item["tokens"]), len(item["masks"]), len(item["inference_logprobs"])}
    if len(lengths) != 1:
        raise ValueError(f"managed trajectory arrays disagree in length: {sorted(lengths)}")
    return item
