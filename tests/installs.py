"""Fresh virtual environments for the tests that install acti_store as a user would (from its
wheel, or editable from the checkout) and run it from there."""

from __future__ import annotations

import site
import subprocess
import venv
from pathlib import Path


def fresh_venv(folder: Path) -> Path:
    """A virtual environment whose dependencies are this one's, acti_store not among them (a
    folder added by a .pth file is not scanned for .pth files: the checkout's editable
    install stays out of sight); its python. It has no pip of its own: ``python -m pip`` is
    this environment's pip, seen through the same .pth, installing into the new environment
    (ensurepip took 9 s of CPU per environment, 21 s at a load of 7)."""
    venv.create(folder, with_pip=False)
    python = folder / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(purelib, "test-deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    return python
