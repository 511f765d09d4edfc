"""``python -m hermes_env.envs.harbor oracle|export-tb2|serve|process|evaluate``."""

from __future__ import annotations

import sys


def main() -> None:
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command == "oracle":
        from hermes_env.envs.harbor.oracle import main as oracle_main

        sys.exit(oracle_main(sys.argv[2:]))
    if command == "export-tb2":
        from hermes_env.envs.harbor.export_tb2 import main as export_main

        sys.exit(export_main(sys.argv[2:]))
    from hermes_env.env.cli import configure_logging, run_cli
    from hermes_env.envs.harbor.env import HarborEnv

    configure_logging()
    run_cli(
        HarborEnv,
        extra_commands={
            "oracle": "check a folder of Harbor tasks with their reference solutions (JSON + HTML report)",
            "export-tb2": "write Harbor tasks as the rows upstream's Terminal-Bench 2 environment loads",
        },
    )


if __name__ == "__main__":
    main()
