"""Memories two machines edited differently: shown without markers, named by sync on both
sides, listed and settled by `memstore conflicts` (two real vaults and a bare remote)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp import Client

from memstore.cli.listing import Filters, read_listing
from memstore.core.codec import parse_memory
from memstore.core.conflicts import display_text, split_versions
from memstore.core.errors import InvalidInputError
from memstore.core.merge import conflict_body, merge_text
from memstore.mcp.server import build_server
from memstore.ops.output import context_lines, search_lines, sync_lines
from memstore.service.resolution import find_conflicts, settle, settle_by_editing
from memstore.service.store import Store, init_vault
from tests.conftest import EXE, commit_count, git, invoke_memstore
from tests.service.test_sync import machine_settings

BEFORE = "Postgres listens on 5432"
MINE_ON_A = "Postgres listens on 5433 now"  # sorts first: version 1 in the file
MINE_ON_B = "Postgres moved behind pgbouncer on 6432"  # version 2


@dataclass
class Pair:
    a: Store  # pulled the merge another machine made
    b: Store  # made the merge that kept both texts
    id: str
    path: str
    a_sync: list[str]  # what `memstore sync` printed on each side
    b_sync: list[str]


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    path = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(path)], check=True)
    return path


@pytest.fixture
def machines(tmp_path: Path, remote: Path) -> Iterator[tuple[Store, Store]]:
    first, second = tmp_path / "a", tmp_path / "b"
    init_vault(first, machine_settings(first, "host-a"))
    a = Store.open(machine_settings(first, "host-a"))
    a.set_remote(str(remote))
    a.sync()
    subprocess.run(["git", "clone", "-q", str(remote), str(second)], check=True)
    init_vault(second, machine_settings(second, "host-b"))
    b = Store.open(machine_settings(second, "host-b"))
    yield a, b
    a.close()
    b.close()


def edit_text(store: Store, path: str, old: str, new: str) -> None:
    file = store.vault.root / path
    file.write_text(file.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")


@pytest.fixture
def pair(machines: tuple[Store, Store]) -> Pair:
    """A memory edited differently on A and B: B's sync merges, A's sync pulls the merge."""
    a, b = machines
    added = a.add(BEFORE, workspace="infra", keywords=("postgres",))
    a.sync()
    b.sync()
    edit_text(a, added.path, BEFORE, MINE_ON_A)
    edit_text(b, added.path, BEFORE, MINE_ON_B)
    a.sync()
    b_lines = sync_lines(*b.sync())
    a_lines = sync_lines(*a.sync())
    return Pair(a, b, added.id, added.path, a_lines, b_lines)


def file_text(store: Store, path: str) -> str:
    return (store.vault.root / path).read_text(encoding="utf-8")


# --- the text as shown --------------------------------------------------------------------


TEXT = st.text(st.characters(exclude_characters="\r"), min_size=1)  # CR comes as CRLF


@given(TEXT, TEXT)
def test_display_text_shows_both_versions_and_no_marker_line(one: str, two: str) -> None:
    one, two = sorted((one.strip("\n") or "x", two.strip("\n") or "y"))
    shown = display_text(conflict_body(one, two))
    assert "<!-- memstore:" not in shown or "<!-- memstore:" in one + two
    assert shown.startswith("(conflict: 2 versions)\n")
    for text in (one.strip("\n"), two.strip("\n")):
        assert text in shown


def test_a_conflict_merged_again_reads_as_all_its_versions() -> None:
    inner, _ = merge_text("a\n", "b\n", "c\n")
    outer, conflict = merge_text(None, inner, "d\n")
    versions = split_versions(outer)
    assert conflict and versions is not None and versions.texts == ("b", "c", "d")
    assert display_text("no markers here\n") == "no markers here\n"


def test_search_preview_marks_the_conflict_and_shows_text_not_markers(pair: Pair) -> None:
    for store in (pair.a, pair.b):
        lines = search_lines(store.search("postgres"), "postgres", None)
        assert not any("<!--" in line for line in lines)
        assert lines[0].startswith(pair.id) and lines[0].endswith("(conflict: 2 versions)")
        shown = "\n".join(lines)
        assert MINE_ON_A in shown and MINE_ON_B in shown


def test_list_shows_a_conflicted_memory_marked_with_its_first_version(pair: Pair) -> None:
    for store in (pair.a, pair.b):
        rows = {row.id: row for row in read_listing(store, Filters(), 0).rows}
        assert rows[pair.id].summary == f"(conflict: 2 versions) {MINE_ON_A}"


def test_commit_subjects_of_a_conflicted_memory_show_its_text_not_a_marker(pair: Pair) -> None:
    # Before (issue 36), every commit of such a file read "edit(infra): <!-- memstore: this…".
    for store in (pair.a, pair.b):
        root = store.vault.root
        file = root / pair.path
        file.write_text(file.read_text(encoding="utf-8") + "\nA line added by hand.\n", "utf-8")
        store.update(pair.id, lambda m: replace(m, kind="lesson"), "promote:lesson")
        edit, promote = git(root, "log", "-2", "--format=%s").splitlines()[::-1]
        assert edit.startswith(f"edit(infra): {MINE_ON_A} Postgres moved") and "<!--" not in edit
        assert promote.startswith(f"promote:lesson(infra): {MINE_ON_A}")


def test_memstore_search_and_the_prompt_hook_show_no_markers(pair: Pair, tmp_path: Path) -> None:
    env = {"MEMSTORE_VAULT": str(pair.a.vault.root), "PATH": str(EXE.parent)}
    out = invoke_memstore("search", "postgres", "--all", env=env)
    assert out.returncode == 0 and "(conflict: 2 versions)" in out.stdout
    assert "<!--" not in out.stdout and MINE_ON_B in out.stdout
    project = tmp_path / "infra"  # a checkout of the infra repository: its workspace
    project.mkdir()
    git(project, "init", "-q")
    payload = {"cwd": str(project), "prompt": "postgres pgbouncer"}
    hook = invoke_memstore("hook", "prompt", stdin=json.dumps(payload), env=env)
    assert "(conflict: 2 versions)" in hook.stdout and "<!--" not in hook.stdout
    assert "<!--" not in "\n".join(context_lines(pair.a.search("postgres port")))


def test_mcp_recall_text_has_the_versions_not_the_markers(pair: Pair) -> None:
    server = build_server(pair.b, workspace="infra", source="claude-code")

    async def go() -> object:
        async with Client(server) as client:
            return await client.call_tool("memory_recall", {"query": "postgres"})

    result = asyncio.run(go())
    text = "".join(getattr(part, "text", "") for part in result.content)  # type: ignore[attr-defined]
    hit = json.loads(text)["results"][0]
    assert hit["id"] == pair.id and "<!--" not in hit["content"]
    assert hit["content"].startswith("(conflict: 2 versions)")
    assert MINE_ON_A in hit["content"] and MINE_ON_B in hit["content"]


# --- sync names it on both sides ----------------------------------------------------------


def test_sync_names_the_conflict_on_the_machine_that_merged_and_the_one_that_pulled(
    pair: Pair,
) -> None:
    for lines in (pair.b_sync, pair.a_sync):
        assert any(pair.path in line for line in lines), lines
        assert any("memstore conflicts" in line for line in lines), lines
    assert "pulled the remote's changes" in pair.a_sync  # a fast-forward, no merge of its own


def test_sync_names_a_conflict_pulled_into_a_merge_of_its_own(
    machines: tuple[Store, Store], tmp_path: Path, remote: Path
) -> None:
    a, b = machines
    added = a.add(BEFORE, workspace="infra")
    a.sync()
    b.sync()
    edit_text(a, added.path, BEFORE, MINE_ON_A)
    edit_text(b, added.path, BEFORE, MINE_ON_B)
    a.sync()
    b.sync()  # B merges and pushes the conflict
    a.add("Redis runs on 6380", workspace="infra")  # A has news of its own: a real merge
    outcome, _, _ = a.sync()
    assert outcome.merge == "merged" and outcome.conflicts == [added.path]
    (found,) = find_conflicts(a)  # A's own merge: its first parent holds A's text
    assert found.versions[found.mine - 1] == MINE_ON_A


@pytest.mark.parametrize("as_json", [[], ["--json"]])
def test_a_sync_that_kept_both_versions_exits_3_on_both_machines_and_0_after(
    machines: tuple[Store, Store], as_json: list[str]
) -> None:
    # exit 0 said "all done" to a script; 1 would say "failed, run it again" though the
    # sync pushed: 3 is "done, and a memory waits for a person" (docs/cli.md)
    a, b = machines
    added = a.add(BEFORE, workspace="infra")
    a.sync()
    b.sync()
    edit_text(a, added.path, BEFORE, MINE_ON_A)
    edit_text(b, added.path, BEFORE, MINE_ON_B)
    a.sync()
    envs = [
        {"MEMSTORE_VAULT": str(s.vault.root), "MEMSTORE_HOST": h}
        for s, h in ((b, "host-b"), (a, "host-a"))
    ]
    for env in envs:  # B makes the merge, A pulls it
        done = invoke_memstore("sync", *as_json, env=env)
        assert done.returncode == 3, (done.stdout, done.stderr)
        assert added.path in done.stdout and done.stderr == ""
        if as_json:
            assert json.loads(done.stdout)["conflicts"] == [added.path]
    again = invoke_memstore("sync", *as_json, env=envs[0])  # nothing new: not news again
    assert again.returncode == 0, again.stdout
    settled = invoke_memstore(
        "conflicts", "resolve", added.id, "--keep", "mine", "--json", env=envs[0]
    )
    assert settled.returncode == 0, settled.stderr
    answer = json.loads(settled.stdout)
    assert set(answer) == {"id", "workspace", "path", "kept", "commit", "resolved"}
    assert (answer["id"], answer["kept"], answer["resolved"]) == (added.id, "mine", True)
    assert invoke_memstore("sync", *as_json, env=envs[0]).returncode == 0


# --- listing --------------------------------------------------------------------------------


def test_conflicts_lists_each_version_and_whose_it_is_on_both_machines(pair: Pair) -> None:
    for store, mine in ((pair.a, MINE_ON_A), (pair.b, MINE_ON_B)):
        (found,) = find_conflicts(store)
        assert (found.id, found.workspace, found.path) == (pair.id, "infra", pair.path)
        assert found.versions == (MINE_ON_A, MINE_ON_B)
        assert found.versions[found.mine - 1] == mine
    assert find_conflicts(pair.a, "global") == []


def test_memstore_conflicts_json_and_text(pair: Pair) -> None:
    env = {"MEMSTORE_VAULT": str(pair.b.vault.root), "MEMSTORE_HOST": "host-b"}
    out = invoke_memstore("conflicts", "--json", env=env)
    assert out.returncode == 0, out.stderr
    (listed,) = json.loads(out.stdout)
    assert listed["id"] == pair.id and listed["path"] == pair.path
    assert [v["whose"] for v in listed["versions"]] == ["theirs", "mine"]
    text = invoke_memstore("conflicts", env=env).stdout
    assert "version 2 (mine):" in text and MINE_ON_A in text and "<!--" not in text


def test_two_vaults_on_one_host_tell_mine_from_the_reflog(pair: Pair) -> None:
    for store, mine in ((pair.a, MINE_ON_A), (pair.b, MINE_ON_B)):
        env = {"MEMSTORE_VAULT": str(store.vault.root), "MEMSTORE_HOST": "laptop"}
        out = invoke_memstore("conflicts", "--json", env=env)
        assert out.returncode == 0, out.stderr
        (listed,) = json.loads(out.stdout)
        assert [v["text"] for v in listed["versions"] if v["whose"] == "mine"] == [mine]
    (pair.b.vault.root / ".git" / "logs" / "HEAD").unlink()  # no reflog: the host trailer
    (found,) = find_conflicts(pair.b)
    assert found.versions[found.mine - 1] == MINE_ON_B


def test_a_fresh_clone_reads_mine_from_the_host_trailer(pair: Pair, tmp_path: Path) -> None:
    clone = tmp_path / "clone-on-b"  # host-b cloned again: the reflog says only "clone"
    remote = subprocess.run(
        ["git", "-C", str(pair.b.vault.root), "remote", "get-url", "origin"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    subprocess.run(["git", "clone", "-q", remote, str(clone)], check=True)
    init_vault(clone, machine_settings(clone, "host-b"))
    with Store.open(machine_settings(clone, "host-b")) as store:
        (found,) = find_conflicts(store)
    assert found.versions[found.mine - 1] == MINE_ON_B


# --- settling -------------------------------------------------------------------------------


def test_keep_mine_on_the_machine_that_pulled_writes_one_commit_and_reindexes(
    pair: Pair,
) -> None:
    before = commit_count(pair.a.vault.root)
    done = settle(pair.a, pair.id[:5], "mine")
    assert commit_count(pair.a.vault.root) == before + 1
    assert git(pair.a.vault.root, "log", "-1", "--format=%s").startswith("resolve(infra): ")
    memory = parse_memory(file_text(pair.a, pair.path), path=pair.path)
    assert memory.body == MINE_ON_A + "\n" and ("conflict", "conflict: true") not in memory.extra
    assert memory.keywords == ("postgres",) and done.kept == "mine"
    assert git(pair.a.vault.root, "status", "--porcelain") == ""
    (hit,) = pair.a.search("postgres", catch_up=False).hits  # the index saw it at once
    assert hit.content == MINE_ON_A + "\n"
    assert find_conflicts(pair.a) == []


def test_keep_theirs_on_the_machine_that_merged_and_the_result_syncs_back(pair: Pair) -> None:
    settle(pair.b, pair.id, "theirs")
    assert parse_memory(file_text(pair.b, pair.path), path=pair.path).body == MINE_ON_A + "\n"
    pair.b.sync()
    outcome, _, _ = pair.a.sync()
    assert outcome.conflicts == []
    assert file_text(pair.a, pair.path) == file_text(pair.b, pair.path)


def test_keep_both_joins_the_texts_as_one_memory(pair: Pair) -> None:
    settle(pair.a, pair.id, "both")
    text = file_text(pair.a, pair.path)
    assert "<!--" not in text and "conflict:" not in text
    assert parse_memory(text, path=pair.path).body == f"{MINE_ON_A}\n\n{MINE_ON_B}\n"


def test_bad_choices_and_memories_without_a_conflict_change_nothing(pair: Pair) -> None:
    other = pair.a.add("Redis runs on 6380", workspace="infra")
    before = commit_count(pair.a.vault.root)
    with pytest.raises(InvalidInputError, match="nothing to resolve"):
        settle(pair.a, other.id, "mine")
    with pytest.raises(InvalidInputError, match="mine, theirs, both"):
        settle(pair.a, pair.id, "newest")
    with pytest.raises(InvalidInputError, match="version number"):
        settle(pair.a, pair.id, "3")
    assert commit_count(pair.a.vault.root) == before
    assert "<!-- memstore: version 2 of 2 -->" in file_text(pair.a, pair.path)


EDITOR = """\
import sys
from pathlib import Path
path = Path(sys.argv[1])
text = path.read_text(encoding="utf-8")
if "--broken" in sys.argv[0]:
    path.write_text(text.replace("{before}", "edited but markers left"), encoding="utf-8")
