"""`memstore init`, `reindex` and `doctor`: make a vault, rebuild its index, check it."""

from __future__ import annotations

import contextlib
import os
import shlex
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer

from memstore.cli.terminal import progress_bar
from memstore.ops.output import (
    POINTER_SNIPPET,
    count,
    doctor_lines,
    kept_copy_lines,
    printable,
    set_aside_lines,
)
from memstore.ops.parameters import (
    JsonOption,
    QuietOption,
    VaultOption,
    emit_json,
    same_folder,
    shell_settings,
)
from memstore.service.store import Store, init_vault

commands = typer.Typer()


@commands.command()
def init(
    path: Annotated[
        Path | None,
        typer.Argument(help="Folder for the vault (default: ~/memstore).", show_default=False),
    ] = None,
    vault: VaultOption = None,
    adopt_any: Annotated[
        bool,
        typer.Option(
            "--adopt-any",
            help="Make the repository a vault even though it holds files that are not memories"
            " (memstore commits every file in its vault).",
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Create a vault (a git repository of memories), or adopt an empty repository or a
    clone of a vault.

    Example:  memstore init ~/memstore
    """
    if path is not None and vault is not None and not same_folder(path, vault):
        raise typer.BadParameter(
            f"names {vault}, but PATH names {path}; give the folder once", param_hint="'--vault'"
        )
    settings = shell_settings(path or vault)
    result = init_vault(settings.vault, settings, adopt_any=adopt_any)
    if as_json:
        adopted = result.commit or result.checked_out or result.registered_merge_driver
        state = "created" if result.created_repository else "adopted" if adopted else "ready"
        emit_json({**asdict(result), "path": str(result.path), "state": state})
        return
    if result.created_repository:
        typer.echo(f"Created vault at {result.path}")
    elif result.commit or result.checked_out or result.registered_merge_driver:
        typer.echo(f"Adopted vault at {result.path}")
    else:
        typer.echo(f"Vault at {result.path} is already set up")
    if result.checked_out:
        typer.echo(f"  checked out {result.checked_out} (the clone had checked out nothing)")
    if result.changed_files:
        typer.echo(f"  wrote {', '.join(result.changed_files)} and committed them")
    identity = [change for change in result.plain_git if change.startswith("user.")]
    if identity:
        typer.echo(f"  git identity for merges in this vault: {', '.join(identity)}")
    if os.path.realpath(shell_settings(None).vault) != os.path.realpath(result.path):
        # Other commands would use (and create) ~/memstore or $MEMSTORE_VAULT instead.
        typer.echo(
            f"Next:  export MEMSTORE_VAULT={shlex.quote(str(result.path))}"
            "   (other commands use it then; or pass --vault to each)"
        )
        typer.echo('       memstore add "what to remember" -K keyword')
    else:
        typer.echo('Next:  memstore add "what to remember" -K keyword')
    typer.echo("\nPaste this into CLAUDE.md or AGENTS.md so your agent uses it:\n")
    typer.echo(POINTER_SNIPPET)


@commands.command()
def reindex(
    vault: VaultOption = None, as_json: JsonOption = False, quiet: QuietOption = False
) -> None:
    """Rebuild the index from the files (the index is a cache; nothing is lost).

    Example:  memstore reindex
    """
    quiet_bars = quiet or as_json
    with Store.open(shell_settings(vault)) as store, contextlib.ExitStack() as bars:
        step = bars.enter_context(progress_bar("indexing", quiet=quiet_bars))
        embed_step: Callable[[int, int], None] | None = None

        def embedding(done: int, total: int) -> None:
            nonlocal embed_step
            if embed_step is None:  # indexing is over: its bar ends before this one starts
                bars.close()
                embed_step = bars.enter_context(progress_bar("embedding", quiet=quiet_bars))
            embed_step(done, total)

        result = store.reindex(step, embedding)
    if as_json:
        emit_json(
            {"indexed": len(result.updated), "problems": [asdict(p) for p in result.problems]}
        )
        return
    if not quiet:
        typer.echo(f"indexed {count(len(result.updated), 'memory', 'memories')}")
    for problem in result.problems:
        typer.echo(printable(f"  problem: {problem.path}: {problem.reason}"))


@commands.command()
def doctor(
    fix: Annotated[
        bool, typer.Option("--fix", help="Repair drift by reconciling the index with the files.")
    ] = False,
    vault: VaultOption = None,
    as_json: JsonOption = False,
) -> None:
    """Check that the index matches the files, and list files memstore cannot read.

    Also lists the copies of damaged indexes kept aside (size, age): memstore removes each
    once 7 days old, 'memstore gc' at once; and what memstore moved out of its way to
    .git/memstore-damaged/, which 'memstore gc' removes. Exit status 1 when drift remains or
    a file cannot be read (fix it in an editor: --fix never rewrites a file).
    Example:  memstore doctor --fix
    """
    from memstore.service.secret_names import find_named_secrets, rename_named_secrets
    from memstore.vault.edits import held_large_files, large_file_message

    with Store.open(shell_settings(vault)) as store:
        found, after = store.doctor(fix=fix)
        named = find_named_secrets(store)
        large = held_large_files(store.vault, store.git)  # never committed: too large
        renamed = rename_named_secrets(store, named) if fix else ""
        copies = store.maintenance.kept_copies()
        moved = store.maintenance.set_aside()
    remaining = after if after is not None else found
    if as_json:
        emit_json(
            {
                "drift": asdict(found),
                "clean": found.is_clean,
                "after_fix": asdict(after) if after else None,
                "named_secrets": [asdict(n) for n in named],
                "renamed": renamed or None,
                "kept_copies": [
                    {"path": str(c.path), "bytes": c.size, "age_s": round(c.age_s)}
                    | {"outdated": c.outdated}
                    for c in copies
                ],
                "set_aside": [
                    {"path": str(m.path), "bytes": m.size, "age_s": round(m.age_s)} for m in moved
                ],
                "large_files": [{"path": p, "bytes": size} for p, size in large.items()],
            }
        )
    else:
        typer.echo("\n".join(doctor_lines(found, after)))
        for line in kept_copy_lines(copies, store.vault.root):
            typer.echo(line)
        for line in set_aside_lines(moved, store.vault.root):
            typer.echo(line)
        for path, size in large.items():
            typer.echo(large_file_message(path, size))
        for n in named:  # by id: the file's name is what leaks
            typer.echo(
                f"memory {n.id}: its file name holds what looks like {n.kind}"
                + (" (renamed)" if renamed else "; 'memstore doctor --fix' renames it")
            )
        if named:
            typer.echo(
                "  the old names stay in git history and on any remote they reached: rotate "
                "the credential; 'memstore forget ID --purge' drops a memory from history"
            )
    if not remaining.is_clean or remaining.problems or (named and not renamed):
        raise typer.Exit(1)
