"""hermes-agent's ``environments.benchmarks.terminalbench_2``: the Terminal-Bench 2 evaluation environment."""
