"""hermes_env.managed: the Phase-2 client with token-exact trajectories.

async with managed_server(server_manager, tokenizer, tool_parser="hermes") as m:
    completion = await m.chat_completion(messages=messages, tools=tools, n=4, max_tokens=512)
    branches = m.get_state()["branches"]   # one trajectory + messages per sample
"""

from hermes_env.managed.branches import CompletionRecord, ManagedBranch
from hermes_env.managed.server import DivergencePolicy, ManagedServer, ManagedServerConfig, managed_server

__all__ = [
    "CompletionRecord",
    "DivergencePolicy",
    "ManagedBranch",
    "ManagedServer",
    "ManagedServerConfig",
    "managed_server",
]
