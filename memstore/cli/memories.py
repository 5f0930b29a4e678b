"""`memstore add`, `search` and `show`: remember, find, and read one memory.

add and search usually run without typer (memstore/ops/lean.py); these are the same
commands for --help, completion, errors, and every option the lean path defers.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import asdict
from typing import Annotated, Any, cast

import typer

from memstore.cli.terminal import working_folder
from memstore.core.model import ADDABLE_KINDS, ALL, check_new_text, check_workspace
from memstore.ops import options
from memstore.ops.cli_help import choices
from memstore.ops.lean import (
    add_workspace,
    cites_here,
    detected_workspace,
    look_archived,
    look_elsewhere,
    made_vault_line,
    other_vault_note,
    print_add,
    print_search,
    read_stdin,
    unknown_workspace,
    words_last,
)
from memstore.ops.output import printable
from memstore.ops.parameters import (
    IdArgument,
    JsonOption,
    VaultOption,
    WorkspaceOption,
    date_option,
    emit_json,
    kind_option,
    option,
    shell_settings,
    usage_checked,
)
from memstore.service.store import Store

commands = typer.Typer()


class FreeTextCommand(typer.core.TyperCommand):
    """A command whose words are its text: unquoted words join, and a word that starts with
    a dash but is no option ('--- a note', '-5 °C') is text, as on the lean path."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if ctx.resilient_parsing:  # shell completion: parse as typer does
            return cast(list[str], super().parse_args(ctx, args))
        flags: set[str] = set()
        values: set[str] = set()
        for param in self.get_params(ctx):
            if getattr(param, "param_type_name", "") == "option":
                takes_value = not (param.is_flag or param.count)  # type: ignore[attr-defined]
                (values if takes_value else flags).update(param.opts + param.secondary_opts)
        ordered, unknown = words_last(args, flags, values)
        if unknown:
            text = " ".join(ordered[ordered.index("--") + 1 :])
            ctx.fail(_no_such_option(unknown[0], sorted(flags | values), ctx.info_name, text))
        return cast(list[str], super().parse_args(ctx, ordered))


def _no_such_option(option: str, known: list[str], command: str, text: str) -> str:
    """Say that `option` is unknown: a close option's name, else how to pass it as text."""
    import difflib

    close = options.meant(option, known) or next(
        iter(difflib.get_close_matches(option, known, 1)), ""
    )
    if close:
        return f"No such option: {option}. Did you mean {close}?"
    return (
        f"No such option: {option}. Text that begins with a dash goes after --: "
        f"memstore {command} -- {shlex.quote(text)}"
    )


@commands.command(cls=FreeTextCommand)
def add(
    words: Annotated[
        list[str],
        typer.Argument(
            metavar="TEXT",
            help="The memory text (words join with spaces); '-' reads it from standard input.",
            show_default=False,
        ),
    ],
    workspace: WorkspaceOption = None,
    kind: Annotated[
        str,
        option(
            options.ADD,
            "kind",
            help=" | ".join(ADDABLE_KINDS),
            autocompletion=choices(*ADDABLE_KINDS),
            callback=kind_option(ADDABLE_KINDS),
        ),
    ] = "note",
    keyword: Annotated[list[str] | None, option(options.ADD, "keyword")] = None,
    source: Annotated[str | None, option(options.ADD, "source")] = None,
    supersedes: Annotated[list[str] | None, option(options.ADD, "supersedes")] = None,
    allow_secret: Annotated[bool, option(options.ADD, "allow_secret")] = False,
    cite: Annotated[list[str] | None, option(options.ADD, "cite")] = None,
    vault: VaultOption = None,
    as_json: JsonOption = False,
) -> None:
    """Remember something: one markdown file and one git commit (a duplicate bumps 'seen').

    Example:  memstore add "staging deploys need approval from @maria" -w webshop -K deploy
    """
    text = " ".join(words)
    if not text.strip():  # the command line's fault: exit 2, as a missing text
        raise typer.BadParameter(
            'memory text is empty; pass the text to remember, e.g. memstore add "…"',
            param_hint="TEXT",
        )
    if text == "-":
        text = check_new_text(read_stdin())  # input, not the command line: exit 1
    else:
        usage_checked(check_new_text, text, "TEXT")
    if workspace is not None:  # `all` names every workspace: one to search, none to add to
        usage_checked(
            lambda name: check_workspace(name, for_add=True), workspace, "'-w' / '--workspace'"
        )
    settings = shell_settings(vault)
    chosen = add_workspace(settings.vault, working_folder(), workspace)
    cites = cites_here(settings.vault, cite or (), text)
    made = made_vault_line(settings)
    with Store.open(settings, create=True) as store:
        result = store.add(
            text,
            workspace=chosen,
            kind=kind,
            keywords=tuple(keyword or ()),
            source=source,
            supersedes=tuple(supersedes or ()),
            allow_secret=allow_secret,
            cites=cites,
        )
        result = store.hint(result, text)  # the add returned: its vault lock is released
    named = str(settings.vault) if vault else None
    print_add(result, as_json=as_json, text=text, vault=named)
    sys.stderr.write(made)


