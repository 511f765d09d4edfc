"""``ray`` command line that keeps every node on 127.0.0.1 (test helper, run as a script).

Ray rewrites a ``--node-ip-address`` of 127.0.0.1 to the machine's routable address
(``services.resolve_ip_for_localhost``), which would put test traffic on a real interface.
With ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` in the environment (inherited by every Ray
process) Ray's own address lookups answer 127.0.0.1; this wrapper additionally skips the
rewrite and the single-node guard in the ``ray start`` process itself, so a second node can
join the head on loopback.
"""

from __future__ import annotations

import sys

import ray._private.ray_constants as ray_constants
import ray._private.services as services
from ray.scripts.scripts import main

if __name__ == "__main__":
    ray_constants.ENABLE_RAY_CLUSTER = True  # allow `ray start --address` (a second node)
    services.resolve_ip_for_localhost = lambda host: host  # keep 127.0.0.1 as given
    sys.argv = ["ray", *sys.argv[1:]]
    main()
