"""A link or an executable in the vault is committed as git commits it: a symlink is the
path it holds, never the file it points at (which may lie outside the vault), and an
executable keeps its mode, so `git status` is clean after memstore's commit."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from memstore.vault.git import GitRepo
from tests.conftest import commit_count, git, run_memstore


def test_a_symlink_is_committed_as_a_link_and_an_executable_keeps_its_mode(
    vault: Path, tmp_path: Path
) -> None:
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    assert run_memstore("remote", "add", str(bare), vault=vault).returncode == 0
    private = tmp_path / "outside" / "notes.md"
    private.parent.mkdir()
    private.write_text("my landlord's phone is 555 0199\n", encoding="utf-8")
    (vault / "global").mkdir(exist_ok=True)
    os.symlink(private, vault / "global" / "notes.md")
    os.symlink(tmp_path / "nowhere.md", vault / "global" / "dangling.md")
    script = vault / "global" / "deploy.sh"
    script.write_text("#!/bin/sh\necho deploy\n", encoding="utf-8")
    script.chmod(0o755)

    done = run_memstore("sync", vault=vault)

    assert done.returncode == 0, done.stderr
    tree = git(bare, "ls-tree", "-r", "main", "global/").splitlines()
    modes = {line.split("\t")[1]: line.split()[0] for line in tree}
    assert modes == {
        "global/notes.md": "120000",
        "global/dangling.md": "120000",
        "global/deploy.sh": "100755",
    }
    assert git(bare, "show", "main:global/notes.md") == str(private)
    assert "landlord" not in git(bare, "log", "-p", "main")  # not the text, not the subject
    assert git(vault, "status", "--porcelain") == ""
    # ...and once committed, a link is no edit any more: no empty commit per later command
    before = commit_count(vault)
    assert run_memstore("add", "grafana dashboards live in ops", vault=vault).returncode == 0
    assert run_memstore("sync", vault=vault).returncode == 0
    assert commit_count(vault) == before + 1
    assert git(vault, "log", "-1", "--format=%s").startswith("add(global): grafana")


def test_a_committed_link_is_not_a_change_when_named(vault: Path, tmp_path: Path) -> None:
    # Commands that check named paths (not git's status) hashed the link's target, so a
    # committed link looked changed forever: an empty `edit(...)` commit each time.
    target = tmp_path / "target.md"
    target.write_text("text outside the vault\n", encoding="utf-8")
    (vault / "global").mkdir(exist_ok=True)
    os.symlink(target, vault / "global" / "link.md")
    os.symlink(tmp_path / "gone.md", vault / "global" / "dangling.md")
    git(vault, "add", "global")
    git(vault, "commit", "-q", "-m", "links, by hand")
    repo = GitRepo.open(vault)
    assert repo.changed_paths(["global/link.md", "global/dangling.md"]) == []
    (vault / "global" / "link.md").unlink()
    os.symlink(tmp_path / "other.md", vault / "global" / "link.md")
    assert repo.changed_paths(["global/link.md", "global/dangling.md"]) == ["global/link.md"]
