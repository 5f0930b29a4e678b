"""`memstore sync` and `memstore remote`: the git remote a vault shares, and syncing with it.

Also the hidden `merge-file`, the git merge driver `memstore init` registers.
"""

from __future__ import annotations

import sys
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer

from memstore.catalog.indexer import CatchUp, Progress
from memstore.cli.teams import pull_lines
from memstore.cli.terminal import progress_bar
from memstore.core.errors import InvalidInputError, MemstoreError, NotFoundError
from memstore.ops.output import count, sync_lines
from memstore.ops.parameters import JsonOption, QuietOption, VaultOption, emit_json, shell_settings
from memstore.service.following import TeamPull, pull_teams
from memstore.service.shared_marks import mark_shared
from memstore.service.store import Store
from memstore.service.sync import SyncOptions, SyncOutcome
from memstore.service.teams import followed
from memstore.service.tiers import tier_stores

commands = typer.Typer()
remote = typer.Typer()  # its help is remote_default's docstring


@commands.command()
def sync(
    name: Annotated[
        str,
        typer.Option(
            "--remote",
            help="Remote name (default: the one the branch tracks, as `remote add` sets it, "
            "else origin).",
            show_default=False,
        ),
    ] = "",
    vault: VaultOption = None,
    as_json: JsonOption = False,
    quiet: QuietOption = False,
    allow_unrelated: Annotated[
        bool,
        typer.Option(
            "--allow-unrelated",
            help="Merge a remote history that shares no commit with this vault's.",
        ),
    ] = False,
    force_purged: Annotated[
        bool,
        typer.Option(
            "--force-purged",
            help="Finish a 'forget --purge': force-push the rewritten history (asks first).",
        ),
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
) -> None:
    """Commit edits and usage counters, pull, merge with memstore's rules, push.

    Counters add up exactly, keyword sets unite, and no text is lost: edits that cannot be
    merged keep both texts, marked, with `conflict: true`: `memstore conflicts` lists them and
    `memstore conflicts resolve ID` settles one (exit status 3 when this sync kept some).

    Example:  memstore sync
    """
    options = SyncOptions(allow_unrelated=allow_unrelated, force_purged=force_purged)
    with (
        Store.open(shell_settings(vault)) as store,
        progress_bar("indexing what sync brought", quiet=quiet or as_json) as progress,
    ):
        if force_purged:
            _confirm_force_purged(store, name or store.remote_name(), yes)
        outcome, flushed, caught_up, pulls = _sync_tiers(
            store, name, progress, options, quiet or as_json
        )
        # the personal copies of memories a team tier now holds (docs/team.md)
        marked = mark_shared(store, tier_stores(store)) if pulls else {}
        # only those this sync committed: one that came from the remote, or was committed
        # by an earlier sync, is not news (doctor lists them all)
        edited = set(outcome.edited)
        unreadable = sorted(p.path for p in store.indexer.problems() if p.path in edited)
    if as_json:
        emit_json(
            {
                **asdict(outcome),
                "usage_flushed": flushed,
                "indexed": len(caught_up.updated),
                "removed": len(caught_up.removed),
                "teams": [asdict(pull) for pull in pulls],
                "shared_marked": marked,
            }
        )
        _exit_if_conflicted(outcome)
        return
    lines = (
        ["your vault has no remote: only team vaults synced (memstore remote add URL syncs it)"]
        if outcome.merge == "no remote"
        else sync_lines(outcome, flushed, caught_up)
    ) + pull_lines(pulls, marked)
    if quiet:  # only what needs a person: the memories whose versions were kept
        lines = [line for line in lines if line.startswith(" ")]
    if lines:
        typer.echo("\n".join(lines))
    if unreadable and not quiet:
        _say_unreadable(unreadable)
    _exit_if_conflicted(outcome)


def _say_unreadable(unreadable: list[str]) -> None:
    """Name the files this sync committed that memstore cannot read (doctor says why)."""
    shown = ", ".join(unreadable[:5]) + (" …" if len(unreadable) > 5 else "")
    typer.echo(
        f"note: the vault holds {count(len(unreadable), 'file')} memstore cannot read "
        f"({shown}); they were committed like any edit. memstore doctor says why."
    )


CONFLICTED = 3  # done, but a memory holds two versions: a person settles it (docs/cli.md)


def _exit_if_conflicted(outcome: SyncOutcome) -> None:
    """Exit 3 when this sync kept both versions of a memory (made or pulled the merge): the
    sync is complete, so a script need not run it again, but a person must settle them."""
    if outcome.conflicts:
        raise typer.Exit(CONFLICTED)


def _sync_tiers(
    store: Store, name: str, progress: Progress | None, options: SyncOptions, quiet: bool
) -> tuple[SyncOutcome, int, CatchUp, list[TeamPull]]:
    """Sync the vault, then pull each team tier (one line each, never failing the vault's
    sync); a vault with no remote of its own that follows teams pulls only those."""
    was_followed = followed(store.settings)  # a team left on another machine: sync says so
    if was_followed and not store.remote_url(name or store.remote_name()):
        outcome, flushed, caught_up = SyncOutcome(merge="no remote"), 0, CatchUp()
    else:
        try:
            outcome, flushed, caught_up = store.sync(name, progress, options)
        except MemstoreError:
            lines = pull_lines(pull_teams(store, progress))
            if lines and not quiet:
                typer.echo("\n".join(lines))
            raise
    return outcome, flushed, caught_up, pull_teams(store, progress, was_followed)


def _confirm_force_purged(store: Store, name: str, yes: bool) -> None:
    """Ask before `sync --force-purged` rewrites the remote; without a terminal, --yes."""
    from memstore.vault.purges import pending_purges

    pending = pending_purges(store.vault)
    if not pending:
        raise InvalidInputError(
            "there is no purge to finish: 'memstore forget ID --purge' records one; "
            "run 'memstore sync' without --force-purged"
        )
    ids = ", ".join(sorted({p.id for p in pending}))
    if yes:
        return
    if not sys.stdin.isatty():
        raise InvalidInputError(
            "sync --force-purged rewrites the remote's history and there is no terminal to "
            "ask; rerun with --yes"
        )
    typer.confirm(
        f"Rewrite remote {name!r} without purged memory {ids}? Commits other machines "
        "pushed since are kept, without it.",
        abort=True,
    )


@commands.command("merge-file", hidden=True)
def merge_file_command(
    base: Path, ours: Path, theirs: Path, path: Annotated[str, typer.Argument()] = ""
) -> None:
    """git merge driver: merge %O %A %B into %A with memstore's rules (%P names the file).

    Registered by memstore init as merge.memstore.driver. Example:
    memstore merge-file base.md ours.md theirs.md global/x.md
    """
    from memstore.cli.merge_driver import merge_files

    merge_files(base, ours, theirs, path)


@remote.callback(invoke_without_command=True)
def remote_default(
    context: typer.Context, vault: VaultOption = None, as_json: JsonOption = False
) -> None:
    """Show, set or remove the git remote the vault syncs with (alone: each remote and its URL).

    Example:  memstore remote add git@github.com:me/memories.git
    """
    if context.invoked_subcommand is not None:
        return
    from memstore.vault import remote

    with Store.open(shell_settings(vault)) as store:
        urls = remote.remote_urls(store.vault.root, store.settings.env)
    if as_json:  # none is an answer here, not a failure: {}
        emit_json(urls)
        return
    if not urls:  # as with --json (and `git remote`): exit 0, the note on stderr
        typer.echo("no remote; add one with: memstore remote add URL", err=True)
        return
    for remote_name, url in urls.items():
        typer.echo(f"{remote_name}\t{url}")


@remote.command("add")
def remote_add(
    words: Annotated[
        list[str],
        typer.Argument(
            help="URL (any URL git push accepts: SSH, HTTPS or a path), or NAME URL as git takes them.",
            metavar="[NAME] URL",
            show_default=False,
        ),
    ],
    name: Annotated[str, typer.Option("--name", help="Remote name.")] = "origin",
    vault: VaultOption = None,
    as_json: JsonOption = False,
) -> None:
    """Set the remote to sync with (added, or changed if it exists), and set up a plain
    `git pull` / `git push` in the vault.

    Example:  memstore remote add git@github.com:you/memory.git
    """
    if len(words) == 2 and name != "origin":
        raise typer.BadParameter("give the name once: NAME URL, or URL --name NAME")
    if len(words) == 2:
        name, url = words  # git's own order: git remote add origin URL
    elif len(words) == 1:
        url = words[0]
    else:
        raise typer.BadParameter(
            f"expected URL or NAME URL, got {len(words)} words; quote a URL with spaces",
            param_hint="URL",
        )
    from memstore.vault import remote

    url = remote.absolute_url(url, Path.cwd())  # git would read a relative path from the vault
    with Store.open(shell_settings(vault)) as store:
        changed = store.set_remote(url, name)
        tracked = store.remote_name()
    if as_json:  # `synced_with`: the remote `memstore sync` uses, the one the branch tracks
        emit_json({"name": name, "url": url, "git_config": changed, "synced_with": tracked})
        return
    typer.echo(f"remote {name} = {url}")
    if changed:
        typer.echo(f"  git pull and git push work here too: {', '.join(changed)}")
    if tracked != name:  # the branch tracked another remote already: sync keeps to it
        typer.echo(f"  memstore sync uses {tracked} (the branch tracks it); for this one:")
        typer.echo(f"Next:  memstore sync --remote {name}")
        return
    typer.echo("Next:  memstore sync")


@remote.command("remove")
def remote_remove(
    name: Annotated[str, typer.Argument(help="The remote to remove.", metavar="NAME")],
    vault: VaultOption = None,
    as_json: JsonOption = False,
) -> None:
    """Remove a remote: its URL, its remote-tracking branches and the branch's tracking of it
    (git's `remote remove`). The remote itself is not touched.

    Example:  memstore remote remove backup
    """
    from memstore.service.maintenance import remove_remote
    from memstore.vault import remote

    with Store.open(shell_settings(vault)) as store:
        was_synced = store.remote_name() == name
        url = remove_remote(store, name)
        now = store.remote_name()  # the branch's tracking of `name` went with it
        left = remote.remote_urls(store.vault.root, store.settings.env)
    synced_with = now if now in left else None
    if as_json:  # `synced_with`: the remote `memstore sync` uses now (null: none)
        emit_json({"name": name, "url": url, "synced_with": synced_with})
        return
    typer.echo(f"removed remote {name} ({url})")
    if not was_synced:
        return
    if synced_with:
        typer.echo(f"  memstore sync uses {synced_with} now")
    elif left:
        other = next(iter(left))
        typer.echo(f"  memstore sync has no remote now; for {other}:")
        typer.echo(f"Next:  memstore sync --remote {other}")
    else:
        typer.echo("  memstore sync has no remote now; add one with: memstore remote add URL")


@remote.command("show")
def remote_show(
    name: Annotated[
        str,
        typer.Option(
            "--name",
            help="Remote name (default: the one the branch tracks, else origin).",
            show_default=False,
        ),
    ] = "",
    vault: VaultOption = None,
    as_json: JsonOption = False,
) -> None:
    """Print the remote's URL (exit 1 when there is none).

    Example:  memstore remote show
    """
    with Store.open(shell_settings(vault)) as store:
        name = name or store.remote_name()
        url = store.remote_url(name)
    if not url:
        raise NotFoundError(f"no remote {name!r}; add one with: memstore remote add URL")
    if as_json:
        emit_json({"name": name, "url": url})
        return
    typer.echo(url)