@commands.command(cls=FreeTextCommand)
def search(
    words: Annotated[
        list[str],
        typer.Argument(
            metavar="QUERY",
            help="Words to look for (plain text, no query syntax; quoting is optional).",
            show_default=False,
        ),
    ],
    workspace: WorkspaceOption = None,
    k: Annotated[int, option(options.SEARCH, "k", min=1, max=200)] = 5,
    all_workspaces: Annotated[bool, option(options.SEARCH, "all")] = False,
    context: Annotated[bool, option(options.SEARCH, "context")] = False,
    archived: Annotated[bool, option(options.SEARCH, "archived")] = False,
    as_of: Annotated[
        str | None, option(options.SEARCH, "as_of", metavar="WHEN", callback=date_option)
    ] = None,
    vault: VaultOption = None,
    as_json: JsonOption = False,
) -> None:
    """Find memories: every word first; partial matches fill in, marked weak when unsure.

    Example:  memstore search "nginx 413 upload" -w webshop
    """
    query = " ".join(words)
    if not query.strip() and not context:  # --context (an agent's hook) stays silent instead
        raise typer.BadParameter(  # the command line's fault: exit 2, as a missing query
            'the query is empty; pass words to look for, e.g. memstore search "nginx 413 upload"',
            param_hint="QUERY",
        )
    settings = shell_settings(vault)
    all_workspaces = all_workspaces or workspace == ALL  # -w all: every workspace, as --all
    scope = None if all_workspaces else (workspace or detected_workspace(settings.vault))
    elsewhere = None
    with Store.open(settings) as store:
        if as_of:
            from memstore.service.history import History

            result = History(store).search_as_of(query, as_of, workspace=scope, k=k)
        else:
            from memstore.catalog.pasted import chat_query  # --context: typed to an agent

            asked = chat_query(query) if context else query
            result = store.search(
                asked, workspace=scope, k=k, archived=archived, tiers=True, cwd=working_folder()
            )
            if not context:
                named = settings.vault if vault else None
                elsewhere = look_elsewhere(
                    store, result, query, scope, vault=named, archived=archived
                )
                if not archived and (elsewhere is None or not elsewhere.matches):
                    elsewhere = look_archived(store, result, query, scope, vault=named) or elsewhere
        note = "" if context or all_workspaces else unknown_workspace(store, workspace)
        if not (context or all_workspaces or workspace):
            note += other_vault_note(settings.vault, working_folder())
    if note:
        typer.echo(note, err=True, nl=False)
    print_search(result, query, scope, as_json=as_json, context=context, elsewhere=elsewhere)


@commands.command()
def show(
    memory_id: IdArgument,
    as_of: Annotated[
        str | None,
        typer.Option(
            "--as-of",
            metavar="WHEN",
            help="The memory as it was then: a date (2026-11-01, its end), an age (7d, 12h, "
            "30m) or a time (2026-11-01T14:30, UTC unless it names a zone).",
            callback=date_option,
        ),
    ] = None,
    vault: VaultOption = None,
    as_json: JsonOption = False,
) -> None:
    """Print one memory's file, exactly as stored (or as it was at a date or an age ago).

    Piped or redirected, the output is the file's bytes. On a terminal, control characters
    (escape sequences, bidi overrides) show as escapes such as `\\x1b`, so a file cannot
    drive the terminal.

    Example:  memstore show k3xq --as-of 2026-11-01
    """
    from memstore.service.tiers import locate

    with Store.open(shell_settings(vault)) as store:
        tier, owner = "", store
        if not as_of or ":" in memory_id:  # an old version may be of a memory forgotten since
            tier, owner, memory_id = locate(store, memory_id)  # acme:ID, or only a team's id
        label = f"{tier}:" if tier else ""
        if as_of:
            from memstore.service.history import History

            path, old = History(owner).show_as_of(memory_id, as_of)
            typer.echo(printable(f"# {label}{path} as of {as_of}"), err=True)
            print_file(old.encode("utf-8", "surrogateescape"))
            return
        entry, memory = owner.show(memory_id)
        data = owner.vault.path(entry.path).read_bytes()
    if as_json:
        fields = asdict(memory)
        fields["extra"] = {key: raw for key, raw in memory.extra}
        fields["path"] = entry.path
        fields["tier"] = tier or None
        emit_json(fields)
        return
    typer.echo(printable(f"# {label}{entry.path}"), err=True)
    print_file(data)


def print_file(data: bytes) -> None:
    """Write a file to stdout byte for byte; on a terminal, with control characters escaped."""
    if sys.stdout.isatty():
        text = printable(data.decode("utf-8", errors="replace"))
        typer.echo(text, nl=not text.endswith("\n"))
        return
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:  # a text-only stream (an embedding program's)
        typer.echo(data.decode("utf-8", errors="replace"), nl=False)
        return
    sys.stdout.flush()
    buffer.write(data)
    buffer.flush()
