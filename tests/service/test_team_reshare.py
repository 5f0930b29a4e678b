"""Sharing a memory again after the team corrected it: the personal copy as it stood is not
proposed over the team's later edit (skipped, with a line); an edit of one's own still is."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import git
from tests.service.team_hosts import Person, follow, make_team_repo, person, refs

PORT = "The staging server of the webshop listens on port 8080"
CORRECTED = "The staging server of the webshop listens on port 8443 (TLS only since May)"


def _correct_on_the_host(tmp_path: Path, bare: Path, memory_id: str) -> None:
    """A maintainer corrects the team's copy of `memory_id` and pushes to main."""
    work = tmp_path / "maintainer"
    git(tmp_path, "clone", "-q", str(bare), str(work))
    [path] = [p for p in work.rglob("*.md") if memory_id in p.name]
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace(PORT, CORRECTED), encoding="utf-8")
    git(work, "commit", "-qam", "correct the staging port")
    git(work, "push", "-q", "origin", "main")


def _shared_then_corrected_on_the_host(tmp_path: Path) -> tuple[Path, Person, str]:
    """Alice shares a memory with team acme (review none), the team corrects it, she syncs."""
    bare = make_team_repo(tmp_path, [], review="none")
    alice = person(tmp_path, "alice", "alice@acme.com")
    follow(alice, "acme", str(bare))
    memory_id = alice.add(PORT)
    assert alice.run("share", memory_id, "--team", "acme").returncode == 0
    _correct_on_the_host(tmp_path, bare, memory_id)
    assert alice.run("sync").returncode == 0
    return bare, alice, memory_id


def test_resharing_an_unchanged_memory_never_undoes_a_team_correction(tmp_path: Path) -> None:
    bare, alice, memory_id = _shared_then_corrected_on_the_host(tmp_path)
    before = refs(bare)

    done = alice.run("share", memory_id, "--team", "acme")

    assert done.returncode == 0, done.stderr
    assert f"{memory_id}: skipped: team acme edited it since you shared it" in done.stdout
    assert f"memstore show acme:{memory_id}" in done.stdout
    assert refs(bare) == before  # nothing proposed, nothing pushed
    # an edit of one's own is proposed as ever (the reviewer sees both texts)
    [mine] = [p for p in alice.vault.rglob("*.md") if memory_id in p.name]
    mine.write_text(
        mine.read_text(encoding="utf-8").replace(PORT, PORT + "; 8081 serves metrics"),
        encoding="utf-8",
    )
    again = alice.run("share", memory_id, "--team", "acme")
    assert again.returncode == 0, again.stderr
    assert "updates the team's copy" in again.stdout
    assert refs(bare) != before


def test_a_dry_run_says_the_same_before_anything_is_pushed(tmp_path: Path) -> None:
    _, alice, memory_id = _shared_then_corrected_on_the_host(tmp_path)

    done = alice.run("share", memory_id, "--team", "acme", "--dry-run")

    assert done.returncode == 0, done.stderr
    assert "changes no memory" in done.stdout
