"""Following team vaults: join (clone), leave, each one's state, and pulling each at sync.

The personal vault's memstore.toml names the team vaults followed (committed, so sync takes
the list to the person's other machines); each is cloned apart (service/teams.py) and is an
ordinary vault. A team tier only pulls here: what reaches a team vault is a share, reviewed
on the host. An unreachable team remote costs one line and fails nothing else.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal
from urllib.parse import urlsplit

from memstore.catalog.indexer import Progress
from memstore.core.errors import InvalidInputError, MemstoreError, SyncError, VaultError
from memstore.core.secrets import find_secrets
from memstore.core.vault_config import (
    VAULT_CONFIG_NAME,
    VaultConfig,
    check_team_name,
    format_vault_config,
    read_vault_config,
)
from memstore.service.sync import SyncOptions
from memstore.service.teams import Team, clone_path, find_team, followed, mark_team, teams_home
from memstore.service.vault_init import init_vault
from memstore.vault import remote
from memstore.vault.files import Vault, has_vault_mark

if TYPE_CHECKING:
    from memstore.service.store import Store

SYNCED = "team-synced"  # in the clone's .memstore/: {"at": ISO time, "error": last failure}
PUSHED = "team-push"  # in the clone's .memstore/: {"can": "yes" | "no", "at": ISO time}
CanPush = Literal["yes", "no", "unknown"]


@dataclass(frozen=True)
class TeamState:
    """One followed team vault as `memstore team list` shows it."""

    name: str
    url: str
    path: Path
    cloned: bool
    memories: int  # -1: not cloned
    last_sync: str  # ISO time of the last pull that reached the remote ('' never)
    last_error: str  # the last pull's failure ('' none)
    can_push: CanPush  # recorded at the last push attempt (a share); never asked here


@dataclass(frozen=True)
class TeamPull:
    """What one sync did to one team tier."""

    name: str
    result: (
        str  # "cloned" | a sync's merge word ("up to date", "fast-forward", "merged") | "failed"
    )
    indexed: int = 0
    error: str = ""


@dataclass(frozen=True)
class Left:
    """What `team leave` did: the entry is gone; the clone too unless it holds work."""

    team: Team
    commit: str
    removed_clone: bool
    unpushed: tuple[str, ...] = ()  # why the clone was kept: commits or files not pushed


def now_text() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def open_team(store: Store, team: Team) -> Store:
    """Open the clone of `team` as a Store of its own (with `store`'s caller and env)."""
    from memstore.service.store import Store

    settings = dataclasses.replace(store.settings, vault=team.path, may_create_vault=False)
    return Store.open(settings)


def join(store: Store, name: str, url: str, progress: Progress | None = None) -> tuple[Team, str]:
    """Follow the team vault at `url` as `name`: clone it, index it, commit the entry to
    memstore.toml; return the team and the commit ('' when it was followed already).

    Raises:
        InvalidInputError: a bad name, the name followed at another URL, or `url` is not a
            memstore vault (nothing is left behind).
        SyncError: the URL cannot be cloned.
    """
    check_team_name(name)
    _check_url(store, url)
    config = read_vault_config(store.vault.root)
    known = config.teams.get(name)
    if known is not None and known != url:
        raise InvalidInputError(
            f"you follow team {name!r} at {known} already; 'memstore team leave {name}' first, "
            "or pick another name"
        )
    team = Team(name, url, clone_path(store.settings, name, url))
    ensure_clone(store, team, progress)
    if known is not None:
        return team, ""
    teams = {**config.teams, name: url}
    return team, write_config(store, dataclasses.replace(config, teams=teams), f"team: join {name}")


def _check_url(store: Store, url: str) -> None:
    """Refuse a team URL holding a credential (it would be committed to memstore.toml and
    pushed with the vault) or naming this very vault or its own remote."""
    parts = urlsplit(url) if "://" in url else None
    if (parts is not None and parts.password) or find_secrets(url):
        raise InvalidInputError(
            "the team URL holds a credential, which memstore.toml would keep in git; give the "
            "URL without it and let git's credential helper or an SSH key sign in"
        )
    own = {os.path.realpath(store.vault.root)}
    own |= {os.path.realpath(u) if "://" not in u else u for u in remote_urls(store)}
    if (os.path.realpath(url) if "://" not in url else url) in own:
        raise InvalidInputError(
            f"{url} is this vault or its own remote; a team vault is another repository "
            "(memstore init ~/acme-memory, then memstore remote add and sync to share one)"
        )


def remote_urls(store: Store) -> list[str]:
    return list(remote.remote_urls(store.vault.root, store.settings.env).values())


def leave(store: Store, name: str) -> Left:
    """Stop following team `name`: remove its entry (one commit), and its clone unless the
    clone holds commits or files not pushed (then it stays, and says why).

    Raises:
        NotFoundError: no team of that name is followed.
    """
    team = find_team(store.settings, name)
    config = read_vault_config(store.vault.root)
    teams = {k: v for k, v in config.teams.items() if k != name}
    commit = write_config(store, dataclasses.replace(config, teams=teams), f"team: leave {name}")
    store.shared.tiers.close()  # this process reads the tier no more
    if not (team.path / ".git").exists():
        return Left(team, commit, removed_clone=False)
    unpushed = unpushed_work(store, team.path)
    if unpushed:
        return Left(team, commit, removed_clone=False, unpushed=unpushed)
    shutil.rmtree(team.path)
    return Left(team, commit, removed_clone=True)


def unpushed_work(store: Store, root: Path) -> tuple[str, ...]:
    """Return what the clone at `root` holds that no remote has: commits on its branches
    not on a remote branch, and changed files (empty: nothing would be lost)."""
    env = store.settings.env
    commits = remote.run_git(root, ["log", "--branches", "--not", "--remotes", "--oneline"], env)
    changed = remote.run_git(root, ["status", "--porcelain"], env)
    if commits.returncode or changed.returncode:
        return (f"git could not read {root}: {(commits.stderr or changed.stderr).strip()}",)
    found = [f"commit {line}" for line in commits.stdout.splitlines() if line.strip()]
    found += [f"changed {line[3:]}" for line in changed.stdout.splitlines() if line.strip()]
    return tuple(found)


def write_config(store: Store, config: VaultConfig, message: str) -> str:
    """Write memstore.toml and commit it, one commit (a hand edit of it is committed first)."""
    data = format_vault_config(config).encode("utf-8")
    with store.transaction(catch_up=False) as tx:
        tx.commit_edits([VAULT_CONFIG_NAME])
        with tx.writing({VAULT_CONFIG_NAME: data}):
            tx.vault.write_bytes_atomic(VAULT_CONFIG_NAME, data)
            return tx.commit(message, add=(VAULT_CONFIG_NAME,))


def ensure_clone(store: Store, team: Team, progress: Progress | None = None) -> bool:
    """Clone `team` where it lives unless it is there; return whether it cloned now.

    Raises:
        InvalidInputError: the URL holds no memstore vault (nothing is left behind).
        SyncError: git cannot clone it.
    """
    if (team.path / ".git").exists():
        return False
    home = teams_home(store.settings)
    try:
        home.mkdir(parents=True, exist_ok=True, mode=0o700)
        scratch = Path(tempfile.mkdtemp(prefix=f".{team.name}-", dir=home))
    except OSError as err:
        raise VaultError(f"cannot make the team vaults' folder {home}: {err.strerror}") from err
    try:
        _clone_into(store, team, scratch / "clone")
        try:
            (scratch / "clone").rename(team.path)
        except OSError as err:
            raise VaultError(
                f"cannot put team vault {team.name!r} at {team.path}: {err.strerror}; move "
                "what is there aside and try again"
            ) from err
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    try:
        init_vault(team.path, store.settings)  # the merge driver, as `memstore init` of a clone
        mark_team(team.path, team.name)
        with open_team(store, team) as clone:
            clone.reindex(progress)  # its index: the first recall does not pay for it
        record_sync(team.path, "")
    except MemstoreError:
        shutil.rmtree(team.path, ignore_errors=True)
        raise
    return True


def _clone_into(store: Store, team: Team, target: Path) -> None:
    env = store.settings.env
    done = remote.run_git(target.parent, ["clone", "--quiet", "--", team.url, str(target)], env)
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or ["git clone failed"])[-1]
        raise SyncError(f"cannot clone team vault {team.name!r} from {team.url}: {reason}")
    if not has_vault_mark(_read(target / ".gitattributes")):
        raise InvalidInputError(
            f"{team.url} is not a memstore vault (its .gitattributes does not send *.md to "
            "memstore's merge driver); to start a team vault: 'memstore init DIR', "
            f"'memstore remote add {team.url}' and 'memstore sync' there, then join it"
        )


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def pull_teams(store: Store, progress: Progress | None = None) -> list[TeamPull]:
    """Bring every followed team tier up to date (clone the ones not cloned here yet); a
    team that fails is reported in its TeamPull and never stops the others."""
    pulls = []
    for team in followed(store.settings):
        try:
            if ensure_clone(store, team, progress):
                pulls.append(TeamPull(team.name, "cloned"))
                continue
            with open_team(store, team) as clone:
                outcome, _, caught_up = clone.sync("", progress, SyncOptions(pull_only=True))
            record_sync(team.path, "")
            pulls.append(TeamPull(team.name, outcome.merge, len(caught_up.updated)))
        except MemstoreError as err:
            if (team.path / ".git").exists():
                record_sync(team.path, str(err))
            pulls.append(TeamPull(team.name, "failed", error=str(err)))
    return pulls


