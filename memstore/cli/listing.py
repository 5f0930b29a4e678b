"""`memstore list` (alias `ls`) and `memstore stats`: what the vault holds, read from the index.

Both read the index's manifest (one row per memory file) and the stored fields of the few
memories they show, never the files: a list of a 100,000-memory vault costs one table read.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, TypeVar

import typer

from memstore.catalog.indexer import Entry
from memstore.core.conflicts import display_text, split_label
from memstore.core.errors import InvalidInputError
from memstore.core.model import KINDS, check_kind, check_workspace, clip
from memstore.index import Document, SearchIndexError
from memstore.ops.cli_help import choices
from memstore.ops.lean import complete_workspace, unknown_workspace
from memstore.ops.output import count, printable, render_json
from memstore.ops.parameters import (
    JsonOption,
    VaultOption,
    kind_option,
    shell_settings,
    workspace_filter,
)
from memstore.service.history import parse_since
from memstore.service.store import Stats, Store

SUMMARY_CHARS = 72  # a memory's first line, cut to this in the text listing
SUMMARY_JSON_CHARS = 300  # and in --json (a one-line memory may be 100 KB)
T = TypeVar("T")

commands = typer.Typer()


@dataclass(frozen=True)
class Filters:
    """What `memstore list` keeps."""

    workspace: str | None = None
    kind: str | None = None
    source: str | None = None
    since: str = ""  # an ISO timestamp (or date): memories created then or later
    archived: bool = False


@dataclass(frozen=True)
class Row:
    """One memory in a listing."""

    id: str
    workspace: str
    kind: str
    source: str
    created: str
    path: str
    summary: str  # the first line of its text


@dataclass(frozen=True)
class Listing:
    """The memories shown (newest first) and counts of all that matched."""

    rows: tuple[Row, ...]
    total: int
    by_workspace: dict[str, int]
    by_kind: dict[str, int]


def select(entries: Iterable[Entry], filters: Filters) -> list[Entry]:
    """Return the entries `filters` keeps, newest first (undated ones last, by path)."""
    kept = [
        e
        for e in entries
        if (filters.workspace is None or e.workspace == filters.workspace)
        and (filters.kind is None or e.kind == filters.kind)
        and (not filters.since or e.created >= filters.since)
        and (filters.archived or not e.archived)
    ]
    kept.sort(key=lambda e: e.path)
    kept.sort(key=lambda e: e.created, reverse=True)  # stable: ties stay in path order
    return kept


def summary(content: str) -> str:
    """Return the first line of a memory's text that has words (not a `---` rule); a
    conflicted one's first version, marked, never a marker line."""
    mark, text = split_label(display_text(content))
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    # A rule (`---`) the text starts with is no summary: the first line with words is.
    first = next((line for line in lines if any(c.isalnum() for c in line)), "")
    first = first or (lines[0] if lines else "")
    return f"{mark} {first}" if mark else first


def read_listing(store: Store, filters: Filters, limit: int) -> Listing:
    """Return the memories `filters` keeps, at most `limit` of them (0: all), with counts."""
    store.catch_up()
    entries = select(_indexed(store, lambda: store.indexer.entries()), filters)
    if filters.source is not None:
        sources = _indexed(store, lambda: _sources(store, filters.workspace))
        entries = [e for e in entries if sources.get(e.path) == filters.source]
    shown = entries[:limit] if limit else entries
    documents = _indexed(store, lambda: store.indexer.search.get([e.path for e in shown]))
    rows = tuple(_row(e, documents.get(e.path)) for e in shown)
    return Listing(
        rows,
        len(entries),
        dict(sorted(Counter(e.workspace for e in entries).items())),
        dict(sorted(Counter(e.kind for e in entries).items())),
    )


def _sources(store: Store, workspace: str | None) -> dict[str, str]:
    """Return each memory's source (path → source), for one workspace or all."""
    index = store.indexer.search
    documents = index.find(workspace) if workspace else index.documents()
    return {d.key: d.source for d in documents}


def _indexed(store: Store, read: Callable[[], T]) -> T:
    """Run `read` on the index; a damaged index is rebuilt from the files and read again."""
    try:
        return read()
    except SearchIndexError as err:
        store.indexer.heal(err)
        return read()


def _row(entry: Entry, document: Document | None) -> Row:
    return Row(
        id=entry.id,
        workspace=entry.workspace,
        kind=entry.kind,
        source=document.source if document else "",
        created=entry.created,
        path=entry.path,
        summary=clip(summary(document.content), SUMMARY_JSON_CHARS) if document else "",
    )


