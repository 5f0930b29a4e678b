"""`memstore team`: follow a team vault (join), see the ones followed (list), stop (leave).

A team vault is a git repository in memstore's format that a team shares through its git
host; recall reads it beside the personal vault, labelled with its name (docs/team.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated

import typer

from memstore.cli.terminal import progress_bar
from memstore.ops.output import count, printable
from memstore.ops.parameters import (
    JsonOption,
    VaultOption,
    emit_json,
    shell_settings,
    usage_checked,
)
from memstore.service.following import TeamPull, TeamState, join, leave, states
from memstore.service.store import Store

commands = typer.Typer()


@commands.callback(invoke_without_command=True)
def team_default(
    context: typer.Context, vault: VaultOption = None, as_json: JsonOption = False
) -> None:
    """Follow team vaults: recall reads each beside your own, labelled with its name.

    Example:  memstore team join acme git@github.com:acme/memory.git
    """
    if context.invoked_subcommand is None:
        team_list(vault=vault, as_json=as_json)


@commands.command("join")
def team_join(
    name: Annotated[str, typer.Argument(help="The team's name here: its hits read NAME:…")],
    url: Annotated[str, typer.Argument(help="The team vault's git URL (SSH, HTTPS or a path).")],
    vault: VaultOption = None,
    as_json: JsonOption = False,
) -> None:
    """Follow the team vault at URL as NAME: clone it (outside your vault), index it, and
    record it in your vault's memstore.toml, so your other machines follow it at their
    next sync.

    Example:  memstore team join acme git@github.com:acme/memory.git
    """
    from memstore.core.vault_config import check_team_name
    from memstore.vault import remote

    usage_checked(check_team_name, name, "NAME")
    url = remote.absolute_url(url, Path.cwd())  # git would read a relative path elsewhere
    with (
        Store.open(shell_settings(vault), create=True) as store,
        progress_bar("indexing the team vault", quiet=as_json) as progress,
    ):
        team, commit = join(store, name, url, progress)
    if as_json:  # `joined` false: followed already, nothing changed
        emit_json(
            {"name": team.name, "url": team.url, "path": str(team.path), "joined": bool(commit)}
        )
        return
    if not commit:
        typer.echo(f"already following {team.name} ({team.url})")
        return
    typer.echo(printable(f"following {team.name}: {team.url}"))
    typer.echo(printable(f"  cloned at {team.path}; recall reads it, hits labelled {name}:…"))
    typer.echo("Next:  memstore sync   (your other machines follow it too)")


@commands.command("list")
def team_list(vault: VaultOption = None, as_json: JsonOption = False) -> None:
    """List the team vaults you follow: memories, last sync, whether you can push.

    "can push" is what the last share's push found (memstore asks the host only when it
    pushes): yes, no, or unknown before the first share.

    Example:  memstore team list --json
    """
    with Store.open(shell_settings(vault)) as store:
        found = states(store)
    if as_json:
        emit_json([_state_json(state) for state in found])
        return
    if not found:
        typer.echo("no team vaults followed; follow one with: memstore team join NAME URL")
        return
    for line in team_lines(found):
        typer.echo(line)


def team_lines(found: list[TeamState]) -> list[str]:
    """Return what `team list` prints: one line per team, its URL below."""
    lines = []
    for state in found:
        if not state.cloned:
            held = "not cloned here yet (memstore sync clones it)"
        else:
            held = count(max(state.memories, 0), "memory", "memories")
        when = state.last_sync.replace("T", " ").removesuffix("Z")
        synced = f"{when} UTC" if when else "never"
        lines.append(f"{state.name}  team · {held} · synced {synced} · can push: {state.can_push}")
        lines.append(f"    {state.url}")
        if state.last_error:
            lines.append(f"    last sync failed: {state.last_error}")
    return [printable(line) for line in lines]


def _state_json(state: TeamState) -> dict[str, object]:
    return {
        "name": state.name,
        "tier": "team",
        "url": state.url,
        "path": str(state.path),
        "cloned": state.cloned,
        "memories": state.memories if state.cloned else None,
        "last_sync": state.last_sync or None,
        "last_error": state.last_error or None,
        "can_push": state.can_push,
    }


@commands.command("leave")
def team_leave(
    name: Annotated[str, typer.Argument(help="The team's name, as `team list` shows it.")],
    vault: VaultOption = None,
    as_json: JsonOption = False,
) -> None:
    """Stop following a team vault: its entry leaves memstore.toml (one commit), and its
    clone is removed unless it holds work not pushed.

    Example:  memstore team leave acme
    """
    with Store.open(shell_settings(vault)) as store:
        left = leave(store, name)
    if as_json:
        path = str(left.team.path)
        emit_json(
            {
                "name": left.team.name,
                "removed_clone": left.removed_clone,
                "clone": path,
                "unpushed": left.unpushed,
            }
        )
        return
    typer.echo(f"left {left.team.name}")
    if left.removed_clone:
        typer.echo(printable(f"  removed its clone at {left.team.path}"))
    elif left.unpushed:
        shown = "; ".join(left.unpushed[:3]) + (" …" if len(left.unpushed) > 3 else "")
        typer.echo(
            printable(
                f"  kept its clone at {left.team.path}: it holds "
                f"{count(len(left.unpushed), 'change')} not pushed ({shown}); push or copy "
                "them, then remove the folder"
            )
        )


def pull_lines(pulls: list[TeamPull], marked: Mapping[str, list[str]] | None = None) -> list[str]:
    """Return what `memstore sync` prints for the team tiers: one line each, then the
    personal memories marked shared with a team (`marked`: team -> ids)."""
    said = {
        "cloned": "cloned (followed from another machine)",
        "up to date": "nothing new",
        "fast-forward": "pulled",
        "merged": "pulled and merged",
    }
    lines = []
    for pull in pulls:
        if pull.result == "left":
            done = pull.error or "removed its clone"
            lines.append(f"team {pull.name}: left on another machine (memstore.toml); {done}")
            continue
        if pull.error:
            lines.append(f"team {pull.name}: not synced: {pull.error}")
            continue
        # the memories this pull added or changed, not how many the team holds
        news = f": {count(pull.indexed, 'memory', 'memories')} new or changed" * bool(pull.indexed)
        lines.append(f"team {pull.name}: {said.get(pull.result, pull.result)}{news}")
    for team, ids in (marked or {}).items():
        lines.append(f"marked {count(len(ids), 'memory', 'memories')} shared with {team}")
    return [printable(line) for line in lines]
