"""``python -m hermes_env COMMAND ...``: the ``hermes-env`` command (hermes_env.commands)."""

import sys

from hermes_env.commands import main

if __name__ == "__main__":
    sys.exit(main())
