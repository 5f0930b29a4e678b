"""A team vault's remote as a proposal meets it: a ref pushed, what a refusal means, who pushes.

Through the git CLI, as vault/remote.py (SSH agents, credential helpers, bare repositories
on disk all work). Nothing here force-pushes or moves a local ref: a proposal is a commit
pushed straight to the remote's branch, so a refused push leaves the clone as it was.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from memstore.core.errors import SyncError
from memstore.vault.remote import fetch_git, run_git

PushStatus = Literal["pushed", "moved", "refused"]
# What hosts say when the person may read but not write (GitHub, GitLab, Gitea, Bitbucket,
# a pre-receive hook), lowercased; a remote that moved on is told apart first.
_REFUSED = (
    "[remote rejected]",
    "permission",
    "denied",
    "not allowed",
    "forbidden",
    "403",
    "protected branch",
    "read-only",
    "read only",
    "authentication failed",
    "could not read from remote repository",
    "pre-receive hook declined",
)
_MOVED = ("[rejected]", "non-fast-forward", "fetch first")


@dataclass(frozen=True)
class Pushed:
    """How one push of a proposal went: pushed, refused by the host (with its words), or
    rejected because the remote's branch moved on (fetch and build again)."""

    status: PushStatus
    reason: str = ""


def push_ref(root: Path, remote: str, commit: str, branch: str, env: Mapping[str, str]) -> Pushed:
    """Push `commit` to `branch` of `remote` without forcing; never raises for a refusal."""
    done = run_git(
        root, ["push", "--quiet", "--porcelain", remote, f"{commit}:refs/heads/{branch}"], env
    )
    if done.returncode == 0:
        return Pushed("pushed")
    output = f"{done.stdout}\n{done.stderr}"
    lowered = output.lower()
    said = [
        line.removeprefix("remote:").strip()
        for line in output.splitlines()
        if line.startswith("remote:") and line.removeprefix("remote:").strip()
    ]
    if "[remote rejected]" not in lowered and any(mark in lowered for mark in _MOVED):
        return Pushed("moved")
    if any(mark in lowered for mark in _REFUSED) or said:
        return Pushed("refused", "; ".join(said[:2]) or _last_words(output))
    return Pushed("refused", _last_words(output))


def remote_branch_exists(root: Path, remote: str, branch: str, env: Mapping[str, str]) -> str:
    """Return the commit `branch` has on `remote` ('' when it has none), asking the remote."""
    done = run_git(root, ["ls-remote", "--heads", remote, f"refs/heads/{branch}"], env)
    if done.returncode != 0:
        return ""
    first = done.stdout.split()
    return first[0] if first else ""


def fetch_branch(root: Path, remote: str, branch: str, env: Mapping[str, str]) -> str:
    """Fetch one branch of `remote` into refs/remotes/<remote>/<branch>; return its commit
    ('' when the remote has no such branch or cannot be reached)."""
    ref = f"refs/remotes/{remote}/{branch}"
    try:
        done = fetch_git(root, ["--no-tags", remote, f"+refs/heads/{branch}:{ref}"], env)
    except SyncError:  # a purge's prune held the objects: fetched nothing, as unreachable
        return ""
    if done.returncode != 0:
        return ""
    found = run_git(root, ["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], env)
    return found.stdout.strip() if found.returncode == 0 else ""


def git_identity(root: Path, env: Mapping[str, str]) -> tuple[str, str]:
    """Return (user.email, user.name) as git in `root` reads them ('' where unset)."""
    values = []
    for key in ("user.email", "user.name"):
        done = run_git(root, ["config", "--get", key], env)
        values.append(done.stdout.strip() if done.returncode == 0 else "")
    return values[0], values[1]


def forge_setting(root: Path, hostname: str, env: Mapping[str, str]) -> str:
    """Return what the person named the software of `hostname` (`git config
    memstore.<host>.forge gitlab`, in the clone or globally), '' if nothing."""
    done = run_git(root, ["config", "--get", f"memstore.{hostname}.forge"], env)
    return done.stdout.strip() if done.returncode == 0 else ""


def _last_words(output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return lines[-1].removeprefix("fatal: ").removeprefix("error: ") if lines else "no reason given"
