"""Concurrent writers through the installed `memstore` executable, with a watcher and readers.

N writer streams each run M `memstore add` processes back to back (some texts identical
across writers, so they fold into `seen`), while `memstore watch` and two `memstore search`
loops run on the same vault. Nothing may be refused, lost or double-counted.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from memstore.core.codec import parse_memory
from memstore.service.store import Store
from memstore.vault import remote
from memstore.vault.files import Vault
from tests.conftest import EXE, commit_count, settings_at, vault_bytes, wait_until

ADD_TIMEOUT_S = 300  # one add process; a hang is a failure, not a stuck test run
JOIN_S = 250  # joining a thread of the test: within the per-test bound (pyproject)


def text_for(writer: int, n: int) -> str:
    """Every fourth add of each writer is shared by all writers; the rest are its own."""
    if n % 4 == 0:
        return f"shared{n // 4} lesson: every writer queues for the vault lock"
    return f"w{writer}m{n} note written by writer {writer} while others write too"


def marker(text: str) -> str:
    """The word that finds exactly this text."""
    return text.split()[0].rstrip(":")


@dataclass
class Runs:
    """What the subprocesses did: one (command, rc, stderr) per finished process."""

    done: list[tuple[str, int, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, what: str, rc: int, stderr: str) -> None:
        with self.lock:
            self.done.append((what, rc, stderr))

    def failures(self) -> list[tuple[str, int, str]]:
        with self.lock:
            return [r for r in self.done if r[1] != 0 or "Traceback" in r[2]]


def writer(vault: Path, index: int, adds: int, runs: Runs) -> None:
    env = {**os.environ, "MEMSTORE_SESSION": f"writer-{index}"}
    for n in range(adds):
        text = text_for(index, n)
        done = subprocess.run(
            [str(EXE), "add", text, "-w", "global", "--vault", str(vault)],
            env=env,
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=ADD_TIMEOUT_S,
        )
        runs.record(f"add {text!r}", done.returncode, done.stderr)


def search_loop(vault: Path, query: str, stop: threading.Event, runs: Runs) -> None:
    while not stop.is_set():
        done = subprocess.run(
            [str(EXE), "search", query, "--all", "--vault", str(vault)],
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=ADD_TIMEOUT_S,
        )
        runs.record(f"search {query!r}", done.returncode, done.stderr)
        stop.wait(0.1)  # pace the readers so they do not take both cores from the writers


def start_watcher(vault: Path, log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as handle:
        watcher = subprocess.Popen(
            [str(EXE), "watch", "--vault", str(vault)], stdout=handle, stderr=subprocess.STDOUT
        )
    wait_until(lambda: Vault(vault).is_watched() or watcher.poll() is not None, 30, "watcher start")
    assert watcher.poll() is None, log.read_text(encoding="utf-8")
    return watcher


def stop_watcher(watcher: subprocess.Popen[bytes], log: Path) -> None:
    watcher.send_signal(signal.SIGINT)
    try:
        rc = watcher.wait(timeout=30)
    except subprocess.TimeoutExpired:
        watcher.kill()
        watcher.wait(timeout=10)
        raise AssertionError("memstore watch did not stop within 30 s of SIGINT") from None
    output = log.read_text(encoding="utf-8")
    assert rc == 0 and "Traceback" not in output, output[-3000:]


def run_concurrently(vault: Path, tmp_path: Path, writers: int, adds: int) -> Runs:
    """Run the writers to the end while a watcher and two search loops run."""
    runs = Runs()
    log = tmp_path / "watch.log"
    watcher = start_watcher(vault, log)
    stop = threading.Event()
    readers = [
        threading.Thread(target=search_loop, args=(vault, query, stop, runs))
        for query in ("shared0 lesson", "writer note")
    ]
    threads = [threading.Thread(target=writer, args=(vault, n, adds, runs)) for n in range(writers)]
    try:
        for thread in [*readers, *threads]:
            thread.start()
        for thread in threads:
            thread.join(timeout=JOIN_S)
        assert not any(t.is_alive() for t in threads), f"a writer ran past {JOIN_S} s"
    finally:
        stop.set()
        for thread in readers:
            thread.join(timeout=JOIN_S)
        if watcher.poll() is None:
            stop_watcher(watcher, log)
    return runs


def last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1][:200] if lines else "(no message)"


def check_vault(vault: Path, writers: int, adds: int, runs: Runs) -> None:
    expected = Counter(text_for(w, n) for w in range(writers) for n in range(adds))
    failures = runs.failures()
    kinds = Counter(f"{what.split()[0]}: {last_line(err)}" for what, _, err in failures)
    assert not failures, f"{len(failures)} of {len(runs.done)} processes failed: {dict(kinds)}"
    memories = [
        parse_memory(data.decode("utf-8"), path=path)
        for path, data in vault_bytes(vault).items()
        if path.endswith(".md")
    ]
    seen = {m.body.strip(): m.seen for m in memories}
    assert len(memories) == len(seen), "one text in two files"
    assert set(seen) == set(expected), f"lost: {sorted(set(expected) - set(seen))[:5]}"
    wrong = {t: (seen[t], n) for t, n in expected.items() if seen[t] != n}
    assert not wrong, f"seen differs from adds (seen, adds): {wrong}"
    assert commit_count(vault) == 1 + writers * adds  # init, then one commit per add
    with Store.open(settings_at(vault)) as store:
        by_text = {m.body.strip(): m.id for m in memories}
        for text, memory_id in by_text.items():
            hits = store.search(marker(text), workspace=None, k=3, catch_up=False).hits
            assert [h.id for h in hits] == [memory_id], f"{text!r} not findable"
    check_repository(vault)


def check_repository(vault: Path) -> None:
    fsck = subprocess.run(
        ["git", "fsck", "--full"], cwd=vault, capture_output=True, text=True, encoding="utf-8"
    )
    output = fsck.stdout + fsck.stderr
    assert fsck.returncode == 0, output
    assert not [
        line
        for line in output.splitlines()
        if line.split(" ")[0] in ("error:", "missing", "broken")
    ], output
    doctor = subprocess.run(
        [str(EXE), "doctor", "--vault", str(vault)],
        capture_output=True,
        text=True,
        encoding="utf-8",
    )
    assert doctor.returncode == 0 and "no drift" in doctor.stdout, doctor.stdout + doctor.stderr
    # (memstore's prunes' lock is a flock on a file that stays: not a git lock left behind)
    locks = (vault / ".git").rglob("*.lock")
    assert sorted(p for p in locks if p.name != f"{remote.PRUNES}.lock") == []


def test_concurrent_writers_with_a_watcher_and_readers_lose_nothing(
    vault: Path, tmp_path: Path
) -> None:
    writers, adds = 4, 8
    runs = run_concurrently(vault, tmp_path, writers, adds)
    check_vault(vault, writers, adds, runs)


@pytest.mark.long
def test_eight_writers_of_a_hundred_adds_each_lose_nothing(vault: Path, tmp_path: Path) -> None:
    writers, adds = 8, 100
    runs = run_concurrently(vault, tmp_path, writers, adds)
    check_vault(vault, writers, adds, runs)
