"""The runs' loop at exit: stopped and closed while the interpreter is whole, so that nothing
is left for the collector to close at the end (which could find the loop's own sockets gone
and print "Exception ignored ... Invalid file descriptor: -1" under a CLI's one error line)."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_the_runs_loop_is_closed_at_exit_and_nothing_is_printed() -> None:
    script = textwrap.dedent(
        """
        import atexit, threading
        seen = {}
        # Registered first, so it runs last: after acti_store's own handler.
        atexit.register(lambda: print(seen["loop"].is_closed(), seen["thread"].is_alive()))

        from acti_store.execution import background

        async def answer() -> int:
            return 42

        assert background.wait_in_background(answer()) == 42
        seen["loop"], seen["thread"] = background._RUNS._loop, background._RUNS._thread
        """
    )
    done = subprocess.run(
        [sys.executable, "-X", "dev", "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "False"]
    assert done.stderr == ""
