"""A person's edit is first-class: committed on its own, never swept into memstore's commits,
never undone by `revert --session`; and the writer's own debris (git locks, a stale git
index, a held vault lock) never needs a person."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from memstore.core.config import Settings
from memstore.core.errors import InvalidInputError, LockedError, VaultError
from memstore.core.model import Memory
from memstore.service.history import History
from memstore.service.store import Store
from memstore.vault.files import Vault
from memstore.vault.git_processes import STALE_LOCK_S, git_committing_in
from tests.cli.test_upkeep import cli
from tests.conftest import commit_count, git, run_memstore, settings_at, wait_until


def trailer(vault: Path, rev: str, name: str) -> str:
    return git(vault, "log", "-1", f"--format=%(trailers:key=Memstore-{name},valueonly)", rev)


def subjects(vault: Path, n: int) -> list[str]:
    return git(vault, "log", f"-{n}", "--format=%s").splitlines()


def changed_in(vault: Path, rev: str) -> str:
    return git(vault, "show", "--format=", "--unified=0", rev)


def test_a_hand_edit_is_not_swept_into_a_usage_flush(store: Store, vault: Path) -> None:
    added = store.add("Deploys to staging need approval from maria", workspace="webshop")
    store.recall("staging approval", workspace="webshop", record_usage=True)
    path = vault / added.path
    with path.open("a", encoding="utf-8") as handle:
        handle.write("Since November: approval from tom as well.\n")

    assert store.flush_usage() == 1

    flush, edit = subjects(vault, 2)
    assert flush == "recall: usage of 1 memory"
    assert edit.startswith("edit(webshop): Deploys to staging need approval")
    assert trailer(vault, "HEAD~1", "Source").strip() == "editor"
    assert trailer(vault, "HEAD~1", "Session").strip() == ""
    assert "approval from tom" in changed_in(vault, "HEAD~1")
    assert "approval from tom" not in changed_in(vault, "HEAD")
    assert "recalled: 1" in changed_in(vault, "HEAD")


def test_revert_session_never_undoes_a_hand_edit(vault: Path) -> None:
    agent = Settings(vault=vault, source="claude-code", session="agent-1", host="h")
    with Store.open(agent) as store:
        added = store.add("Use pnpm, not npm, in this repository", workspace="web")
        store.recall("pnpm", workspace="web", record_usage=True)
        path = vault / added.path
        path.write_text(path.read_text(encoding="utf-8") + "Also for CI.\n", encoding="utf-8")
        store.flush_usage()

    with Store.open(settings_at(vault)) as person:
        History(person).revert_session("agent-1")

    assert path.exists() and "Also for CI." in path.read_text(encoding="utf-8")
    assert git(vault, "status", "--porcelain") == ""


def test_a_duplicate_add_commits_the_hand_edit_first(store: Store, vault: Path) -> None:
    added = store.add("nginx client_max_body_size causes upload 413", workspace="ops")
    path = vault / added.path
    text = path.read_text(encoding="utf-8").replace("causes upload 413", "causes upload 413")
    path.write_text(text + "Checked on 2026-11-30.\n", encoding="utf-8")
    store.catch_up()  # the index knows the edited text; the edit is not committed yet

    store.add(
        "nginx client_max_body_size causes upload 413\nChecked on 2026-11-30.", workspace="ops"
    )

    seen, edit = subjects(vault, 2)
    assert seen.startswith("seen(ops)") and edit.startswith("edit(ops)")
    assert "Checked on" in changed_in(vault, "HEAD~1")
    assert "Checked on" not in changed_in(vault, "HEAD")


def test_update_finds_a_memory_written_by_hand_since_the_last_catch_up(
    store: Store, vault: Path
) -> None:
    store.add("something to index first", workspace="notes")
    (vault / "notes" / "by-hand-abcd2345.md").write_text(
        "---\nid: abcd2345\nkind: note\n---\nWritten in an editor a moment ago.\n",
        encoding="utf-8",
    )
    confirmed = store.confirm("abcd2345")
    assert confirmed.confirmed == 1


def test_an_exact_id_wins_over_a_longer_id_it_prefixes(store: Store, vault: Path) -> None:
    for memory_id in ("gafx", "gafxzzzz"):
        (vault / "notes").mkdir(exist_ok=True)
        (vault / "notes" / f"m-{memory_id}.md").write_text(
            f"---\nid: {memory_id}\nkind: note\n---\nmemory {memory_id}\n", encoding="utf-8"
        )
    entry, _ = store.show("gafx")
    assert entry.id == "gafx"
    with pytest.raises(InvalidInputError, match="matches 2 memories"):
        store.show("gaf")


def test_a_forged_trailer_is_refused_before_anything_is_written(vault: Path) -> None:
    before = commit_count(vault)
    done = cli(
        vault,
        "add",
        "text",
        "-w",
        "notes",
        env={"MEMSTORE_SESSION": "abc\nMemstore-Source: forged"},
    )
    assert done.returncode == 1
    assert "MEMSTORE_SESSION" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert commit_count(vault) == before
    with pytest.raises(InvalidInputError):
        Store.open(Settings(vault=vault, session="a\nb", host="h"))


def test_a_stale_git_index_lock_is_removed_and_the_add_succeeds(vault: Path) -> None:
    lock = vault / ".git" / "index.lock"
    lock.write_bytes(b"")
    old = time.time() - 60
    os.utime(lock, (old, old))

    done = cli(vault, "add", "after a crash", "-w", "notes", "--json")

    assert done.returncode == 0, done.stderr
    assert "removed .git/index.lock" in done.stderr
    assert not lock.exists()
    assert git(vault, "status", "--porcelain") == ""
    assert json.loads(done.stdout)["status"] == "added"


def test_a_lock_held_by_a_live_git_process_is_kept_and_the_add_still_succeeds(
    vault: Path,
) -> None:
    lock = vault / ".git" / "index.lock"
    lock.write_bytes(b"")
    old = time.time() - 60
    os.utime(lock, (old, old))
    # A person's git at work in the vault (waiting on its input, as `git commit` waits
    # for an editor): its lock must not be taken away.
    person = subprocess.Popen(
        ["git", "hash-object", "--stdin"], cwd=vault, stdin=subprocess.PIPE, text=True
    )
    try:
        before = commit_count(vault)
        done = cli(vault, "add", "while git runs", "-w", "notes")
        assert done.returncode == 0, done.stderr
        assert lock.exists()
        assert commit_count(vault) == before + 1  # committed, reported as added
        assert "the next memstore command repairs it" in done.stderr
    finally:
        person.communicate("x", timeout=10)
    lock.unlink()
    assert cli(vault, "search", "git runs", "-w", "notes").returncode == 0
    assert git(vault, "status", "--porcelain") == ""


def test_a_kill_between_commit_and_git_index_is_repaired_by_the_next_command(
    vault: Path,
) -> None:
    done = run_memstore(
        "add",
        "killed mid-commit",
        "-w",
        "notes",
        vault=vault,
        env={"MEMSTORE_CRASH_AT": "git-commit"},
    )
    assert done.returncode == -9
    assert git(vault, "status", "--porcelain") != ""  # D + ?? for the new memory

    after = cli(vault, "search", "anything", "-w", "notes")

    assert after.returncode == 0
    assert "repaired git's index" in after.stderr
    assert git(vault, "status", "--porcelain") == ""
    git(vault, "commit", "-qam", "a person's unrelated commit", "--allow-empty")
    assert "killed-mid-commit" in git(vault, "ls-files")


def test_writers_queue_while_the_lock_changes_hands(vault: Path) -> None:
    turns: list[int] = []
    hold, timeout, count = 0.1, 0.6, 12  # each turn far inside the timeout, all far past it

    def writers() -> None:
        for n in range(count):  # writers' turns back to back
            with Vault(vault).lock(5):
                turns.append(n)
                time.sleep(hold)  # one writer's commit

    queue = threading.Thread(target=writers)
    queue.start()
    wait_until(lambda: turns, 5, "the first writer holds the lock")
    # It waits about 1.1 s in all, past its 0.6 s timeout, because the lock keeps changing
    # hands; only one holder keeping it 0.6 s would make it give up. A turn is 0.1 s, so a
    # loaded machine must stretch one sleep sixfold before the waiter gives up wrongly.
    with Vault(vault).lock(timeout):  # raises LockedError if it gives up
        turns.append(99)
    queue.join(30)
    assert sorted(turns) == [*range(count), 99]


def test_a_stuck_holder_is_named_when_the_wait_gives_up(vault: Path) -> None:
    holding = Vault(vault)
    with (
        holding.lock(5),
        pytest.raises(LockedError, match=rf"process {os.getpid()} "),
        Vault(vault).lock(0.2),
    ):
        pass


def test_confirm_changes_only_its_line_of_a_hand_written_file(store: Store, vault: Path) -> None:
    (vault / "notes").mkdir()
    path = vault / "notes" / "kept-k3xq9v2m.md"
    original = (
        "---\n"
        "id: k3xq9v2m   # chosen by hand\n"
        "kind: lesson\n"
        "# reviewed with maria\n"
        "keywords:\n"
        "  - nginx\n"
        "  - '413'\n"
        "tags: [ops]\n"
        "---\n"
        "Upload 413 is nginx client_max_body_size.\n"
    )
    path.write_text(original, encoding="utf-8")

    store.confirm("k3xq9v2m")

    after = path.read_text(encoding="utf-8")
    added = f"confirmed: 1\nconfirmed_by: {{{store.replica()}: 1}}\n"  # this clone's confirm
    assert after == original.replace("tags: [ops]\n", "tags: [ops]\n" + added)
    assert subjects(vault, 2) == [
        "confirm(notes): Upload 413 is nginx client_max_body_size.",
        "edit(notes): Upload 413 is nginx client_max_body_size.",
    ]


def test_files_are_private_after_a_clone_is_adopted_and_after_sync(tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    first = tmp_path / "first"
    assert cli(first, "init", str(first)).returncode == 0
    assert cli(first, "add", "shared fact", "-w", "team").returncode == 0
    assert cli(first, "remote", "add", str(remote)).returncode == 0
    assert cli(first, "sync").returncode == 0
    clone = tmp_path / "clone"
    old = os.umask(0o022)
    try:
        git(tmp_path, "clone", "-q", str(remote), str(clone))
    finally:
        os.umask(old)
    assert cli(clone, "init", str(clone)).returncode == 0
    assert cli(first, "add", "second fact", "-w", "newspace").returncode == 0
    assert cli(first, "sync").returncode == 0
    with Store.open(settings_at(clone)) as store:
        store.sync()  # in process, with this test's umask: sync itself makes them private
    modes = {
        p.relative_to(clone).as_posix(): p.stat().st_mode & 0o777
        for p in [clone, *clone.glob("*"), *clone.glob("[!.]*/**/*")]
        if not p.name.startswith(".")
    }
    assert "newspace" in modes and "team" in modes
    assert all(mode in (0o700, 0o600) for mode in modes.values()), modes


def test_sync_repairs_a_merge_driver_that_points_nowhere(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    assert cli(vault, "init", str(vault)).returncode == 0
    git(vault, "config", "merge.memstore.driver", "/nowhere/memstore merge-file %O %A %B %P")
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    assert cli(vault, "remote", "add", str(remote)).returncode == 0

    done = cli(vault, "sync")

    assert done.returncode == 0, done.stderr
    assert "/nowhere/memstore" in done.stderr
    driver = git(vault, "config", "merge.memstore.driver").strip()
    program = driver.split(" ", 1)[0].strip("'")
    assert os.access(program, os.X_OK) and program.endswith("/memstore")


def test_a_killed_write_is_not_undone_over_an_edit_made_after_it(vault: Path) -> None:
    assert cli(vault, "add", "Rotate the staging TLS cert in March", "-w", "ops").returncode == 0
    done = run_memstore(
        "add",
        "Rotate the staging TLS cert in March",
        "-w",
        "ops",
        vault=vault,
        env={"MEMSTORE_CRASH_AT": "memory-written"},
    )
    assert done.returncode == -9  # killed between its write and its commit
    path = next((vault / "ops").rglob("*.md"))
    path.write_text(path.read_text(encoding="utf-8") + "Owner: tom.\n", encoding="utf-8")

    after = cli(vault, "search", "staging cert", "-w", "ops")

    assert after.returncode == 0 and "kept ops/" in after.stderr
    assert "Owner: tom." in path.read_text(encoding="utf-8")


def test_a_failed_commit_leaves_no_journal_to_undo_a_later_edit(vault: Path) -> None:
    assert cli(vault, "add", "Feature flags live in LaunchDarkly", "-w", "web").returncode == 0
    branch = git(vault, "symbolic-ref", "HEAD").strip()
    lock = vault / ".git" / f"{branch}.lock"
    lock.write_bytes(b"")
    person = subprocess.Popen(  # a live git process: its lock is kept, the commit fails
        ["git", "hash-object", "--stdin"], cwd=vault, stdin=subprocess.PIPE, text=True
    )
    try:
        failed = cli(vault, "add", "Feature flags live in LaunchDarkly", "-w", "web")
    finally:
        person.communicate("x", timeout=10)
    lock.unlink()
    assert failed.returncode == 1
    path = next((vault / "web").rglob("*.md"))
    path.write_text(path.read_text(encoding="utf-8") + "Project key: web.\n", encoding="utf-8")

    assert cli(vault, "search", "flags", "-w", "web").returncode == 0
    assert "Project key: web." in path.read_text(encoding="utf-8")


def test_an_edit_saved_while_memstore_updates_the_file_is_merged_not_overwritten(
    store: Store, vault: Path
) -> None:
    added = store.add("Postgres listens on 5432", workspace="ops")
    path = vault / added.path

    def confirm_while_a_person_saves(memory: Memory) -> Memory:
        # the person's save lands after memstore read the file, before it writes
        path.write_text(path.read_text(encoding="utf-8") + "Behind pgbouncer.\n", "utf-8")
        return replace(memory, confirmed=memory.confirmed + 1)

    store.update(added.id, confirm_while_a_person_saves, "confirm")

    text = path.read_text(encoding="utf-8")
    assert "Behind pgbouncer." in text and "confirmed: 1" in text
    confirm, edit = subjects(vault, 2)
    assert confirm.startswith("confirm(ops)") and edit.startswith("edit(ops)")


def test_a_duplicate_of_a_hand_written_file_is_not_counted_and_says_so(vault: Path) -> None:
    written = "use pnpm not npm\n"  # no front matter: memstore never adds any
    path = vault / "infra" / "pnpm.md"
    path.parent.mkdir()
    path.write_text(written, encoding="utf-8")
    done = cli(vault, "add", "use pnpm not npm", "-w", "infra")
    assert done.returncode == 0, done.stderr
    assert "not counted: its file has no readable front matter" in done.stdout, done.stdout
    assert "seen 1 times" not in done.stdout
    assert path.read_text(encoding="utf-8") == written  # never rewritten
    again = json.loads(cli(vault, "add", "use pnpm not npm", "-w", "infra", "--json").stdout)
    assert again["status"] == "duplicate_uncounted" and again["path"] == "infra/pnpm.md"


@pytest.mark.parametrize(
    "form",
    [
        "git commit",
        "git -C vault commit",
        "git --git-dir=vault/.git commit",
        "git --git-dir vault/.git --work-tree=vault commit",
        "GIT_DIR=vault/.git git commit",
    ],
)
def test_a_git_commit_waiting_in_its_editor_keeps_its_staged_files_and_succeeds(
    vault: Path, tmp_path: Path, form: str
) -> None:
    import sys

    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    assert cli(vault, "remote", "add", str(remote)).returncode == 0
    assert cli(vault, "add", "staging deploys need an approval", "-w", "ops").returncode == 0
    path = next((vault / "ops").rglob("*.md"))
    path.write_text(path.read_text(encoding="utf-8") + "\nfrom the release manager\n", "utf-8")
    git(vault, "add", path.relative_to(vault).as_posix())
    started, release = tmp_path / "editor-open", tmp_path / "editor-may-close"
    editor = tmp_path / "editor.py"  # a person's editor: open until they close it
    editor.write_text(
        "import pathlib, sys, time\n"
        f"pathlib.Path({str(started)!r}).touch()\n"
        "deadline = time.monotonic() + 60\n"
        f"while not pathlib.Path({str(release)!r}).exists() and time.monotonic() < deadline:\n"
        "    time.sleep(0.02)\n"
        "pathlib.Path(sys.argv[1]).write_text('ops: approvals by the release manager\\n')\n",
        encoding="utf-8",
    )
    before = git(vault, "rev-parse", "HEAD").strip()
    # every form but the first runs from the vault's parent folder, naming the vault
    command, env = form.split(), {**os.environ, "GIT_EDITOR": f"{sys.executable} {editor}"}
    while "=" in command[0]:  # a shell's `NAME=value git …`
        name, value = command.pop(0).split("=", 1)
        env[name] = value
    with subprocess.Popen(
        command,
        cwd=vault if form == "git commit" else vault.parent,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as person:
        wait_until(lambda: started.exists() or person.poll() is not None, 30, "the editor opens")
        assert person.poll() is None, "git ended before its editor opened"
        synced = cli(vault, "sync")
        assert synced.returncode == 1 and "a git commit is under way" in synced.stderr
        assert git(vault, "rev-parse", "HEAD").strip() == before  # HEAD stays where git saw it
        release.touch()
        _, err = person.communicate(timeout=60)
    assert person.returncode == 0, err  # the person's commit went through
    assert subjects(vault, 1) == ["ops: approvals by the release manager"]
    assert path.relative_to(vault).as_posix() in changed_in(vault, "HEAD")
    after = cli(vault, "sync")
    assert after.returncode == 0, after.stderr
    assert not any(s.startswith("edit(") for s in subjects(vault, 5))


def test_without_proc_only_a_fresh_index_lock_reads_as_a_commit_under_way(
    vault: Path, tmp_path: Path
) -> None:
    no_proc = tmp_path / "no-proc"  # macOS, BSD: no process table to read
    lock = vault / ".git" / "index.lock"
    assert git_committing_in(vault, no_proc) is None
    lock.touch()
    assert git_committing_in(vault, no_proc) == 0  # a commit may be waiting in its editor
    long_ago = time.time() - STALE_LOCK_S - 1
    os.utime(lock, (long_ago, long_ago))
    # a killed git's lock: it must not hold back every commit of hand edits for good
    assert git_committing_in(vault, no_proc) is None


def _open_editor(vault: Path, tmp_path: Path) -> tuple[subprocess.Popen[str], Path]:
    """Start a person's `git commit` whose editor stays open until the returned file exists."""
    import sys

    started, release = tmp_path / "editor-open", tmp_path / "editor-may-close"
    editor = tmp_path / "editor.py"
    editor.write_text(
        "import pathlib, sys, time\n"
        f"pathlib.Path({str(started)!r}).touch()\n"
        "deadline = time.monotonic() + 60\n"
        f"while not pathlib.Path({str(release)!r}).exists() and time.monotonic() < deadline:\n"
        "    time.sleep(0.02)\n"
        "pathlib.Path(sys.argv[1]).write_text('ops: the person commits their own file\\n')\n",
        encoding="utf-8",
    )
    (vault / "ops").mkdir(exist_ok=True)
    (vault / "ops" / "runbook.md").write_text("Restart the worker first.\n", encoding="utf-8")
    git(vault, "add", "ops/runbook.md")
    person = subprocess.Popen(
        ["git", "commit"],
        cwd=vault,
        env={**os.environ, "GIT_EDITOR": f"{sys.executable} {editor}"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_until(lambda: started.exists() or person.poll() is not None, 30, "the editor opens")
    assert person.poll() is None, "git ended before its editor opened"
    return person, release


def test_an_add_while_a_git_commit_waits_in_its_editor_waits_then_refuses_and_the_commit_succeeds(
    vault: Path, tmp_path: Path
) -> None:
    person, release = _open_editor(vault, tmp_path)
    before = git(vault, "rev-parse", "HEAD").strip()
    with person, Store.open(replace(settings_at(vault), lock_timeout=0.3)) as store:
        with pytest.raises(VaultError, match=r"a git commit is under way in .* \(git, pid \d+\)"):
            store.add("staging deploys need an approval", workspace="ops")
        assert git(vault, "rev-parse", "HEAD").strip() == before  # HEAD stays where git saw it
        release.touch()
        _, err = person.communicate(timeout=60)
    assert person.returncode == 0, err  # before: "cannot lock ref 'HEAD'"
    assert subjects(vault, 1) == ["ops: the person commits their own file"]


def test_an_add_waits_for_a_git_commit_that_finishes_within_the_lock_timeout(
    vault: Path, tmp_path: Path
) -> None:
    person, release = _open_editor(vault, tmp_path)
    done: list[object] = []
    with person, Store.open(settings_at(vault)) as store:
        adding = threading.Thread(
            target=lambda: done.append(
                store.add("staging deploys need an approval", workspace="ops")
            )
        )
        adding.start()

        def held() -> bool:
            with Vault(vault).try_lock() as free:
                return not free

        # the add holds the vault's lock, waiting for the person's commit
        wait_until(lambda: held() or done, 30, "the add takes the vault's lock")
        assert not done, "the add finished without waiting for the person's commit"
        release.touch()
        _, err = person.communicate(timeout=60)
        adding.join(timeout=60)
    assert person.returncode == 0, err
    assert done and subjects(vault, 2)[1] == "ops: the person commits their own file"
    assert subjects(vault, 1)[0].startswith("add(ops)")


def test_no_git_command_under_way_is_told_without_reading_the_process_table(
    vault: Path,
) -> None:
    from memstore.vault.git_processes import _git_may_be_committing

    git(vault, "commit", "-q", "--allow-empty", "-m", "a finished commit")
    assert not _git_may_be_committing(vault / ".git")  # every write asks: a few stats, no /proc
    message = vault / ".git" / "COMMIT_EDITMSG"
    message.write_text("a message being written\n", encoding="utf-8")
    later = (vault / ".git" / "logs" / "HEAD").stat().st_mtime_ns + 10**9  # past the clock tick
    os.utime(message, ns=(later, later))
    assert _git_may_be_committing(vault / ".git")  # what `git commit` writes before its editor


def _sparse(path: Path, size: int) -> Path:
    """A file of `size` bytes that takes no disk (a hole): the test stays fast at 2 GiB."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as handle:
        handle.truncate(size)
    return path


def test_sync_leaves_a_large_file_that_is_no_memory_uncommitted_and_names_it_once(
    vault: Path, tmp_path: Path
) -> None:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    assert cli(vault, "remote", "add", str(remote)).returncode == 0
    _sparse(vault / "global" / "demo.mp4", 2 << 30)
    (vault / "global" / "notes.txt").write_text("call the vendor on monday\n", encoding="utf-8")
    done = cli(vault, "sync")
    assert done.returncode == 0, done.stderr
    (line,) = [line for line in done.stderr.splitlines() if "demo.mp4" in line]
    assert line.startswith("memstore: global/demo.mp4 is 2.0 GiB") and "did not commit" in line
    assert ".gitignore" in line and "git lfs" in line  # the fix
    committed = git(vault, "ls-tree", "-r", "--name-only", "HEAD").split()
    assert "global/notes.txt" in committed
    assert "global/demo.mp4" not in committed
    pushed = git(vault, "--git-dir", str(remote), "ls-tree", "-r", "--name-only", "HEAD")
    assert "global/notes.txt" in pushed and "demo.mp4" not in pushed
    assert git(vault, "status", "--porcelain", "global/demo.mp4").startswith("??")

    doctor = cli(vault, "doctor", "--json")
    assert doctor.returncode == 0, doctor.stderr
    assert json.loads(doctor.stdout)["large_files"] == [
        {"path": "global/demo.mp4", "bytes": 2 << 30}
    ]
    assert "global/demo.mp4 is 2.0 GiB" in cli(vault, "doctor").stdout
    # the fix the line names: ignored, it is no longer listed, and the .gitignore is committed
    with (vault / ".gitignore").open("a", encoding="utf-8") as ignore:
        ignore.write("*.mp4\n")
    assert cli(vault, "sync").returncode == 0
    assert json.loads(cli(vault, "doctor", "--json").stdout)["large_files"] == []
    assert "*.mp4" in git(vault, "show", "HEAD:.gitignore")


def test_the_watchers_edit_commit_leaves_a_large_file_and_warns_once(
    vault: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from memstore.vault.edits import LARGE_FILE_BYTES, large_size

    big = _sparse(vault / "global" / "dump.sql.gz", 64 << 20)
    (vault / "global" / "small.txt").write_text("a small file\n", encoding="utf-8")
    with Store.open(settings_at(vault)) as store:
        for _ in range(2):  # two events on the same file: one line
            with store.transaction(catch_up=False) as tx:
                tx.commit_edits(["global/dump.sql.gz", "global/small.txt"])  # the watcher's
    lines = [r.getMessage() for r in caplog.records if "dump.sql.gz" in r.getMessage()]
    assert len(lines) == 1 and lines[0].startswith("global/dump.sql.gz is 64 MiB"), lines
    assert git(vault, "ls-tree", "-r", "--name-only", "HEAD").split() == [
        ".gitattributes",
        ".gitignore",
        "global/small.txt",
    ]
    # the bound: over it, not at it; a memory (.md) of any size is a memory
    vault_files = Vault(vault)
    at, md = _sparse(vault / "at.bin", LARGE_FILE_BYTES), _sparse(vault / "m.md", 64 << 20)
    assert large_size(vault_files, "at.bin") == 0 and large_size(vault_files, "m.md") == 0
    with at.open("r+b") as handle:
        handle.truncate(LARGE_FILE_BYTES + 1)
    assert large_size(vault_files, "at.bin") == LARGE_FILE_BYTES + 1
    at.unlink()
    md.unlink()
    # a large file the person committed themselves (git lfs, say) is theirs: never named
    big.unlink()
    big = _sparse(big, LARGE_FILE_BYTES + 1)
    git(vault, "add", "global/dump.sql.gz")
    git(vault, "commit", "-q", "-m", "the dump, by hand")
    with big.open("r+b") as handle:
        handle.truncate(LARGE_FILE_BYTES + 2)
    caplog.clear()
    with Store.open(settings_at(vault)) as store, store.transaction(catch_up=False) as tx:
        assert tx.commit_edits(None) == []
    assert not [r for r in caplog.records if "dump.sql.gz" in r.getMessage()]
