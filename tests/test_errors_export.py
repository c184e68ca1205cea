"""An export that cannot write its folder raises ``ExportError`` naming the folder and the reason,
and leaves every file already there whole: a file in the folder's place, a folder under a file,
``/proc``, and a full disk (a 64 KiB tmpfs, when this machine lets the test mount one)."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import make_config

from acti_store import AgentStoreError, ExportError, SqlAgentRepository, export_json
from acti_store.interchange import INCOMPLETE_MARKER

TMPFS_BYTES = 64 * 1024


def test_a_file_where_the_folder_should_be(repo: SqlAgentRepository, tmp_path: Path) -> None:
    repo.create(make_config())
    blocker = tmp_path / "agents"
    blocker.write_text("precious")
    with pytest.raises(ExportError) as refused:
        export_json(repo, blocker)
    assert str(refused.value) == f"cannot export to {blocker}: it is a file, not a folder"
    assert isinstance(refused.value, AgentStoreError) and isinstance(refused.value, OSError)
    assert refused.value.directory == str(blocker)
    assert blocker.read_text() == "precious"


def test_a_folder_inside_a_file(repo: SqlAgentRepository, tmp_path: Path) -> None:
    repo.create(make_config())
    blocker = tmp_path / "store.db"
    blocker.write_text("precious")
    with pytest.raises(ExportError) as refused:
        export_json(repo, blocker / "sub")
    assert str(refused.value) == (
        f"cannot export to {blocker / 'sub'}: a part of its path is a file, not a folder"
    )
    assert blocker.read_text() == "precious"


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="no /proc on this system")
def test_a_folder_that_cannot_be_created(repo: SqlAgentRepository) -> None:
    repo.create(make_config())
    with pytest.raises(ExportError) as refused:
        export_json(repo, "/proc/acti_store_export")
    assert str(refused.value) == (
        "cannot export to /proc/acti_store_export: cannot create or open the folder: "
        "No such file or directory"
    )


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs mounted on a fresh folder, unmounted afterwards."""
    mount_point = tmp_path / f"disk-{uuid.uuid4().hex[:6]}"
    mount_point.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={TMPFS_BYTES}", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {mounted.stderr.strip() or 'not root'}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", str(mount_point)], check=True)


def test_a_full_disk_keeps_every_file_whole(repo: SqlAgentRepository, small_disk: Path) -> None:
    for i in range(3):
        repo.create(make_config(f"agent_{i}"))
    export_json(repo, small_disk)
    before = {p.name: p.read_bytes() for p in small_disk.iterdir()}
    # Agents big enough that their files cannot all fit on the 64 KiB disk.
    prompt = "You are a careful agent. " * 2000  # about 50 KB per file
    for i in range(3):
        repo.update(f"agent_{i}", {"system_prompt": prompt})
    with pytest.raises(ExportError) as refused:
        export_json(repo, small_disk)
    assert str(refused.value).startswith(f"cannot export to {small_disk}: No space left on device")
    assert "every file there is whole" in str(refused.value)
    after = {p.name: p.read_bytes() for p in small_disk.iterdir()}
    # The export did not finish: its mark stays, so that import refuses the folder.
    assert INCOMPLETE_MARKER in after and INCOMPLETE_MARKER not in before
    del after[INCOMPLETE_MARKER]
    assert sorted(after) == sorted(before)  # no temporary file left behind
    for name, data in after.items():
        document = json.loads(data)  # whole: the old text or the new one
        assert data == before[name] or document["system_prompt"] == prompt
