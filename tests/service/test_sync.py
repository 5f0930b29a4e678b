"""Sync across three clones of one bare remote on disk, standing in for three machines."""

from __future__ import annotations

import os
import random
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pygit2
import pytest

from memstore.core.codec import parse_memory
from memstore.core.config import Settings
from memstore.core.errors import SyncError, VaultError
from memstore.core.merge import merge_file
from memstore.service.store import Store, init_vault
from memstore.service.sync import MARKER, SyncOptions
from memstore.service.tree_merge import merge_trees
from memstore.vault.git import Trailers
from memstore.vault.remote import GC_AUTO, _classify, count_objects, needs_packing
from tests.conftest import EXE, git, head, invoke_memstore, vault_bytes


def environment() -> dict[str, str]:
    return {**os.environ, "PATH": f"{EXE.parent}{os.pathsep}{os.environ.get('PATH', '')}"}


def machine_settings(path: Path, host: str) -> Settings:
    return Settings(vault=path, source="test", session=f"s-{host}", host=host, env=environment())


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    path = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(path)], check=True)
    return path


@pytest.fixture
def machines(tmp_path: Path, remote: Path) -> Iterator[list[Store]]:
    """Three vaults syncing through `remote`: A created it, B and C cloned it."""
    first = tmp_path / "a"
    init_vault(first, machine_settings(first, "host-a"))
    stores = [Store.open(machine_settings(first, "host-a"))]
    stores[0].set_remote(str(remote))
    stores[0].sync()
    for name in ("b", "c"):
        path = tmp_path / name
        subprocess.run(
            ["git", "clone", "-q", str(remote), str(path)], check=True, capture_output=True
        )
        init_vault(
            path, machine_settings(path, f"host-{name}")
        )  # adopts the clone, registers the driver
        stores.append(Store.open(machine_settings(path, f"host-{name}")))
    yield stores
    for store in stores:
        store.close()


def memory_files(store: Store) -> dict[str, bytes]:
    return {p: d for p, d in vault_bytes(store.vault.root).items() if p.endswith(".md")}


def converge(stores: list[Store]) -> None:
    for store in [*stores, *stores]:
        store.sync()


def one_behind(a: Store, b: Store, texts: list[str]) -> list[str]:
    """`a` adds `texts` to infra and both converge, then `b` adds a memory and syncs: `a` is a
    commit behind its remote. Return the ids `a` added."""
    ids = [a.add(text, workspace="infra").id for text in texts]
    converge([a, b])
    b.add("Loki keeps logs for thirty days", workspace="ops")
    b.sync()
    return ids


def test_sync_without_a_remote_says_how_to_add_one(store: Store) -> None:
    with pytest.raises(SyncError, match="memstore remote add URL"):
        store.sync()


def test_different_memories_on_each_machine_all_arrive(machines: list[Store]) -> None:
    a, b, c = machines
    a.add("alpha lesson from A", workspace="global")
    b.add("bravo lesson from B", workspace="webshop")
    c.add("charlie lesson from C", workspace="infra")
    converge(machines)
    assert memory_files(a) == memory_files(b) == memory_files(c)
    assert len(memory_files(a)) == 3
    for store in machines:  # the index follows the merged files at once
        assert {h.workspace for h in store.search("lesson", k=10).hits} == {
            "global",
            "webshop",
            "infra",
        }


def test_the_same_memory_added_on_two_machines_is_one_file_seen_twice(
    machines: list[Store],
) -> None:
    a, b, _ = machines
    a.add("Use pnpm, never npm", workspace="global", keywords=("pnpm",))
    b.add("use pnpm, never npm", workspace="global", keywords=("npm",))
    converge(machines[:2])
    files = memory_files(a)
    assert files == memory_files(b) and len(files) == 1
    memory = parse_memory(next(iter(files.values())).decode(), path=next(iter(files)))
    assert memory.seen == 2 and set(memory.keywords) == {"pnpm", "npm"}


def test_keywords_added_on_both_sides_unite_and_counts_stay_exact(machines: list[Store]) -> None:
    a, b, _ = machines
    a.add("Redis runs on 6380 in dev", workspace="infra", keywords=("redis",))
    converge(machines[:2])
    a.add("Redis runs on 6380 in dev", workspace="infra", keywords=("port",))
    b.add("Redis runs on 6380 in dev", workspace="infra", keywords=("dev",))
    converge(machines[:2])
    memory = b.show(a.search("redis 6380").hits[0].id)[1]
    assert set(memory.keywords) == {"redis", "port", "dev"} and memory.seen == 3


