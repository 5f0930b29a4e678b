"""Proposal URLs derived from a team remote's URL, per host and URL form (issue 40)."""

from __future__ import annotations

import pytest

from memstore.core.forge import (
    branch_user,
    forge_of,
    parse_remote,
    proposal_branch,
    proposal_url,
)

BRANCH = "memstore/alice/k3xq9v2m"


@pytest.mark.parametrize(
    "remote",
    [
        "git@github.com:acme/memory.git",
        "https://github.com/acme/memory.git",
        "https://github.com/acme/memory",
        "ssh://git@github.com/acme/memory.git",
        "ssh://git@ssh.github.com:443/acme/memory.git",
        "https://x-access-token:ghp_secret@github.com/acme/memory.git",
        "git+ssh://git@github.com/acme/memory.git/",
    ],
)
def test_every_github_url_form_gives_the_compare_page(remote: str) -> None:
    assert proposal_url(remote, BRANCH, "main") == (
        "https://github.com/acme/memory/compare/main...memstore/alice/k3xq9v2m?expand=1"
    )


def test_a_token_in_the_remote_url_never_reaches_the_link() -> None:
    url = proposal_url("https://oauth2:glpat-abcdef@gitlab.com/acme/memory.git", BRANCH, "main")
    assert "glpat" not in url and "oauth2" not in url
    assert url.startswith("https://gitlab.com/acme/memory/-/merge_requests/new?")


@pytest.mark.parametrize(
    ("remote", "page"),
    [
        ("git@gitlab.com:acme/platform/memory.git", "https://gitlab.com/acme/platform/memory"),
        ("ssh://git@gitlab.acme.io:2222/team/memory.git", "https://gitlab.acme.io/team/memory"),
        ("https://gitlab.acme.io:8443/team/memory.git", "https://gitlab.acme.io:8443/team/memory"),
        ("http://gitlab.lan/team/memory.git", "http://gitlab.lan/team/memory"),
    ],
)
def test_gitlab_gets_a_new_merge_request_with_both_branches(remote: str, page: str) -> None:
    assert proposal_url(remote, BRANCH, "trunk") == (
        f"{page}/-/merge_requests/new?merge_request%5Bsource_branch%5D=memstore%2Falice%2Fk3xq9v2m"
        "&merge_request%5Btarget_branch%5D=trunk"
    )


@pytest.mark.parametrize(
    "remote",
    [
        "git@codeberg.org:acme/memory.git",
        "https://gitea.com/acme/memory.git",
        "git@git.forgejo.acme.dev:acme/memory.git",
        "https://gitea.internal.example/acme/memory",
    ],
)
def test_gitea_and_forgejo_get_the_compare_page(remote: str) -> None:
    url = proposal_url(remote, BRANCH, "main")
    repository = parse_remote(remote)
    assert repository is not None
    assert url == f"{repository.web}/compare/main...memstore/alice/k3xq9v2m"


def test_bitbucket_cloud_and_server_have_their_own_pages() -> None:
    assert proposal_url("git@bitbucket.org:acme/memory.git", BRANCH, "main") == (
        "https://bitbucket.org/acme/memory/pull-requests/new?source=memstore%2Falice%2Fk3xq9v2m"
        "&dest=main"
    )
    server = proposal_url("https://bitbucket.acme.com/scm/mem/memory.git", BRANCH, "main")
    assert server == (
        "https://bitbucket.acme.com/projects/MEM/repos/memory/pull-requests?create"
        "&sourceBranch=refs%2Fheads%2Fmemstore%2Falice%2Fk3xq9v2m&targetBranch=refs%2Fheads%2Fmain"
    )


@pytest.mark.parametrize(
    "remote",
    [
        "/srv/git/team.git",
        "file:///srv/git/team.git",
        "../team.git",
        "git@git.acme.com:acme/memory.git",  # a host whose software nobody named
        "https://example.com/memory.git",  # no owner/name path
    ],
)
def test_a_host_nobody_recognises_gets_no_url(remote: str) -> None:
    assert proposal_url(remote, BRANCH, "main") == ""


def test_a_person_names_a_self_hosted_hosts_software() -> None:
    remote = "git@git.acme.com:acme/memory.git"
    assert forge_of("git.acme.com") is None
    assert proposal_url(remote, BRANCH, "main", named="gitlab").startswith(
        "https://git.acme.com/acme/memory/-/merge_requests/new?"
    )
    assert proposal_url(remote, BRANCH, "main", named="no-such-forge") == ""


def test_a_label_of_a_self_hosted_name_says_its_software() -> None:
    assert forge_of("github.acme.com") == "github"  # GitHub Enterprise Server
    assert forge_of("code.gitlab.acme.com") == "gitlab"
    assert forge_of("bitbucket.acme.com") == "bitbucket-server"
    assert forge_of("gitlab") is None  # a bare top-level label names nothing
    assert forge_of("mygitlab.com") is None  # only whole labels count


def test_branch_user_prefers_the_email_then_the_name_then_the_host() -> None:
    assert branch_user("Alice.Smith@acme.com", "Alice Smith", "laptop") == "alice.smith"
    assert branch_user("123456+alice@users.noreply.github.com", "", "laptop") == "alice"
    assert branch_user("", "Zoë Ångström", "laptop") == "zo-ngstr-m"
    assert branch_user("", "", "Build Box 7") == "build-box-7"
    assert branch_user("", "", "") == "someone"


def test_one_memory_names_its_branch_several_get_a_hash_of_all() -> None:
    assert proposal_branch("alice", ["k3xq9v2m"]) == "memstore/alice/k3xq9v2m"
    several = proposal_branch("alice", ["zz000000", "k3xq9v2m"])
    assert several.startswith("memstore/alice/k3xq9v2m-")
    assert several == proposal_branch("alice", ["k3xq9v2m", "zz000000", "k3xq9v2m"])
    assert several != proposal_branch("alice", ["k3xq9v2m", "zz000001"])
