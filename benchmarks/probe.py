"""One export or import of one store, timed, with the peak memory of the process while it ran.

As a subprocess (what the benchmark does, so that each measurement starts from a fresh process):
``python -m benchmarks.probe SPEC_JSON {export|import} DIRECTORY`` prints one JSON line.
``measure`` is the same thing in-process (``--inline-io``, for smoke tests).
"""

from __future__ import annotations

import gc
import json
import resource
import sys
import time
from pathlib import Path
from typing import Any

import psutil  # type: ignore[import-untyped]

from .backends import StoreSpec, open_backend
from .code_state import code_fingerprint
from .workload import BenchClock

MIB = 1024 * 1024


def reset_peak_rss() -> bool:
    """Restart the kernel's peak-RSS count from the current RSS (Linux); False if unsupported."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as clear:
            clear.write("5")
    except OSError:
        return False
    return True


def peak_rss() -> int:
    """This process's peak resident set size, in bytes.

    ``VmHWM`` (Linux) is the high-water mark of the process's own memory, which exec starts afresh
    and ``reset_peak_rss`` restarts. ``getrusage().ru_maxrss`` is only a fallback: Linux carries it
    over from the parent across fork and exec, so a child of a large parent reports the parent's.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def measure(spec: StoreSpec, op: str, directory: Path) -> dict[str, Any]:
    """Run ``op`` (export/import) on ``spec``; seconds, the code path, and memory.

    ``peak_rss_mb`` is the process's peak while the operation ran (the count is restarted just
    before it, when the kernel allows); ``delta_rss_mb`` is that peak minus the RSS just before.
    """
    backend = open_backend(spec, BenchClock())
    try:
        run = {"export": backend.export_all, "import": backend.import_all}[op]
        gc.collect()
        reset = reset_peak_rss()
        baseline = psutil.Process().memory_info().rss
        start = time.perf_counter()
        path = run(directory)
        seconds = time.perf_counter() - start
        peak = peak_rss()
    finally:
        backend.close()
    return {
        "seconds": seconds,
        "baseline_rss_mb": baseline / MIB,
        "peak_rss_mb": peak / MIB,
        "delta_rss_mb": (peak - baseline) / MIB,
        "peak_since": "operation start" if reset else "process start",
        "path": path,
        "code": code_fingerprint(),
    }


def main(argv: list[str]) -> int:
    spec_json, op, directory = argv
    print(json.dumps(measure(StoreSpec.from_json(spec_json), op, Path(directory))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