def test_a_body_edited_differently_keeps_both_texts_and_doctor_lists_it(
    machines: list[Store],
) -> None:
    a, b, _ = machines
    added = a.add("Postgres listens on 5432", workspace="infra")
    converge(machines[:2])
    for store, text in (
        (a, "Postgres listens on 5433 now"),
        (b, "Postgres moved behind pgbouncer on 6432"),
    ):
        path = store.vault.root / added.path
        path.write_text(
            path.read_text(encoding="utf-8").replace("Postgres listens on 5432", text),
            encoding="utf-8",
        )
    a.sync()
    outcome, _, _ = b.sync()
    assert outcome.conflicts == [added.path]
    text = (b.vault.root / added.path).read_text(encoding="utf-8")
    assert (
        "Postgres listens on 5433 now" in text and "Postgres moved behind pgbouncer on 6432" in text
    )
    assert "conflict: true" in text
    found, _ = b.doctor()
    assert found.conflicts == (added.path,)
    a.sync()
    assert memory_files(a) == memory_files(b)


def test_delete_on_one_side_and_edit_on_the_other_keeps_the_edit(machines: list[Store]) -> None:
    a, b, _ = machines
    edited = a.add("Feature flags live in LaunchDarkly", workspace="global")
    counted = a.add("Sprint review is on Thursday", workspace="global")
    converge(machines[:2])
    (a.vault.root / edited.path).unlink()
    (a.vault.root / counted.path).unlink()
    path = b.vault.root / edited.path
    path.write_text(path.read_text(encoding="utf-8") + "Project key: web.\n", encoding="utf-8")
    b.add("Sprint review is on Thursday", workspace="global")  # only a counter changes
    a.sync()
    outcome, _, _ = b.sync()
    assert outcome.kept == [edited.path]
    assert (b.vault.root / edited.path).exists() and not (b.vault.root / counted.path).exists()


