"""A refusal for a credential reads the same through the daemon as in-process: one line
naming the file (or the text) and what it looks like, with the fix, and exit 1."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import git
from tests.daemon.test_daemon import env, make_vault, requests_served, run, start_daemon

__all__ = ["env"]  # the fixture, imported for these tests

TOKEN = "ghp_" + "Z8kq2LmN4pR7sT1vW3xY5aB6cD9eF0gH2jK4"  # shaped as a GitHub token


def _both_ways(env: dict[str, str], vault: Path, *args: str) -> tuple[str, str]:
    """The same command in-process and through the daemon (which counts it served)."""
    alone = run({**env, "MEMSTORE_NO_DAEMON": "1"}, *args)
    served = requests_served(vault)
    through = run(env, *args)
    assert requests_served(vault) == served + 1, "the daemon did not answer"
    assert (alone.returncode, through.returncode) == (1, 1), (alone, through)
    assert alone.stdout == through.stdout == ""
    return alone.stderr, through.stderr


def test_a_file_held_for_a_credential_is_named_the_same_through_the_daemon(
    tmp_path: Path, env: dict[str, str]
) -> None:
    vault = make_vault(tmp_path / "vault")
    env["MEMSTORE_VAULT"] = str(vault)
    text = "use yarn berry in the api repo, never yarn classic"
    added = run({**env, "MEMSTORE_NO_DAEMON": "1"}, "add", text, "-w", "api")
    assert added.returncode == 0, added.stderr
    path = re.search(r"\((api/\S+\.md)\)", added.stdout)
    assert path, added.stdout
    file = vault / path[1]
    # a person puts a token in its front matter: the text is the same, so the add merges
    # into this file, and its commit would carry the token
    lines = file.read_text(encoding="utf-8").splitlines(keepends=True)
    file.write_text("".join([lines[0], f"token: {TOKEN}\n", *lines[1:]]), encoding="utf-8")
    start_daemon(env, vault)
    alone, through = _both_ways(env, vault, "add", text, "-w", "api")
    assert alone == through
    assert alone.startswith(f"Error: {path[1]} holds what looks like a GitHub token;"), alone
    assert "remove the credential from the file" in alone and TOKEN not in alone
    assert len(alone.splitlines()) == 1
    assert git(vault, "status", "--porcelain").strip() == f"M {path[1]}"  # as the person left it


def test_an_added_text_holding_a_credential_is_refused_the_same_through_the_daemon(
    tmp_path: Path, env: dict[str, str]
) -> None:
    vault = make_vault(tmp_path / "vault")
    env["MEMSTORE_VAULT"] = str(vault)
    start_daemon(env, vault)
    alone, through = _both_ways(env, vault, "add", f"the ci bot pushes with {TOKEN}")
    assert alone == through and len(alone.splitlines()) == 1
    assert "looks like a GitHub token" in alone and "--allow-secret" in alone
    assert TOKEN not in alone


def test_a_secret_error_keeps_its_path_and_kind_across_a_pickle() -> None:
    # nothing pickles it today (the daemon sends the error's line), but a helper process
    # (index/parts.py pickles its answers) would: Exception's own reduce keeps the fields
    import pickle

    from memstore.core.errors import SecretError

    sent = SecretError("api/x.md holds what looks like a GitHub token", path="api/x.md", kind="k")
    got = pickle.loads(pickle.dumps(sent))
    assert (type(got), str(got), got.path, got.kind) == (SecretError, str(sent), "api/x.md", "k")
