"""A follower's stop (Ctrl-C, SIGTERM) lands between the driver's steps, never inside one.

``acti-store changes --follow`` and ``relay`` end on either with status 0. Raised in the middle
of the driver's code, the ``KeyboardInterrupt`` could leave an object half made there (PyMySQL's
result then printed an error at exit, once in a CI run); ``cli.feed.interruptible`` holds it
until that code returns. Here the "driver" is a module of its own name, which sends the stop to
its own process in the middle of its work.
"""

from __future__ import annotations

import signal
import textwrap
import time
import types

import pytest

from acti_store.cli.feed import interruptible

DRIVER = types.ModuleType("some_driver")
exec(  # a module that is not the package's nor the standard library's, as a driver is
    compile(
        textwrap.dedent(
            """
            import os

            def statement(steps, stops):
                for stop in stops:
                    os.kill(os.getpid(), stop)
                for _ in range(3):  # Python code that runs after the signal came
                    steps.append("driver")
                return "answer"
            """
        ),
        "some_driver.py",
        "exec",
    ),
    DRIVER.__dict__,
)


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["sigint", "sigterm"])
def test_a_stop_in_the_driver_lands_once_its_code_returns(stop: signal.Signals) -> None:
    handlers = [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGALRM)]
    steps: list[str] = []
    with pytest.raises(KeyboardInterrupt), interruptible():
        steps.append(DRIVER.statement(steps, [stop]))
        time.sleep(5)  # the stop lands here, at the latest
        steps.append("after the stop")
    assert steps == ["driver", "driver", "driver", "answer"]
    assert [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGALRM)] == (
        handlers
    )
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_a_second_stop_lands_at_once() -> None:
    steps: list[str] = []
    with pytest.raises(KeyboardInterrupt), interruptible():
        DRIVER.statement(steps, [signal.SIGTERM, signal.SIGINT])
    assert steps == []  # a statement that hangs cannot hold the process


def test_a_stop_in_the_package_s_own_code_lands_at_once() -> None:
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt), interruptible():
        signal.raise_signal(signal.SIGTERM)
        time.sleep(5)
    assert time.monotonic() - started < 1
