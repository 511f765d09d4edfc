"""bench_eval: evaluation-only question answering over sandboxed files (see env.py)."""

from hermes_env.environments.bench_eval.env import BenchEvalConfig, BenchEvalEnv, extract_answer

__all__ = ["BenchEvalConfig", "BenchEvalEnv", "extract_answer"]
