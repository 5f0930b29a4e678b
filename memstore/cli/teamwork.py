"""`memstore share`, `review` and `check`: proposing memories to a team vault, reading a proposal, CI.

A thin shell over service/proposals.py, proposal_review.py and vault_check.py; the
text is made in ops/proposals.py. docs/team.md tells the whole story.
"""

from __future__ import annotations

import dataclasses
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer

from memstore.core.config import Settings
from memstore.core.errors import InvalidInputError, NotFoundError, SyncError
from memstore.ops.output import count
from memstore.ops.parameters import (
    JsonOption,
    VaultOption,
    WorkspaceOption,
    emit_json,
    shell_settings,
)
from memstore.ops.proposals import (
    CHECK_FORMATS,
    check_lines,
    review_markdown,
    share_json,
    share_lines,
)
from memstore.service.proposal_review import review_branch, review_proposal
from memstore.service.proposals import (
    check_shareable,
    plan_proposal,
    push_proposal,
    refresh_team,
)
from memstore.service.shared_marks import note_proposed
from memstore.service.store import Store, require_vault
from memstore.service.teams import Team, find_team, followed
from memstore.service.vault_check import check_vault

commands = typer.Typer()

TeamOption = Annotated[
    str, typer.Option("--team", "-t", help="The team vault (as `memstore team list` names it).")
]


def _open_team(settings: Settings, team: Team) -> Store:
    """Open the clone of a followed team vault; one not cloned yet is cloned by a sync."""
    if not (team.path / ".git").exists():
        raise NotFoundError(
            f"team {team.name} is not cloned on this machine yet; run 'memstore sync' "
            "(it clones every team vault you follow)"
        )
    return Store.open(dataclasses.replace(settings, vault=team.path, may_create_vault=False))


@commands.command()
def share(
    ids: Annotated[list[str], typer.Argument(metavar="ID...", help="Memory ids (or prefixes).")],
    team: TeamOption,
    workspace: WorkspaceOption = None,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Print what the proposal adds, as markdown; push nothing."),
    ] = False,
    vault: VaultOption = None,
    as_json: JsonOption = False,
) -> None:
    """Propose memories to a team vault: a branch on its host, reviewed as a pull request.

    The memories are scanned for credentials first (one holding any never leaves this
    machine). Their files go, same ids, on a branch memstore/USER/ID of the team's
    repository, pushed; the pull request's URL is printed. A team whose memstore.toml
    says review = "none" gets them on its main branch directly. -w puts them in another
    workspace of the team vault.

    Example:  memstore share k3xq9v2m --team acme
    """
    settings = shell_settings(vault)
    require_vault(settings)  # a typo in --vault is named as such, not as a team not followed
    chosen = find_team(settings, team)
    with Store.open(settings) as personal, _open_team(settings, chosen) as clone:
        if dry_run:
            check_shareable(personal, ids)  # a credential first, as a share does
            try:
                refresh_team(clone)
            except SyncError as err:  # a dry run reads the clone as it is
                typer.echo(f"note: {err}; reading team {team} as last synced", err=True)
            review = review_proposal(clone, plan_proposal(personal, clone, team, ids, workspace))
            if as_json:
                emit_json(asdict(review))
            else:
                typer.echo(review_markdown(review), nl=False)
            return
        shared = push_proposal(personal, clone, team, ids, workspace)
        if shared.commit:
            note_proposed(personal, team, shared.proposal)
    if as_json:
        emit_json(share_json(shared))
        return
    typer.echo("\n".join(share_lines(shared, team)))


@commands.command()
def review(
    branch: Annotated[str, typer.Argument(metavar="BRANCH", help="The proposal's branch.")],
    team: Annotated[
        str,
        typer.Option("--team", "-t", help="The team vault (default: the one you follow)."),
    ] = "",
    vault: VaultOption = None,
    as_json: JsonOption = False,
) -> None:
    """Read a proposal pushed to a team vault: duplicates, contradictions, secrets.

    Fetches BRANCH from the team's remote and prints, as markdown a reviewer can paste
    as a comment, what it adds against the team's main.

    Example:  memstore review memstore/alice/k3xq9v2m --team acme
    """
    settings = shell_settings(vault)
    require_vault(settings)  # a typo in --vault is named as such, not as a team not followed
    chosen = find_team(settings, team) if team else _only_team(settings)
    with _open_team(settings, chosen) as clone:
        found = review_branch(clone, chosen.name, branch)
    if as_json:
        emit_json(asdict(found))
        return
    typer.echo(review_markdown(found), nl=False)


def _only_team(settings: Settings) -> Team:
    teams = followed(settings)
    if len(teams) == 1:
        return teams[0]
    if not teams:
        raise NotFoundError("you follow no team vault; run 'memstore team join NAME URL' first")
    names = ", ".join(t.name for t in teams)
    raise InvalidInputError(f"you follow several team vaults ({names}); name one with --team")


@commands.command()
def check(
    path: Annotated[
        Path, typer.Argument(metavar="PATH", help="The vault checkout (default: here).")
    ] = Path("."),
    fmt: Annotated[
        str,
        typer.Option(
            "--format", help=f"Output: {' or '.join(CHECK_FORMATS)} (workflow annotations)."
        ),
    ] = "text",
    as_json: JsonOption = False,
) -> None:
    """Check a vault checkout for CI: files parse, ids unique, no conflicts, no secrets.

    Needs no index and writes nothing. Prints `file:line: message` for each problem (with
    --format github, workflow annotations) and exits 1 when there is any.

    Example:  memstore check . --format github
    """
    chosen = next((f for f in CHECK_FORMATS if f == fmt), None)
    if chosen is None:
        raise typer.BadParameter(f"use {' or '.join(CHECK_FORMATS)}", param_hint="--format")
    checked = check_vault(path.resolve())
    if as_json:  # the findings are the report: printed, and exit 1 while there are any
        emit_json(asdict(checked))
        raise typer.Exit(1 if checked.findings else 0)
    lines = check_lines(checked.findings, chosen)
    if lines:
        typer.echo("\n".join(lines))
        raise typer.Exit(1)
    typer.echo(f"checked {count(checked.files, 'memory file')}: no problems", err=True)
