"""The resident index: the installed `memstore` executable with and without its daemon.

Every test runs real processes on real vaults: the daemon is started the way a person's
commands start it (or with `memstore daemon`), killed with SIGKILL, refused, starved of its
vault. Ordinary tests run with MEMSTORE_NO_DAEMON=1 (conftest); these unset it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import stat
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memstore.ops import client
from memstore.service.store import Store
from tests.conftest import (
    EXE,
    SAMPLE_VAULT,
    git,
    hang_bound_s,
    invoke_memstore,
    run_memstore,
    settings_at,
    wait_until,
)

TIMEOUT = 30.0
STARTED: list[subprocess.Popen[bytes]] = []  # daemons a test started itself: reaped after it


def make_vault(path: Path) -> Path:
    """A vault holding the sample vault's memories, committed (`memstore init` in-process:
    the daemon, not the init, is what these tests run as processes)."""
    made = invoke_memstore("init", str(path), env={"MEMSTORE_NO_DAEMON": "1"})
    assert made.returncode == 0, made.stderr
    for item in SAMPLE_VAULT.iterdir():
        if item.is_dir():
            shutil.copytree(item, path / item.name)
    git(path, "add", "-A")
    git(path, "commit", "-qm", "import sample vault")
    return path


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """The environment of a person's shell with daemons allowed; every daemon is gone after."""
    allowed = {k: v for k, v in os.environ.items() if k != "MEMSTORE_NO_DAEMON"}
    allowed["MEMSTORE_DAEMON_IDLE"] = "120"  # a daemon a test forgets still ends
    yield allowed
    for process in STARTED:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)
    STARTED.clear()
    for vault in vaults_with_a_lock(tmp_path):
        if client.is_running(vault):
            pid = daemon_pid(vault)
            with _suppress_gone():
                os.kill(pid, signal.SIGKILL)
            wait_until(lambda v=vault: not client.is_running(v), TIMEOUT, "daemon killed")  # type: ignore[misc]


def vaults_with_a_lock(root: Path) -> list[Path]:
    """Every vault under `root` whose daemon lock file exists.

    Walks with os.walk, which skips what vanishes mid-walk: a hook's detached child may
    still be renaming index files in a vault while the test tears down.
    """
    found = []
    for folder, subfolders, files in os.walk(root):
        if Path(folder).name == ".memstore":
            subfolders.clear()  # the index and journals below hold no lock
            if client.LOCK_NAME in files:
                found.append(Path(folder).parent)
    return found


class _suppress_gone:
    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, *_: object) -> bool:
        return kind is ProcessLookupError


