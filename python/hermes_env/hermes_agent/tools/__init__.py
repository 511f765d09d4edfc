"""hermes-agent's ``tools`` package, as environment files import it (``from tools.terminal_tool import ...``)."""
