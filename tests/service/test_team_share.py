"""`memstore share` and `memstore review` against bare repositories standing in for the git
host (issue 40): a branch pushed and its pull-request URL, review "none", a protected main, a
read-only member, a secret that never leaves, a duplicate that folds, a contradiction flagged."""

from __future__ import annotations

import json
from pathlib import Path

from memstore.core.codec import merged_ids, parse_memory
from tests.conftest import git
from tests.service.team_hosts import (
    AWS_KEY_ID,
    PROTECTED_MAIN,
    READ_ONLY,
    Person,
    follow,
    make_team_repo,
    person,
    refs,
)

DEPLOY = "Deploys of the webshop go through tools/deploy.sh, never by hand"
PORT = "The staging server of the webshop listens on port 8080"


def _files_at(repo: Path, commit: str) -> dict[str, str]:
    paths = git(repo, "ls-tree", "-r", "--name-only", commit).split()
    return {p: git(repo, "show", f"{commit}:{p}") for p in paths if p.endswith(".md")}


def _clone_is_untouched(clone: Path, head: str) -> None:
    """No stray commit on the clone's main, no branch, nothing in the work tree."""
    assert git(clone, "rev-parse", "HEAD").strip() == head
    assert git(clone, "branch", "--list").split() == ["*", "main"]
    assert git(clone, "status", "--porcelain") == ""


def _alice(tmp_path: Path, bare: Path, **kwargs: str) -> tuple[Person, Path]:
    alice = person(tmp_path, "alice", "alice@acme.com", **kwargs)
    return alice, follow(alice, "acme", str(bare))


def test_share_pushes_a_branch_with_the_same_id_and_prints_the_pull_request_url(
    tmp_path: Path,
) -> None:
    bare = make_team_repo(tmp_path, [(DEPLOY, "webshop")], hook=PROTECTED_MAIN)
    # The team's URL is GitHub's; git reaches it on disk (url.insteadOf), so the printed
    # page is derived from the URL the person configured.
    url = "git@github.com:acme/memory.git"
    alice = person(
        tmp_path, "alice", "alice@acme.com", git_config=f'[url "{bare}"]\n\tinsteadOf = {url}\n'
    )
    clone = follow(alice, "acme", url)
    before = git(clone, "rev-parse", "HEAD").strip()
    memory_id = alice.add("Run the webshop's tests with make check before every push")

    done = alice.run("share", memory_id, "--team", "acme")

    assert done.returncode == 0, done.stderr
    branch = f"memstore/alice/{memory_id}"
    assert f"https://github.com/acme/memory/compare/main...{branch}?expand=1" in done.stdout, (
        done.stdout
    )
    pushed = refs(bare)
    assert pushed["refs/heads/main"] == before  # main is only ever changed by a review
    commit = pushed[f"refs/heads/{branch}"]
    assert git(bare, "rev-parse", f"{commit}^").strip() == before
    added = [p for p in _files_at(bare, commit) if p not in _files_at(bare, before)]
    assert len(added) == 1 and added[0].startswith("webshop/") and memory_id in added[0]
    shared = parse_memory(git(bare, "show", f"{commit}:{added[0]}"), path=added[0])
    assert shared.id == memory_id and shared.seen == 1 and not shared.recalled_by
    message = git(bare, "log", "-1", "--format=%B", commit)
    assert "Memstore-Source: cli" in message
    assert "Memstore-Session: alice-session" in message
    assert "Memstore-Host: alice-laptop" in message
    _clone_is_untouched(clone, before)


def test_a_host_nobody_recognises_gets_the_branch_name_instead_of_a_url(tmp_path: Path) -> None:
    bare = make_team_repo(tmp_path, [(DEPLOY, "webshop")])
    alice, _ = _alice(tmp_path, bare)
    memory_id = alice.add("Feature flags of the webshop live in config/flags.yaml")

    done = alice.run("share", memory_id, "--team", "acme")

    assert done.returncode == 0, done.stderr
    assert f"pushed branch memstore/alice/{memory_id}" in done.stdout
    assert "http" not in done.stdout
    assert f"refs/heads/memstore/alice/{memory_id}" in refs(bare)