def run(
    env: dict[str, str], *args: str, stdin: str | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the installed executable in exactly the environment `env` (daemons allowed)."""
    return run_memstore(*args, base_env=env, stdin=stdin, cwd=cwd)


def daemon_pid(vault: Path) -> int:
    return int((vault / ".memstore" / client.LOCK_NAME).read_text(encoding="utf-8").split()[0])


def status(vault: Path) -> dict[str, object]:
    reply = client.status(vault)
    return dict(reply.data) if reply is not None else {}


def start_daemon(env: dict[str, str], vault: Path) -> subprocess.Popen[bytes]:
    """Start `memstore daemon --background` as the client does, and wait until it answers."""
    with open(vault / ".memstore" / client.LOG_NAME, "ab") as log:
        process = subprocess.Popen(
            [str(EXE), "daemon", "--background", "--vault", str(vault)],
            env=env,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
    STARTED.append(process)
    wait_until(lambda: bool(status(vault)) or process.poll() is not None, TIMEOUT, "daemon answers")
    assert process.poll() is None, "daemon exited at start"
    return process


def requests_served(vault: Path) -> int:
    return int(status(vault)["requests"])  # type: ignore[call-overload]


def test_first_command_starts_a_daemon_and_the_next_is_answered_by_it(
    tmp_path: Path, env: dict[str, str]
) -> None:
    vault = make_vault(tmp_path / "vault")
    env["MEMSTORE_VAULT"] = str(vault)
    first = run(env, "search", "nginx upload")
    assert first.returncode == 0 and "nginx" in first.stdout, first.stderr
    wait_until(lambda: bool(status(vault)), TIMEOUT, "the started daemon answers")
    second = run(env, "search", "nginx upload")
    assert (second.returncode, second.stdout, second.stderr) == (0, first.stdout, "")
    assert requests_served(vault) == 1
    assert run(env, "search", "nginx upload", "--no-daemon").stdout == first.stdout
    assert requests_served(vault) == 1  # --no-daemon did not ask it


QUERIES: list[list[str]] = [
    ["search", "nginx upload"],
    ["search", "deploy staging approval", "--json"],
    ["search", "pnpm", "--context"],
    ["search", "zzzz nothing matches", "--context"],
    ["search", "migrations database", "--all", "-k", "2"],
    ["search", "deploy", "-w", "webshop"],
    ["search", "deploy", "-w", "Not A Workspace"],  # typer's usage error, exit 2
    ["search", "deploy", "-k", "0"],  # typer's usage error, exit 2
    ["search", "--help"],
    ["add", "the CI cache key must include the lockfile hash", "-K", "ci", "-w", "webshop"],
    ["add", "the CI cache key must include the lockfile hash", "-K", "ci", "-w", "webshop"],
    ["add", "-", "--json"],
    ["add", "AKIAQ3EGRJ5LTMWD7XZN is the deploy key"],  # refused: looks like a secret
    ["add", "workspace all is reserved", "-w", "all"],  # typer's usage error, exit 2
]


def test_daemon_and_in_process_print_the_same(tmp_path: Path, env: dict[str, str]) -> None:
    served, alone = make_vault(tmp_path / "served"), make_vault(tmp_path / "alone")
    start_daemon(env, served)
    repo = tmp_path / "webshop"  # a project checkout: its workspace is detected from here
    repo.mkdir()
    git(repo, "init", "-q")
    no_daemon = {**env, "MEMSTORE_NO_DAEMON": "1"}
    for args in QUERIES:
        stdin = "piped text: always run migrations before deploy\n" if "-" in args else None
        outputs = []
        for vault, environment in ((served, env), (alone, no_daemon)):
            given = {**environment, "MEMSTORE_VAULT": str(vault)}
            if vault == alone:  # the same command in this process (`main`, no daemon)
                done = invoke_memstore(*args, env=given, stdin=stdin, cwd=repo)
            else:  # the executable, answered by the daemon
                done = run(given, *args, stdin=stdin, cwd=repo)
            out = re.sub(r'"commit": "[0-9a-f]{40}"', "<commit>", done.stdout)
            outputs.append((done.returncode, out.replace(str(vault), "<vault>"), done.stderr))
        assert outputs[0] == outputs[1], args
    # every search and add above (not --help, nor a usage error) was answered by the daemon
    assert requests_served(served) == len(QUERIES) - 4
    assert not (alone / ".memstore" / client.SOCKET_NAME).exists()


def test_a_client_search_imports_neither_whoosh_nor_pygit2(
    tmp_path: Path, env: dict[str, str]
) -> None:
    vault = make_vault(tmp_path / "vault")
    start_daemon(env, vault)
    code = (
        "import sys\n"
        "sys.argv = ['memstore', 'search', 'nginx upload']\n"
        "from memstore.launcher import main\n"
        "try:\n    main()\nexcept SystemExit as done:\n    status = done.code\n"
        "heavy = ('whoosh', 'pygit2', 'yaml', 'frontmatter', 'watchdog', 'typer', 'logging',"
        " 'memstore.service.store', 'memstore.catalog.indexer', 'memstore.vault.git', 'memstore.ops.output', 'index')\n"
        "print(status, sorted(m for m in heavy if m in sys.modules), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**env, "MEMSTORE_VAULT": str(vault)},
        capture_output=True,
        text=True,
        timeout=hang_bound_s(60),
    )
    assert "nginx" in done.stdout
    assert done.stderr.strip() == "0 []"


def test_socket_is_owner_only_and_works_under_a_long_vault_path(
    tmp_path: Path, env: dict[str, str]
) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60) / "vault"
    assert len(str(deep / ".memstore" / "daemon.sock")) > 108
    vault = make_vault(deep)
    start_daemon(env, vault)
    sock = vault / ".memstore" / client.SOCKET_NAME
    assert stat.S_ISSOCK(sock.stat().st_mode)
    assert stat.S_IMODE(sock.stat().st_mode) == 0o600
    assert stat.S_IMODE(sock.parent.stat().st_mode) == 0o700
    done = run({**env, "MEMSTORE_VAULT": str(vault)}, "search", "nginx upload")
    assert done.returncode == 0 and "nginx" in done.stdout
    assert requests_served(vault) == 1


def test_two_daemons_never_run_for_one_vault(tmp_path: Path, env: dict[str, str]) -> None:
    vault = make_vault(tmp_path / "vault")
    first = start_daemon(env, vault)
    second = subprocess.run(
        [str(EXE), "daemon", "--background", "--vault", str(vault)],
        env=env,
        capture_output=True,
        timeout=hang_bound_s(60),
    )
    assert second.returncode == 0  # it found the lock held and left
    assert status(vault)["pid"] == first.pid == daemon_pid(vault)


def test_a_daemon_killed_with_sigkill_is_replaced_and_leaves_nothing_to_repair(
    tmp_path: Path, env: dict[str, str]
) -> None:
    vault = make_vault(tmp_path / "vault")
    env["MEMSTORE_VAULT"] = str(vault)
    old = start_daemon(env, vault)
    os.kill(old.pid, signal.SIGKILL)
    old.wait(timeout=10)
    assert (vault / ".memstore" / client.SOCKET_NAME).exists()  # stale: refuses connections
    done = run(env, "search", "nginx upload")  # in-process; starts a new daemon
    assert done.returncode == 0 and "nginx" in done.stdout and done.stderr == ""
    wait_until(lambda: bool(status(vault)), TIMEOUT, "the replacement daemon answers")
    assert status(vault)["pid"] != old.pid
    assert run(env, "search", "nginx upload").stdout == done.stdout
    assert requests_served(vault) == 1


def test_kill_during_an_add_through_the_daemon_then_a_plain_command_works(
    tmp_path: Path, env: dict[str, str]
) -> None:
    vault = make_vault(tmp_path / "vault")
    env["MEMSTORE_VAULT"] = str(vault)
    # The daemon (only it) dies by SIGKILL between writing the file and committing it.
    dying = start_daemon({**env, "MEMSTORE_CRASH_AT": "memory-written"}, vault)
    text = "rotate the signing key every ninety days"
    done = run(env, "add", text, "-w", "global")
    assert dying.wait(timeout=30) == -signal.SIGKILL
    # The client saw its daemon vanish and ran the add itself: it healed and committed once.
    assert done.returncode == 0 and "added" in done.stdout, done.stderr
    files = [p for p in (vault / "global").rglob("*.md") if text in p.read_text(encoding="utf-8")]
    assert len(files) == 1
    assert git(vault, "status", "--porcelain") == ""
    no_daemon = {**env, "MEMSTORE_NO_DAEMON": "1"}
    doctor = run(no_daemon, "doctor")
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    again = run(env, "add", "a plain add after the kill", "-w", "global")
    assert again.returncode == 0 and again.stderr == ""
    assert git(vault, "status", "--porcelain") == ""


def test_a_daemon_stopped_by_a_signal_is_passed_by_and_never_runs_the_add_again(
    tmp_path: Path, env: dict[str, str]
) -> None:
    vault = make_vault(tmp_path / "vault")
    env["MEMSTORE_VAULT"] = str(vault)
    daemon = start_daemon(env, vault)
    text = "the staging database is reset every sunday night"
    os.kill(daemon.pid, signal.SIGSTOP)  # Ctrl-Z on `memstore watch`, or a debugger
    try:
        wait_until(
            lambda: client.stopped_daemon(vault) == daemon.pid, TIMEOUT, "the daemon is stopped"
        )
        began = time.monotonic()
        added = run(env, "add", text, "-w", "global")
        searched = run(env, "search", "staging database sunday")
        took = time.monotonic() - began
    finally:
        os.kill(daemon.pid, signal.SIGCONT)
    note = f"(pid {daemon.pid}) is stopped, so this command runs here"
    assert added.returncode == 0 and "added" in added.stdout and note in added.stderr
    assert searched.returncode == 0 and "staging database" in searched.stdout
    # each used to wait REPLY_TIMEOUT_S (120 s) for the stopped daemon: a bound under that
    # fails such a wait at any load; 60 s on an idle machine, more on a busy one (65.6 s at
    # load 20 for the two commands, under 2 s of CPU)
    assert took < min(hang_bound_s(60), client.REPLY_TIMEOUT_S - 1)
    # Resumed, the daemon finds both callers gone and runs neither: one add, seen once.
    log = vault / ".memstore" / client.LOG_NAME
    wait_until(
        lambda: "a client left before its add ran" in log.read_text(encoding="utf-8"),
        TIMEOUT,
        "the resumed daemon skips the abandoned add",
    )
    files = [p for p in (vault / "global").rglob("*.md") if text in p.read_text(encoding="utf-8")]
    assert len(files) == 1 and "seen: 1\n" in files[0].read_text(encoding="utf-8")
    assert len(git(vault, "log", "--format=%s", "--grep", "staging database").splitlines()) == 1
    served = requests_served(vault)
    assert run(env, "search", "staging database sunday").stdout == searched.stdout
    assert requests_served(vault) == served + 1  # and it answers again


def test_an_index_deleted_under_a_running_daemon_is_rebuilt_whoever_reads_next(
    tmp_path: Path, env: dict[str, str]
) -> None:
    vault = make_vault(tmp_path / "vault")
    env["MEMSTORE_VAULT"] = str(vault)
    # One clock for every process: a score's recency part moves with it, and at load 15 the
    # searches below span minutes (a score's 4th decimal differed: the test's point is that
    # each process answers as the fresh index does, not that time stands still by itself).
    env["MEMSTORE_NOW"] = datetime.now(UTC).isoformat()
    no_daemon = {**env, "MEMSTORE_NO_DAEMON": "1"}
    start_daemon(env, vault)
    query = ["search", "deploy staging", "--all", "--json"]
    before = run(env, *query).stdout
    listed = run(no_daemon, "list", "-n", "0", "--json").stdout
    assert requests_served(vault) == 1 and json.loads(listed)["shown"] == 50
    # A process without the daemon reads first: it used to create an empty index and leave
    # the catch-up to the running watcher, which never saw the deletion ("No memories").
    shutil.rmtree(vault / ".memstore" / "index")
    assert run(no_daemon, "list", "-n", "0", "--json").stdout == listed
    assert run(no_daemon, *query).stdout == before
    assert run(env, *query).stdout == before
    # The daemon reads first: it rebuilds the index it had open, and says so.
    shutil.rmtree(vault / ".memstore" / "index")
    served = requests_served(vault)
    rebuilt = run(env, *query)
    assert rebuilt.stdout == before and requests_served(vault) == served + 1
    assert "no index in" in rebuilt.stderr and "built it from 50 memory files" in rebuilt.stderr
    assert run(no_daemon, "list", "-n", "0", "--json").stdout == listed
    assert run(no_daemon, "doctor").returncode == 0


def test_memstore_now_stops_the_clock_a_search_scores_with(
    tmp_path: Path, env: dict[str, str]
) -> None:
    vault = make_vault(tmp_path / "vault")
    env.update(MEMSTORE_VAULT=str(vault), MEMSTORE_NO_DAEMON="1")
    now = datetime.now(UTC)
    query = ["search", "deploy staging", "--all", "--json"]

    def scores(at: datetime) -> list[float]:
        found = run({**env, "MEMSTORE_NOW": at.isoformat()}, *query)
        assert found.returncode == 0, found.stderr
        return [hit["score"] for hit in json.loads(found.stdout)["results"]]

    today = scores(now)
    assert today and scores(now) == today  # the same clock, the same scores
    assert scores(now + timedelta(days=90)) != today  # older memories: their recency fell
    bad = run({**env, "MEMSTORE_NOW": "next tuesday"}, *query)
    assert bad.returncode != 0 and bad.stdout == ""
    assert bad.stderr.strip().splitlines() == [
        "Error: MEMSTORE_NOW is 'next tuesday', not a time: set an ISO time such as "
        "2026-01-02T03:04:05+00:00, or unset it (it is for tests)"
    ]


def test_files_stay_the_truth_across_a_stopped_daemon(tmp_path: Path, env: dict[str, str]) -> None:
    vault = make_vault(tmp_path / "vault")
    env["MEMSTORE_VAULT"] = str(vault)
    # One clock for every process, as in the index-deleted test above: a score's recency part
    # moves with the clock (the daemon's and the fresh search's pnpm scores once differed in
    # the 4th decimal, 2.3062 against 2.3061)
    env["MEMSTORE_NOW"] = datetime.now(UTC).isoformat()
    start_daemon(env, vault)
    assert run(env, "daemon", "--stop").returncode == 0
    assert not client.is_running(vault)
    # While nothing watches: a new file, an edited one, a deleted one, a moved one.
    (vault / "global" / "hand-written.md").write_text(
        "deploy freezes start on fridays at noon\n", encoding="utf-8"
    )
    memories = sorted(p for p in vault.rglob("*.md") if ".git" not in p.parts)
    edited = next(p for p in memories if "nginx" in p.read_text(encoding="utf-8"))
    edited.write_text(
        edited.read_text(encoding="utf-8") + "\nalso check the ingress deploy limit\n",
        encoding="utf-8",
    )
    removed = next(p for p in memories if "pnpm" in p.read_text(encoding="utf-8"))
    removed.unlink()
    start_daemon(env, vault)
    queries = ["deploy", "nginx ingress limit", "pnpm", "fridays noon"]
    served = [run(env, "search", q, "--all", "--json").stdout for q in queries]
    assert requests_served(vault) == len(queries)
    no_daemon = {**env, "MEMSTORE_NO_DAEMON": "1"}
    assert run(no_daemon, "reindex").returncode == 0
    fresh = [run(no_daemon, "search", q, "--all", "--json").stdout for q in queries]
    assert served == fresh
    assert "hand-written" in fresh[3]  # the file written while no daemon ran is found


def test_a_reindex_beside_a_running_daemon_hides_nothing_added_after_it(
    tmp_path: Path, env: dict[str, str]
) -> None:
    vault = make_vault(tmp_path / "vault")
    env["MEMSTORE_VAULT"] = str(vault)
    start_daemon(env, vault)
    assert run(env, "search", "nginx").returncode == 0  # the daemon has its index open
    no_daemon = {**env, "MEMSTORE_NO_DAEMON": "1"}
    assert run(no_daemon, "reindex", "-q").returncode == 0  # a new index folder, elsewhere
    served = requests_served(vault)
    added = run(env, "add", "the release train leaves on tuesdays at ten", "--json")
    assert added.returncode == 0, added.stderr
    memory = json.loads(added.stdout)["id"]
    assert requests_served(vault) == served + 1  # the daemon wrote it
    assert memory in run(env, "search", "release train tuesdays", "--json").stdout
    assert memory in run(env, "list", "--json").stdout
    assert run(env, "show", memory).returncode == 0
    assert memory in run(no_daemon, "search", "release train tuesdays", "--json").stdout
    checked = run(no_daemon, "doctor")
    assert checked.returncode == 0 and "no drift" in checked.stdout, checked.stdout


def test_daemon_exits_when_idle_leaving_recall_counters_journaled(
    tmp_path: Path, env: dict[str, str]
) -> None:
    vault = make_vault(tmp_path / "vault")
    with Store.open(settings_at(vault)) as store:  # a recall elsewhere: counted locally
        hits = store.recall("nginx upload", workspace=None, record_usage=True).hits
    before = git(vault, "rev-parse", "HEAD")
    process = start_daemon({**env, "MEMSTORE_DAEMON_IDLE": "1"}, vault)
    assert process.wait(timeout=30) == 0
    assert not (vault / ".memstore" / client.SOCKET_NAME).exists()
    # its exit writes no file (issue 39): the counts wait in usage.sqlite for the next flush
    assert git(vault, "rev-parse", "HEAD") == before
    with Store.open(settings_at(vault)) as store:
        assert set(store.usage.pending()) == {hit.id for hit in hits}
        assert store.flush_usage() == len(hits)
    assert git(vault, "log", "-1", "--format=%s") == f"recall: usage of {len(hits)} memories\n"
    log = (vault / ".memstore" / client.LOG_NAME).read_text(encoding="utf-8")
    assert "stopped: idle for 1 s" in log


@pytest.mark.parametrize("remove", [".memstore", "vault"])
def test_daemon_exits_when_its_vault_or_state_folder_disappears(
    tmp_path: Path, env: dict[str, str], remove: str
) -> None:
    vault = make_vault(tmp_path / "vault")
    process = start_daemon(env, vault)
    gone = vault / ".memstore" if remove == ".memstore" else vault

    def removed() -> bool:  # the daemon may still write (its watcher's first commit) meanwhile
        shutil.rmtree(gone, ignore_errors=True)
        return not gone.exists()

    wait_until(removed, TIMEOUT, f"{gone} could not be removed")
    assert process.wait(timeout=30) == 0


def test_status_says_whether_it_runs(tmp_path: Path, env: dict[str, str]) -> None:
    vault = make_vault(tmp_path / "vault")
    env["MEMSTORE_VAULT"] = str(vault)
    stopped = run(env, "status")
    assert stopped.returncode == 3 and "not running" in stopped.stdout
    assert json.loads(run(env, "status", "--json").stdout)["running"] is False
    process = start_daemon(env, vault)
    running = run(env, "status")
    assert running.returncode == 0 and f"pid {process.pid}" in running.stdout
    data = json.loads(run(env, "status", "--json").stdout)
    assert data["running"] is True and data["vault"] == str(vault)
    assert data["memories"] == len(list((vault).glob("*/*.md")))
    assert data["last_catch_up"] and data["rss_mib"] > 0 and data["idle_exit_s"] == 120


@pytest.mark.parametrize("where", ["missing", "empty", "a file"])
def test_status_of_a_folder_without_a_vault_says_so(
    tmp_path: Path, env: dict[str, str], where: str
) -> None:
    # It said "not running … the next search, add, hook or serve starts one": the next
    # search says there is no vault there (a typo in --vault or MEMSTORE_VAULT).
    folder = tmp_path / "no vault here"
    if where == "empty":
        folder.mkdir()
    elif where == "a file":
        folder.write_text("x", encoding="utf-8")
    for args in (["status"], ["status", "--json"]):
        done = run(env, *args, "--vault", str(folder))
        assert done.returncode == 1 and done.stdout == "", (done.returncode, done.stdout)
        assert done.stderr.startswith("Error: ") and done.stderr.count("\n") == 1, done.stderr
        fix = (
            "not a folder; set MEMSTORE_VAULT or --vault" if where == "a file" else "memstore init"
        )
        assert str(folder) in done.stderr and fix in done.stderr, done.stderr
    assert not (folder / ".memstore").exists()


def test_a_daemon_of_other_code_refuses_and_stops(tmp_path: Path, env: dict[str, str]) -> None:
    vault = make_vault(tmp_path / "vault")
    process = start_daemon(env, vault)
    request = client.Request("search", ["nginx"], "/", env)
    conn = client.connect(vault)
    assert conn is not None
    with conn:
        client.send_frame(conn, client.encode_request(request, name="0.0.1/1/someotherbuild"))
        answer = client.read_frame(conn)
        assert answer[0] == b"refused" and client.decode_reply(answer) is None
    assert process.wait(timeout=30) == 0
    done = run({**env, "MEMSTORE_VAULT": str(vault)}, "search", "nginx upload")
    assert done.returncode == 0 and "nginx" in done.stdout  # ran in-process meanwhile


def test_clients_that_vanish_do_not_kill_the_daemon(tmp_path: Path, env: dict[str, str]) -> None:
    vault = make_vault(tmp_path / "vault")
    start_daemon(env, vault)
    half = client.connect(vault)
    assert half is not None
    half.sendall(struct.pack(">I", 1000) + b"{")  # half a request, then gone
    half.close()
    gone = client.connect(vault)
    assert gone is not None
    request = client.Request("search", ["nginx upload"], "/", {**env, "MEMSTORE_VAULT": str(vault)})
    client.send_frame(gone, client.encode_request(request))
    gone.shutdown(socket.SHUT_RDWR)  # leaves before the reply
    gone.close()
    env = {**env, "MEMSTORE_VAULT": str(vault)}
    done = run(env, "search", "nginx upload")
    assert done.returncode == 0 and "nginx" in done.stdout
    # The one that left may have been answered or skipped (it left first); the daemon lives on.
    served = requests_served(vault)
    assert run(env, "search", "nginx upload").stdout == done.stdout
    assert requests_served(vault) == served + 1


def test_a_frame_of_another_protocol_stops_the_daemon(tmp_path: Path, env: dict[str, str]) -> None:
    vault = make_vault(tmp_path / "vault")
    process = start_daemon(env, vault)
    other = client.connect(vault)
    assert other is not None
    with other:  # a complete frame this protocol cannot read (e.g. protocol 1's JSON)
        other.sendall(struct.pack(">I", 9) + b'{"v": 1}\n')
    assert process.wait(timeout=30) == 0
    log = (vault / ".memstore" / client.LOG_NAME).read_text(encoding="utf-8")
    assert "a client spoke another protocol" in log


def test_a_request_for_another_vault_runs_in_process(tmp_path: Path, env: dict[str, str]) -> None:
    vault, other = make_vault(tmp_path / "vault"), make_vault(tmp_path / "other")
    start_daemon(env, vault)
    request = client.Request("search", ["nginx upload", "--vault", str(other)], "/", env)
    reply = client.ask(vault, request, start=False)
    assert reply is not None and reply.status is None


def test_a_healing_warning_reaches_the_caller_both_ways(
    tmp_path: Path, env: dict[str, str]
) -> None:
    served, alone = make_vault(tmp_path / "served"), make_vault(tmp_path / "alone")
    # indexed first: a daemon's start that indexes the files has its watcher commit what it
    # found ~0.5 s later, under the vault lock, and that commit would heal the lock planted
    # below (into the daemon's log) before the add's request does
    alone_env = {**env, "MEMSTORE_NO_DAEMON": "1", "MEMSTORE_VAULT": str(served)}
    assert run(alone_env, "reindex").returncode == 0
    start_daemon(env, served)
    outputs = []
    for vault, environment in ((served, env), (alone, {**env, "MEMSTORE_NO_DAEMON": "1"})):
        lock = vault / ".git" / "index.lock"  # a killed git's, long ago: removed, and said so
        lock.write_bytes(b"")
        os.utime(lock, (time.time() - 600, time.time() - 600))
        done = run({**environment, "MEMSTORE_VAULT": str(vault)}, "add", "healed then added")
        outputs.append((done.returncode, done.stdout, done.stderr))
        assert not lock.exists()
    assert outputs[0] == outputs[1]
    assert "index.lock" in outputs[0][2]
    assert requests_served(served) == 1


def test_a_relative_vault_is_the_callers(tmp_path: Path, env: dict[str, str]) -> None:
    vault = make_vault(tmp_path / "vault")
    start_daemon(env, vault)
    done = run(env, "search", "nginx upload", "--vault", "vault", cwd=tmp_path)
    assert done.returncode == 0 and "nginx" in done.stdout
    assert requests_served(vault) == 1


def test_memstore_watch_is_the_daemon_in_the_foreground(
    tmp_path: Path, env: dict[str, str]
) -> None:
    vault = make_vault(tmp_path / "vault")
    watch = subprocess.Popen(
        [str(EXE), "watch", "--vault", str(vault)], env=env, stderr=subprocess.PIPE, text=True
    )
    STARTED.append(watch)  # type: ignore[arg-type]
    wait_until(lambda: bool(status(vault)) or watch.poll() is not None, TIMEOUT, "watch answers")
    assert status(vault)["pid"] == watch.pid and status(vault)["idle_exit_s"] == 0
    watch.send_signal(signal.SIGTERM)
    _, err = watch.communicate(timeout=hang_bound_s(30))
    assert watch.returncode == 0 and "watching" in err and "stopped" in err


def test_memstore_watch_beside_a_running_daemon_says_so_and_exits(
    tmp_path: Path, env: dict[str, str]
) -> None:
    vault = make_vault(tmp_path / "vault")
    daemon = start_daemon(env, vault)
    done = run(env, "watch", "--vault", str(vault))  # before: "watching", then up to 30 min
    assert done.returncode == 0, done.stderr
    assert f"daemon (pid {daemon.pid}) already keeps the index of {vault} current" in done.stderr
    assert "watching" not in done.stderr and status(vault)["pid"] == daemon.pid


def test_the_client_knows_the_default_vault_name_without_importing_config() -> None:
    from memstore.core.config import DEFAULT_VAULT_NAME

    assert client.DEFAULT_VAULT_NAME == DEFAULT_VAULT_NAME


def test_frames_carry_any_environment_arguments_and_stdin_exactly() -> None:
    request = client.Request(
        "add",
        ["-", "--json", "", "ünïcödé ✓", "x\udcff"],  # an argument that was not UTF-8 bytes
        "/tmp/caf\udce9",
        {"PATH": "/bin", "ODD": "\udc80\udcfe", "EMPTY": ""},
        b"\x00\xff binary stdin\n",
    )
    assert client.decode_request(client.encode_request(request)) == request
    reply = client.Reply(3, "out ✓\n", "err\udcff\n", {"figures": [1, 2.5, None]})
    assert client.decode_reply(client.encode_reply(reply)) == reply
    assert client.decode_reply(client.encode_reply(client.Reply(None))) == client.Reply(None)
    with pytest.raises(ValueError):
        client.decode_request([b"request", b"id", b"op"])


def _daemons_of(vault: Path) -> list[int]:
    """The pids of every `memstore daemon` process serving `vault` (read from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            words = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"daemon" in words and os.fsencode(vault) in words:
            found.append(int(entry.name))
    return found


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="reads /proc")
def test_daemon_stop_right_after_a_command_started_one_leaves_none_running(
    tmp_path: Path, env: dict[str, str]
) -> None:
    # Found by a trial run (issue 36): `add` starts a daemon in the background; a `daemon
    # --stop` before it listened said "no daemon" (or "stopped") and the daemon came up after.
    vault = make_vault(tmp_path / "vault")
    assert client.start_daemon(vault, env)  # as `add` does: started, not yet listening
    assert client.stop(vault) is True
    wait_until(lambda: not _daemons_of(vault), TIMEOUT, "the daemon a command started has exited")
    assert not client.is_running(vault)
