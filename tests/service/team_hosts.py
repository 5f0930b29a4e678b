"""Team vaults on disk for the sharing tests (issue 40): a bare repository stands in for the
git host (its pre-receive hook for branch protection or a read-only member), and each person
has a HOME of their own, with a personal vault that follows the team."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from memstore.core.config import Settings
from memstore.core.vault_config import VaultConfig, format_vault_config
from memstore.service.store import Store
from memstore.service.teams import clone_path
from memstore.service.vault_init import init_vault
from tests.conftest import git, invoke_memstore, settings_at

# The host's merge button: a reviewer's push that the hooks let through.
HOST_MERGE = "HOST_MERGE"
PROTECTED_MAIN = f"""#!/bin/sh
[ -n "${HOST_MERGE}" ] && exit 0
while read old new ref; do
  if [ "$ref" = "refs/heads/main" ]; then
    echo "GH006: Protected branch update failed for refs/heads/main." >&2
    exit 1
  fi
done
exit 0
"""
READ_ONLY = f"""#!/bin/sh
[ -n "${HOST_MERGE}" ] && exit 0
echo "Permission to acme/memory.git denied to reader." >&2
exit 1
"""
# A key of AWS's documented shape that the scanner takes for a real one.
AWS_KEY_ID = "AKIAQ3EGRJ5LTMWD7XZN"


def make_team_repo(
    tmp: Path,
    memories: list[tuple[str, str]],
    *,
    review: str = "pull-request",
    hook: str = "",
    name: str = "team",
) -> Path:
    """Return a bare repository holding a team vault with `memories` ((text, workspace))."""
    seed = tmp / f"{name}-seed"
    settings = settings_at(seed)
    init_vault(seed, settings)
    with Store.open(settings) as store:
        for text, workspace in memories:
            store.add(text, workspace=workspace)
    if review != "pull-request":
        (seed / "memstore.toml").write_text(
            format_vault_config(VaultConfig(review=review)),  # type: ignore[arg-type]
            encoding="utf-8",
        )
        git(seed, "add", "memstore.toml")
        git(seed, "commit", "-qm", f"team: review = {review}")
    bare = tmp / f"{name}.git"
    git(tmp, "init", "-q", "--bare", "-b", "main", str(bare))
    git(seed, "push", "-q", str(bare), "main")
    if hook:
        path = bare / "hooks" / "pre-receive"
        path.write_text(hook, encoding="utf-8")
        path.chmod(0o755)
    return bare


def host_merge(tmp: Path, bare: Path, branch: str) -> str:
    """Merge `branch` into main on the host, as its button would; return the new main."""
    work = tmp / f"merge-{branch.replace('/', '-')}"
    git(tmp, "clone", "-q", str(bare), str(work))
    git(work, "merge", "-q", "--no-ff", "-m", f"Merge {branch}", f"origin/{branch}")
    env = {**os.environ, HOST_MERGE: "1"}
    subprocess.run(["git", "push", "-q", "origin", "main"], cwd=work, env=env, check=True)
    return git(work, "rev-parse", "HEAD").strip()


def refs(bare: Path) -> dict[str, str]:
    """Every branch of a bare repository and its commit."""
    out = git(bare, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads")
    return dict(tuple(line.split(" ", 1)) for line in out.splitlines())  # type: ignore[misc]


@dataclass
class Person:
    """One member of the team: a HOME, a git identity, a personal vault."""

    name: str
    home: Path
    vault: Path
    env: dict[str, str]

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return invoke_memstore(*args, vault=self.vault, env=self.env)

    def add(self, text: str, workspace: str = "webshop", *more: str) -> str:
        done = self.run("add", text, "-w", workspace, "--json", *more)
        assert done.returncode == 0, done.stderr
        return str(json.loads(done.stdout)["id"])

    @property
    def settings(self) -> Settings:
        return Settings(
            vault=self.vault, source="cli", session="s1", host=f"{self.name}-laptop", env=self.env
        )

    def clone(self, team: str, url: str) -> Path:
        return clone_path(self.settings, team, url)


def person(tmp: Path, name: str, email: str, *, git_config: str = "") -> Person:
    """A person with a HOME of their own and a personal vault in it."""
    home = tmp / f"home-{name}"
    home.mkdir()
    config = home / ".gitconfig"
    config.write_text(
        f"[user]\n\tname = {name.title()}\n\temail = {email}\n[init]\n\tdefaultBranch = main\n"
        + git_config,
        encoding="utf-8",
    )
    env = {
        "HOME": str(home),
        "GIT_CONFIG_GLOBAL": str(config),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "MEMSTORE_HOST": f"{name}-laptop",
        "MEMSTORE_SESSION": f"{name}-session",
    }
    vault = home / "memstore"
    done = invoke_memstore("init", str(vault), env=env)
    assert done.returncode == 0, done.stderr
    return Person(name, home, vault, env)


def follow(member: Person, team: str, url: str) -> Path:
    """Follow team `team` at `url`: its entry in memstore.toml and its clone, made the way
    `memstore team join` makes them. Return the clone."""
    done = member.run("team", "join", team, url)
    if done.returncode == 0:
        return member.clone(team, url)
    # Without `team join` (the tiers half not merged yet): the same entry and clone by hand.
    config = member.vault / "memstore.toml"
    config.write_text(format_vault_config(VaultConfig(teams={team: url})), encoding="utf-8")
    git(member.vault, "add", "memstore.toml")
    git(member.vault, "commit", "-qm", f"team: join {team}")
    clone = member.clone(team, url)
    clone.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["git", "clone", "-q", url, str(clone)],
        env={**os.environ, **member.env},
        check=True,
        capture_output=True,
    )
    init_vault(clone, member.settings)
    return clone