def test_review_none_commits_to_main_and_syncs_the_clone(tmp_path: Path) -> None:
    bare = make_team_repo(tmp_path, [(DEPLOY, "webshop")], review="none")
    alice, clone = _alice(tmp_path, bare)
    memory_id = alice.add("Invoices of the webshop are rendered by services/pdf")

    done = alice.run("share", memory_id, "--team", "acme")

    assert done.returncode == 0, done.stderr
    assert "committed to acme's main" in done.stdout
    main = refs(bare)["refs/heads/main"]
    assert list(refs(bare)) == ["refs/heads/main"]  # no branch: straight to main
    assert git(clone, "rev-parse", "HEAD").strip() == main
    assert any(memory_id in p.name for p in (clone / "webshop").rglob("*.md"))


def test_review_none_on_a_protected_main_is_refused_in_one_line_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    bare = make_team_repo(tmp_path, [(DEPLOY, "webshop")], review="none", hook=PROTECTED_MAIN)
    alice, clone = _alice(tmp_path, bare)
    before = refs(bare)
    memory_id = alice.add("Invoices of the webshop are rendered by services/pdf")

    done = alice.run("share", memory_id, "--team", "acme")

    assert done.returncode == 1
    assert len(done.stderr.strip().splitlines()) == 1
    assert "cannot push main of team acme" in done.stderr
    assert 'review = "pull-request"' in done.stderr
    assert refs(bare) == before
    _clone_is_untouched(clone, before["refs/heads/main"])


def test_a_read_only_member_is_told_how_to_propose_and_nothing_is_left_half_done(
    tmp_path: Path,
) -> None:
    bare = make_team_repo(tmp_path, [(DEPLOY, "webshop")], hook=READ_ONLY)
    alice, clone = _alice(tmp_path, bare)
    before = refs(bare)
    memory_id = alice.add("Run the webshop's tests with make check before every push")

    done = alice.run("share", memory_id, "--team", "acme")

    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "you cannot push a branch to team acme" in lines[0]
    assert "denied to reader" in lines[0]  # the host's own words
    assert "fork the team repository" in lines[0] and "ask a maintainer" in lines[0]
    assert refs(bare) == before
    _clone_is_untouched(clone, before["refs/heads/main"])


def test_a_memory_with_a_secret_never_leaves_the_machine(tmp_path: Path) -> None:
    bare = make_team_repo(tmp_path, [(DEPLOY, "webshop")])
    alice, clone = _alice(tmp_path, bare)
    clean = alice.add("The webshop's S3 bucket is acme-assets in eu-west-1")
    secret = alice.add(
        f"The webshop deploy user's AWS key id is {AWS_KEY_ID}", "webshop", "--allow-secret"
    )
    before = refs(bare)

    for args in (["share", clean, secret], ["share", secret, "--dry-run"]):
        done = alice.run(*args, "--team", "acme")
        assert done.returncode == 1
        assert f"memory {secret} holds what looks like" in done.stderr
        assert "stays on this machine" in done.stderr and f"memstore edit {secret}" in done.stderr
        assert AWS_KEY_ID not in done.stderr + done.stdout
    assert refs(bare) == before
    _clone_is_untouched(clone, before["refs/heads/main"])
    objects = git(clone, "rev-list", "--all", "--objects")
    assert all(
        AWS_KEY_ID not in git(clone, "cat-file", "-p", o.split()[0]) for o in objects.splitlines()
    )


def test_a_proposal_that_duplicates_a_team_memory_folds_into_it(tmp_path: Path) -> None:
    bare = make_team_repo(tmp_path, [(DEPLOY, "webshop")])
    alice, clone = _alice(tmp_path, bare)
    # The same text in another workspace of alice's (so another id), shared into webshop.
    exact = alice.add(DEPLOY, "ops")
    near = alice.add("Deploys of the webshop go through the tools/deploy.sh script, never by hand")
    same = alice.add(DEPLOY)  # the same text in the same workspace: the team's own id
    before = refs(bare)["refs/heads/main"]
    team_files = _files_at(bare, before)
    [(team_path, team_text)] = team_files.items()
    team_id = parse_memory(team_text, path=team_path).id
    assert same == team_id and exact != team_id

    done = alice.run("share", exact, "--team", "acme", "-w", "webshop", "--json")

    assert done.returncode == 0, done.stderr
    shared = json.loads(done.stdout)
    assert [c["action"] for c in shared["changes"]] == ["fold"]
    after = _files_at(bare, shared["commit"])
    assert set(after) == set(team_files)  # no new file: the team's memory took it in
    folded = parse_memory(after[team_path], path=team_path)
    assert folded.id == team_id and exact in merged_ids(folded) and folded.seen == 2

    done = alice.run("share", near, "--team", "acme")  # a near-duplicate that agrees
    assert done.returncode == 0, done.stderr
    assert f"{near}: folds into team memory {team_id}" in done.stdout

    done = alice.run("share", same, "--team", "acme")
    assert done.returncode == 0, done.stderr
    assert f"{same}: team acme holds it already" in done.stdout
    assert "nothing to propose" in done.stdout
    assert not [r for r in refs(bare) if r.endswith(same)]
    _clone_is_untouched(clone, before)