def listing_lines(listing: Listing) -> list[str]:
    """Return what `memstore list` prints: one line a memory, then the counts."""
    if not listing.total:
        return ["No memories match."]
    lines = []
    for row in listing.rows:
        text = clip(row.summary, SUMMARY_CHARS)
        when = row.created[:10] or "undated"
        lines.append(
            f"{row.id}  {when}  {row.workspace} · {row.kind} · {row.source or '?'}  {text}"
        )
    shown = len(listing.rows)
    more = f" (--limit 0 lists all {listing.total:,})" if shown < listing.total else ""
    lines.append(f"{shown:,} of {count(listing.total, 'memory', 'memories')}, newest first{more}")
    lines.append("  workspaces  " + _counts(listing.by_workspace))
    lines.append("  kinds       " + _counts(listing.by_kind))
    return [printable(line) for line in lines]


def code_lines(rows: list[dict[str, object]], total: int) -> list[str]:
    """Return what `memstore list --kind code` prints: one line a chunk, then the count."""
    if not total:
        return ["No code ingested; add a source tree with: memstore ingest PATH"]
    lines = [f"{r['ref']} {r['kind']} {r['name']}".rstrip() + f"  {r['workspace']}" for r in rows]
    more = f" (--limit 0 lists all {total:,})" if len(rows) < total else ""
    lines.append(f"{len(rows):,} of {count(total, 'chunk')}{more}")
    return [printable(line) for line in lines]


def listing_json(listing: Listing) -> dict[str, Any]:
    return {
        "total": listing.total,
        "shown": len(listing.rows),
        "by_workspace": listing.by_workspace,
        "by_kind": listing.by_kind,
        "memories": [asdict(row) for row in listing.rows],
    }


@dataclass(frozen=True)
class WorkspaceStats:
    """A summary of one workspace."""

    vault: str
    workspace: str
    memories: int
    by_kind: dict[str, int]
    by_source: dict[str, int]
    archived: int
    problems: int
    oldest: str
    newest: str


def workspace_stats(store: Store, workspace: str) -> WorkspaceStats:
    """Summarize one workspace (all counts 0 when it holds no memory or is none of the
    vault's: `unknown_workspace` notes that)."""
    check_workspace(workspace)
    store.catch_up()
    entries = [
        e for e in _indexed(store, lambda: store.indexer.entries()) if e.workspace == workspace
    ]
    sources = _indexed(store, lambda: _sources(store, workspace))
    # no `source:` (a file written by hand): who committed it, as audit says it
    sources |= store.git.added_by(e.path for e in entries if not sources.get(e.path))
    dates = sorted(e.created for e in entries if e.created)
    return WorkspaceStats(
        vault=str(store.vault.root),
        workspace=workspace,
        memories=len(entries),
        by_kind=dict(sorted(Counter(e.kind for e in entries).items())),
        by_source=dict(
            Counter(sources.get(e.path) or "uncommitted" for e in entries).most_common()
        ),
        archived=sum(1 for e in entries if e.archived),
        problems=sum(1 for e in entries if e.problem),
        oldest=dates[0] if dates else "",
        newest=dates[-1] if dates else "",
    )


def workspace_stats_lines(stats: WorkspaceStats) -> list[str]:
    """Return what `memstore stats -w WS` prints."""
    problems = f"  ({stats.problems} with problems: memstore doctor)" if stats.problems else ""
    archived = f"  ({stats.archived} archived)" if stats.archived else ""
    lines = [
        f"vault      {stats.vault}",
        f"workspace  {stats.workspace}",
        f"memories   {stats.memories:,}{archived}{problems}",
        f"kinds      {_counts(stats.by_kind)}",
        f"sources    {_counts(stats.by_source)}",
    ]
    if stats.newest:
        lines.append(f"created    {stats.oldest[:10]} … {stats.newest[:10]}")
    return [printable(line) for line in lines]


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{name} {n:,}" for name, n in counts.items()) or "none"


WorkspaceFilter = Annotated[
    str | None,
    typer.Option(
        "-w",
        "--workspace",
        help="Only this workspace (default: every workspace).",
        show_default=False,
        autocompletion=complete_workspace,
        callback=workspace_filter,
    ),
]


def _listed_kind(kind: str | None) -> str | None:
    """A --kind of list: a memory's kind, or code (ingested chunks); else a usage error."""
    return kind if kind == "code" else kind_option(KINDS)(kind)


