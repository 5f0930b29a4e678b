"""Sync under faults: two machines (vault clones) and a real bare remote on disk.

Every command runs through the installed `memstore` executable, as a person would. Each
case ends with the same checks: no lost text, no committed conflict markers, `git fsck`
clean on both machines and the remote.
"""

from __future__ import annotations

import json
import shlex
import shutil
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from memstore.core.codec import parse_memory
from memstore.core.model import Memory
from memstore.service.store import Store, init_vault
from memstore.service.sync import MARKER
from memstore.vault.files import Vault
from tests.conftest import git, invoke_memstore, run_memstore, vault_bytes, wait_until
from tests.service.test_sync import EXE, environment, machine_settings

TIMEOUT = 60.0


@dataclass
class Machine:
    """One vault clone, driven through the memstore executable."""

    root: Path
    host: str
    in_process: bool = False  # run() calls the executable's main here instead of spawning it

    def env(self) -> dict[str, str]:
        return {
            **environment(),
            "MEMSTORE_VAULT": str(self.root),
            "MEMSTORE_HOST": self.host,
            "MEMSTORE_SESSION": f"s-{self.host}",
        }

    def run(self, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
        if self.in_process:
            done = invoke_memstore(*args, env=self.env())
        else:
            done = run_memstore(*args, base_env=self.env(), timeout=TIMEOUT)
        if ok:
            assert done.returncode == 0, f"memstore {args}: {done.stdout}{done.stderr}"
        assert "Traceback" not in done.stderr, done.stderr
        return done

    def start(self, *args: str) -> subprocess.Popen[str]:
        """Start memstore in the background, in a process group of its own."""
        return subprocess.Popen(
            [str(EXE), *args],
            env=self.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            start_new_session=True,
        )

    def add(self, text: str, workspace: str = "global") -> dict[str, str]:
        added: dict[str, str] = json.loads(self.run("add", text, "-w", workspace, "--json").stdout)
        return added

    def sync(self) -> subprocess.CompletedProcess[str]:
        return self.run("sync")

    def append(self, relative: str, line: str) -> None:
        with open(self.root / relative, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")

    def text(self, relative: str) -> str:
        path = self.root / relative
        return path.read_text(encoding="utf-8") if path.exists() else ""

    def committed(self, relative: str, rev: str = "HEAD") -> str:
        done = subprocess.run(
            ["git", "show", f"{rev}:{relative}"],
            cwd=self.root,
            capture_output=True,
            text=True,
            encoding="utf-8",
        )
        return done.stdout if done.returncode == 0 else ""

    def memories(self) -> dict[str, Memory]:
        return {
            path: parse_memory(data.decode("utf-8"), path=path)
            for path, data in vault_bytes(self.root).items()
            if path.endswith(".md")
        }

    def paths_of(self, memory_id: str) -> list[str]:
        return sorted(p for p, m in self.memories().items() if m.id == memory_id)


@dataclass
class Pair:
    """Two machines syncing through one bare remote."""

    remote: Path
    a: Machine
    b: Machine

    def on_remote(self, relative: str) -> str:
        done = subprocess.run(
            ["git", "--git-dir", str(self.remote), "show", f"main:{relative}"],
            capture_output=True,
            text=True,
            encoding="utf-8",
        )
        return done.stdout if done.returncode == 0 else ""

    def check_healthy(self) -> None:
        """No conflict markers in any HEAD, git fsck clean everywhere."""
        for where in (self.a.root, self.b.root, self.remote):
            grep = subprocess.run(
                ["git", "grep", "-l", "<<<<<<<", "HEAD"],
                cwd=where,
                capture_output=True,
                text=True,
                encoding="utf-8",
            )
            assert grep.returncode == 1, f"conflict markers committed in {where}: {grep.stdout}"
            fsck = subprocess.run(
                ["git", "fsck", "--full", "--no-dangling"],
                cwd=where,
                capture_output=True,
                text=True,
                encoding="utf-8",
            )
            assert fsck.returncode == 0 and not fsck.stdout.strip(), fsck.stdout + fsck.stderr


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[Pair]:
    """Machine A created the vault and pushed it; machine B cloned it and ran init."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    first = tmp_path / "a"
    init_vault(first, machine_settings(first, "host-a"))
    with Store.open(machine_settings(first, "host-a")) as store:
        store.set_remote(str(remote))
        store.sync()
    second = tmp_path / "b"
    subprocess.run(
        ["git", "clone", "-q", str(remote), str(second)], check=True, capture_output=True
    )
    init_vault(second, machine_settings(second, "host-b"))
    # each machine's commands run the executable's main in-process; what must be a process
    # of its own (a sync held in its fetch, killed, racing an add) is started with start()
    built = Pair(remote, Machine(first, "host-a", True), Machine(second, "host-b", True))
    yield built
    built.check_healthy()


class FetchGate:
    """Hold a vault's `git fetch` inside upload-pack until the test opens the gate.

    remote.origin.uploadpack runs through the shell; the loop is bounded, so a test that
    fails before opening the gate leaves no process waiting for long.
    """

    def __init__(self, machine: Machine, folder: Path) -> None:
        self.machine = machine
        self.entered = folder / "fetch-entered"
        self.go = folder / "fetch-go"
        entered, go = shlex.quote(str(self.entered)), shlex.quote(str(self.go))
        command = (
            f"touch {entered}; n=0; "
            f"while [ ! -e {go} ] && [ $n -lt 1500 ]; do sleep 0.02; n=$((n+1)); done; "
            "git-upload-pack"
        )
        git(machine.root, "config", "remote.origin.uploadpack", command)

    def wait_inside(self, process: subprocess.Popen[str]) -> None:
        wait_until(
            lambda: self.entered.exists() or process.poll() is not None, TIMEOUT, "fetch started"
        )
        assert process.poll() is None, process.communicate()

    def open(self) -> None:
        self.go.touch()

    def remove(self) -> None:
        git(self.machine.root, "config", "--unset", "remote.origin.uploadpack")


def finish(process: subprocess.Popen[str]) -> tuple[int, str]:
    out, err = process.communicate(timeout=TIMEOUT)
    assert "Traceback" not in err, err
    return process.returncode, out + err


def group_alive(pgid: int) -> bool:
    """Whether a process of process group `pgid` still runs (zombies aside)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            state, _parent, group = stat.read_text(encoding="utf-8").rsplit(")", 1)[1].split()[:3]
        except (OSError, IndexError, ValueError):
            continue  # ended while we looked
        if group == str(pgid) and state != "Z":
            return True
    return False


def shared_memory(pair: Pair, text: str) -> dict[str, str]:
    """A memory A adds and both machines then hold."""
    added = pair.a.add(text)
    pair.a.sync()
    pair.b.sync()
    assert pair.b.text(added["path"]) == pair.a.text(added["path"])
    return added


# --- (a) an edit made while a sync is fetching ------------------------------------------


@pytest.mark.parametrize("case", ["fast-forward", "merge"])
def test_an_edit_made_during_a_sync_is_kept(pair: Pair, tmp_path: Path, case: str) -> None:
    memory = shared_memory(pair, "Staging deploys need approval from maria")
    pair.a.add("Remote side: the release train leaves on Tuesdays")
    pair.a.sync()
    if case == "merge":
        pair.b.add("Local side: feature flags live in LaunchDarkly")
    gate = FetchGate(pair.b, tmp_path)
    syncing = pair.b.start("sync")
    line = f"Added by hand during the {case} sync: maria is away in December."
    try:
        gate.wait_inside(syncing)
        pair.b.append(memory["path"], line)
    finally:
        gate.open()
    rc, output = finish(syncing)
    # it may finish, or stop and say why in one line; either way the edit stays
    assert rc == 0 or (rc == 1 and len(output.strip().splitlines()) == 1), output
    assert line in pair.b.text(memory["path"]) or line in pair.b.committed(memory["path"]), (
        f"the edit made during the {case} sync is gone"
    )
    gate.remove()
    pair.b.sync()
    assert line in pair.b.committed(memory["path"])
    assert line in pair.on_remote(memory["path"])
    pair.a.sync()
    bodies = " ".join(m.body for m in pair.a.memories().values())
    assert "release train" in bodies and line in bodies
    if case == "merge":
        assert "LaunchDarkly" in bodies


# --- (b) an interrupted sync, then an edit ----------------------------------------------


def test_an_edit_after_a_sync_killed_while_fetching_survives(pair: Pair, tmp_path: Path) -> None:
    memory = shared_memory(pair, "Kafka consumer lag alerts at 10k")
    pair.a.add("Remote side: schema registry runs on 8081")
    pair.a.sync()
    pair.b.add("Local side: topic retention is seven days")
    gate = FetchGate(pair.b, tmp_path)
    syncing = pair.b.start("sync")
    try:
        gate.wait_inside(syncing)
        syncing.send_signal(signal.SIGKILL)  # memstore only: its git children run on
    finally:
        gate.open()
    syncing.communicate(timeout=TIMEOUT)
    wait_until(lambda: not group_alive(syncing.pid), TIMEOUT, "the killed sync's git processes end")
    gate.remove()
    line = "Added by hand after the killed sync: lag alerts page the data team."
    pair.b.append(memory["path"], line)
    pair.b.sync()
    assert line in pair.b.text(memory["path"]) and line in pair.b.committed(memory["path"])
    assert line in pair.on_remote(memory["path"])
    pair.a.sync()
    bodies = " ".join(m.body for m in pair.a.memories().values())
    assert all(t in bodies for t in ("schema registry", "retention", line))


def test_an_edit_after_a_sync_killed_before_its_checkout_survives(pair: Pair) -> None:
    memory = shared_memory(pair, "Postgres listens on 5432 in dev")
    pair.a.add("Remote side: pgbouncer pools connections on 6432")
    pair.a.sync()
    pair.b.add("Local side: vacuum runs nightly at 02:00")
    # the state a sync killed between its merge commit and its checkout leaves behind
    git(pair.b.root, "fetch", "-q", "origin")
    tree = git(pair.b.root, "merge-tree", "--write-tree", "HEAD", "origin/main").split()[0]
    merge = git(
        pair.b.root, "commit-tree", tree, "-p", "HEAD", "-p", "origin/main", "-m", "sync: merge"
    ).strip()
    Vault(pair.b.root).write_state(MARKER, merge)
    line = "Added by hand after the interrupted sync: dev uses port 5433 now."
    pair.b.append(memory["path"], line)
    pair.b.sync()
    assert line in pair.b.text(memory["path"]), "the next sync's recovery overwrote the edit"
    assert line in pair.b.committed(memory["path"]) and line in pair.on_remote(memory["path"])
    bodies = " ".join(m.body for m in pair.b.memories().values())
    assert "pgbouncer" in bodies and "vacuum" in bodies


# --- (c, d, e) one memory changed on both machines --------------------------------------


def test_a_memory_moved_on_one_machine_and_edited_on_the_other_is_one_file(pair: Pair) -> None:
    memory = shared_memory(pair, "Checkout uses stripe with webhooks on /hooks/stripe")
    moved = f"payments/{Path(memory['path']).name}"
    (pair.a.root / "payments").mkdir()
    git(pair.a.root, "mv", memory["path"], moved)
    pair.a.sync()
    line = "Edited on B: the webhook secret rotates monthly."
    pair.b.append(memory["path"], line)
    pair.b.sync()
    pair.a.sync()
    for machine in (pair.a, pair.b):
        paths = machine.paths_of(memory["id"])
        if len(paths) > 1:  # doctor must at least say so
            doctor = machine.run("doctor", ok=False)
            assert "duplicate" in (doctor.stdout + doctor.stderr).lower(), (
                f"{paths} share id {memory['id']} and doctor says: {doctor.stdout}"
            )
        assert paths == [moved], f"{machine.host} holds {paths} for one memory"
        assert line in machine.text(moved) and line in machine.committed(moved)
        shown = machine.run("show", memory["id"])
        assert line in shown.stdout
    doctor = pair.b.run("doctor", ok=False)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr


def test_a_memory_moved_and_renamed_by_hand_on_one_machine_and_edited_on_the_other_is_one_file(
    pair: Pair,
) -> None:
    """Found by the fifteenth session's trial: `git mv <slug>-<id>.md infra/approval.md` on
    one machine and an edit on the other left two files with one id after sync ("deleted on
    one machine but edited on another, so kept"), and recall showed the text without the edit."""
    memory = shared_memory(pair, "Staging deploys need approval from maria or ken")
    moved = "infra/staging-approval.md"
    (pair.a.root / "infra").mkdir()
    git(pair.a.root, "mv", memory["path"], moved)
    git(pair.a.root, "commit", "-qm", "file it under infra")
    pair.a.sync()
    line = "Edited on B: on weekends sam approves."
    pair.b.append(memory["path"], line)
    pair.b.sync()
    pair.a.sync()
    for machine in (pair.a, pair.b):
        assert machine.paths_of(memory["id"]) == [moved], machine.host
        assert line in machine.text(moved) and line in machine.committed(moved)
        assert line in machine.run("show", memory["id"]).stdout


def test_doctor_names_an_id_two_files_share(pair: Pair) -> None:
    memory = pair.a.add("Checkout uses stripe with webhooks on /hooks/stripe")
    copy = pair.a.root / "payments" / Path(memory["path"]).name
    copy.parent.mkdir()
    shutil.copy(pair.a.root / memory["path"], copy)  # as an old merge or a person's cp left it
    git(pair.a.root, "add", "payments")
    git(pair.a.root, "commit", "-qm", "copy a memory by hand")
    pair.a.run("search", "stripe webhooks", "--all")  # the index catches up with the copy
    doctor = pair.a.run("doctor", ok=False)
    output = (doctor.stdout + doctor.stderr).lower()
    assert "duplicate" in output and memory["id"] in output, doctor.stdout + doctor.stderr


def test_a_memory_forgotten_on_one_machine_and_edited_on_the_other_is_kept(pair: Pair) -> None:
    memory = shared_memory(pair, "Feature flags live in LaunchDarkly")
    pair.a.run("forget", memory["id"], "--yes")
    pair.a.sync()
    line = "Edited on B: project key is web."
    pair.b.append(memory["path"], line)
    synced = pair.b.sync()
    assert "kept" in synced.stdout and memory["path"] in synced.stdout, synced.stdout
    pair.a.sync()
    for machine in (pair.a, pair.b):
        assert line in machine.text(memory["path"]) and line in machine.committed(memory["path"])
    assert line in pair.on_remote(memory["path"])


def test_the_forgetting_machine_hears_which_memory_came_back(pair: Pair) -> None:
    pulled = shared_memory(pair, "Feature flags live in LaunchDarkly")
    merged = shared_memory(pair, "Sprint review is on Thursday")
    pair.a.run("forget", pulled["id"], "--yes")
    pair.a.sync()
    pair.a.run("forget", merged["id"], "--yes")  # not synced: A's own merge meets the edit
    for memory in (pulled, merged):
        pair.b.append(memory["path"], "Edited on B.")
    pair.b.sync()
    pair.a.add("Something new on A")

    synced = pair.a.run("sync", "--json")

    returned = json.loads(synced.stdout)["returned"]
    assert sorted(returned, key=lambda r: r["id"]) == sorted(
        ({"id": m["id"], "path": m["path"]} for m in (pulled, merged)), key=lambda r: r["id"]
    )
    # in words, as the next such sync says it
    again = shared_memory(pair, "Standup moved to 9:30")
    pair.a.run("forget", again["id"], "--yes")
    pair.a.sync()
    pair.b.append(again["path"], "Edited on B too.")
    pair.b.sync()
    text = pair.a.sync().stdout
    assert f"{again['id']} came back" in text and "edited on another machine" in text, text
    assert again["path"] in text


def test_the_same_text_added_on_both_machines_is_one_file_seen_twice(pair: Pair) -> None:
    first = pair.a.add("Use pnpm, never npm")
    second = pair.b.add("use pnpm, never npm")
    assert first["id"] == second["id"] and first["path"] == second["path"]
    pair.a.sync()
    # the two texts differ in case: both versions are kept, and the sync says so (exit 3)
    for machine in (pair.b, pair.a):
        kept = machine.run("sync", ok=False)
        assert kept.returncode == 3, kept.stdout + kept.stderr
        assert f"both versions kept (conflict: true): {first['path']}" in kept.stdout
    for machine in (pair.a, pair.b):
        memories = machine.memories()
        assert list(memories) == [first["path"]]
        assert memories[first["path"]].seen == 2
    assert pair.a.committed(first["path"]) == pair.b.committed(first["path"])
    assert pair.on_remote(first["path"]) == pair.a.committed(first["path"])


# --- (f, g) the remote fails ------------------------------------------------------------


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 1, done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_a_remote_that_is_gone_is_one_line_and_loses_nothing(pair: Pair) -> None:
    memory = shared_memory(pair, "Grafana dashboards live in the ops folder")
    added = pair.b.add("Written on B before the remote vanished")
    line = "Edited on B before the remote vanished."
    pair.b.append(memory["path"], line)
    before = git(pair.b.root, "rev-parse", "HEAD").strip()
    shutil.rmtree(pair.remote)
    error = one_line_error(pair.b.run("sync", ok=False))
    assert str(pair.remote) in error or "origin" in error, error
    assert git(pair.b.root, "merge-base", "--is-ancestor", before, "HEAD") == ""
    assert "Written on B" in pair.b.committed(added["path"])
    assert line in pair.b.text(memory["path"])
    git(pair.remote.parent, "init", "-q", "--bare", "-b", "main", str(pair.remote))  # for teardown
    git(pair.b.root, "push", "-q", "origin", "HEAD:refs/heads/main")


def test_a_push_declined_by_a_server_hook_reports_the_servers_reason(pair: Pair) -> None:
    hook = pair.remote / "hooks" / "pre-receive"
    hook.write_text(
        "#!/bin/sh\necho 'policy: no pushes on Fridays' >&2\nexit 1\n", encoding="utf-8"
    )
    hook.chmod(0o755)
    added = pair.b.add("Written on B on a Friday")
    before = git(pair.b.root, "rev-parse", "HEAD").strip()
    error = one_line_error(pair.b.run("sync", ok=False))
    assert "policy: no pushes" in error or "declined" in error, error
    assert "kept changing" not in error, error
    assert git(pair.b.root, "merge-base", "--is-ancestor", before, "HEAD") == ""
    assert "Written on B on a Friday" in pair.b.committed(added["path"])
    hook.unlink()
    pair.b.sync()
    assert "Written on B on a Friday" in pair.on_remote(added["path"])


# --- (h) an outside edit is committed on its own ----------------------------------------


def commits_adding(machine: Machine, relative: str, line: str) -> list[str]:
    """The full messages of the commits whose diff of `relative` adds `line`."""
    ids = git(machine.root, "log", "--format=%H", "--", relative).split()
    found = []
    for commit in ids:
        diff = git(machine.root, "diff", f"{commit}^1", commit, "--", relative)
        if any(d == f"+{line}" for d in diff.splitlines()):
            found.append(git(machine.root, "log", "-1", "--format=%B", commit))
    return found


@pytest.mark.parametrize("then", ["recall counters pending", "an add first"])
def test_an_outside_edit_is_committed_on_its_own(pair: Pair, then: str) -> None:
    memory = pair.a.add("Redis runs on 6380 in dev")
    line = "Edited by hand: prod uses 6379."
    pair.a.append(memory["path"], line)
    if then == "recall counters pending":
        with Store.open(machine_settings(pair.a.root, "host-a")) as store:
            assert store.recall("redis 6380", workspace="global", record_usage=True).hits
    else:
        pair.a.add("Memcached was retired in 2025")
    pair.a.sync()
    assert line in pair.a.committed(memory["path"])
    messages = commits_adding(pair.a, memory["path"], line)
    assert len(messages) == 1, messages
    message = messages[0]
    assert message.startswith("edit("), message
    assert "Memstore-Source: editor" in message, message
    assert not message.startswith(("recall:", "sync:", "add(")), message


def test_an_add_never_waits_on_a_syncs_network(pair: Pair, tmp_path: Path) -> None:
    pair.a.add("Remote side: deploys freeze on Fridays")
    pair.a.sync()
    gate = FetchGate(pair.b, tmp_path)
    syncing = pair.b.start("sync")
    try:
        gate.wait_inside(syncing)
        # the sync is inside its fetch and may stay there as long as the network takes:
        # an add meanwhile neither waits for it nor fails
        done = pair.b.run("add", "Added while the sync fetched", "-w", "global", "--json", ok=False)
        assert syncing.poll() is None  # the fetch was still going on
    finally:
        gate.open()
    assert done.returncode == 0, done.stderr
    rc, output = finish(syncing)
    assert rc == 0, output
    gate.remove()
    pair.b.sync()
    pair.a.sync()
    bodies = " ".join(m.body for m in pair.a.memories().values())
    assert "Added while the sync fetched" in bodies and "freeze on Fridays" in bodies
