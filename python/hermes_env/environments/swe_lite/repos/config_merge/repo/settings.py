"""Layered configuration: defaults, then the site file, then environment overrides."""

import copy

DEFAULTS = {
    "server": {"host": "127.0.0.1", "port": 8000, "workers": 2},
    "logging": {"level": "INFO", "handlers": ["console"]},
    "features": {},
}


def deep_merge(base, override):
    """A new dict: ``override`` merged into ``base`` recursively. Neither argument is modified."""
    result = base
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = deep_merge(result[key], value)
        else:
            result[key] = value
    return result


def load(*layers):
    """Defaults merged with each layer in turn."""
    config = copy.deepcopy(DEFAULTS)
    for layer in layers:
        config = deep_merge(config, layer)
    return config


def get(config, dotted, default=None):
    """get(cfg, "server.port")"""
    node = config
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return node
