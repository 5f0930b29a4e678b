"""`memstore merge-file`, git's merge driver: it merges with memstore's rules and starts lean
(git runs it once per memory a pull merges)."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from memstore.core.codec import render_memory
from memstore.core.merge import merge_file
from memstore.core.model import Memory
from tests.conftest import EXE, invoke_memstore

BASE = Memory(id="k3xq9v2m", workspace="global", body="port is 5432\n", keywords=("db",), seen=2)
OURS = replace(BASE, keywords=("db", "postgres"), seen=3)
THEIRS = replace(BASE, body="port is 5432 (not 5433)\n", seen=4)
# What a driver run must not load: the command line's framework, the store, git, the index.
HEAVY = ("typer", "click", "pygit2", "whoosh", "memstore.service", "memstore.index")


def three_files(folder: Path) -> list[Path]:
    files = [folder / name for name in ("base.md", "ours.md", "theirs.md")]
    for file, memory in zip(files, (BASE, OURS, THEIRS), strict=True):
        file.write_text(render_memory(memory), encoding="utf-8")
    return files


def test_the_driver_writes_the_merge_into_ours_importing_only_the_merge_rules(
    tmp_path: Path,
) -> None:
    base, ours, theirs = three_files(tmp_path)
    expected = merge_file(
        "global/k3xq9v2m.md", base.read_bytes(), ours.read_bytes(), theirs.read_bytes()
    )
    # the executable's main, as git starts it, in a fresh interpreter that reports what it loaded
    script = (
        "import atexit, json, sys\n"
        "atexit.register(lambda: print(json.dumps(sorted(sys.modules))))\n"
        "from memstore.launcher import main\n"
        f"sys.argv = [{str(EXE)!r}, 'merge-file', *sys.argv[1:]]\n"
        "main()\n"
    )
    args = [str(base), str(ours), str(theirs), "global/k3xq9v2m.md"]
    done = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=60
    )

    assert done.returncode == 0, done.stderr
    assert ours.read_bytes() == expected.data
    text = ours.read_text(encoding="utf-8")
    assert "postgres" in text and "(not 5433)" in text and "seen: 5\n" in text
    loaded = json.loads(done.stdout)
    assert not [m for m in loaded if m.split(".")[0] in HEAVY or m.startswith(HEAVY)]


def test_a_base_git_left_empty_merges_two_added_files(tmp_path: Path) -> None:
    base, ours, theirs = three_files(tmp_path)
    base.write_bytes(b"")  # both sides added the file
    expected = merge_file("x.md", None, ours.read_bytes(), theirs.read_bytes())

    done = invoke_memstore("merge-file", str(base), str(ours), str(theirs))

    assert done.returncode == 0, done.stderr
    assert ours.read_bytes() == expected.data  # %P left out: the file's own name


def test_other_arguments_reach_the_typer_command() -> None:
    helped = invoke_memstore("merge-file", "--help")
    assert helped.returncode == 0 and "git merge driver" in helped.stdout
    assert invoke_memstore("merge-file", "only-one.md").returncode == 2  # a usage error
