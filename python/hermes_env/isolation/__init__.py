"""The one isolation layer under every backend that sandboxes commands.

- :mod:`~hermes_env.isolation.bubblewrap`: :class:`BwrapSpec` -> the ``bwrap`` command line, and the
  check that bubblewrap works here (:func:`bwrap_problem`);
- :mod:`~hermes_env.isolation.paths`: host-side file operations confined to a workspace;
- :mod:`~hermes_env.isolation.process`: :func:`run_limited` runs one command with a timeout and
  bounded output, returning an :class:`ExecResult`; :func:`stop_tree` ends one, leaving nothing;
- :mod:`~hermes_env.isolation.limits`: :class:`ResourceLimits`, one set of names and units;
- :mod:`~hermes_env.isolation.users`: one uid per task when running as root (:class:`UidBlock`);
- :mod:`~hermes_env.isolation.quota`: per-workspace disk quotas (a tmpfs per workspace);
- :mod:`~hermes_env.isolation.roots`: workspace roots that later runs clean up if this one dies.

The ``bwrap`` backend (``hermes_env.backends.bwrap``) and the sandbox pool's workers
(``hermes_env.slot_pool.slots``) are both built from these pieces.
"""

from hermes_env._renamed import old_names
from hermes_env.isolation.bubblewrap import WORKSPACE_MOUNT, BwrapSpec, bwrap_problem
from hermes_env.isolation.limits import ResourceLimits
from hermes_env.isolation.process import run_limited, stop_tree
from hermes_env.isolation.result import ExecResult
from hermes_env.isolation.users import SandboxUser, UidBlock

__all__ = [
    "WORKSPACE_MOUNT",
    "BwrapSpec",
    "ExecResult",
    "ResourceLimits",
    "SandboxUser",
    "UidBlock",
    "bwrap_problem",
    "run_limited",
    "stop_tree",
]


# Exceptions live in hermes_env.errors; the names this package once re-exported still work for a release
# (hermes_env._renamed.OLD_NAMES), each with a warning once.
__getattr__ = old_names(__name__)
