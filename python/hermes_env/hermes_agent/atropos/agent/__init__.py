"""hermes-agent's ``atropos.agent``: ``AtroposAgent`` and the shapes of its results."""

from hermes_env.hermes_agent.atropos.agent.atropos_agent import (
    AgentConfig,
    AgentResult,
    AgentStep,
    AtroposAgent,
    SequenceData,
)

__all__ = ["AgentConfig", "AgentResult", "AgentStep", "AtroposAgent", "SequenceData"]
