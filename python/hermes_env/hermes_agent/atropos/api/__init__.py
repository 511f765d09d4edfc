"""hermes-agent's ``atropos.api``: the in-process tool server's tools."""