def record_sync(root: Path, error: str) -> None:
    """Record in the clone that a pull reached its remote now ('' error) or failed."""
    vault = Vault(root)
    before = _state(vault, SYNCED)
    at = now_text() if not error else str(before.get("at", ""))
    vault.write_state(SYNCED, json.dumps({"at": at, "error": error}))


def record_push(root: Path, can_push: bool) -> None:
    """Record in the clone whether a push to its remote was accepted (a share calls this:
    `team list` then says whether you can push, without asking the host each time)."""
    vault = Vault(root)
    vault.write_state(PUSHED, json.dumps({"can": "yes" if can_push else "no", "at": now_text()}))


def _state(vault: Vault, name: str) -> dict[str, object]:
    try:
        data = json.loads(vault.read_state(name) or "{}")
    except ValueError:
        return {}  # local state: a garbled record reads as none
    return data if isinstance(data, dict) else {}


def states(store: Store) -> list[TeamState]:
    """Return each followed team vault's state (memories counted from its index)."""
    found = []
    for team in followed(store.settings):
        cloned = (team.path / ".git").exists()
        vault = Vault(team.path)
        synced = _state(vault, SYNCED) if cloned else {}
        pushed = _state(vault, PUSHED) if cloned else {}
        can: CanPush = "yes" if pushed.get("can") == "yes" else "unknown"
        can = "no" if pushed.get("can") == "no" else can
        found.append(
            TeamState(
                team.name,
                team.url,
                team.path,
                cloned,
                _memories(team) if cloned else -1,
                str(synced.get("at", "")),
                str(synced.get("error", "")),
                can,
            )
        )
    return found


def _memories(team: Team) -> int:
    from memstore.catalog.indexer import Indexer

    try:
        indexer = Indexer.open(Vault(team.path))
    except MemstoreError:
        return -1
    try:
        return indexer.count()
    finally:
        indexer.close()
