"""A vault's committed config file, memstore.toml: the team vaults it follows, its review rule.

The file sits at the vault's root and travels with it (sync brings it to a person's other
machines). It is read with tomllib and written by hand, in one fixed layout, so the file a
person reads is the file memstore wrote and a merge of two versions is the same on every
machine (`merge_vault_config`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, get_args

from memstore.core.errors import InvalidInputError

VAULT_CONFIG_NAME = "memstore.toml"
Review = Literal["pull-request", "none"]
REVIEWS: tuple[Review, ...] = get_args(Review)
DEFAULT_REVIEW: Review = "pull-request"
_TEAM = re.compile(r"[a-z0-9][a-z0-9-]{0,39}")
_HEADER = (
    "# memstore's vault config (docs/team.md): the team vaults this vault follows, and for\n"
    "# a team vault how shares reach it. `memstore team join/leave` change [teams].\n"
)


@dataclass(frozen=True)
class VaultConfig:
    """What memstore.toml says: followed team vaults (name -> git URL) and the review rule
    a team vault asks of shares ("pull-request", or "none": share commits to main)."""

    teams: Mapping[str, str] = field(default_factory=dict)
    review: Review = DEFAULT_REVIEW


def check_team_name(name: str) -> str:
    """Return `name` if it is a valid team name, else raise InvalidInputError."""
    if not _TEAM.fullmatch(name):
        raise InvalidInputError(
            f"invalid team name {name!r}; use 1-40 lowercase letters, digits and '-', "
            "starting with a letter or digit, e.g. acme"
        )
    return name


def read_vault_config(root: Path) -> VaultConfig:
    """Read `root`/memstore.toml; a missing file is the defaults.

    Raises:
        InvalidInputError: the file is not valid TOML or holds a value memstore refuses.
    """
    path = root / VAULT_CONFIG_NAME
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return VaultConfig()
    except (OSError, UnicodeDecodeError) as err:
        raise InvalidInputError(f"cannot read {path}: {err}; fix or remove the file") from err
    return parse_vault_config(text, where=str(path))


def parse_vault_config(text: str, *, where: str = VAULT_CONFIG_NAME) -> VaultConfig:
    """Parse memstore.toml's text (`where` names it in errors); unknown keys are ignored,
    so a newer memstore's settings do not break an older one.

    Raises:
        InvalidInputError: not TOML, or a team name, URL or review value memstore refuses.
    """
    import tomllib  # only where a config is read: the merge driver and vault scans skip it

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise InvalidInputError(
            f"{where} is not valid TOML ({err}); fix it by hand or restore it with git"
        ) from err
    value = data.get("review", DEFAULT_REVIEW)
    review = next((one for one in REVIEWS if one == value), None)
    if review is None:
        raise InvalidInputError(f'{where}: review is {value!r}; set it to "pull-request" or "none"')
    tables = data.get("teams", {})
    if not isinstance(tables, dict):
        raise InvalidInputError(f'{where}: teams must be tables like [teams.acme] url = "..."')
    teams: dict[str, str] = {}
    for name, table in tables.items():
        url = table.get("url") if isinstance(table, dict) else None
        if not isinstance(url, str) or not url.strip():
            raise InvalidInputError(
                f'{where}: [teams.{name}] needs url = "<git URL>"; add it or remove the table'
            )
        teams[_checked(name, where)] = url.strip()
    return VaultConfig(teams=teams, review=review)


def _checked(name: str, where: str) -> str:
    try:
        return check_team_name(name)
    except InvalidInputError as err:
        raise InvalidInputError(f"{where}: {err}") from None


def format_vault_config(config: VaultConfig) -> str:
    """Render `config` as memstore.toml's text: one fixed layout, teams sorted by name,
    `review` written when it is not the default."""
    lines = [_HEADER]
    if config.review != DEFAULT_REVIEW:
        lines.append(f"review = {_quoted(config.review)}\n")
    for name in sorted(config.teams):
        lines.append(f"\n[teams.{check_team_name(name)}]\nurl = {_quoted(config.teams[name])}\n")
    return "".join(lines)


def _quoted(value: str) -> str:
    """A TOML basic string: backslash, quote and control characters escaped."""
    out = []
    for char in value:
        if char in '"\\':
            out.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def merge_vault_config(
    base: VaultConfig | None, ours: VaultConfig, theirs: VaultConfig
) -> VaultConfig:
    """Merge two versions of memstore.toml key by key (two machines joined other teams).

    A team either side added stays; one a side left (present in base, gone on that side,
    unchanged on the other) goes; a URL or review one side changed takes that side's
    value; both changed differently: the larger value, so the result does not depend on
    which machine merges.
    """
    old = base or VaultConfig()
    teams: dict[str, str] = {}
    for name in sorted({*old.teams, *ours.teams, *theirs.teams}):
        value = _merged(old.teams.get(name), ours.teams.get(name), theirs.teams.get(name))
        if value is not None:
            teams[name] = value
    review = next(
        (one for one in REVIEWS if one == _merged(old.review, ours.review, theirs.review)),
        DEFAULT_REVIEW,
    )
    return VaultConfig(teams=teams, review=review)


def _merged(base: str | None, ours: str | None, theirs: str | None) -> str | None:
    if ours == theirs:
        return ours
    if ours == base:
        return theirs
    if theirs == base:
        return ours
    if ours is None or theirs is None:  # one side left, the other changed the URL: keep it
        return ours if theirs is None else theirs
    return max(ours, theirs)
