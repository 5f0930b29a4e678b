"""The team vaults a person follows: named in the personal vault's memstore.toml, cloned apart.

A followed team vault is a git repository in memstore's format, cloned OUTSIDE the personal
vault's git tree (so the personal vault never commits it, and no watcher of the personal
vault sees it): `$XDG_DATA_HOME/memstore/teams/<name>-<8 hex of sha256(url)>`, with
XDG_DATA_HOME defaulting to ~/.local/share. Each clone is an ordinary vault with its own
.memstore/ index, opened with the ordinary Store.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from memstore.core.config import Settings
from memstore.core.errors import NotFoundError, VaultError
from memstore.core.vault_config import check_team_name, read_vault_config

# In a clone's .git folder (never committed, kept by a reindex): the name of the team tier
# it is. A clone holding it flushes no recall counters (service/counters.py).
TEAM_MARK = "memstore-team"


@dataclass(frozen=True)
class Team:
    """One followed team vault: its name (the tier's label), its git URL, its clone."""

    name: str
    url: str
    path: Path


def teams_home(settings: Settings) -> Path:
    """Return the folder the team clones live in: $XDG_DATA_HOME/memstore/teams.

    Raises:
        VaultError: neither XDG_DATA_HOME nor HOME is set (nowhere to keep the clones).
    """
    env = settings.env
    data = env.get("XDG_DATA_HOME", "")
    if not data or not Path(data).is_absolute():  # the XDG spec: a relative value is ignored
        home = env.get("HOME", "")
        if not home:
            raise VaultError("HOME is not set; set HOME or XDG_DATA_HOME to keep team vaults")
        data = str(Path(home) / ".local" / "share")
    return Path(data) / "memstore" / "teams"


def clone_path(settings: Settings, name: str, url: str) -> Path:
    """Return where the clone of team `name` at `url` lives (a new URL is a new clone)."""
    digest = hashlib.sha256(url.encode("utf-8")).hexdigest()[:8]
    return teams_home(settings) / f"{check_team_name(name)}-{digest}"


def followed(settings: Settings) -> list[Team]:
    """Return the team vaults the personal vault follows, by name (cloned or not yet).

    Raises:
        InvalidInputError: memstore.toml is malformed (the message names the file).
    """
    teams = read_vault_config(settings.vault).teams
    return [Team(name, url, clone_path(settings, name, url)) for name, url in sorted(teams.items())]


def find_team(settings: Settings, name: str) -> Team:
    """Return the followed team vault named `name`.

    Raises:
        NotFoundError: the personal vault follows no team of that name.
    """
    for team in followed(settings):
        if team.name == name:
            return team
    raise NotFoundError(
        f"you follow no team vault named {name!r}; run 'memstore team list' to see yours, "
        f"or 'memstore team join {name} URL' to follow one"
    )


def team_of(root: Path) -> str:
    """Return the team tier the vault at `root` is a clone of ('' for any other vault)."""
    try:
        return (root / ".git" / TEAM_MARK).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return ""


def mark_team(root: Path, name: str) -> None:
    """Record in the clone at `root` that it is team tier `name`."""
    try:
        (root / ".git" / TEAM_MARK).write_text(name + "\n", encoding="utf-8")
    except OSError as err:
        raise VaultError(f"cannot mark {root} as team vault {name!r}: {err.strerror}") from err
