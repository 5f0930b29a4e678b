"""`forget --purge` across machines: sync never merges purged history back.

Two vault clones and a bare remote on disk, every command through the installed memstore
executable (issue 36 item 2; in CI its `main` runs in-process, the long version spawns it):
the purging machine's sync refuses the unpurged remote and `sync --force-purged` finishes
the purge there; the other machine's next sync re-bases its own commits onto the rewritten
history instead of pushing the memory back.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memstore.service.store import Store, init_vault
from tests.service.test_sync import machine_settings
from tests.service.test_sync_faults import EXE, TIMEOUT, Machine, Pair

SECRET = "Launch codename is bluefin-quartz for the autumn release"


@pytest.fixture(params=["in-process", pytest.param("executable", marks=pytest.mark.long)])
def two(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Pair]:
    """Machine A created the vault and pushed it; machine B cloned it and ran init.

    In CI the machines' commands run the executable's `main` in-process (the same launcher,
    commands and output); the long version spawns the executable for every command."""
    in_process = request.param == "in-process"
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    first, second = tmp_path / "a", tmp_path / "b"
    init_vault(first, machine_settings(first, "host-a"))
    with Store.open(machine_settings(first, "host-a")) as store:
        store.set_remote(str(remote))
        store.sync()
    subprocess.run(["git", "clone", "-q", str(remote), str(second)], check=True)
    init_vault(second, machine_settings(second, "host-b"))
    built = Pair(
        remote, Machine(first, "host-a", in_process), Machine(second, "host-b", in_process)
    )
    yield built
    built.check_healthy()


def history_text(git_dir: Path) -> str:
    """Every commit message and every file version any ref of `git_dir` reaches."""
    done = subprocess.run(
        ["git", "--git-dir", str(git_dir), "log", "--all", "-p", "--format=%H%n%B"],
        capture_output=True,
        text=True,
        encoding="utf-8",
        check=True,
    )
    return done.stdout


def every_object(git_dir: Path) -> bytes:
    """Every object stored in `git_dir`, reachable or not."""
    return subprocess.run(
        ["git", "--git-dir", str(git_dir), "cat-file", "--batch-all-objects", "--batch"],
        capture_output=True,
        check=True,
    ).stdout


def state_bytes(vault: Path) -> bytes:
    """Every file memstore keeps under `.memstore` (the index among them)."""
    return b"".join(p.read_bytes() for p in (vault / ".memstore").rglob("*") if p.is_file())


def remote_head(pair: Pair) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(pair.remote), "rev-parse", "main"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def test_a_purge_is_finished_on_the_remote_and_no_machine_brings_it_back(two: Pair) -> None:
    a, b = two.a, two.b
    secret = a.add(SECRET)
    a.add("Deploys go through the staging cluster first")
    a.sync()
    b.sync()
    assert SECRET in b.text(secret["path"])

    purged = a.run("forget", secret["id"], "--purge", "--yes")
    assert "memstore sync --force-purged" in purged.stdout
    a.add("Added on A after the purge")
    b.add("Added on B before A finished the purge")
    assert b.add(SECRET)["status"] == "duplicate_merged"  # its commit subject quotes the text
    b.sync()  # B pushes onto the old history: the remote moved on since A's purge

    refused = a.run("sync", ok=False)
    before = remote_head(two)
    assert refused.returncode == 1
    assert "--force-purged" in refused.stderr and secret["id"] in refused.stderr
    # the command that finishes it, whichever remote was synced and wherever it runs
    assert "'memstore sync --remote origin --force-purged' (add --yes" in refused.stderr
    assert "\n" not in refused.stderr.strip()
    assert not (a.root / secret["path"]).exists()  # nothing merged back
    assert remote_head(two) == before  # nothing pushed

    no_terminal = a.run("sync", "--force-purged", ok=False)
    assert no_terminal.returncode == 1 and "--yes" in no_terminal.stderr
    finished = a.run("sync", "--force-purged", "--yes")
    assert "rewrote the remote's history" in finished.stdout, finished.stdout
    assert SECRET not in history_text(two.remote)
    assert "bluefin" not in history_text(two.remote)
    on_remote = subprocess.run(
        ["git", "--git-dir", str(two.remote), "grep", "-l", "Added on B", "main"],
        capture_output=True,
        text=True,
    )
    assert on_remote.returncode == 0  # what B pushed meanwhile is kept, without the secret

    # B still has the old history, and a commit of its own on it
    b.add("Added on B after the purge, not pushed yet")
    synced = b.sync()
    assert "rewritten to purge memory" in synced.stdout and secret["id"] in synced.stdout
    assert "re-based" not in synced.stdout.splitlines(), synced.stdout  # a bare word, once
    assert not (b.root / secret["path"]).exists()
    assert SECRET not in history_text(two.remote)
    assert b"bluefin" not in every_object(b.root / ".git")  # the old objects are gone on B too
    for text in ("Added on A after", "Added on B before", "Added on B after"):
        found = subprocess.run(
            ["git", "--git-dir", str(two.remote), "grep", "-l", text, "main"],
            capture_output=True,
        )
        assert found.returncode == 0, text

    a.sync()
    b.sync()
    for machine in (a, b):
        assert not (machine.root / secret["path"]).exists()
        assert "Added on B after" in "".join(m.body for m in machine.memories().values()), (
            machine.host
        )
    assert SECRET not in history_text(two.remote)


def test_a_machine_with_nothing_unpushed_follows_the_purged_history(two: Pair) -> None:
    a, b = two.a, two.b
    secret = a.add(SECRET)
    a.sync()
    b.sync()
    a.run("forget", secret["id"], "--purge", "--yes")
    a.run("sync", "--force-purged", "--yes")

    synced = b.sync()

    assert "this vault now follows it" in synced.stdout, synced.stdout
    assert not (b.root / secret["path"]).exists()
    # Whoosh keeps a deleted document's text in its segment files until they merge: the
    # index is rebuilt after re-basing, as forget --purge rebuilds it on the purging machine
    assert b"bluefin" not in state_bytes(b.root), "the index still holds the purged text"
    assert b"bluefin" not in state_bytes(a.root)
    assert b"bluefin" not in every_object(b.root / ".git")
    assert b"bluefin" not in every_object(a.root / ".git")
    assert "bluefin" not in history_text(two.remote)


def test_the_sync_that_takes_a_purge_counts_the_purged_file_removed(two: Pair) -> None:
    """Found by the seventh session's trial: the index is rebuilt after a purge, and the
    summary listed every file the rebuild read (`index: 1 updated, 0 removed`)."""
    a, b = two.a, two.b
    secret = a.add(SECRET)
    a.add("Deploys go through the staging cluster first")
    a.sync()
    b.sync()
    a.run("forget", secret["id"], "--purge", "--yes")

    finished = a.run("sync", "--force-purged", "--yes")
    synced = b.sync()

    assert "index:" not in finished.stdout, finished.stdout  # forget --purge caught it up
    assert "index: 0 updated, 1 removed" in synced.stdout.splitlines(), synced.stdout
    assert secret["id"] not in b.run("search", "bluefin quartz").stdout  # and it is gone


PROTECTED_MAIN = """#!/bin/sh
while read old new ref; do
  if [ "$ref" = refs/heads/main ] && ! git merge-base --is-ancestor "$old" "$new"; then
    echo "GH006: Protected branch update failed for refs/heads/main." >&2; exit 1
  fi
