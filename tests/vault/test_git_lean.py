"""A one-shot command commits through libgit2's C level before pygit2's package loads
(vault/git_lean.py): the same commits, one libgit2 handle when pygit2 is imported after, one
GitError, and pygit2 imported as before whenever the C level alone will not do.

Each case runs in a fresh interpreter: this test process has imported pygit2 already."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pygit2

from memstore.vault import git_lean
from memstore.vault.git import GitRepo
from memstore.vault.git_log import Trailers
from tests.conftest import git

TRAILERS = ("test", "s1", "host")

# Commit `add`/`remove` (argv[2], argv[3]) in the vault argv[1], the C level allowed; argv[4]
# is a Python statement run first (to refuse the C level). Reports what was imported when.
COMMIT = """
import json, sys
from pathlib import Path
root, add, remove, before = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3]), sys.argv[4]
from memstore.vault import git_lean
git_lean.use_c_level()
exec(before)
from memstore.vault import git_lean
from memstore.vault.git import GitRepo
from memstore.vault.git_log import Trailers
repo = GitRepo.open(Path(root))
repo.defer_index_bytes = 0  # a large vault's commit: git's index is left to a staging
oid = repo.commit("change", Trailers("test", "s1", "host"), add=tuple(add), remove=tuple(remove),
                  defer_index=True)
report = {"commit": oid, "package_before": "pygit2" in sys.modules,
          "kind": type(repo._repo).__name__}
import pygit2
report["cache_limit"] = pygit2.settings.cached_memory[1]  # sized by whichever path opened
from memstore.vault.git_objects import _pygit2
pygit2 = _pygit2()  # how the vault imports it
report["same_error"] = pygit2.GitError is git_lean.objects().GitError
report["same_module"] = pygit2._pygit2 is sys.modules["pygit2._pygit2"]
index = repo._repo.index  # only the package has it: the same object becomes pygit2's
report["kind_after"] = type(repo._repo).__name__
report["indexed"] = len(index)
report["mode_after"] = type(repo._repo.head.peel(pygit2.Commit).tree[add[0]].filemode).__name__
print(json.dumps(report))
"""


def _commit_in_a_fresh_process(
    vault: Path, add: list[str], remove: tuple[str, ...] = (), before: str = ""
) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", COMMIT, str(vault), json.dumps(add), json.dumps([*remove]), before],
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _files(root: Path) -> None:
    (root / "infra" / "2026-12").mkdir(parents=True)
    (root / "infra" / "2026-12" / "pool.md").write_text("the worker pool holds 8\n")
    script = root / "infra" / "deploy.sh"
    script.write_text("#!/bin/sh\necho deploy\n")
    script.chmod(0o755)
    os.symlink("2026-12/pool.md", root / "infra" / "latest.md")
    (root / "global").mkdir()
    (root / "global" / "old.md").write_text("to be removed\n")


def _twins(tmp_path: Path) -> tuple[Path, Path]:
    """Two identical repositories with one commit holding global/old.md."""
    made = []
    for name in ("c-level", "package"):
        root = tmp_path / name
        root.mkdir()
        git(root, "init", "-q", "-b", "main")
        git(root, "config", "user.name", "Ada")
        git(root, "config", "user.email", "ada@example.com")
        _files(root)
        git(root, "add", "global")
        git(root, "commit", "-qm", "first", "--date", "2026-01-01T00:00:00Z")
        made.append(root)
    return made[0], made[1]


ADDED = ["infra/2026-12/pool.md", "infra/deploy.sh", "infra/latest.md"]


def test_a_commit_at_the_c_level_is_the_commit_pygit2_makes(tmp_path: Path) -> None:
    lean, package = _twins(tmp_path)

    report = _commit_in_a_fresh_process(lean, ADDED, ("global/old.md",))
    repo = GitRepo.open(package)  # this process: pygit2's own Repository
    repo.defer_index_bytes = 0
    repo.commit("change", Trailers(*TRAILERS), add=tuple(ADDED), remove=("global/old.md",))

    assert report["package_before"] is False  # committed with no pygit2 package imported
    assert report["kind"] == "CRepository"
    assert report["cache_limit"] == git_lean.CACHE_BYTES  # libgit2's cache sized as pygit2 does
    assert git(lean, "rev-parse", "HEAD^{tree}") == git(package, "rev-parse", "HEAD^{tree}")
    modes = {
        line.split("\t")[1]: line.split()[0]
        for line in git(lean, "ls-tree", "-r", "HEAD").splitlines()
    }
    assert modes == {
        "infra/2026-12/pool.md": "100644",
        "infra/deploy.sh": "100755",
        "infra/latest.md": "120000",
    }
    assert git(lean, "log", "-1", "--format=%an <%ae>%n%B") == git(
        package, "log", "-1", "--format=%an <%ae>%n%B"
    )
    assert git(lean, "rev-parse", "HEAD^") == git(lean, "rev-parse", "HEAD~1")  # one parent


def test_pygit2_imported_after_shares_the_module_and_takes_the_same_repository_over(
    tmp_path: Path,
) -> None:
    lean, _ = _twins(tmp_path)

    report = _commit_in_a_fresh_process(lean, ADDED)

    assert report["same_error"] is True and report["same_module"] is True  # never loaded twice
    assert report["kind_after"] == "Repository"  # pygit2.Repository, its git index readable
    assert report["indexed"] == 1  # the git index as git wrote it (this commit deferred it)
    assert report["mode_after"] == "FileMode"  # pygit2's enums cached again once imported
    assert git(lean, "cat-file", "-t", str(report["commit"])).strip() == "commit"


def test_pygit2_is_imported_as_before_when_the_c_level_alone_will_not_do(tmp_path: Path) -> None:
    lean, _ = _twins(tmp_path)
    refusals = (
        "git_lean.NEEDED += ('a_name_this_extension_lacks',)",  # another pygit2
        "import threading; threading.Thread(target=threading.Event().wait, daemon=True).start()",
        "git_lean.use_c_level(False)",  # a process that goes on (a daemon, a test)
    )
    for number, refusal in enumerate(refusals):
        (lean / "global" / f"new-{number}.md").write_text(f"note {number}\n")
        report = _commit_in_a_fresh_process(lean, [f"global/new-{number}.md"], before=refusal)
        assert report["package_before"] is True, refusal
        assert report["kind"] == "Repository", refusal
        assert report["cache_limit"] == git_lean.CACHE_BYTES, refusal  # sized on opening
    assert git(lean, "ls-tree", "--name-only", "HEAD", "global/").split() == [
        "global/new-0.md",
        "global/new-1.md",
        "global/new-2.md",
        "global/old.md",
    ]


def test_a_folder_that_is_no_repository_is_refused_as_before(tmp_path: Path) -> None:
    # GitRepo.open finds the repository by its .git; one that libgit2 cannot open is the
    # same VaultError from the C level as from pygit2's package.
    broken = tmp_path / "broken"
    (broken / ".git").mkdir(parents=True)
    script = (
        "import sys\nfrom pathlib import Path\nfrom memstore.vault import git_lean\n"
        "git_lean.use_c_level()\nfrom memstore.core.errors import VaultError\n"
        "from memstore.vault.git import GitRepo\n"
        "try:\n    GitRepo.open(Path(sys.argv[1]))\nexcept VaultError as err:\n"
        "    print('refused:', err, 'pygit2' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(broken)], capture_output=True, text=True, check=True
    )
    assert done.stdout.startswith(f"refused: cannot open the git repository at {broken}")
    assert done.stdout.strip().endswith("False")
    assert pygit2.GitError  # this process's pygit2 is untouched by the children's
