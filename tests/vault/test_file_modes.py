"""A memory file keeps its mode: a checkout (sync) keeps the owner's bits, so an executable
stays one and git's 100755 does not flip to 100644 on the next machine's commit; a rewrite
by memstore (confirm, a duplicate add) keeps the mode the file had, read-only included."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from memstore.service.store import Store
from tests.conftest import git, settings_at
from tests.service.test_conflicts import machines, remote  # noqa: F401 (fixtures)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def git_mode(root: Path, ref: str, path: str) -> str:
    return git(root, "ls-tree", ref, path).split()[0]


def test_an_executable_memory_keeps_its_mode_across_machines(
    machines: tuple[Store, Store],  # noqa: F811
    remote: Path,  # noqa: F811
) -> None:
    a, b = machines
    added = a.add("the deploy script lives in ops and needs approval", workspace="infra")
    os.chmod(a.vault.root / added.path, 0o755)
    a.sync()
    assert git_mode(remote, "main", added.path) == "100755"

    b.sync()
    on_b = b.vault.root / added.path
    assert mode(on_b) & stat.S_IXUSR, oct(mode(on_b))  # was 0600: the bit dropped
    assert mode(on_b) & 0o077 == 0  # still private
    assert git(b.vault.root, "status", "--porcelain") == ""
    b.add("grafana dashboards live in ops", workspace="infra")
    b.sync()
    a.sync()
    assert git_mode(remote, "main", added.path) == "100755"  # no ping-pong to 100644
    assert mode(a.vault.root / added.path) == 0o755
    for machine in (a, b):
        assert git(machine.vault.root, "status", "--porcelain") == ""
    raw = git(remote, "log", "--format=", "--raw", "main", "--", added.path).splitlines()
    assert [line.split()[:2] for line in raw] == [
        [":100644", "100755"],  # A's chmod, and no change of mode after it
        [":000000", "100644"],
    ]


def test_a_rewrite_keeps_an_executable_and_a_read_only_file_as_they_were(vault: Path) -> None:
    with Store.open(settings_at(vault)) as store:
        text = "staging deploys need approval from maria"
        added = store.add(text, workspace="webshop")
        file = vault / added.path
        os.chmod(file, 0o755)
        git(vault, "commit", "-q", "-am", "chmod +x, by hand")

        again = store.add(text, workspace="webshop")  # a duplicate: seen 2, the file rewritten
        assert again.path == added.path and "seen: 2" in file.read_text(encoding="utf-8")
        assert mode(file) == 0o755
        assert git_mode(vault, "HEAD", added.path) == "100755"
        assert git(vault, "status", "--porcelain") == ""

        os.chmod(file, 0o444)
        store.confirm(added.id)  # asked for: written, and still read-only
        assert mode(file) == 0o444
        assert git_mode(vault, "HEAD", added.path) == "100644"
        assert git(vault, "status", "--porcelain") == ""


def test_a_new_memory_file_is_owner_only(store: Store) -> None:
    added = store.add("a private note about the landlord", workspace="home")
    assert mode(store.vault.root / added.path) == 0o600
