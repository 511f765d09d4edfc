"""``python -m hermes_env.containers setup|sweep|config-path``: set-up and upkeep of the container engine."""

from __future__ import annotations

import argparse
import sys

from hermes_env.containers.config import podman_conf_path
from hermes_env.containers.engine import detect_engine, sweep_leftovers
from hermes_env.errors import ContainerError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hermes_env.containers", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    setup_cmd = sub.add_parser("setup", help="make the base image and an engine configuration that works here")
    setup_cmd.add_argument("--engine", default=None, help="docker or podman (default: the first that works)")
    setup_cmd.add_argument("--quiet", action="store_true", help="print only errors")
    sweep_cmd = sub.add_parser("sweep", help="remove containers left by runs that were killed")
    sweep_cmd.add_argument("--engine", default=None)
    sub.add_parser("config-path", help="print the podman configuration file set-up writes when it needs one")
    args = parser.parse_args(argv)
    if args.command == "config-path":
        print(podman_conf_path())
        return 0
    try:
        if args.command == "setup":
            from hermes_env.containers.setup import setup

            setup(args.engine, quiet=args.quiet)
        else:
            removed = sweep_leftovers(detect_engine(args.engine))
            print(f"removed {len(removed)} container(s) left by runs that ended")
    except ContainerError as exc:
        print(f"containers: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
