"""Old path of hermes_env.errors (everything here moved there), kept for one release: see hermes_env._renamed."""

from hermes_env._renamed import alias

alias(__name__)
