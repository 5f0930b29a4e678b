"""The corruption matrix: each kind of damage to .memstore/ heals without a person.

A vault of a few dozen memories is built once (Store.add, then a fresh `memstore reindex`,
whose search results are the reference). Each case copies it, damages one thing under
.memstore/ and runs the installed `memstore` executable: no traceback, exit status 0,
exactly one line saying what happened when an index part was damaged (none when nothing
that matters was), `doctor` finds no drift, and search answers what the fresh reindex did.
Where .memstore/ is truly read-only, search still answers and a write may fail with a
one-line error.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import random
import shutil
import sqlite3
import struct
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from memstore.core.config import Settings
from memstore.service.store import Store, init_vault
from tests.conftest import EXE, invoke_memstore

TOPICS = {
    "webshop": [
        "Upload 413 errors come from nginx client_max_body_size, not the app body parser",
        "Checkout totals round with banker's rounding; the invoice service expects half-up",
        "Stripe webhooks retry for three days: make the payment handler idempotent",
        "Product images are resized by the thumbor sidecar, never in the request path",
        "Cart sessions live in redis with a 30 minute TTL refreshed on every page view",
        "The search page debounces typing by 250 ms or elasticsearch gets hammered",
        "Coupon codes are case-insensitive; store them uppercased and compare uppercased",
        "Order emails render with mjml; run make emails after changing a template",
        "Tax rates come from the vatlayer API and are cached for one day",
        "Feature flags are read from launchdarkly at startup, not per request",
        "The admin export times out past 50k orders: stream the CSV instead",
        "Playwright end-to-end tests need the seed fixture loaded with make seed",
    ],
    "infra": [
        "Postgres autovacuum falls behind on the events table: lower its scale factor",
        "Redis eviction policy must be allkeys-lru on the cache cluster, noeviction on queues",
        "Terraform state is locked in dynamodb; a crashed apply leaves the lock behind",
        "Kubernetes pods OOM when the JVM ignores cgroup limits: set MaxRAMPercentage",
        "The staging deploy needs approval from two people in the deploy channel",
        "Grafana alerts route through opsgenie; silence them there, not in grafana",
        "Backups run at 02:00 UTC with pgbackrest and are tested every Monday",
        "Certificates renew with cert-manager; a wrong DNS01 token fails silently",
        "Log retention is 14 days in loki; ship audit logs to the bucket instead",
        "The VPN drops idle SSH sessions after ten minutes: set ServerAliveInterval",
        "Ansible runs need the vault password file from the team password manager",
        "Nightly vacuum full on the reports database blocks writes for minutes",
    ],
    "global": [
        "Use pnpm, not npm: the lockfile is pnpm-lock.yaml and npm breaks workspace links",
        "Commit messages follow conventional commits; the changelog is generated from them",
        "Python services pin dependencies with uv lock; never pip install into the venv",
        "Run ruff format before committing or the pre-commit hook rejects the change",
        "Timestamps are stored in UTC and shown in the viewer's time zone",
        "Secrets come from the environment at runtime, never from files in the repository",
        "Pull requests need one review and green CI; docs-only changes skip the e2e job",
        "Prefer structured logging with json fields over interpolated log strings",
        "Database migrations must be backward compatible for one release",
        "The monorepo builds with turborepo; cache misses usually mean an env var changed",
        "Error budgets are tracked weekly; freeze features when the budget runs out",
        "Dates in filenames use ISO 8601 so they sort correctly",
    ],
}
QUERIES = (
    "nginx upload 413",
    "postgres autovacuum vacuum",
    "redis eviction cache",
    "pnpm lockfile",
    "deploy approval",
    "logs retention",
)
NEW_TEXT = "Kafka consumer lag alarms fire when retention is shorter than the batch window"


@dataclass(frozen=True)
class Pristine:
    """The built vault and what a fresh reindex of it answers."""

    vault: Path
    home: Path
    results: dict[str, list[str]]
    shown_id: str
    shown: str


@dataclass(frozen=True)
class Damage:
    """One kind of damage to .memstore/ and what memstore should say about it."""

    name: str
    apply: Callable[[Path], None]
    notice: bool | None = True  # True: one line must say what happened; None: at most one
    read_only: bool = False  # .memstore/ is mounted read-only (writes may fail, one line)
    deep: bool = False  # inside a file: only doctor's full read is sure to meet it


# --- ways to damage a file or folder --------------------------------------------------


def garble(path: Path, offset: int | None = None, length: int = 4096) -> None:
    size = path.stat().st_size
    start = size // 2 if offset is None else max(0, min(offset, size - 1))
    noise = random.Random(f"{path.name}{start}").randbytes(max(16, min(length, size - start)))
    with path.open("r+b") as file:
        file.seek(start)
        file.write(noise)


def truncate(path: Path) -> None:
    with path.open("r+b") as file:
        file.truncate(path.stat().st_size // 2)


def remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink()


def by_file(path: Path) -> None:
    remove(path)
    path.write_text("not what memstore left here\n", encoding="utf-8")


def by_folder(path: Path) -> None:
    remove(path)
    path.mkdir()
    (path / "stray.txt").write_text("stray\n", encoding="utf-8")


def index(state: Path) -> Path:
    return state / "index"


def manifest(state: Path) -> Path:
    return index(state) / "manifest.sqlite"


def entities(state: Path) -> Path:
    return index(state) / "search" / "entities.sqlite"


def whoosh(state: Path) -> Path:
    return index(state) / "search" / "whoosh"


def toc(state: Path) -> Path:
    return next(whoosh(state).glob("_MAIN_*.toc"))


def segment(state: Path) -> Path:
    return max(whoosh(state).glob("*.seg"), key=lambda p: p.stat().st_size)


def on(target: Callable[[Path], Path], action: Callable[[Path], None]) -> Callable[[Path], None]:
    return lambda state: action(target(state))


def garbled_texts(path: Path) -> None:
    """Garble a segment's stored texts (its `_stored.col` part): a search
    that ranks a memory reads them, while every posting still decodes. Where plain
    "segment garbled" lands depends on the segment's size, which moves with the dates in
    the memories: on some days it hit the stored texts, on others the postings."""
    with path.open("rb") as file:
        offset, _ = struct.unpack("!qi", file.read(12))  # whoosh's compound-file header
        file.seek(offset)
        parts = pickle.load(file)
    (stored,) = [part for name, part in parts.items() if name.endswith("_stored.col")]
    garble(path, stored["offset"], stored["length"] * 3 // 4)  # the texts, not their table


def garbled_mid(path: Path) -> None:
    garble(path, 8192)


def garbled_head(path: Path) -> None:
    garble(path, 0, 100)


def emptied(path: Path) -> None:
    path.write_bytes(b"")


def stray_wal(state: Path) -> None:
    (index(state) / "manifest.sqlite-wal").write_bytes(random.Random(7).randbytes(5000))


def leftover_build(state: Path) -> None:
    (state / "index.building-99999" / "search").mkdir(parents=True)
    (state / "index.building-99999" / "manifest.sqlite").write_bytes(b"half a build")


def state_files_garbled(state: Path) -> None:
    for path in (state / "state").iterdir():
        garble(path, 0, 64)


def lock(state: Path) -> Path:
    return state / "lock"


def watcher_lock(state: Path) -> Path:
    return state / "watcher.lock"


def write_lock(state: Path) -> Path:
    return whoosh(state) / "MAIN_WRITELOCK"


def usage(state: Path) -> Path:
    return state / "usage.sqlite"


def state_folder(state: Path) -> Path:
    return state / "state"


def search_folder(state: Path) -> Path:
    return index(state) / "search"


def nothing(_state: Path) -> None:
    pass


DAMAGE = [
    Damage("manifest garbled", on(manifest, garbled_mid), deep=True),
    Damage("manifest header garbled", on(manifest, garbled_head)),
    Damage("manifest truncated", on(manifest, truncate)),
    Damage("manifest emptied", on(manifest, emptied)),
    Damage("manifest deleted", on(manifest, remove)),
    Damage("manifest replaced by a folder", on(manifest, by_folder)),
    Damage("manifest WAL garbage", stray_wal, notice=False),
    Damage("entity table garbled", on(entities, garbled_mid), deep=True),
    Damage("entity table header garbled", on(entities, garbled_head)),
    Damage("entity table truncated", on(entities, truncate)),
    Damage("entity table deleted", on(entities, remove)),
    Damage("table of contents deleted", on(toc, remove)),
    Damage("table of contents garbled", on(toc, lambda p: garble(p, 100, 200))),
    Damage("table of contents truncated", on(toc, truncate)),
    Damage("segment garbled", on(segment, lambda p: garble(p, None, 2048)), deep=True),
    Damage("segment's stored texts garbled", on(segment, garbled_texts), deep=True),
    Damage("segment header garbled", on(segment, lambda p: garble(p, 0, 64))),
    Damage("segment truncated", on(segment, truncate)),
    Damage("segment deleted", on(segment, remove)),
    Damage("whoosh folder deleted", on(whoosh, remove)),
    Damage("search folder replaced by a file", on(search_folder, by_file)),
    Damage("index folder deleted", on(index, remove), notice=False),  # a first index
    Damage("index folder emptied", on(index, by_folder)),
    Damage("index folder replaced by a file", on(index, by_file)),
    Damage("whoosh write lock replaced by a folder", on(write_lock, by_folder)),
    Damage("leftover half-built index", leftover_build),  # removed by the next command: said
    Damage("lock file garbled", on(lock, garbled_head), notice=None),
    Damage("watcher lock replaced by a folder", on(watcher_lock, by_folder), notice=None),
    Damage("usage counters garbled", on(usage, garbled_head), notice=None),
    Damage("usage counters deleted", on(usage, remove), notice=None),
    Damage("state files garbled", state_files_garbled, notice=None),
    Damage(".memstore deleted", remove, notice=False),
    Damage("lock file replaced by a folder", on(lock, by_folder), notice=None),
    Damage("state folder replaced by a file", on(state_folder, by_file), notice=None),
    Damage(".memstore replaced by a file", by_file),
    Damage(".memstore read-only", nothing, notice=False, read_only=True),
    Damage(".memstore read-only, toc deleted", on(toc, remove), read_only=True),
]


# --- the built vault --------------------------------------------------------------------


def environment(home: Path, vault: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMSTORE_", "GIT_"))}
    env.update(
        HOME=str(home),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=str(home / ".gitconfig"),
        MEMSTORE_VAULT=str(vault),
        MEMSTORE_SESSION="corruption-test",
        MEMSTORE_HOST="test-host",
        MEMSTORE_NO_DAEMON="1",  # the fixture copies .memstore/: no daemon socket in it
    )
    return env


def memstore(
    home: Path, vault: Path, *args: str, read_only: bool = False, executable: bool = False
) -> subprocess.CompletedProcess[str]:
    """Run a command on `vault`: the executable's `main` in this process, or (read-only, or
    when asked) the installed executable in a process of its own."""
    if not (read_only or executable):
        unset: dict[str, str | None] = {
            k: None for k in os.environ if k.startswith(("MEMSTORE_", "GIT_"))
        }
        return invoke_memstore(*args, env={**unset, **environment(home, vault)})
    command = [str(EXE), *args]
    if read_only:  # root ignores permission bits: a read-only mount binds root too
        script = 'mount --bind "$0" "$0" && mount -o remount,ro,bind "$0" && exec "$@"'
        command = ["unshare", "-m", "sh", "-c", script, str(vault / ".memstore"), *command]
    return subprocess.run(
        command,
        env=environment(home, vault),
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
    )


def ids(done: subprocess.CompletedProcess[str]) -> list[str]:
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    return [hit["id"] for hit in json.loads(done.stdout)["results"]]


def search(home: Path, vault: Path, query: str, **kw: bool) -> subprocess.CompletedProcess[str]:
    return memstore(home, vault, "search", query, "--all", "-k", "3", "--json", **kw)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Pristine:
    root = tmp_path_factory.mktemp("pristine")
    home = root / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Test Person\n\temail = test@example.com\n", encoding="utf-8"
    )
    vault = root / "vault"
    settings = Settings(vault=vault, source="test", session="corruption", host="test-host")
    init_vault(vault, settings)
    with Store.open(settings) as store:
        for workspace, texts in TOPICS.items():
            for n, text in enumerate(texts):
                store.add(text, workspace=workspace, keywords=(f"k{n % 4}",))
        store.recall("redis cache", workspace=None, record_usage=True)  # usage.sqlite
        store.changes_since_last_session("claude-code")  # a file under .memstore/state/
    assert memstore(home, vault, "reindex", executable=True).returncode == 0
    results = {query: ids(search(home, vault, query, executable=True)) for query in QUERIES}
    assert all(results.values()) and len({r[0] for r in results.values()}) == len(QUERIES)
    shown_id = results[QUERIES[0]][0]
    shown = memstore(home, vault, "show", shown_id, executable=True).stdout
    return Pristine(vault, home, results, shown_id, shown)


def copy(pristine: Pristine, tmp_path: Path) -> Path:
    vault = tmp_path / "vault"
    shutil.copytree(pristine.vault, vault, symlinks=True)
    return vault


def notices(*runs: subprocess.CompletedProcess[str]) -> list[str]:
    for done in runs:
        assert "Traceback" not in done.stderr, done.stderr
    return [line for done in runs for line in done.stderr.splitlines() if line.startswith("memstore:")]  # fmt: skip


def can_mount() -> bool:
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return False
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    return probe.returncode == 0


# --- the matrix -------------------------------------------------------------------------


@pytest.mark.parametrize("damage", DAMAGE, ids=[d.name for d in DAMAGE])
def test_damage_heals_to_what_a_fresh_reindex_answers(
    damage: Damage, pristine: Pristine, tmp_path: Path
) -> None:
    if damage.read_only and not can_mount():
        pytest.skip("needs root and unshare to mount .memstore read-only")
    vault = copy(pristine, tmp_path)
    damage.apply(vault / ".memstore")
    home, ro = pristine.home, damage.read_only
    query = QUERIES[DAMAGE.index(damage) % len(QUERIES)]

    runs = []
    if damage.deep:
        runs.append(doctor := memstore(home, vault, "doctor", read_only=ro))
        assert doctor.returncode == 0 and "no drift" in doctor.stdout, doctor.stdout
    runs.append(searched := search(home, vault, query, read_only=ro))
    assert ids(searched) == pristine.results[query]
    runs.append(added := memstore(home, vault, "add", "-w", "infra", NEW_TEXT, read_only=ro))
    if ro:  # the existing index answers; a damaged one is rebuilt in a temporary folder
        said = notices(*runs)
        assert len(said) == (1 if damage.notice else 0), said
        assert all("cannot be written" in line for line in said), said
        assert added.returncode == 0 or added.stderr.startswith("Error: "), added.stderr
        assert added.stderr.count("\n") <= 1, added.stderr
        return
    assert added.returncode == 0, added.stderr
    if not damage.deep:  # the index has the new memory and nothing else differs
        runs.append(doctor := memstore(home, vault, "doctor"))
        assert doctor.returncode == 0 and "no drift" in doctor.stdout, doctor.stdout
    said = notices(*runs)
    least, most = (1, 1) if damage.notice else (0, 0 if damage.notice is False else 1)
    assert least <= len(said) <= most, said
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=vault, capture_output=True, text=True, check=True
    )
    assert status.stdout == ""


# The commands defect 5 named, each as the first to meet the damage.
FIRST_COMMANDS = {
    "add": ("add", "-w", "infra", NEW_TEXT, "--json"),
    "doctor": ("doctor",),
    "doctor --fix": ("doctor", "--fix"),
    "show": ("show", "<shown>"),
}
DEFECT_5 = [
    d
    for d in DAMAGE
    if d.name
    in (
        "manifest garbled",
        "entity table garbled",
        "table of contents deleted",
        "segment garbled",
        "segment's stored texts garbled",
        "index folder replaced by a file",
    )
]


@pytest.mark.parametrize("command", list(FIRST_COMMANDS))
@pytest.mark.parametrize("damage", DEFECT_5, ids=[d.name for d in DEFECT_5])
def test_every_command_meets_damage_without_a_traceback(
    damage: Damage, command: str, pristine: Pristine, tmp_path: Path
) -> None:
    vault = copy(pristine, tmp_path)
    damage.apply(vault / ".memstore")
    args = [pristine.shown_id if a == "<shown>" else a for a in FIRST_COMMANDS[command]]
    done = memstore(pristine.home, vault, *args)
    assert done.returncode == 0, done.stdout + done.stderr
    if command == "show":
        assert done.stdout == pristine.shown
    if command.startswith("doctor"):
        assert "no drift" in done.stdout
    checked = done
    if damage.deep and not command.startswith("doctor"):
        # Garbage inside a segment that still decodes is met for sure only by doctor's full
        # read (a search reads just its terms' postings): the documented contract is that
        # doctor finds and heals it, so the results are compared after doctor.
        checked = memstore(pristine.home, vault, "doctor")
        assert checked.returncode == 0 and "no drift" in checked.stdout, checked.stdout
    after = search(pristine.home, vault, QUERIES[0])
    assert ids(after) == pristine.results[QUERIES[0]]
    said = notices(done, checked, after) if checked is not done else notices(done, after)
    # a damaged part a command never reads may wait for the next one that does (doctor reads all)
    assert len(said) == 1 or (len(said) == 0 and command in ("show", "add")), said
    if command == "add":
        assert (
            f"add(infra): {NEW_TEXT[:20]}"
            in subprocess.run(
                ["git", "log", "-1", "--format=%s"], cwd=vault, capture_output=True, text=True
            ).stdout
        )


@pytest.mark.parametrize("schema", ["this", "older"])
def test_an_index_of_another_format_is_rebuilt_and_not_kept_aside(
    tmp_path: Path, schema: str
) -> None:
    vault = tmp_path / "vault"
    no_daemon = {**os.environ, "MEMSTORE_NO_DAEMON": "1", "MEMSTORE_VAULT": str(vault)}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return invoke_memstore(*args, env=no_daemon)

    assert cli("init", str(vault)).returncode == 0
    assert cli("add", "the replica lag alarm fires at 30 s", "-w", "infra").returncode == 0
    manifest = vault / ".memstore" / "index" / "manifest.sqlite"
    with contextlib.closing(sqlite3.connect(manifest)) as db, db:
        db.execute("UPDATE meta SET value = '1' WHERE name = 'format'")  # an old memstore's
        if schema == "older":  # format 11's tables: no `session` column, which 12 indexes
            db.execute("DROP INDEX files_session")
            db.execute("ALTER TABLE files DROP COLUMN session")
    found = cli("search", "replica lag", "--all")
    assert found.returncode == 0 and "replica lag alarm" in found.stdout
    said = f"index at {vault / '.memstore' / 'index'} was built by another memstore version"
    assert found.stderr.startswith(f"memstore: {said}: rebuilt it from 1 memory")
    assert found.stderr.count("\n") == 1
    assert sorted(p.name for p in (vault / ".memstore").iterdir() if "index" in p.name) == [
        "index"
    ]  # nothing kept aside: it was outdated, not damaged
    assert cli("search", "replica lag", "--all").stderr == ""  # once


@pytest.mark.parametrize("standing", ["nothing", "a journal left"])
def test_an_add_leaves_its_write_journal_empty(store: Store, standing: str) -> None:
    """An add journals its file and empties the journal once committed (its file removed);
    the next writer then finds nothing to undo (one a killed writer left is undone first)."""
    journal = store.vault.state_dir / "state" / "writing"
    if standing == "a journal left":
        store.vault.write_state("writing", "0123 global/2026-01/gone-abcdefgh.md")
    added = store.add("the journal of this add is emptied", workspace="global")
    assert store.vault.read_state("writing") == ""
    assert not journal.exists()
    again = store.add("a second add after it undoes nothing", workspace="global")
    assert (store.vault.root / added.path).is_file() and (store.vault.root / again.path).is_file()
