"""The wheel ships the migrations: an installed acti_store opens a store from anywhere."""

from __future__ import annotations

import site
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

CHECK = """
import acti_store, pathlib, sys
from acti_store import open_repository
from acti_store.engine import migrations_dir
assert pathlib.Path(sys.prefix) in pathlib.Path(acti_store.__file__).parents, acti_store.__file__
assert migrations_dir().name == "_migrations", migrations_dir()
repo = open_repository("sqlite:///store.db")
repo.close()
print("opened", migrations_dir())
"""


@pytest.mark.slow
def test_installed_wheel_finds_its_migrations(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(ROOT)],
        check=True,
    )
    (wheel,) = dist.glob("acti_store-*.whl")
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    # The dependencies come from this test environment's site-packages, listed after the venv's
    # own (a path added by a .pth is not scanned for .pth files, so the editable install of the
    # checkout stays out of sight).
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(purelib, "test-deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    subprocess.run(
        [python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], check=True
    )
    workdir = tmp_path / "elsewhere"
    workdir.mkdir()
    result = subprocess.run(
        [python, "-c", CHECK], cwd=workdir, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert "opened" in result.stdout
    assert (workdir / "store.db").is_file()
