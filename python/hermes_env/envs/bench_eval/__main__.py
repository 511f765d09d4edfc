"""``python -m hermes_env.envs.bench_eval evaluate`` (evaluation only; ``serve``/``process`` explain and exit)."""

from hermes_env.env.cli import run_cli
from hermes_env.envs import configure_logging
from hermes_env.envs.bench_eval.env import BenchEvalEnv

if __name__ == "__main__":
    configure_logging()
    run_cli(BenchEvalEnv)
