"""`memstore log` and `memstore revert`: who wrote what, and undoing one agent session.

A thin typer shell over memstore.service.history.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated

import typer

from memstore.cli.terminal import ask, now, say
from memstore.core.errors import InvalidInputError, NotFoundError
from memstore.ops.output import count
from memstore.ops.parameters import JsonOption, VaultOption, emit_json, shell_settings
from memstore.service.history import History, no_session, parse_since
from memstore.service.store import Store

commands = typer.Typer()


@commands.command()
def log(
    memory_id: Annotated[
        str | None, typer.Argument(metavar="ID", help="Only commits touching this memory.")
    ] = None,
    source: Annotated[
        str | None, typer.Option("--source", help="Only commits by this agent or person.")
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since", help="Only commits since a date or age (2026-11-01, 7d, 12h, 30m)."
        ),
    ] = None,
    limit: Annotated[int, typer.Option("-n", help="At most this many (0: all).", min=0)] = 50,
    vault: VaultOption = None,
    as_json: JsonOption = False,
) -> None:
    """Who wrote what and when, from the commits' Memstore-* trailers.

    Each line ends with the commit's session, which `memstore revert --session` takes.

    Example:  memstore log --source claude-code --since 7d
    """
    try:  # a usage error (exit 2), as view's --since, before the vault is opened
        cutoff = parse_since(since, now()) if since else None
    except InvalidInputError as err:
        raise typer.BadParameter(str(err)) from err
    with Store.open(shell_settings(vault)) as store:
        changes = History(store).log(memory_id, source=source, since=cutoff)[: limit or None]
    if as_json:
        emit_json([asdict(c) for c in changes])
        return
    if not changes:
        say("no commit matches" if memory_id or source or since else "no commits yet")
    for change in changes:
        who = change.source or "git"
        session = f"  (session {change.session})" if change.session else ""
        say(f"{change.commit[:8]} {change.time} {who:12} {change.summary}{session}")


@commands.command()
def revert(
    session: Annotated[
        str, typer.Option("--session", help="The Memstore-Session of the changes to undo.")
    ],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="List the session's commits; change nothing.")
    ] = False,
    vault: VaultOption = None,
    as_json: JsonOption = False,
) -> None:
    """Undo every change one agent session made, in one commit (e.g. after a prompt injection).

    Example:  memstore revert --session 4f1c2a9e --dry-run
    """
    with Store.open(shell_settings(vault)) as store:
        history = History(store)
        changes = [c for c in history.log() if c.session == session]
        if not changes:
            raise NotFoundError(no_session(session))
        for change in changes:  # --json: beside the question, so stdout holds the JSON alone
            say(f"{change.commit[:8]} {change.summary}", err=as_json)
        done = {"session": session, "dry_run": dry_run, "commits": [c.commit for c in changes]}
        if dry_run:
            if as_json:
                emit_json({**done, "commit": None, "reverted": [], "kept": []})
            else:
                say(f"would undo {count(len(changes), 'commit')}")
            return
        ask(f"Undo these {count(len(changes), 'commit')}?", yes, err=as_json)
        made, changed, kept = history.revert_session(session)
    if as_json:
        emit_json({**done, "commit": made or None, "reverted": changed, "kept": kept})
        return
    say(f"reverted {count(len(changed), 'file')} in {made[:8]}" if made else "nothing left to undo")
    for path in kept:
        say(f"  kept (edited by others since): {path}")
