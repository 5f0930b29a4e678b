"""`memstore daemon --stop` with recall counters pending (issue 39): it returns within a
second, writes no memory file, and the next writer writes every count."""

from __future__ import annotations

import time
from pathlib import Path

from memstore.core.codec import derive_id, render_memory
from memstore.core.model import Memory
from memstore.ops import client
from memstore.service.store import Store, init_vault
from tests.conftest import git, run_memstore, settings_at
from tests.daemon.test_daemon import env, start_daemon  # noqa: F401 (the fixture)

MEMORIES = 400  # the old exit flush took 2-5 s for this many on these machines


def vault_of_many(path: Path, count: int) -> list[str]:
    """A committed vault of `count` memories across months, written as a sync brings them."""
    init_vault(path, settings_at(path))
    ids = []
    for n in range(count):
        body = f"Service {n} restarts need the warm cache primed, ticket OPS-{n * 37}\n"
        memory_id = derive_id("infra", body, 8)
        month = f"2026-{n % 12 + 1:02d}"
        memory = Memory(
            id=memory_id,
            workspace="infra",
            body=body,
            keywords=("cache", f"service{n}"),
            created=f"{month}-03T10:00:00Z",
        )
        folder = path / "infra" / month
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"service-{n}-{memory_id}.md").write_text(render_memory(memory), "utf-8")
        ids.append(memory_id)
    git(path, "add", "-A")
    git(path, "commit", "-qm", "import")
    return ids


def test_stop_returns_within_a_second_with_counters_pending_and_the_next_writer_writes_them(
    tmp_path: Path,
    env: dict[str, str],  # noqa: F811
) -> None:
    vault = tmp_path / "vault"
    ids = vault_of_many(vault, MEMORIES)
    with Store.open(settings_at(vault)) as store:
        store.catch_up()
        store.usage.record(ids, store.writer.timestamp())  # a working session's recalls
        store.usage.record(ids[:10], store.writer.timestamp())
    before = git(vault, "rev-parse", "HEAD")
    start_daemon(env, vault)
    started = time.monotonic()
    stopped = run_memstore("daemon", "--stop", "--vault", str(vault), base_env=env)
    took = time.monotonic() - started
    assert stopped.stdout == f"stopped the daemon for {vault}\n", stopped.stderr
    assert took <= 1.0, f"memstore daemon --stop took {took:.2f} s"  # the process, start to end
    assert not client.is_running(vault)
    assert git(vault, "rev-parse", "HEAD") == before  # no file written on the way out
    with Store.open(settings_at(vault)) as store:  # the next writer (a tick, a sync)
        pending = store.usage.pending()
        assert len(pending) == MEMORIES and sum(c for c, _ in pending.values()) == MEMORIES + 10
        assert store.flush_usage() == MEMORIES
        assert store.usage.pending() == {}
    assert git(vault, "log", "-1", "--format=%s") == f"recall: usage of {MEMORIES} memories\n"
    texts = [p.read_text("utf-8") for p in vault.glob("infra/*/*.md")]
    assert sorted(t.count("\nrecalled: 2\n") for t in texts).count(1) == 10
    assert sum("\nrecalled: 1\n" in t for t in texts) == MEMORIES - 10
