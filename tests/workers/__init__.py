"""Code that runs in child processes, shared by the multi-process tests and ``benchmarks.stress``.

Children are started with the ``forkserver`` context (see :mod:`.harness`), so everything a child
runs must be importable: pytest puts ``tests/`` on ``sys.path`` (this package is ``workers``
there) and ``benchmarks.stress`` imports it as ``tests.workers``; the modules use relative imports
only, so either name works.

- :mod:`.harness`: start children, collect their results within a deadline, never leave one behind.
- :mod:`.children`: the child entry points (record, update, race, migrate, loop until killed).
- :mod:`.checks`: the invariants the parent verifies afterwards, each returning a list of problems.
- :mod:`.scenarios`: the multi-process scenarios, run small by the tests and large by the script.
- :mod:`.tags`: ``acti-store update --add-tag/--remove-tag`` from several processes at once.
- :mod:`.failover`: writers and a feed follower that carry on while a PostgreSQL primary dies.
"""
