"""Index copies kept aside go when nothing can want them, and `doctor` lists those kept.

A damaged index's copy stays KEEP_DAYS (to be looked at), then the next open removes it; a
copy another memstore version built (an upgrade taken for damage before format 12) goes at
the next open whatever its age; `memstore gc` removes them all at once. Run through the
installed `memstore` executable, on copies of a real index.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import time
from pathlib import Path

from memstore.catalog.leftovers import KEEP_DAYS
from tests.conftest import invoke_memstore

DAY = 86400


def _aside(state: Path, age_s: float) -> Path:
    """Copy the live index aside as `quarantine` names it, `age_s` seconds ago."""
    stamp = time.strftime("%Y%m%dT%H%M%S", time.localtime(time.time() - age_s))
    copy = state / f"index.damaged-{stamp}"
    shutil.copytree(state / "index", copy)
    return copy


def test_old_and_outdated_copies_go_at_the_next_open_and_doctor_lists_the_rest(
    tmp_path: Path,
) -> None:
    vault = tmp_path / "vault"
    env = {**os.environ, "MEMSTORE_NO_DAEMON": "1", "MEMSTORE_VAULT": str(vault)}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return invoke_memstore(*args, env=env)

    assert cli("init", str(vault)).returncode == 0
    assert cli("add", "the replica lag alarm fires at 30 s", "-w", "infra").returncode == 0
    state = vault / ".memstore"
    expired = _aside(state, (KEEP_DAYS + 3) * DAY)
    young = _aside(state, 1 * DAY)
    broken = _aside(state, 2 * DAY)  # damage: its manifest does not read
    (broken / "manifest.sqlite").write_bytes(b"not a database at all" * 100)
    upgrade = _aside(state, 3600)  # what the 11 -> 12 upgrade kept: another format's
    with contextlib.closing(sqlite3.connect(upgrade / "manifest.sqlite")) as db, db:
        db.execute("UPDATE meta SET value = '11' WHERE name = 'format'")
    building = state / f"index.building-{os.getpid()}"  # a live process's rebuild
    building.mkdir()

    doctor = cli("doctor")
    assert doctor.returncode == 0 and doctor.stderr == ""  # removed quietly
    left = sorted(p.name for p in state.iterdir() if p.name.startswith("index"))
    assert left == sorted(["index", broken.name, young.name, building.name])
    assert not expired.exists() and not upgrade.exists()
    assert "replica lag alarm" in cli("search", "replica lag", "--all").stdout  # live index
    lines = doctor.stdout.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("index copies kept"))
    size = sum(f.stat().st_size for f in young.rglob("*") if f.is_file())
    assert lines[head].startswith("index copies kept aside (2, ")
    assert (
        f"'memstore gc' removes them now; memstore removes each once {KEEP_DAYS} days"
        in (lines[head])
    )
    assert lines[head + 1].startswith(f"  .memstore/{broken.name}: ")
    assert "2.0 days old (damaged; removed in 5.0 days)" in lines[head + 1]
    assert lines[head + 2] == (
        f"  .memstore/{young.name}: {size / 1e6:.1f} MB, 1.0 days old "
        "(damaged; removed in 6.0 days)"
    )
    listed = json.loads(cli("doctor", "--json").stdout)["kept_copies"]
    assert [(Path(c["path"]).name, c["bytes"], c["outdated"]) for c in listed][1] == (
        young.name,
        size,
        False,
    )
    assert abs(listed[1]["age_s"] - DAY) < 600

    building.rmdir()  # (gc takes the vault lock, so it takes a building folder for a leftover)
    assert cli("gc").returncode == 0
    assert [p.name for p in state.iterdir() if p.name.startswith("index")] == ["index"]
    assert "index copies" not in cli("doctor").stdout


def test_doctor_lists_what_was_moved_out_of_memstores_way_and_gc_removes_it(
    tmp_path: Path,
) -> None:
    vault = tmp_path / "vault"
    env = {**os.environ, "MEMSTORE_NO_DAEMON": "1", "MEMSTORE_VAULT": str(vault)}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return invoke_memstore(*args, env=env)

    assert cli("init", str(vault)).returncode == 0
    assert "moved out of" not in cli("doctor").stdout  # nothing set aside: nothing said
    lock = vault / ".memstore" / "lock"
    lock.unlink(missing_ok=True)
    lock.mkdir()  # a folder where memstore's lock file goes
    (lock / "notes.txt").write_bytes(b"x" * 3000)
    added = cli("add", "the replica lag alarm fires at 30 s", "-w", "infra")
    assert added.returncode == 0 and "moved it to .git/memstore-damaged/lock-" in added.stderr
    (moved,) = (vault / ".git" / "memstore-damaged").iterdir()

    lines = cli("doctor").stdout.splitlines()
    head = lines.index(
        "moved out of memstore's way to .git/memstore-damaged/ (1, 0.0 MB): look, then "
        "'memstore gc' removes them"
    )
    assert lines[head + 1] == f"  .git/memstore-damaged/{moved.name}: 0.0 MB, 0.0 days old"
    (listed,) = json.loads(cli("doctor", "--json").stdout)["set_aside"]
    assert (Path(listed["path"]).name, listed["bytes"]) == (moved.name, 3000)
    assert 0 <= listed["age_s"] < 600

    assert "  .git/memstore-damaged\n" in cli("gc", "--dry-run").stdout  # gc removes the folder
    assert cli("gc").returncode == 0
    assert not moved.exists()
    assert "moved out of" not in cli("doctor").stdout
    assert json.loads(cli("doctor", "--json").stdout)["set_aside"] == []
