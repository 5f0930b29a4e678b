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
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal
from urllib.parse import urlsplit

from memstore.catalog.indexer import Progress
from memstore.catalog.updater import Moved
from memstore.core.errors import (
    InvalidInputError,
    MemstoreError,
    SyncError,
    UncommittedEditError,
    VaultError,
)
from memstore.core.secrets import find_secrets
from memstore.core.vault_config import (
    VAULT_CONFIG_NAME,
    VaultConfig,
    check_team_name,
    format_vault_config,
    read_vault_config,
)
from memstore.service.sync import MARKER as SYNC_MARKER
from memstore.service.sync import SyncOptions
from memstore.service.teams import Team, clone_path, find_team, followed, mark_team, teams_home
from memstore.service.vault_init import init_vault
from memstore.vault import remote
from memstore.vault.files import Vault, has_vault_mark
from memstore.vault.git import GitRepo

if TYPE_CHECKING:
    from memstore.service.store import Store

# Records of a clone, in a file outside it (record_path; older clones: in their .memstore/)
SYNCED = "team-synced"  # {"at": ISO time of the last pull that reached it, "error": failure}
PUSHED = "team-push"  # {"can": "yes" | "no", "at": ISO time}
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
    if not ensure_clone(store, team, progress):
        pull_team(store, team, progress)  # a clone kept by a leave: brought up to date
        record_sync(team.path, "")
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
    record_path(team.path).unlink(missing_ok=True)
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
    # A bare repository whose HEAD names a branch nobody pushed (`git init --bare` names
    # master; the team pushed main by hand) clones with nothing checked out: take its branch
    GitRepo.open(target).adopt_remote_branch()
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


def pull_teams(
    store: Store, progress: Progress | None = None, was_followed: Sequence[Team] = ()
) -> list[TeamPull]:
    """Bring every followed team tier up to date (clone the ones not cloned here yet); a
    team that fails is reported in its TeamPull and never stops the others. A team in
    `was_followed` (before the personal vault's sync) and followed no more was left on
    another machine: its clone goes as `team leave` removes one ("left")."""
    teams = followed(store.settings)
    pulls = [_left_elsewhere(store, team) for team in was_followed if team not in teams]
    for team in teams:
        try:
            if ensure_clone(store, team, progress):
                pulls.append(TeamPull(team.name, "cloned"))
                continue
            pulls.append(pull_team(store, team, progress))
            record_sync(team.path, "")
        except MemstoreError as err:
            if (team.path / ".git").exists():
                record_sync(team.path, str(err))
            pulls.append(TeamPull(team.name, "failed", error=str(err)))
    return pulls


def _left_elsewhere(store: Store, team: Team) -> TeamPull:
    kept = unpushed_work(store, team.path) if (team.path / ".git").exists() else ()
    if (team.path / ".git").exists() and not kept:
        shutil.rmtree(team.path)
        record_path(team.path).unlink(missing_ok=True)
    store.shared.tiers.close()  # this process reads the tier no more
    why = f"kept its clone at {team.path}: it holds {len(kept)} changes not pushed" if kept else ""
    return TeamPull(team.name, "left", error=why)


def pull_team(store: Store, team: Team, progress: Progress | None = None) -> TeamPull:
    """Pull one cloned team tier: fetch, and stop there when the fetched head is what the
    clone holds; a fast-forward moves the clone and indexes only the files it changed.
    Anything else (local commits, a sync killed half-way, a remote history rewritten by a
    purge) takes the whole sync of the clone, as before.

    Raises:
        SyncError: the team's remote cannot be fetched (the message names team and URL).
    """
    git = GitRepo.open(team.path)
    env = store.settings.env
    name = git.tracked_remote() or "origin"
    done = remote.fetch_git(team.path, ["--no-tags", name], env)
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or ["git fetch failed"])[-1]
        raise SyncError(
            f"cannot fetch team vault {team.name!r} from {team.url}: "
            f"{reason.removeprefix('fatal: ')}; recall reads what is cloned meanwhile"
        )
    theirs = git.resolve(f"refs/remotes/{name}/{git.branch()}")
    head = git.head()
    pending = bool(Vault(team.path).read_state(SYNC_MARKER))
    if not pending and theirs in ("", head):
        return TeamPull(team.name, "up to date")
    with open_team(store, team) as clone:
        if not pending and head and git.merge_base(head, theirs) == head:
            try:
                return TeamPull(team.name, "fast-forward", _fast_forward(clone, theirs, progress))
            except UncommittedEditError:
                pass  # a file edited in the clone: the whole sync commits it first
        outcome, _, caught_up = clone.sync(name, progress, SyncOptions(pull_only=True))
    return TeamPull(team.name, outcome.merge, len(caught_up.updated))


def _fast_forward(clone: Store, theirs: str, progress: Progress | None) -> int:
    """Move the clone to `theirs` (a descendant of its HEAD) and index what changed;
    return how many memories were indexed. A clone only pulls: no edits to commit and no
    counters to flush (those of a team memory stay in the clone's journal), so the whole
    sync's status of every file is skipped; a file edited in the clone stops the checkout
    (UncommittedEditError) and nothing moves."""
    with clone.transaction(catch_up=False) as tx:
        before = clone.vault.head()
        paths = tuple(clone.git.paths_between(before[0], theirs))
        clone.git.move_to(theirs)
        caught_up = tx.catch_up(progress=progress, moved=Moved(before, theirs, paths))
    return len(caught_up.updated)


def record_sync(root: Path, error: str) -> None:
    """Record that a pull of the clone at `root` reached its remote now ('' error) or
    failed (kept outside the clone: a clone removed and cloned again keeps its record)."""
    before = _record(root, SYNCED)
    at = now_text() if not error else str(before.get("at", ""))
    _write_record(root, SYNCED, {"at": at, "error": error})


def record_push(root: Path, can_push: bool) -> None:
    """Record in the clone whether a push to its remote was accepted (a share calls this:
    `team list` then says whether you can push, without asking the host each time)."""
    _write_record(root, PUSHED, {"can": "yes" if can_push else "no", "at": now_text()})


def record_path(root: Path) -> Path:
    """Return the file holding the sync and push records of the clone at `root`: outside
    the clone, beside the teams' folder (`…/memstore/team-records/<clone>.json`)."""
    return root.parent.parent / "team-records" / f"{root.name}.json"


def _write_record(root: Path, name: str, value: dict[str, object]) -> None:
    records = _records(root)
    records[name] = value
    path = record_path(root)
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        scratch = path.with_name(f".{path.name}.{os.getpid()}")
        scratch.write_text(json.dumps(records), encoding="utf-8")
        os.replace(scratch, path)
    except OSError as err:
        raise VaultError(f"cannot record the state of {root} in {path}: {err.strerror}") from err


def _records(root: Path) -> dict[str, object]:
    try:
        data = json.loads(record_path(root).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}  # local state: a missing or garbled record reads as none
    return data if isinstance(data, dict) else {}


def _record(root: Path, name: str) -> dict[str, object]:
    """Return one record of the clone at `root` (an older clone kept it in its .memstore/)."""
    found = _records(root).get(name)
    if isinstance(found, dict):
        return found
    if not (root / ".git").exists():
        return {}
    try:
        data = json.loads(Vault(root).read_state(name) or "{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def states(store: Store) -> list[TeamState]:
    """Return each followed team vault's state (memories counted from its index)."""
    found = []
    for team in followed(store.settings):
        cloned = (team.path / ".git").exists()
        synced = _record(team.path, SYNCED)
        pushed = _record(team.path, PUSHED)
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
