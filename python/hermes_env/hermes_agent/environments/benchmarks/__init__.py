"""hermes-agent's ``environments.benchmarks``: the benchmark environments other environment files subclass."""
