"""File names that are not UTF-8 (and other hostile names) in a vault and in an ingested tree."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from memstore.daemon.watcher import is_relevant
from memstore.service.store import Store
from tests.conftest import git, run_memstore, settings_at

BAD = b"bad-\xff\xfe.md"  # Latin-1 bytes: not UTF-8
ESCAPED = "bad-\\xff\\xfe.md"


def memstore(vault: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the installed memstore on `vault`; output read with bytes escaped, never failing."""
    return run_memstore(*args, "--vault", str(vault), errors="backslashreplace")


def hostile_vault(vault: Path, *, tracked: bool) -> None:
    """Put a non-UTF-8 file and folder beside other hostile names into a vault."""
    folder = os.fsencode(vault / "global")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, BAD), "w", encoding="utf-8") as out:
        out.write("badname memory about nginx upload limits\n")
    os.mkdir(os.path.join(folder, b"dir-\xff"))
    with open(os.path.join(folder, b"dir-\xff", b"inner.md"), "w", encoding="utf-8") as out:
        out.write("inside a folder whose name is not text\n")
    others = {
        b"line\nbreak.md": "a newline in the name, about redis eviction\n",
        b"-leading-dash.md": "a leading dash, about kafka partitions\n",
        b"x" * 250 + b".md": "a very long name, about postgres vacuum\n",
    }
    for name, text in others.items():
        with open(os.path.join(folder, name), "w", encoding="utf-8") as out:
            out.write(text)
    os.mkdir(os.path.join(folder, b"folder.md"))  # a directory named like a memory
    if tracked:  # the person committed them all with git
        git(vault, "add", "-A")
        git(vault, "commit", "-qm", "hostile names")


@pytest.mark.parametrize("tracked", [False, True])
def test_a_file_name_that_is_not_utf8_is_skipped_and_the_rest_of_the_vault_works(
    vault: Path, tracked: bool
) -> None:
    assert memstore(vault, "add", "raise client_max_body_size for nginx 413").returncode == 0
    hostile_vault(vault, tracked=tracked)
    for word, expected in [
        ("client_max_body_size", "client_max_body_size"),
        ("redis", "newline in the name"),
        ("kafka", "leading dash"),
        ("postgres", "very long name"),
    ]:
        found = memstore(vault, "search", word)
        assert found.returncode == 0 and expected in found.stdout, found.stderr
        assert "Traceback" not in found.stderr
    listed = memstore(vault, "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert len(json.loads(listed.stdout)["memories"]) == 4
    added = memstore(vault, "add", "a new memory after the hostile files arrived")
    assert added.returncode == 0, added.stderr
    rebuilt = memstore(vault, "reindex")
    assert rebuilt.returncode == 0 and "Traceback" not in rebuilt.stderr, rebuilt.stderr
    assert f"global/{ESCAPED}: name is not UTF-8" in rebuilt.stdout
    doctor = memstore(vault, "doctor")
    assert "Traceback" not in doctor.stderr, doctor.stderr
    assert f"global/{ESCAPED}: name is not UTF-8" in doctor.stdout
    assert "global/dir-\\xff: name is not UTF-8" in doctor.stdout
    status = git(vault, "status", "--porcelain")
    assert ("bad-" in status) is (not tracked)  # never committed by memstore


def test_sync_commits_the_persons_edits_and_merges_beside_a_name_that_is_not_utf8(
    vault: Path, tmp_path: Path
) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    assert memstore(vault, "remote", "add", str(remote)).returncode == 0
    assert memstore(vault, "sync").returncode == 0
    hostile_vault(vault, tracked=True)
    pushed = memstore(vault, "sync")
    assert pushed.returncode == 0, pushed.stderr
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", "-b", "main", str(remote), str(other))
    assert memstore(other, "add", "written on the other machine about elastic").returncode == 0
    assert memstore(vault, "add", "written here about zookeeper quorum").returncode == 0
    hand = vault / "global" / "-leading-dash.md"
    hand.write_text(hand.read_text(encoding="utf-8") + "edited by hand\n", encoding="utf-8")
    os.remove(os.path.join(os.fsencode(vault / "global"), BAD))
    with open(os.path.join(os.fsencode(vault / "global"), b"new-\xe9.md"), "w") as out:
        out.write("an untracked file whose name is Latin-1\n")
    for side in (vault, other, vault):
        synced = memstore(side, "sync")
        assert synced.returncode == 0 and "Traceback" not in synced.stderr, synced.stderr
    assert "skipped global/new-\\xe9.md: its name is not UTF-8" in memstore(vault, "sync").stderr
    assert "elastic" in memstore(vault, "search", "elastic").stdout
    assert "zookeeper" in memstore(other, "search", "zookeeper").stdout
    assert "edited by hand" in (other / "global" / "-leading-dash.md").read_text(encoding="utf-8")
    assert "new-" in git(vault, "status", "--porcelain")  # left for the person to rename
    # the tracked non-UTF-8 file came through the merge untouched
    assert os.path.exists(os.path.join(os.fsencode(other / "global"), b"dir-\xff", b"inner.md"))


def test_the_watcher_ignores_a_name_that_is_not_utf8(vault: Path) -> None:
    bad = os.fsdecode(os.path.join(os.fsencode(vault / "global"), BAD))
    assert not is_relevant(vault, bad, False)
    assert is_relevant(vault, str(vault / "global" / "good.md"), False)
    with Store.open(settings_at(vault)) as store:
        hostile_vault(vault, tracked=False)
        result = store.catch_up(wait=True)
        assert len(result.updated) == 3  # the newline, dash and long names; not the others
        with store.transaction(catch_up=False) as tx:
            assert tx.commit_edits({"global/" + os.fsdecode(BAD)}) == []


def test_ingest_skips_a_source_file_whose_name_is_not_utf8(vault: Path, tmp_path: Path) -> None:
    tree = tmp_path / "src"
    tree.mkdir()
    git(tree, "init", "-q")
    (tree / "good.py").write_text("def frobnicate_widget():\n    return 42\n", encoding="utf-8")
    with open(os.path.join(os.fsencode(tree), b"bad-\xff.py"), "w", encoding="utf-8") as out:
        out.write("def badly_named():\n    pass\n")
    ingested = memstore(vault, "ingest", str(tree))
    assert ingested.returncode == 0, ingested.stderr
    assert "1 skipped (1 name not UTF-8)" in ingested.stdout
    assert f"skipped {tree}/bad-\\xff.py: its name is not UTF-8" in ingested.stderr
    found = memstore(vault, "search", "frobnicate_widget")
    assert "good.py" in found.stdout, found.stderr


def test_a_newline_or_tab_in_a_file_name_stays_out_of_the_edit_commits_subject(
    vault: Path,
) -> None:
    from memstore.vault.edits import commit_edits
    from memstore.vault.files import Vault
    from memstore.vault.git import GitRepo

    names = ["new\nline.md", "tab\tname.md"]
    (vault / "global").mkdir(exist_ok=True)
    for name in names:
        (vault / "global" / name).write_text(f"a hand-made note named {name!r}\n", "utf-8")
    made = commit_edits(Vault(vault), GitRepo.open(vault), "h", [f"global/{n}" for n in names])
    assert len(made) == 1
    message = git(vault, "log", "-1", "--format=%B")
    subject, _, rest = message.partition("\n")
    assert subject == "edit(global): 2 files (new\\nline.md, tab\\tname.md)", message
    assert "line.md" not in rest and "\t" not in message  # nothing spills past the subject
    tracked = git(vault, "ls-files", "-z", "global").split("\0")
    assert {f"global/{n}" for n in names} <= set(tracked)  # the files keep their names
