"""``python -m hermes_env.environments.bench_eval evaluate`` (evaluation only; ``serve``/``process`` explain and
exit)."""

from hermes_env.environments.bench_eval.env import BenchEvalEnv

if __name__ == "__main__":
    BenchEvalEnv.cli()
