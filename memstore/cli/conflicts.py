"""The `memstore conflicts` commands: list memories sync kept in two versions, settle one.

A thin typer shell over memstore.service.resolution.
"""

from __future__ import annotations

import sys
from dataclasses import asdict
from typing import Annotated

import typer

from memstore.core.conflicts import KEEP_CHOICES, label
from memstore.ops.lean import unknown_workspace
from memstore.ops.output import printable, render_json
from memstore.ops.parameters import JsonOption, VaultOption, shell_settings, workspace_filter
from memstore.service.editing import choose_editor, run_editor
from memstore.service.resolution import Conflict, find_conflicts, settle, settle_by_editing
from memstore.service.store import Store

PREVIEW_LINES = 3
HELP = """List memories that sync kept in two versions (edited differently on two machines).

Each is shown with its versions, numbered as in the file. "mine" is this machine's version
and "theirs" the other machine's, told apart from the merge commit that kept both; settle
one with 'memstore conflicts resolve ID'.

Example:  memstore conflicts
"""

commands = typer.Typer(help=HELP, invoke_without_command=True)


@commands.callback(invoke_without_command=True)
def conflicts(
    ctx: typer.Context,
    workspace: Annotated[
        str | None,
        typer.Option("-w", "--workspace", help="Only this workspace.", callback=workspace_filter),
    ] = None,
    vault: VaultOption = None,
    as_json: JsonOption = False,
) -> None:
    if ctx.invoked_subcommand:
        return
    with Store.open(shell_settings(vault)) as store:
        found = find_conflicts(store, workspace)
        # a typo should not pass for "no memory holds two versions" (docs/cli.md)
        typer.echo(unknown_workspace(store, workspace, "found nothing"), err=True, nl=False)
    if as_json:
        typer.echo(render_json([_conflict_json(c) for c in found]))
        return
    if not found:
        typer.echo("no memory holds two versions")
        return
    for conflict in found:
        for line in _conflict_lines(conflict):
            typer.echo(printable(line))
    typer.echo("settle one: memstore conflicts resolve ID --keep mine|theirs|both (or --edit)")


def _keep_choice(keep: str | None) -> str | None:
    """Refuse a --keep that is none of the choices as a usage error, before the vault opens
    (a version number past the memory's versions is the memory's to say)."""
    if keep is None or keep in KEEP_CHOICES or (keep.isdigit() and int(keep) >= 1):
        return keep
    raise typer.BadParameter(
        f"{keep!r} is not a choice; use mine, theirs, both or a version number "
        "(as 'memstore conflicts' shows them)"
    )


@commands.command("resolve")
def resolve(
    memory_id: Annotated[
        str, typer.Argument(metavar="ID", help="A memory id or a unique prefix of one.")
    ],
    keep: Annotated[
        str | None,
        typer.Option(
            "--keep",
            metavar="mine|theirs|both|N",
            help="mine: this machine's version; theirs: the other machine's; both: the "
            "texts one after another, as one memory; N: version N as listed.",
            show_default=False,
            callback=_keep_choice,
        ),
    ] = None,
    edit: Annotated[
        bool, typer.Option("--edit", help="Settle the text in $VISUAL or $EDITOR instead.")
    ] = False,
    vault: VaultOption = None,
    as_json: JsonOption = False,
) -> None:
    """Settle a memory sync kept in two versions: one `resolve(…)` commit, markers gone.

    "mine" is the version this machine had and "theirs" the other machine's, read from the
    merge commit that kept both (version numbers in the file follow the texts' order, not
    the machines). --edit opens the file in your editor; a save that still holds the marker
    lines or a broken front matter is refused and nothing is written.

    Example:  memstore conflicts resolve k3xq --keep mine
    """
    if (keep is None) == (not edit):
        raise typer.BadParameter(
            "say how to settle it: --keep mine, --keep theirs, --keep both, or --edit"
        )
    settings = shell_settings(vault)
    if keep is not None:
        with Store.open(settings) as store:
            done = settle(store, memory_id, keep)
    else:
        command, origin = choose_editor(
            settings.env.get("VISUAL", ""),
            settings.env.get("EDITOR", ""),
            terminal=sys.stdin.isatty() and sys.stdout.isatty(),
        )
        edited = settle_by_editing(
            lambda: Store.open(settings),
            memory_id,
            lambda copy: run_editor(command, origin, copy),
            _reopen,
        )
        if edited is None:
            if as_json:
                typer.echo(render_json({"id": memory_id, "resolved": False}))
            else:
                typer.echo(printable(f"{memory_id}: no change; it still holds two versions"))
            return
        done = edited
    if as_json:
        typer.echo(render_json({**asdict(done), "resolved": True}))
        return
    typer.echo(
        printable(f"resolved {done.id} (kept {done.kept}) in {done.commit[:8]}: {done.path}")
    )


def _conflict_lines(conflict: Conflict) -> list[str]:
    lines = [
        f"{conflict.id}  {conflict.workspace}  {conflict.path}  {label(len(conflict.versions))}"
    ]
    for number, text in enumerate(conflict.versions, 1):
        whose = _whose(conflict, number)
        preview = text.splitlines()[:PREVIEW_LINES]
        lines.append(f"  version {number}{f' ({whose})' if whose else ''}:")
        lines.extend(f"    {line}" for line in preview)
    return lines


def _whose(conflict: Conflict, number: int) -> str:
    if not conflict.mine:
        return ""
    return "mine" if number == conflict.mine else "theirs"


def _conflict_json(conflict: Conflict) -> dict[str, object]:
    data = asdict(conflict)
    data["versions"] = [
        {"number": n, "text": text, "whose": _whose(conflict, n) or None}
        for n, text in enumerate(conflict.versions, 1)
    ]
    data["mine"] = conflict.mine or None
    return data


def _reopen(problem: str) -> bool:
    """Name what is wrong and ask whether to open the editor again (only on a terminal;
    without one nothing is saved and the error names the problem)."""
    if not sys.stdin.isatty():
        return False
    typer.echo(printable(f"Error: {problem}"), err=True)
    return typer.confirm("re-open?", default=True, err=True)