def test_review_flags_a_contradiction_with_a_team_memory_as_markdown(tmp_path: Path) -> None:
    bare = make_team_repo(tmp_path, [(PORT, "webshop"), (DEPLOY, "webshop")])
    alice, _ = _alice(tmp_path, bare)
    bob = person(tmp_path, "bob", "bob@acme.com")
    follow(bob, "acme", str(bare))
    memory_id = alice.add("The staging server of the webshop listens on port 8443")
    team_id = next(
        parse_memory(text, path=p).id
        for p, text in _files_at(bare, "main").items()
        if "8080" in text
    )

    dry = alice.run("share", memory_id, "--team", "acme", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert f"**contradicts** `{team_id}`" in dry.stdout and "8443" in dry.stdout
    assert list(refs(bare)) == ["refs/heads/main"]  # a dry run pushes nothing

    assert alice.run("share", memory_id, "--team", "acme").returncode == 0
    branch = f"memstore/alice/{memory_id}"
    done = bob.run("review", branch)  # the one team bob follows

    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"### memstore review: 1 memory for team acme (`{branch}`)")
    assert "**Needs a look:** 1 contradiction." in done.stdout
    assert f"#### `{memory_id}` (webshop): new" in done.stdout
    assert f"**contradicts** `{team_id}` (" in done.stdout
    as_json = json.loads(bob.run("review", branch, "--team", "acme", "--json").stdout)
    [memory] = as_json["memories"]
    assert memory["id"] == memory_id and memory["effect"] == "add"
    assert [c["id"] for c in memory["contradictions"]] == [team_id]
    assert memory["duplicates"] == [] and memory["secrets"] == []


def test_review_of_a_clean_proposal_says_so(tmp_path: Path) -> None:
    bare = make_team_repo(tmp_path, [(PORT, "webshop")])
    alice, _ = _alice(tmp_path, bare)
    memory_id = alice.add("Translations of the webshop are kept in locale/*.po files")
    assert alice.run("share", memory_id, "--team", "acme").returncode == 0

    done = alice.run("review", f"memstore/alice/{memory_id}", "--team", "acme")

    assert done.returncode == 0, done.stderr
    assert "No duplicates, contradictions or secrets found." in done.stdout
    missing = alice.run("review", "memstore/alice/nothing", "--team", "acme")
    assert missing.returncode == 1 and "has no branch 'memstore/alice/nothing'" in missing.stderr


def test_a_main_that_moved_since_the_last_sync_is_fetched_and_branched_from(
    tmp_path: Path,
) -> None:
    bare = make_team_repo(tmp_path, [(DEPLOY, "webshop")])
    alice, clone = _alice(tmp_path, bare)
    # Someone else's share merged meanwhile: the host's main moved past alice's clone.
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(bare), str(other))
    (other / "webshop" / "2026-01").mkdir(parents=True)
    (other / "webshop" / "2026-01" / "cache-abcd2345.md").write_text(
        "---\nid: abcd2345\nkind: note\nkeywords: []\nseen: 1\n---\nThe webshop caches "
        "product pages for 60 seconds\n",
        encoding="utf-8",
    )
    git(other, "add", "-A")
    git(other, "commit", "-qm", "add(webshop): caching")
    git(other, "push", "-q", "origin", "main")
    moved = refs(bare)["refs/heads/main"]
    memory_id = alice.add("Product images of the webshop are resized by a lambda")

    done = alice.run("share", memory_id, "--team", "acme")

    assert done.returncode == 0, done.stderr
    commit = refs(bare)[f"refs/heads/memstore/alice/{memory_id}"]
    assert git(bare, "rev-parse", f"{commit}^").strip() == moved
    assert git(clone, "rev-parse", "HEAD").strip() == moved  # the clone pulled, nothing more
