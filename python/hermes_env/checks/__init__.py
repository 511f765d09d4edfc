"""hermes_env.checks: checks of written training data against the model that produced it.

``python -m hermes_env.checks.recompute GROUPS.jsonl --model MODEL.gguf`` re-runs the model over every
written sequence and compares each trained token's written logprob with the model's own
(:mod:`hermes_env.checks.recompute`).
"""
