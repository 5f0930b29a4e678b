"""Progress of long commands: a bar with counts on a terminal, nothing on a pipe, --quiet.

The commands run as the installed executable; the terminal is a real pseudo-terminal.
MEMSTORE_PROGRESS_DELAY=0 makes a bar appear at once (by default it waits a second, so
quick runs show none) — small vaults then stand in for the large ones that need a bar.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import time
from pathlib import Path

import pytest

from memstore.core.codec import derive_id, render_memory, slugify
from memstore.core.model import Memory
from memstore.service.store import Store, init_vault
from memstore.service.transfer import export
from tests.conftest import EXE, git, invoke_memstore, settings_at

NOW = {"MEMSTORE_PROGRESS_DELAY": "0"}


def generated_vault(root: Path, count: int) -> Path:
    """A vault of `count` distinct memories written as files and committed at once."""
    init_vault(root, settings_at(root))
    folder = root / "global" / "2026-12"
    folder.mkdir(parents=True)
    for n in range(count):
        body = f"service {n} listens on port {10000 + n} behind proxy{n % 7} in zone {n % 13}\n"
        memory = Memory(id=derive_id("global", body), workspace="global", body=body)
        (folder / f"{slugify(body)}-{memory.id}.md").write_text(
            render_memory(memory), encoding="utf-8"
        )
    git(root, "add", "-A")
    git(root, "commit", "-qm", f"{count} generated memories")
    return root


def run(vault: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run the executable's `main` in this process with stdout and stderr captured (no
    terminal, as on pipes); the terminal cases run the executable on a pseudo-terminal."""
    return invoke_memstore(*args, vault=vault, env=env)


def on_a_terminal(vault: Path, *args: str, stdout_too: bool = False, **env: str) -> tuple[int, str]:
    """Run memstore with stderr (and, if asked, stdout) on a pseudo-terminal; return its
    exit code and what the terminal showed."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [str(EXE), *args],
        env={**os.environ, "MEMSTORE_VAULT": str(vault), "COLUMNS": "100", **env},
        stdin=subprocess.DEVNULL,
        stdout=follower if stdout_too else subprocess.DEVNULL,
        stderr=follower,
    )
    os.close(follower)
    shown = b""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed: the process is gone
                break
            if not chunk:
                break
            shown += chunk
        elif process.poll() is not None:
            break
    os.close(leader)
    return process.wait(timeout=30), shown.decode("utf-8", errors="replace")


def instruction_file(tmp_path: Path) -> Path:
    claude = tmp_path / "CLAUDE.md"
    claude.write_text(
        "# Deploy\n"
        + "".join(f"- step {n}: run make deploy-{n} before lunch\n" for n in range(25)),
        encoding="utf-8",
    )
    return claude


def export_file(tmp_path: Path, count: int) -> Path:
    """An export of `count` memories none of the test vaults holds."""
    source = tmp_path / "source"
    init_vault(source, settings_at(source))
    with Store.open(settings_at(source)) as store:
        for n in range(count):
            store.add(f"exported memory {n} about cache warmup {n * 7}", workspace="global")
        data = export(store)
    path = tmp_path / "export.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def command(name: str, tmp_path: Path) -> tuple[str, ...]:
    """The arguments of a long command, with the files it needs."""
    return {
        "reindex": ("reindex",),
        "audit": ("audit",),
        "dedupe": ("dedupe", "--list"),
        "import": ("import", str(instruction_file(tmp_path)), "-w", "global"),
        "restore": ("restore", str(export_file(tmp_path, 12))),
    }[name]


LABELS = {
    "reindex": "indexing",
    "audit": "auditing",
    "dedupe": "comparing",
    "import": "importing",
    "restore": "restoring",
}


@pytest.mark.parametrize("name", LABELS)
def test_on_a_terminal_a_long_command_shows_a_bar_with_counts(tmp_path: Path, name: str) -> None:
    vault = generated_vault(tmp_path / "vault", 40)
    code, shown = on_a_terminal(vault, *command(name, tmp_path), **NOW)
    assert code == 0, shown
    assert LABELS[name] in shown and "100%" in shown, shown
    assert re.search(r"\b(\d+)/\1\b", shown), shown  # counts: done/total at the end


@pytest.mark.parametrize("name", LABELS)
def test_quiet_shows_no_bar_and_no_summary(tmp_path: Path, name: str) -> None:
    vault = generated_vault(tmp_path / "vault", 40)
    code, shown = on_a_terminal(vault, *command(name, tmp_path), "--quiet", stdout_too=True, **NOW)
    assert code == 0 and LABELS[name] not in shown, shown
    if name in ("audit", "dedupe"):
        assert "memories: 40" in shown or " ~ " in shown  # the report asked for stays
    else:
        assert shown == ""


def test_on_a_pipe_no_bar_is_printed(tmp_path: Path) -> None:
    vault = generated_vault(tmp_path / "vault", 600)  # before: a bar's label from 500 on
    for name in ("reindex", "restore"):
        done = run(vault, *command(name, tmp_path), **NOW)
        assert done.returncode == 0 and done.stderr == "", (name, done.stderr)
        assert done.stdout.startswith(("indexed 600", "restored: 12 added"))


def test_a_quick_command_shows_no_bar_even_on_a_terminal(tmp_path: Path) -> None:
    vault = generated_vault(tmp_path / "vault", 5)
    code, shown = on_a_terminal(vault, "reindex", MEMSTORE_PROGRESS_DELAY="30")
    assert code == 0 and "indexing" not in shown


def test_gc_quiet_prints_nothing_unless_it_is_a_dry_run(tmp_path: Path) -> None:
    vault = generated_vault(tmp_path / "vault", 5)
    done = run(vault, "gc", "--quiet")
    assert done.returncode == 0 and done.stdout == "" and done.stderr == ""
    assert "would pack" in run(vault, "gc", "--dry-run", "--quiet").stdout


def test_sync_quiet_prints_nothing_when_nothing_needs_a_person(tmp_path: Path) -> None:
    vault = generated_vault(tmp_path / "vault", 3)
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(vault, "remote", "add", "origin", str(remote))
    assert run(vault, "sync").returncode == 0
    with Store.open(settings_at(vault)) as store:
        store.add("a memory to push", workspace="global")
    done = run(vault, "sync", "--quiet")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and done.stderr == ""
    assert git(remote, "log", "-1", "--format=%s").startswith("add(global): a memory to push")


def test_gc_on_a_terminal_counts_its_steps(tmp_path: Path) -> None:
    vault = generated_vault(tmp_path / "vault", 5)
    code, shown = on_a_terminal(vault, "gc", **NOW)
    assert code == 0 and "collecting" in shown and "100%" in shown, shown
    assert re.search(r"\b2/2\b", shown), shown  # packing and compacting: one step each


def test_a_sync_that_brings_many_memories_shows_its_indexing(tmp_path: Path) -> None:
    source = generated_vault(tmp_path / "source", 40)
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(source, "remote", "add", "origin", str(remote))
    assert run(source, "sync").returncode == 0
    vault = tmp_path / "vault"
    assert run(vault, "init", str(vault)).returncode == 0
    assert run(vault, "remote", "add", "origin", str(remote)).returncode == 0
    code, shown = on_a_terminal(vault, "sync", **NOW)
    assert code == 0 and "indexing what sync brought" in shown and "100%" in shown, shown
    assert re.search(r"\b(\d+)/\1\b", shown), shown
    quiet_code, quiet = on_a_terminal(vault, "sync", "--quiet", **NOW)
    assert quiet_code == 0 and quiet == "", quiet
