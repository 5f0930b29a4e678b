"""Crash points: kill memstore at named points of every write (MEMSTORE_CRASH_AT) and at
random moments, then prove the next command heals with no manual step: nothing reported
as added is missing, `git fsck` is clean, git's status is clean, and search answers what a
fresh reindex answers."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from memstore.service.store import Store, init_vault
from memstore.vault import remote
from tests.cli.test_upkeep import cli
from tests.conftest import EXE, commit_count, git, run_memstore, settings_at

QUERIES = ("nginx upload", "deploy approval", "pnpm", "postgres index", "after the crash")
TEXTS = (
    "Upload 413 is nginx client_max_body_size, not the app",
    "Staging deploys need approval from maria",
    "Use pnpm, not npm, in the webshop repository",
    "The postgres orders table needs an index on created_at",
    "Retry flaky payment tests once, never more",
)


def make_vault(path: Path) -> list[str]:
    """A vault with a few memories; returns their ids."""
    init_vault(path, settings_at(path))
    with Store.open(settings_at(path)) as store:
        return [store.add(text, workspace="webshop").id for text in TEXTS]


def killed(done: subprocess.CompletedProcess[str]) -> bool:
    return done.returncode == -signal.SIGKILL


def memory_texts(vault: Path) -> str:
    # sorted: a folder lists its files in an order of the file system's own (tmpfs: newest first)
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(vault.glob("[!.]*/**/*.md")))


def searches(vault: Path) -> list[object]:
    """What every query finds across workspaces (one store for all: the answers, not the
    command's start, are compared before and after a reindex)."""
    with Store.open(settings_at(vault)) as store:
        return [[h.id for h in store.search(q, workspace=None, k=10).hits] for q in QUERIES]


def assert_healthy(vault: Path, reported: list[str]) -> None:
    """The next command works, nothing reported is lost, git and the index are consistent.

    The next command is the executable, in a fresh process as after a real crash; the
    checks after it run in-process (the same commands, without a process each).
    """
    done = run_memstore("add", "written after the crash", "-w", "notes", vault=vault)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    texts = memory_texts(vault)
    assert all(text in texts for text in reported)
    assert subprocess.run(["git", "fsck", "--full"], cwd=vault, capture_output=True).returncode == 0
    assert git(vault, "status", "--porcelain") == ""
    # git's lock files; memstore's prunes' lock is a flock on a file that stays (its holder's
    # death releases it: a fetch, a flush's build and a prune take it, none leaves it held)
    kept = f"{remote.PRUNES}.lock"
    assert not [p for p in (vault / ".git").glob("*.lock") if p.name != kept]
    before = searches(vault)
    assert cli(vault, "reindex").returncode == 0
    assert searches(vault) == before
    doctor = cli(vault, "doctor")
    assert doctor.returncode == 0 and "Traceback" not in doctor.stderr, doctor.stdout


def crash(vault: Path, point: str, *args: str, stdin: str | None = None) -> None:
    done = run_memstore(*args, vault=vault, stdin=stdin, env={"MEMSTORE_CRASH_AT": point})
    assert killed(done), f"never reached {point}: rc {done.returncode} {done.stderr}"


WRITES: dict[str, Callable[[Path, list[str]], tuple[str, ...]]] = {
    "add": lambda v, ids: ("add", "a brand new lesson about caching", "-w", "webshop"),
    "add-duplicate": lambda v, ids: ("add", TEXTS[0], "-w", "webshop"),
    "confirm": lambda v, ids: ("confirm", ids[1]),
    "forget": lambda v, ids: ("forget", ids[2], "--yes"),
    "promote": lambda v, ids: ("promote", ids[3], "--kind", "lesson"),
}


@pytest.mark.parametrize("point", ["memory-written", "git-commit"])
@pytest.mark.parametrize("command", sorted(WRITES))
def test_a_write_killed_at_a_crash_point_heals(tmp_path: Path, command: str, point: str) -> None:
    vault = tmp_path / "vault"
    ids = make_vault(vault)
    crash(vault, point, *WRITES[command](vault, ids))
    assert_healthy(vault, list(TEXTS[:2]))


@pytest.mark.parametrize("command", ["add", "add-duplicate", "confirm", "promote"])
def test_a_write_killed_before_its_rename_leaves_no_temp_file(tmp_path: Path, command: str) -> None:
    vault = tmp_path / "vault"
    ids = make_vault(vault)
    crash(vault, "temp-written", *WRITES[command](vault, ids))
    assert list(vault.glob("webshop/**/.*.tmp")), "the kill left its temp file"
    assert_healthy(vault, list(TEXTS[:2]))  # git status is clean: the temp file is gone


@pytest.mark.parametrize("point", ["git-commit", "restore-written"])
def test_restore_killed_heals(tmp_path: Path, point: str) -> None:
    source = tmp_path / "source"
    make_vault(source)
    exported = cli(source, "export")
    assert exported.returncode == 0
    dump = tmp_path / "memory.json"
    dump.write_text(exported.stdout, encoding="utf-8")
    vault = tmp_path / "vault"
    init_vault(vault, settings_at(vault))
    crash(vault, point, "restore", str(dump))
    assert_healthy(vault, [])
    assert cli(vault, "restore", str(dump)).returncode == 0
    assert_healthy(vault, list(TEXTS))


@pytest.mark.parametrize("point", ["import-written", "git-commit"])
def test_import_killed_heals(tmp_path: Path, point: str) -> None:
    vault = tmp_path / "vault"
    make_vault(vault)
    rules = tmp_path / "CLAUDE.md"
    rules.write_text("# Rules\n- Always run ruff before committing\n", encoding="utf-8")
    crash(vault, point, "import", str(rules), "-w", "webshop")
    assert_healthy(vault, list(TEXTS))


def test_reindex_killed_heals(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    make_vault(vault)
    crash(vault, "reindex", "reindex")
    assert_healthy(vault, list(TEXTS))


@pytest.mark.parametrize("point", ["memory-written", "git-commit"])
def test_serve_killed_in_memory_add_heals(tmp_path: Path, point: str) -> None:
    vault = tmp_path / "vault"
    make_vault(vault)
    env = {**os.environ, "MEMSTORE_VAULT": str(vault), "MEMSTORE_CRASH_AT": point}
    server = subprocess.Popen(
        [str(EXE), "serve"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "crash-test", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {
                "name": "memory_add",
                "arguments": {"content": "added by an agent, then killed", "workspace": "webshop"},
            },
        },
    ]
    server.communicate("".join(json.dumps(m) + "\n" for m in messages), timeout=60)
    assert server.returncode == -signal.SIGKILL
    assert_healthy(vault, list(TEXTS))


@pytest.fixture
def two_machines(tmp_path: Path) -> tuple[Path, Path]:
    """Vault A with a remote and a local memory; vault B has pushed one of its own."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    a, b = tmp_path / "a", tmp_path / "b"
    make_vault(a)
    assert cli(a, "remote", "add", str(remote)).returncode == 0
    assert cli(a, "sync").returncode == 0
    git(tmp_path, "clone", "-q", str(remote), str(b))
    assert cli(b, "init", str(b)).returncode == 0
    assert cli(b, "add", "written on machine B", "-w", "webshop").returncode == 0
    assert cli(b, "sync").returncode == 0
    return a, b


@pytest.mark.parametrize(
    ("point", "local"),
    [
        ("sync-fetched", True),
        ("sync-merge-commit", True),
        ("checkout", True),
        ("sync-push", True),
        ("checkout", False),  # a fast-forward
    ],
)
def test_sync_killed_heals(two_machines: tuple[Path, Path], point: str, local: bool) -> None:
    a, b = two_machines
    reported = [*TEXTS]
    if local:
        assert cli(a, "add", "written on machine A", "-w", "webshop").returncode == 0
        reported.append("written on machine A")
    crash(a, point, "sync")
    done = run_memstore("sync", vault=a)  # the next command, in a fresh process
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert "written on machine B" in memory_texts(a)
    assert_healthy(a, reported)
    assert cli(a, "sync").returncode == 0
    assert cli(b, "sync").returncode == 0
    assert memory_texts(b) == memory_texts(a)


# --- randomized kills -------------------------------------------------------------------


def bulk_vault(path: Path, count: int) -> None:
    """A vault of `count` memories written as files and committed by hand (fast to build)."""
    init_vault(path, settings_at(path))
    rng = random.Random(7)
    words = " ".join(TEXTS).lower().split()  # the memories above, reshuffled
    for n in range(count):
        folder = path / f"ws{n % 5}"
        folder.mkdir(exist_ok=True)
        text = " ".join(rng.choice(words) for _ in range(8)) + f" fact {n}"
        (folder / f"fact-{n}-m{n:07d}.md").write_text(
            f"---\nid: m{n:07d}\nkind: note\nseen: 1\n---\n{text}\n", encoding="utf-8"
        )
    git(path, "add", "-A")
    git(path, "commit", "-qm", "bulk memories")
    assert cli(path, "reindex").returncode == 0


def kill_loop(vault: Path, kills: int, seed: int) -> list[str]:
    """Start random writes and SIGKILL each at a random moment; return texts reported added.

    Prints how many processes the kill caught mid-command (the figure in reliability.md).
    """
    rng = random.Random(seed)
    reported: list[str] = []
    caught = 0
    env = {**os.environ, "MEMSTORE_VAULT": str(vault)}
    for n in range(kills):
        text = f"memory number {n} about caching"
        command = rng.choice(
            [
                ["add", text, "-w", "ws1"],
                ["add", "memory number 0 about caching", "-w", "ws1"],
                ["confirm", f"m{rng.randrange(50):07d}"],
                ["forget", f"m{rng.randrange(50, 100):07d}", "--yes"],
                ["reindex"],
            ]
        )
        process = subprocess.Popen(
            [str(EXE), *command], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        time.sleep(rng.uniform(0.05, 0.9))  # the moment of the kill is the random variable
        process.send_signal(signal.SIGKILL)
        _out, err = process.communicate(timeout=60)
        assert b"Traceback" not in err, err.decode()
        caught += process.returncode == -signal.SIGKILL
        if process.returncode == 0 and command[0] == "add":
            reported.append(command[1])
    print(f"\n{kills} kills: {caught} mid-command, {len(reported)} adds reported before the kill")
    return reported


def test_random_kills_short(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    bulk_vault(vault, 300)
    reported = kill_loop(vault, kills=12, seed=1)
    assert_healthy(vault, reported)


@pytest.mark.long
def test_random_kills_long(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    bulk_vault(vault, 3000)
    reported = kill_loop(vault, kills=120, seed=2)
    assert_healthy(vault, reported)
    assert commit_count(vault) >= 2


def test_a_killed_reindex_leaves_no_building_folder_past_the_next_command(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    make_vault(vault)
    crash(vault, "reindex", "reindex")
    left = list((vault / ".memstore").glob("index.building-*"))
    assert len(left) == 1  # the half-built index of the killed run
    done = run_memstore("search", "cache", vault=vault)  # any next command, not only a reindex
    assert done.returncode == 0, done.stderr
    assert not left[0].exists()
    assert f"removed {left[0]}, left by a reindex that was killed" in done.stderr