def test_a_plain_git_pull_uses_the_registered_merge_driver(machines: list[Store]) -> None:
    a, b, _ = machines
    a.add("Deploys need approval from maria", workspace="webshop")
    converge(machines[:2])
    a.add("Deploys need approval from maria", workspace="webshop", keywords=("deploy",))
    a.sync()
    b.add("deploys need approval from maria", workspace="webshop", keywords=("approval",))
    # registered by absolute path: a git started without memstore on PATH still merges
    assert git(b.vault.root, "config", "merge.memstore.driver").startswith(f"{EXE} merge-file")
    done = subprocess.run(
        ["git", "pull", "-q", "--no-rebase", "--no-edit"],
        cwd=b.vault.root,
        env={**os.environ, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    path = next(iter(memory_files(b)))
    memory = parse_memory((b.vault.root / path).read_text(encoding="utf-8"), path=path)
    assert (
        memory.seen == 3
        and set(memory.keywords) == {"deploy", "approval"}
        and "<<<<<<<" not in memory.body
    )


def test_recall_counters_are_flushed_in_one_commit_and_add_up_across_machines(
    machines: list[Store],
) -> None:
    a, b, _ = machines
    added = a.add("Kafka consumer lag alerts at 10k", workspace="data")
    converge(machines[:2])
    commits = len(git(a.vault.root, "log", "--format=%s").splitlines())
    for _ in range(3):
        a.recall("kafka lag", workspace="data", record_usage=True)
    for _ in range(2):
        b.recall("kafka lag", workspace="data", record_usage=True)
    assert (
        len(git(a.vault.root, "log", "--format=%s").splitlines()) == commits
    )  # recall wrote nothing
    converge(machines[:2])
    for store in (a, b):
        assert store.show(added.id)[1].recalled == 5
    assert (
        sum(
            "recall: usage of 1 memory" in s
            for s in git(a.vault.root, "log", "--format=%s").splitlines()
        )
        == 2
    )


def test_an_unreachable_remote_is_a_clear_error_and_keeps_local_commits(
    store: Store, tmp_path: Path
) -> None:
    missing = tmp_path / "missing.git"
    store.set_remote(str(missing))
    added = store.add("kept locally", workspace="global")
    before = head(store.vault.root)
    with pytest.raises(SyncError, match="your commits are kept") as raised:
        store.sync()
    assert head(store.vault.root) == before and store.show(added.id)
    # a path names what makes it reachable again (it said "run sync again when reachable")
    assert f"there is no repository at {missing}" in str(raised.value)
    assert f"git init --bare {missing}" in str(raised.value)


def test_authentication_failures_are_named() -> None:
    error = _classify(
        "fatal: Authentication failed for 'https://example.com/x.git/'",
        "origin",
        "https://example.com/x.git",
        "fetch from",
    )
    assert "refused authentication" in str(error) and "credential helper" in str(error)


def test_a_rejected_push_is_retried_after_merging(
    machines: list[Store], remote: Path, tmp_path: Path
) -> None:
    a, b, c = machines
    converge([a, b, c])
    c.add("written on C while B fetches", workspace="global")
    # B's fetch ends, then C pushes before B does: B's push is rejected as behind.
    flag = tmp_path / "pushed-once"
    script = tmp_path / "upload-pack-then-push"
    script.write_text(
        f'#!/bin/sh\ngit-upload-pack "$@"\nstatus=$?\n'
        f"if [ ! -e '{flag}' ]; then touch '{flag}'; "
        f"git -C '{c.vault.root}' push -q '{remote}' HEAD:refs/heads/main; fi\n"
        "exit $status\n",
        encoding="utf-8",
    )
    script.chmod(0o755)
    git(b.vault.root, "config", "remote.origin.uploadpack", str(script))
    b.add("written on B", workspace="global")
    outcome, _, _ = b.sync()
    assert outcome.pushed and flag.exists() and outcome.merge == "merged"
    a.sync()
    assert len(memory_files(a)) == 2


def test_a_push_the_server_declines_names_its_reason(machines: list[Store], remote: Path) -> None:
    a, _, _ = machines
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'policy: no pushes on Fridays' >&2\nexit 1\n", "utf-8")
    hook.chmod(0o755)
    a.add("written on A", workspace="global")
    with pytest.raises(SyncError, match="declined the push: policy: no pushes on Fridays"):
        a.sync()
    assert len(memory_files(a)) == 1


def test_an_unrelated_remote_history_is_refused_then_merged_when_allowed_losing_nothing(
    machines: list[Store], remote: Path, tmp_path: Path
) -> None:
    a, b, _ = machines
    a.add("memory that A has", workspace="global")
    converge(machines[:2])
    stranger = tmp_path / "stranger"
    init_vault(stranger, machine_settings(stranger, "host-x"))
    with Store.open(machine_settings(stranger, "host-x")) as other:
        other.add("memory from a rewritten history", workspace="global")
    subprocess.run(
        ["git", "push", "-q", "-f", str(remote), "HEAD:refs/heads/main"],
        cwd=stranger,
        check=True,
        capture_output=True,
    )
    b.add("memory that B adds after the rewrite", workspace="global")
    before = head(remote)
    for store in (a, b):  # as git does: a history sharing no commit is never merged unasked
        with pytest.raises(SyncError, match="shares no commit") as refused:
            store.sync()
        assert "memstore sync --allow-unrelated" in str(refused.value)
        assert "\n" not in str(refused.value)
    assert head(remote) == before
    b.sync(options=SyncOptions(allow_unrelated=True))
    converge(machines[:2])
    texts = {parse_memory(d.decode(), path=p).body.strip() for p, d in memory_files(a).items()}
    assert texts == {
        "memory that A has",
        "memory from a rewritten history",
        "memory that B adds after the rewrite",
    }
    assert memory_files(a) == memory_files(b)


def test_a_sync_killed_mid_merge_is_finished_by_the_next(machines: list[Store]) -> None:
    a, b, _ = machines
    a.add("from A", workspace="global")
    a.sync()
    b.add("from B", workspace="global")
    from memstore.vault import remote as transport

    transport.fetch(b.vault.root, "origin", environment())
    ours, theirs = b.git.head(), b.git.resolve("refs/remotes/origin/main")
    tree = merge_trees(
        b.git,
        b.git.merge_base(ours, theirs),
        ours,
        theirs,
        lambda p, x, y, z: merge_file(p, x, y, z).data,
    )
    commit = b.git.commit_merge(tree, ours, theirs, "sync: merge", Trailers("t", "s", "h"))
    b.vault.write_state(MARKER, commit)  # killed here: the commit exists, nothing checked out
    assert not any("from A" in d.decode() for d in memory_files(b).values())
    outcome, _, _ = b.sync()  # taking the lock finishes the merge, before edits are committed
    assert outcome.pushed and b.git.head() == commit and not b.vault.read_state(MARKER)
    assert not any(c.message.startswith("edit(") for c in b.git.history())
    assert {parse_memory(d.decode(), path=p).body.strip() for p, d in memory_files(b).items()} == {
        "from A",
        "from B",
    }


def test_twenty_random_rounds_end_identical_with_exact_counters(machines: list[Store]) -> None:
    rng = random.Random(7)
    texts = [f"shared lesson number {n}" for n in range(6)]
    adds: Counter[str] = Counter()
    recalls: Counter[str] = Counter()
    appended: list[str] = []
    notes = {}
    for store in machines[:1]:
        for n in range(3):
            notes[n] = store.add(f"journal {n}", workspace="infra").path
    converge(machines)
    for round_number in range(20):
        for index, store in enumerate(machines):
            action = rng.choice(["add", "add", "recall", "edit", "sync"])
            if action == "add":
                text = rng.choice(texts)
                store.add(text, workspace="global", keywords=(f"k{rng.randrange(4)}",))
                adds[text] += 1
            elif action == "recall":
                found = store.recall("shared lesson", workspace="global", k=3, record_usage=True)
                for hit in found.hits:
                    recalls[hit.content.strip()] += 1
            elif action == "edit":
                path = store.vault.root / notes[rng.randrange(3)]
                line = f"note from machine {index} in round {round_number}"
                path.write_text(path.read_text(encoding="utf-8") + line + "\n", encoding="utf-8")
                appended.append(line)
            else:
                store.sync()
    for store in machines:  # the counts not due yet (a sync writes those due): all of them
        store.flush_usage()
    converge(machines)
    files = memory_files(machines[0])
    assert files == memory_files(machines[1]) == memory_files(machines[2])
    memories = [parse_memory(d.decode(), path=p) for p, d in files.items()]
    shared = {m.body.strip(): m for m in memories if m.body.startswith("shared lesson")}
    assert {text: m.seen for text, m in shared.items()} == dict(adds)
    assert {text: m.recalled for text, m in shared.items() if m.recalled} == dict(recalls)
    journal = "".join(m.body for m in memories if m.body.startswith(("journal", "<!--")))
    assert all(line in journal for line in appended)


def test_sync_packs_history_once_git_would(machines: list[Store]) -> None:
    laptop = machines[0]
    repo = pygit2.Repository(str(laptop.vault.root))
    objects = repo.path.rstrip("/") + "/objects/17"
    # reachable loose objects the way libgit2 leaves them (kept under a ref of their own,
    # outside the vault's files), until objects/17 holds git's threshold
    tree = repo.TreeBuilder()
    n = 0
    while not os.path.isdir(objects) or len(os.listdir(objects)) <= -(-GC_AUTO // 256):
        tree.insert(
            f"f{n}", repo.create_blob(f"loose object {n}".encode()), pygit2.GIT_FILEMODE_BLOB
        )
        n += 1
    who = pygit2.Signature("test", "test@example.com")
    repo.create_commit("refs/test/loose", who, who, "loose objects", tree.write(), [])
    assert needs_packing(laptop.vault.root)
    subprocess.run(["git", "config", "gc.autoDetach", "false"], cwd=laptop.vault.root, check=True)
    laptop.add("Packing happens during sync", workspace="global")
    laptop.sync()
    assert not needs_packing(laptop.vault.root)
    counts = count_objects(laptop.vault.root, environment())
    assert counts.packed_kib > 0 and counts.loose < n


def pushed_vault(tmp_path: Path, remote: Path, text: str) -> Path:
    """A first machine's vault holding one memory, synced to `remote`."""
    first = tmp_path / "first"
    init_vault(first, machine_settings(first, "host-a"))
    with Store.open(machine_settings(first, "host-a")) as store:
        store.add(text, workspace="global")
        store.set_remote(str(remote))
        store.sync()
    return first


def test_a_clone_of_a_bare_remote_on_master_takes_main_instead_of_forking(
    tmp_path: Path,
) -> None:
    # `git init --bare` without -b: its HEAD names `master`, a branch memstore never pushes
    bare = tmp_path / "plain.git"
    subprocess.run(
        ["git", "-c", "init.defaultBranch=master", "init", "-q", "--bare", str(bare)], check=True
    )
    pushed_vault(tmp_path, bare, "Deploys go through the release train on Tuesdays")
    assert git(bare, "symbolic-ref", "HEAD") == "refs/heads/main\n"  # sync's push set it
    git(bare, "symbolic-ref", "HEAD", "refs/heads/master")  # as a plain git push leaves it
    second = tmp_path / "second"
    clone = subprocess.run(
        ["git", "clone", str(bare), str(second)], capture_output=True, text=True, check=True
    )
    assert "nonexistent ref" in clone.stderr  # the clone checked out nothing
    env = {**environment(), "MEMSTORE_VAULT": str(second)}
    init = invoke_memstore("init", env=env)
    assert init.returncode == 0 and "checked out origin/main" in init.stdout
    found = invoke_memstore("search", "release train", env=env)
    assert "Tuesdays" in found.stdout
    assert invoke_memstore("sync", env=env).returncode == 0
    branches = git(bare, "for-each-ref", "--format=%(refname)", "refs/heads")
    assert branches.split() == ["refs/heads/main"]  # one history, no second root on master
    assert git(second, "rev-parse", "HEAD") == git(bare, "rev-parse", "main")


def test_init_never_overwrites_files_in_an_empty_clone(tmp_path: Path, remote: Path) -> None:
    first = pushed_vault(tmp_path, remote, "Use pnpm, never npm")
    second = tmp_path / "second"
    second.mkdir()
    git(second, "init", "-q", "-b", "trunk")
    git(second, "remote", "add", "origin", str(remote))
    git(second, "fetch", "-q", "origin")
    path = next((first / "global").rglob("*.md"))
    mine = second / path.parent.relative_to(first)
    mine.mkdir(parents=True)
    # a memory of its own (a file that is not one would stop init before any checkout)
    words = "---\nid: mine1234\n---\nmy own words\n"
    (mine / path.name).write_text(words, encoding="utf-8")
    with pytest.raises(VaultError, match="move the files in the way aside"):
        init_vault(second, machine_settings(second, "host-b"))
    assert (mine / path.name).read_text(encoding="utf-8") == words


def test_sync_names_unreadable_files_it_committed(machines: list[Store]) -> None:
    root = machines[0].vault.root
    (root / "global").mkdir(exist_ok=True)
    (root / "global" / "blob.md").write_bytes(b"\x00\x01binary\xff")
    env = {**environment(), "MEMSTORE_VAULT": str(root)}
    done = invoke_memstore("sync", env=env)
    assert done.returncode == 0, done.stderr
    assert "committed edits made outside memstore" in done.stdout
    assert "1 file memstore cannot read (global/blob.md)" in done.stdout
    again = invoke_memstore("sync", env=env)
    assert "cannot read" not in again.stdout  # said once, when it was committed
    # A later sync that commits some other hand edit does not name it again.
    (root / "global" / "hand-note.md").write_text("a readable note by hand\n", encoding="utf-8")
    other = invoke_memstore("sync", env=env)
    assert "committed edits made outside memstore" in other.stdout, other.stdout
    assert "cannot read" not in other.stdout


def test_init_takes_origin_main_not_a_branch_that_ends_in_main(
    tmp_path: Path, remote: Path
) -> None:
    first = pushed_vault(tmp_path, remote, "Use pnpm, never npm")
    git(first, "push", "-q", "origin", "HEAD:refs/heads/feature/main")
    git(remote, "symbolic-ref", "HEAD", "refs/heads/master")  # as plain `git init --bare`
    second = tmp_path / "second"
    subprocess.run(["git", "clone", "-q", str(remote), str(second)], capture_output=True)
    result = init_vault(second, machine_settings(second, "host-b"))
    assert result.checked_out == "origin/main"
    assert git(second, "symbolic-ref", "HEAD").strip() == "refs/heads/main"


def test_a_memory_moved_on_one_machine_and_edited_on_the_other_stays_one_file(
    machines: list[Store],
) -> None:
    a, b, _ = machines
    added = a.add("Staging deploys need approval from maria", workspace="webshop")
    converge([a, b])
    moved = f"ops/{added.path.rsplit('/', 1)[1]}"
    (a.vault.root / "ops").mkdir()
    (a.vault.root / added.path).rename(a.vault.root / moved)
    a.sync()
    edited = b.vault.root / added.path
    edited.write_text(
        edited.read_text(encoding="utf-8") + "Tom can approve too.\n", encoding="utf-8"
    )
    b.sync()
    a.sync()

    for store in (a, b):
        files = [p for p in memory_files(store) if p.endswith(f"-{added.id}.md")]
        assert files == [moved]
        assert "Tom can approve too." in (store.vault.root / moved).read_text(encoding="utf-8")
        assert store.show(added.id)[0].path == moved


def test_a_move_onto_a_name_the_other_machine_also_uses_keeps_both_texts(
    machines: list[Store],
) -> None:
    a, b, _ = machines
    (a.vault.root / "global").mkdir()
    (a.vault.root / "global" / "notes.md").write_text("shared notes\n", encoding="utf-8")
    a.sync()
    b.sync()
    (a.vault.root / "proj").mkdir()
    (a.vault.root / "global" / "notes.md").rename(a.vault.root / "proj" / "notes.md")
    a.sync()
    (b.vault.root / "global" / "notes.md").write_text("shared notes\nB's edit\n", "utf-8")
    (b.vault.root / "proj").mkdir()
    (b.vault.root / "proj" / "notes.md").write_text("B's own project notes\n", "utf-8")
    b.sync()

    texts = "\n".join(memory_files(b)[p].decode() for p in memory_files(b))
    assert "B's edit" in texts and "B's own project notes" in texts


def test_a_new_empty_vault_joins_an_unrelated_remote_without_asking(
    machines: list[Store], remote: Path, tmp_path: Path
) -> None:
    a = machines[0]
    a.add("memory that A has", workspace="global")
    a.sync()
    fresh = tmp_path / "fresh"
    init_vault(fresh, machine_settings(fresh, "host-f"))  # its own init commit, no memories
    with Store.open(machine_settings(fresh, "host-f")) as joined:
        joined.set_remote(str(remote))
        joined.sync()
        texts = [m.decode() for p, m in memory_files(joined).items()]
    assert any("memory that A has" in text for text in texts)


SCRATCH = ("x.md~", "#x.md#", ".#x.md", ".x.md.swp", "x.md.orig", "x.md.rej", "x.md.tmp")


def test_sync_never_commits_an_editors_backup_or_temporary_file(
    machines: list[Store], remote: Path
) -> None:
    root = machines[0].vault.root
    folder = root / "webshop" / "2026-12" / "07"
    folder.mkdir(parents=True)
    for name in SCRATCH:  # what Emacs, Vim and merge tools leave beside a memory
        (folder / name).write_text("an editor's leftover\n", encoding="utf-8")
    env = {**environment(), "MEMSTORE_VAULT": str(root)}
    before = git(root, "rev-parse", "HEAD")
    done = invoke_memstore("sync", env=env)
    assert done.returncode == 0, done.stderr
    assert "committed edits made outside memstore" not in done.stdout, done.stdout
    assert git(root, "rev-parse", "HEAD") == before
    assert git(remote, "ls-tree", "-r", "--name-only", "main", "webshop") == ""
    # The memory beside them is a person's edit: committed, pushed, alone.
    (folder / "x.md").write_text("Deploys go out on Tuesdays\n", encoding="utf-8")
    done = invoke_memstore("sync", env=env)
    assert "committed edits made outside memstore" in done.stdout, done.stdout
    pushed = git(remote, "ls-tree", "-r", "--name-only", "main", "webshop").split()
    assert pushed == ["webshop/2026-12/07/x.md"]
    assert git(root, "log", "-1", "--format=%s", "main").startswith("edit(webshop): ")
    assert git(root, "status", "--porcelain", "--untracked-files=all").count("??") == len(SCRATCH)
