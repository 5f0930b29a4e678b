"""A session's first search leaves the comparison of every file to the daemon it starts.

docs/search.md, rule 1: a search without a watcher compares every file with the index once
the last comparison is 5 minutes old (~1 s of CPU at 100,000 memories), and a session's
first search almost always meets that. A one-shot search that starts a daemon afterwards
takes only the quick look, and compares its own hits' files: a memory rewritten in place
while nothing watched is never shown as it was, and one that a rewrite made a match is
found by the daemon's watcher, which compares every file at its start.
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

from memstore.core.config import Settings
from memstore.ops import lean
from memstore.service.store import Store
from tests.conftest import settings_at, wait_until
from tests.daemon.test_daemon import TIMEOUT, env, make_vault, run  # noqa: F401 (fixture)


def manifest_full_at(vault: Path, value: str | None = None) -> str:
    """Return (after setting it to `value`) when the index last compared every file."""
    with sqlite3.connect(vault / ".memstore" / "index" / "manifest.sqlite") as db:
        if value is not None:
            db.execute("UPDATE meta SET value = ? WHERE name = 'full-at'", [value])
        (found,) = db.execute("SELECT value FROM meta WHERE name = 'full-at'").fetchone()
    return str(found)


def rewrite_in_place(path: Path, old: str, new: str) -> None:
    """Rewrite a memory's file in place (same inode, its folder's time unchanged), as an
    editor that saves in place does."""
    folder = os.stat(path.parent)
    text = path.read_text(encoding="utf-8")
    assert old in text
    with open(path, "r+", encoding="utf-8") as handle:
        handle.write(text.replace(old, new))
        handle.truncate()
    os.utime(path.parent, ns=(folder.st_atime_ns, folder.st_mtime_ns))


def settle(folder: Path) -> None:
    """Date `folder`'s files and folders a minute back: a catch-up trusts times that old
    (a time within its last look's tick is looked at again, whatever the rules)."""
    back = time.time_ns() - 60 * 10**9
    for path in [folder, *folder.rglob("*")]:
        os.utime(path, ns=(back, back))


def two_memories(vault: Path) -> tuple[Path, Path]:
    with Store.open(settings_at(vault)) as store:
        deploy = store.add("Deploys copy the build to staging with rsync", workspace="webshop")
        cache = store.add("The product cache is flushed nightly by cron", workspace="webshop")
    settle(vault / "webshop")
    with Store.open(settings_at(vault)) as store:
        store.search("staging")  # indexed, the last full comparison recorded
    return vault / deploy.path, vault / cache.path


def search_before_daemon(vault: Path, query: str) -> list[str]:
    settings = Settings(vault=vault, source="test", session="s", host="h")
    with lean.before_daemon(lean.open_one_shot)(settings, False) as store:
        return [hit.content for hit in store.search(query, workspace="webshop").hits]


def test_a_hit_rewritten_in_place_is_shown_as_it_is_now(vault: Path) -> None:
    deploy, _ = two_memories(vault)
    manifest_full_at(vault, "0")  # the last comparison of every file is long past
    rewrite_in_place(deploy, "with rsync", "with helm ")

    found = search_before_daemon(vault, "staging")

    assert found and "helm" in found[0] and "rsync" not in found[0]
    assert manifest_full_at(vault) != "0"  # its hit had changed: every file was compared


def test_a_rewrite_outside_the_hits_is_left_to_the_daemon(vault: Path) -> None:
    _, cache = two_memories(vault)
    manifest_full_at(vault, "0")
    rewrite_in_place(cache, "by cron", "weekly")

    assert search_before_daemon(vault, "staging")
    assert manifest_full_at(vault) == "0"  # no comparison of every file: the daemon's

    with Store.open(settings_at(vault)) as store:  # a search that starts no daemon: as before
        hits = store.search("weekly", workspace="webshop").hits
    assert [h.path for h in hits] == [str(cache.relative_to(vault))]


def test_the_daemon_the_first_search_starts_finds_the_rewrite(
    tmp_path: Path,
    env: dict[str, str],  # noqa: F811
) -> None:
    vault = make_vault(tmp_path / "vault")
    quiet = {**env, "MEMSTORE_NO_DAEMON": "1"}
    added = run(quiet, "add", "The product cache is flushed nightly by cron", "-w", "webshop",
                "--vault", str(vault), "--json")  # fmt: skip
    assert added.returncode == 0, added.stderr
    assert run(quiet, "search", "cron", "--vault", str(vault)).returncode == 0
    path = next(vault.glob("webshop/**/*product-cache*.md"))
    manifest_full_at(vault, "0")
    rewrite_in_place(path, "by cron", "by airflow")

    first = run(env, "search", "deploy", "--vault", str(vault))  # starts the daemon
    assert first.returncode == 0, first.stderr

    def found() -> bool:
        reply = run(env, "search", "airflow", "--vault", str(vault), "--json")
        return reply.returncode == 0 and "product cache" in reply.stdout

    wait_until(found, TIMEOUT, "the daemon's comparison at its start found the rewrite")
    assert run(env, "daemon", "--stop", "--vault", str(vault)).returncode == 0


def test_a_hit_read_in_its_racy_window_and_rewritten_in_that_tick_is_shown_as_it_is_now(
    vault: Path,
) -> None:
    # A file read within a clock tick of its change is recorded racy (catalog/plan.py): a
    # same-size rewrite in that tick keeps the fingerprint it was read with. The first
    # search's look at its hits compared fingerprints only, and showed the old text.
    deploy, _ = two_memories(vault)
    later = time.time_ns() + 5_000_000_000
    tick = later - later % 1_000_000_000  # a whole second still to come: read as racy
    os.utime(deploy, ns=(tick, tick))
    with Store.open(settings_at(vault)) as store, store.vault.lock(5):
        assert store.indexer.catch_up(full=True).updated == (str(deploy.relative_to(vault)),)
        assert store.indexer.manifest.racy(None) == {str(deploy.relative_to(vault))}
    # Its folders recorded as settled (as a daemon records folders only its own writes
    # moved): the quick look lists none of them again, so the hit check alone can see it.
    settle(vault / "webshop")
    os.utime(deploy, ns=(tick, tick))
    with sqlite3.connect(vault / ".memstore" / "index" / "manifest.sqlite") as db:
        for folder in [vault / "webshop", *(vault / "webshop").rglob("*")]:
            if folder.is_dir():
                where = str(folder.relative_to(vault))
                db.execute(
                    "UPDATE folders SET mtime_ns = ? WHERE path = ?",
                    [folder.stat().st_mtime_ns, where],
                )
    manifest_full_at(vault, "0")
    rewrite_in_place(deploy, "with rsync", "with helm ")  # the same size...
    os.utime(deploy, ns=(tick, tick))  # ...and the same time: the fingerprint it was read with

    found = search_before_daemon(vault, "staging")

    assert found and "helm" in found[0] and "rsync" not in found[0]
    assert manifest_full_at(vault) != "0"  # its hit had changed: every file was compared