done
"""


def test_a_protected_main_refusing_the_forced_push_names_what_finishes_the_purge(
    two: Pair,
) -> None:
    """Found by the eleventh session's trial: a host's protected main declined the forced
    push of `sync --force-purged`, and the error said to "run 'memstore sync' again", which
    only refuses the remote again; it names force pushes and `--force-purged` now."""
    a = two.a
    secret = a.add(SECRET)
    a.sync()
    a.run("forget", secret["id"], "--purge", "--yes")
    hook = two.remote / "hooks" / "pre-receive"
    hook.write_text(PROTECTED_MAIN, encoding="utf-8")
    hook.chmod(0o755)
    before = remote_head(two)

    refused = a.run("sync", "--force-purged", "--yes", ok=False)

    assert refused.returncode == 1 and refused.stderr.count("\n") == 1, refused.stderr
    assert "GH006: Protected branch update failed" in refused.stderr, refused.stderr
    assert "have force pushes to main allowed" in refused.stderr, refused.stderr
    assert "then run 'memstore sync --remote origin --force-purged' again" in refused.stderr
    assert "run 'memstore sync' again" not in refused.stderr, refused.stderr
    assert remote_head(two) == before and "bluefin" in history_text(two.remote)
    hook.unlink()  # the owner allows force pushes for a moment
    assert "rewrote the remote's history" in a.run("sync", "--force-purged", "--yes").stdout
    assert "bluefin" not in history_text(two.remote)


def test_a_second_purge_names_only_itself_on_a_clone_that_took_the_first(two: Pair) -> None:
    """Found by the eleventh session's trial: B purged a memory older than A's earlier purge,
    so the rewrite gave A's own marker commit a new hash, and A's sync said the remote was
    "rewritten to purge memory <B's>, <A's own, long taken>"."""
    a, b = two.a, two.b
    older = b.add("The office wifi passphrase is on the fridge: orange-kettle")
    b.sync()
    a.sync()  # A's purge below comes after it in A's history: its rewrite rewrites A's marker
    first = a.add(SECRET)
    a.sync()
    b.sync()
    a.run("forget", first["id"], "--purge", "--yes")
    a.run("sync", "--force-purged", "--yes")
    assert "this vault now follows it" in b.sync().stdout
    b.run("forget", older["id"], "--purge", "--yes")
    b.run("sync", "--force-purged", "--yes")
    a.add("Added on A before it heard of B's purge")

    synced = a.sync()

    said = f"the remote's history was rewritten to purge memory {older['id']}; re-based 1"
    assert said in synced.stdout, synced.stdout
    assert first["id"] not in synced.stdout, synced.stdout
    assert "orange-kettle" not in history_text(two.remote) and "bluefin" not in history_text(
        two.remote
    )


def test_force_purged_without_a_purge_says_there_is_none(two: Pair) -> None:
    done = two.a.run("sync", "--force-purged", "--yes", ok=False)
    assert done.returncode == 1 and "no purge to finish" in done.stderr


def test_a_change_to_the_purged_memory_on_another_machine_is_dropped_and_said(two: Pair) -> None:
    a, b = two.a, two.b
    secret = a.add(SECRET)
    a.sync()
    b.sync()
    a.run("forget", secret["id"], "--purge", "--yes")
    a.run("sync", "--force-purged", "--yes")
    b.append(secret["path"], "B's note on it, written before B heard of the purge")
    b.add("Something else B keeps")

    synced = b.sync()

    assert f"your changes to {secret['path']} were dropped" in synced.stdout, synced.stdout
    assert not (b.root / secret["path"]).exists()
    assert "B's note" not in history_text(two.remote) and "bluefin" not in history_text(two.remote)
    assert "Something else B keeps" in "".join(m.body for m in b.memories().values())
    a.sync()
    assert "Something else B keeps" in "".join(m.body for m in a.memories().values())


def test_a_machine_that_never_had_the_purged_memory_merges_as_usual(two: Pair) -> None:
    a, b = two.a, two.b
    b.add("Written on B, offline the whole time")
    secret = a.add(SECRET)
    a.sync()
    a.run("forget", secret["id"], "--purge", "--yes")
    a.run("sync", "--force-purged", "--yes")

    synced = b.sync()

    assert "merged the remote's changes" in synced.stdout, synced.stdout
    assert "rewritten" not in synced.stdout
    subjects = subprocess.run(
        ["git", "--git-dir", str(two.remote), "log", "--format=%s", "main"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "add(global): Written on B, offline the whole time" in subjects  # its own commit
    assert "bluefin" not in history_text(two.remote)


def test_a_sync_with_another_remote_does_not_clear_the_purge_for_origin(
    two: Pair, tmp_path: Path
) -> None:
    """Found by issue 36's review: the purge record was cleared by any remote without the
    purged commits, an empty backup included, and the next sync with origin merged the
    memory back and pushed it."""
    a = two.a
    secret = a.add(SECRET)
    a.sync()
    a.run("forget", secret["id"], "--purge", "--yes")
    assert a.run("sync", ok=False).returncode == 1
    backup = tmp_path / "backup.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(backup)], check=True)
    a.run("remote", "add", "backup", str(backup))

    a.run("sync", "--remote", "backup")  # pushing the purged history there is fine
    a.run("sync", "--remote", "backup")  # its branch exists now: still clears nothing
    refused = a.run("sync", "--remote", "origin", ok=False)

    assert refused.returncode == 1 and "--force-purged" in refused.stderr, refused.stdout
    assert not (a.root / secret["path"]).exists()
    assert "bluefin" not in history_text(backup)
    a.run("sync", "--force-purged", "--yes")  # the tracked remote: origin
    assert "bluefin" not in history_text(two.remote)
    assert "nothing to" not in a.run("sync").stderr  # finished on origin: no refusal
    assert not (a.root / secret["path"]).exists()


def test_the_purge_ends_for_a_remote_only_once_it_was_finished_there(
    two: Pair, tmp_path: Path
) -> None:
    """A remote configured at purge time that also holds the old history must be finished
    too: finishing origin does not clear it."""
    a = two.a
    secret = a.add(SECRET)
    a.sync()
    mirror = tmp_path / "mirror.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(two.remote), str(mirror)], check=True)
    a.run("remote", "add", "mirror", str(mirror))
    a.run("forget", secret["id"], "--purge", "--yes")
    a.run("sync", "--force-purged", "--yes")

    refused = a.run("sync", "--remote", "mirror", ok=False)
    assert refused.returncode == 1 and "'mirror'" in refused.stderr, refused.stderr
    a.run("sync", "--remote", "mirror", "--force-purged", "--yes")
    assert "bluefin" not in history_text(mirror)
    assert a.run("sync", "--remote", "mirror").returncode == 0
    assert a.run("sync", "--force-purged", "--yes", ok=False).returncode == 1  # none left


@pytest.mark.parametrize("point", ["purge-recorded", "purge-moved"])
def test_a_purge_killed_half_way_is_finished_and_never_merged_back(two: Pair, point: str) -> None:
    """Found by issue 36's review: the refs moved before the purge was recorded, so a kill
    in between left rewritten history that the next sync merged the old one back into."""
    a, b = two.a, two.b
    secret = a.add(SECRET)
    a.sync()
    b.sync()
    killed = subprocess.run(
        [str(EXE), "forget", secret["id"], "--purge", "--yes"],
        env={**a.env(), "MEMSTORE_CRASH_AT": point},
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr

    refused = a.run("sync", ok=False)
    assert refused.returncode == 1 and "--force-purged" in refused.stderr, refused.stdout
    assert not (a.root / secret["path"]).exists()
    a.run("sync", "--force-purged", "--yes")
    assert "bluefin" not in history_text(two.remote)
    assert b"bluefin" not in every_object(a.root / ".git")
    synced = b.sync()  # the marker commit was made: B follows the purged history
    assert "rewritten to purge memory" in synced.stdout, synced.stdout
    assert not (b.root / secret["path"]).exists()


def test_finishing_a_purge_keeps_a_memory_added_again_here_since(two: Pair) -> None:
    """Found by issue 36's review: rewriting the fetched history also rewrote this clone's
    own commits since the purge, so the memory added again stayed in the work tree only
    and was committed later as a hand edit."""
    a = two.a
    secret = a.add(SECRET)
    a.sync()
    a.run("forget", secret["id"], "--purge", "--yes")
    again = a.add(SECRET)
    assert again["path"] == secret["path"]
    a.run("sync", "--force-purged", "--yes")

    assert SECRET in a.committed(secret["path"])
    assert SECRET in a.committed(secret["path"], "origin/main")
    subjects = subprocess.run(
        ["git", "log", "--format=%s", "main"], cwd=a.root, capture_output=True, text=True
    ).stdout
    assert "edit(" not in subjects, subjects


def test_the_force_purged_prompt_names_the_remote_it_rewrites(two: Pair) -> None:
    """Found by issue 36's review: without --remote the prompt said `Rewrite remote ''`."""
    a = two.a
    secret = a.add(SECRET)
    a.sync()
    a.run("forget", secret["id"], "--purge", "--yes")
    said, returncode = at_a_terminal(["sync", "--force-purged"], a.env(), answer=b"n\n")
    assert b"Rewrite remote 'origin' without purged memory" in said, said
    assert returncode != 0  # declined: nothing rewritten