else:
    head, _, _ = text.partition("<!-- memstore:")
    path.write_text(head + "Postgres is on 6432 via pgbouncer (checked)\\n", encoding="utf-8")
"""


def write_editor(tmp_path: Path, name: str) -> str:
    script = tmp_path / name
    script.write_text(EDITOR.format(before=MINE_ON_A), encoding="utf-8")
    return f"{sys.executable} {script}"


def test_resolve_edit_refuses_markers_left_and_saves_a_settled_text(
    pair: Pair, tmp_path: Path
) -> None:
    root = pair.a.vault.root
    env = {"MEMSTORE_VAULT": str(root), "VISUAL": ""}
    before = commit_count(root)
    broken = invoke_memstore(
        "conflicts",
        "resolve",
        pair.id,
        "--edit",
        env={**env, "EDITOR": write_editor(tmp_path, "editor--broken.py")},
    )
    assert broken.returncode == 1 and "marker lines" in broken.stderr
    assert commit_count(root) == before and "version 2 of 2" in file_text(pair.a, pair.path)
    done = invoke_memstore(
        "conflicts",
        "resolve",
        pair.id,
        "--edit",
        env={**env, "EDITOR": write_editor(tmp_path, "editor.py")},
    )
    assert done.returncode == 0, done.stderr
    assert commit_count(root) == before + 1 and "resolve(infra)" in git(root, "log", "-1")
    text = file_text(pair.a, pair.path)
    assert "<!--" not in text and "conflict:" not in text and "(checked)" in text
    found = invoke_memstore("search", "checked", "--all", env=env)
    assert pair.id in found.stdout and "conflict" not in found.stdout


def test_resolve_needs_one_way_to_settle(pair: Pair) -> None:
    out = invoke_memstore("conflicts", "resolve", pair.id, vault=pair.a.vault.root)
    assert out.returncode == 2 and "--keep mine" in out.stderr  # a usage error


def test_a_plain_git_pull_merge_counts_as_made_here(
    machines: tuple[Store, Store], tmp_path: Path
) -> None:
    a, b = machines
    added = a.add(BEFORE, workspace="infra")
    a.sync()
    b.sync()
    edit_text(a, added.path, BEFORE, MINE_ON_A)
    edit_text(b, added.path, BEFORE, MINE_ON_B)
    a.sync()
    with b.transaction(catch_up=False) as tx:
        tx.commit_edits(None)
    env = {**os.environ, "PATH": f"{EXE.parent}{os.pathsep}{os.environ['PATH']}"}
    subprocess.run(
        ["git", "pull", "-q", "--no-rebase", "--no-edit"],
        cwd=b.vault.root,
        env=env,
        check=True,
        capture_output=True,
    )
    (found,) = find_conflicts(b)
    assert found.versions[found.mine - 1] == MINE_ON_B  # git's merge has no Memstore-Host
    settle(b, added.id, "theirs")
    assert parse_memory(file_text(b, added.path), path=added.path).body == MINE_ON_A + "\n"


def test_when_history_cannot_tell_mine_is_refused_and_a_number_works(store: Store) -> None:
    added = store.add(BEFORE, workspace="infra")
    edit_text(store, added.path, BEFORE + "\n", conflict_body("one text", "another text"))
    before = commit_count(store.vault.root) + 1  # the hand edit is committed on its own
    with pytest.raises(InvalidInputError, match="--keep 1"):
        settle(store, added.id, "mine")
    (found,) = find_conflicts(store)
    assert found.mine == 0 and found.versions == ("one text", "another text")
    settle(store, added.id, "2")
    assert commit_count(store.vault.root) == before + 1
    assert parse_memory(file_text(store, added.path), path=added.path).body == "another text\n"


def test_a_conflict_with_broken_front_matter_is_settled_in_the_editor(store: Store) -> None:
    added = store.add(BEFORE, workspace="infra")
    file = store.vault.root / added.path
    text = file.read_text(encoding="utf-8").replace("kind: note", "kind: [note")
    file.write_text(text.replace(BEFORE + "\n", conflict_body("one", "two")), encoding="utf-8")
    with pytest.raises(InvalidInputError, match="--edit"):
        settle(store, added.id, "1")

    def fix(copy: Path) -> None:  # a person: repairs the YAML, keeps one text
        head, _, _ = copy.read_text(encoding="utf-8").partition("<!-- memstore:")
        copy.write_text(head.replace("kind: [note", "kind: note") + "two\n", encoding="utf-8")

    done = settle_by_editing(lambda: Store.open(store.settings), added.id, fix, lambda _: False)
    assert done is not None and done.kept == "edited"
    memory = parse_memory(file.read_text(encoding="utf-8"), path=added.path)
    assert memory.problem == "" and memory.body == "two\n" and memory.kind == "note"
