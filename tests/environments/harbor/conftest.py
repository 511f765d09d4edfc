"""The Harbor tests. ``tasks/`` holds Harbor tasks written for these tests (their ``tests/`` are verifiers run
inside task containers, not tests of this repository, so pytest does not collect them)."""

collect_ignore_glob = ["tasks/*"]