def list_command(
    workspace: WorkspaceFilter = None,
    kind: Annotated[
        str | None,
        typer.Option(
            "--kind",
            help=" | ".join((*KINDS, "code (ingested source)")),
            show_default=False,
            autocompletion=choices(*KINDS, "code"),
            callback=_listed_kind,
        ),
    ] = None,
    source: Annotated[
        str | None,
        typer.Option("--source", help="Only memories by this agent or person.", show_default=False),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            metavar="WHEN",
            help="Only memories created since a date or age (2026-11-01, 7d, 12h, 30m).",
        ),
    ] = None,
    limit: Annotated[
        int, typer.Option("-n", "--limit", help="Show at most this many (0: all).", min=0)
    ] = 50,
    archived: Annotated[
        bool, typer.Option("--archived", help="Include archived memories.")
    ] = False,
    stale: Annotated[
        bool,
        typer.Option("--stale", help="Only memories whose cited code changed (docs/citations.md)."),
    ] = False,
    vault: VaultOption = None,
    as_json: JsonOption = False,
) -> None:
    """List memories, newest first, with counts by workspace and kind (alias: ls).

    Example:  memstore list -w webshop --kind lesson --since 7d
    """
    if stale:
        _list_stale(vault, workspace, limit, archived=archived, as_json=as_json)
        return
    if kind == "code":  # ingested source trees' chunks, not memories
        with Store.open(shell_settings(vault)) as store:
            code = store.code_index()
            rows, total = code.listing(workspace, limit) if code else ([], 0)
        if as_json:
            typer.echo(render_json({"total": total, "shown": len(rows), "chunks": rows}))
        else:
            typer.echo("\n".join(code_lines(rows, total)))
        return
    now = datetime.now(UTC)
    try:  # a usage error (exit 2), as log's and view's --since, before the vault is opened
        cutoff = parse_since(since, now) if since else ""
    except InvalidInputError as err:
        raise typer.BadParameter(str(err)) from err
    filters = Filters(
        workspace=check_workspace(workspace) if workspace else None,
        kind=check_kind(kind, allowed=KINDS) if kind else None,
        source=source,
        since=cutoff,
        archived=archived,
    )
    with Store.open(shell_settings(vault)) as store:
        listing = read_listing(store, filters, limit)
        # a typo in -w should not pass for "No memories match."
        note = unknown_workspace(store, filters.workspace, "listed nothing")
    if note:
        typer.echo(note, err=True, nl=False)
    if as_json:
        typer.echo(render_json(listing_json(listing)))
    else:
        typer.echo("\n".join(listing_lines(listing)))


def _list_stale(
    vault: VaultOption, workspace: str | None, limit: int, *, archived: bool, as_json: bool
) -> None:
    """Print the memories whose cited code changed, checked against the repositories this
    machine knows (the current one, the code index's roots: service/citations.py)."""
    from memstore.cli.terminal import working_folder
    from memstore.ops.stale import stale_json, stale_lines, summary_line
    from memstore.service.citations import check_citations

    settings = shell_settings(vault)
    scope = check_workspace(workspace) if workspace else None
    with Store.open(settings) as store:
        cited = check_citations(store, working_folder(), scope, archived=archived)
    named = str(settings.vault) if vault else None
    if as_json:
        typer.echo(render_json(stale_json(cited, named)))
        return
    lines = [*stale_lines(cited, named, limit), summary_line(cited)]
    typer.echo(
        "\n".join(printable(line) for line in lines) if cited.citing else "No memory cites code."
    )


commands.command("list")(list_command)
commands.command("ls", hidden=True)(list_command)


@commands.command()
def stats(
    workspace: WorkspaceFilter = None, vault: VaultOption = None, as_json: JsonOption = False
) -> None:
    """Count memories by workspace and kind; show index size and the last commit.

    With -w: one workspace's memories by kind and source, and their dates.

    Example:  memstore stats -w webshop
    """
    with Store.open(shell_settings(vault)) as store:
        if workspace:
            one = workspace_stats(store, workspace)
            # a typo should not pass for "memories 0" (docs/cli.md: a workspace it lacks)
            typer.echo(unknown_workspace(store, workspace, "counted nothing"), err=True, nl=False)
        else:
            result = store.stats()
    if workspace:
        typer.echo(render_json(asdict(one)) if as_json else "\n".join(workspace_stats_lines(one)))
        return
    if as_json:
        typer.echo(render_json(asdict(result)))
        return
    for line in _vault_stats_lines(result):
        typer.echo(line)


def _vault_stats_lines(result: Stats) -> list[str]:
    """Return what `memstore stats` prints for the whole vault."""
    problems = f"  ({result.problems} with problems: memstore doctor)" if result.problems else ""
    lines = [
        f"vault      {result.vault}",
        f"memories   {result.memories}{problems}",
        "workspaces " + (", ".join(f"{w} {n}" for w, n in result.by_workspace.items()) or "none"),
        "kinds      " + (", ".join(f"{k} {n}" for k, n in result.by_kind.items()) or "none"),
        f"index      {result.index_bytes / 1024:.0f} KiB",
    ]
    if result.last_commit:
        lines.append(f"last       {result.last_commit.commit[:8]} {result.last_commit.summary}")
    return [printable(line) for line in lines]
