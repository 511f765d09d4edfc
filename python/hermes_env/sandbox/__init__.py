"""Old path of a renamed module, kept for one release: see hermes_env._renamed (using it warns once)."""

from hermes_env._renamed import alias

alias(__name__)
