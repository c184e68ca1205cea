"""Which code a benchmark measures: a fingerprint of acti_store's files on disk, which the
parent of a probe (``benchmarks.measure``) and the probe (``benchmarks.probe``) both take."""

from __future__ import annotations

import hashlib
from pathlib import Path


def code_fingerprint() -> str:
    """A hash of acti_store's source and migrations as they are on disk now.

    The probes import acti_store afresh: if someone edits it during a run, the parent and its
    children would measure different code. Both compute this, and the run stops if they differ.
    """
    import acti_store

    package = Path(acti_store.__file__).resolve().parent
    files = sorted([*package.rglob("*.py"), *(package.parent / "migrations").rglob("*.py")])
    sha = hashlib.sha256()
    for path in files:
        sha.update(path.relative_to(package.parent).as_posix().encode())
        sha.update(path.read_bytes())
    return sha.hexdigest()[:16]