def at_a_terminal(
    args: list[str], env: dict[str, str], answer: bytes | None = None
) -> tuple[bytes, int]:
    """Run the executable with a terminal (a pty) as stdin and output; type `answer` once it
    asks (a "?" printed). Return what it printed and its exit status."""
    leader, follower = os.openpty()
    process = subprocess.Popen(
        [str(EXE), *args], env=env, stdin=follower, stdout=follower, stderr=follower
    )
    os.close(follower)
    said = b""
    deadline = time.monotonic() + TIMEOUT
    try:
        while time.monotonic() < deadline:
            if answer is not None and b"?" in said:
                os.write(leader, answer)
                answer = None
            ready, _, _ = select.select([leader], [], [], 1.0)
            if not ready:
                continue
            try:
                read = os.read(leader, 4096)
            except OSError:  # the process ended and closed its side (Linux: EIO)
                break
            if not read:
                break
            said += read
        process.wait(timeout=TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
        os.close(leader)
    return said, process.returncode


def test_the_purge_hint_at_a_terminal_names_the_command_without_yes(two: Pair) -> None:
    """At a terminal `sync --force-purged` asks, so the hint leaves --yes out (without
    one it names it: tests/cli/test_upkeep.py)."""
    a = two.a
    secret = a.add(SECRET)
    a.sync()
    said, returncode = at_a_terminal(["forget", secret["id"], "--purge", "--yes"], a.env())
    assert returncode == 0, said
    text = b" ".join(said.split()).decode()  # a terminal ends lines with CRLF
    assert "run 'memstore sync --force-purged' to rewrite" in text, said


def test_re_basing_onto_a_purge_keeps_each_local_commit_and_its_session(two: Pair) -> None:
    """Found by issue 36's review: the re-base squashed a clone's own commits into one
    `sync:` commit, losing a person's edit(...) commits and agents' session trailers (so
    revert --session found nothing)."""
    a, b = two.a, two.b
    secret = a.add(SECRET)
    kept = a.add("Deploys go through the staging cluster first")
    a.sync()
    b.sync()
    a.run("forget", secret["id"], "--purge", "--yes")
    a.run("sync", "--force-purged", "--yes")
    b.add("Added on B by its agent, not pushed yet")
    b.append(kept["path"], "B's own line, written by hand")
    b.run("confirm", kept["id"])  # commits the hand edit first, on its own
    b.append(secret["path"], "B's note on the purged memory")

    synced = b.sync()

    assert "rewritten to purge memory" in synced.stdout, synced.stdout
    log = subprocess.run(
        ["git", "--git-dir", str(two.remote), "log", "--format=%s%n%b%n--", "main"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "add(global): Added on B by its agent" in log
    assert "Memstore-Session: s-host-b" in log
    assert "edit(global): Deploys go through" in log
    assert "re-based onto the history purged" not in log
    assert "bluefin" not in history_text(two.remote) and "B's note" not in history_text(two.remote)
    listed = b.run("revert", "--session", "s-host-b", "--dry-run").stdout
    assert "Added on B by its agent" in listed, listed


def test_a_purge_whose_remote_was_removed_ends_on_the_next_remote_without_it(
    two: Pair, tmp_path: Path
) -> None:
    """The record names the remotes to finish on; one removed since leaves it, and a purge
    left with none is finished by the first remote seen without the old history."""
    a = two.a
    secret = a.add(SECRET)
    a.sync()
    a.run("forget", secret["id"], "--purge", "--yes")
    subprocess.run(["git", "remote", "remove", "origin"], cwd=a.root, check=True)
    backup = tmp_path / "backup.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(backup)], check=True)
    a.run("remote", "add", "backup", str(backup))

    a.run("sync", "--remote", "backup")  # empty: pushed, nothing finished yet
    record = a.root / ".memstore" / "state" / "purges"
    assert secret["id"] in record.read_text(encoding="utf-8")
    a.run("sync", "--remote", "backup")  # its branch exists without the old history

    left = a.run("sync", "--remote", "backup", "--force-purged", "--yes", ok=False)
    assert left.returncode == 1 and "no purge to finish" in left.stderr, left.stderr
    assert "bluefin" not in history_text(backup)
