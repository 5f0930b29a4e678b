"""The memory-keeping commands of the CLI, a thin typer shell over Curator and editing.

audit, dedupe, promote, archive, revive, confirm, forget, gc, edit.
"""

from __future__ import annotations

import os
import sys
from dataclasses import asdict
from typing import Annotated

import typer

from memstore.catalog.indexer import Entry
from memstore.cli.terminal import ask, now, progress_bar, say, working_folder
from memstore.core.errors import InvalidInputError
from memstore.core.model import ADDABLE_KINDS, summary
from memstore.core.secret_mask import mask_secrets
from memstore.ops.cli_help import choices
from memstore.ops.lean import checkout_here, unknown_workspace
from memstore.ops.output import count, supersede_command
from memstore.ops.parameters import (
    IdArgument,
    JsonOption,
    QuietOption,
    VaultOption,
    WorkspaceFilter,
    emit_json,
    kind_option,
    shell_settings,
)
from memstore.ops.stale import STALE_TITLE, stale_json, stale_lines, summary_line
from memstore.service.citations import check_citations
from memstore.service.curation import Audit, Contradicting, ContradictionError, Curator
from memstore.service.store import Store

commands = typer.Typer()


@commands.command()
def audit(
    workspace: WorkspaceFilter = None,
    vault: VaultOption = None,
    as_json: JsonOption = False,
    quiet: QuietOption = False,
) -> None:
    """Report what the vault holds and what needs care; changes nothing.

    Example:  memstore audit -w webshop
    """
    settings = shell_settings(vault)
    bar = progress_bar("auditing", quiet=quiet or as_json)
    with Store.open(settings) as store, bar as step:
        curator = Curator(store, now())
        report = curator.audit(workspace, step)
        pairs = report.contradictions
        texts = curator.bodies(pair.new for pair in pairs) if pairs else {}
        cited = check_citations(store, working_folder(), workspace)  # against the code here
        # a typo should not pass for an empty audit (docs/cli.md: a workspace it lacks)
        typer.echo(unknown_workspace(store, workspace, "audited nothing"), err=True, nl=False)
    named = str(settings.vault) if vault else None
    fixes = [
        supersede_command(texts.get(pair.new, ""), pair.workspace, pair.old, named)
        for pair in report.contradictions
    ]
    if as_json:
        data = asdict(report)
        for pair, command in zip(data["contradictions"], fixes, strict=True):
            pair["command"] = command
        data["citations"] = stale_json(cited, named)
        emit_json(data)
        return
    if workspace and not report.memories:
        say(f"no memory in workspace {workspace!r} (memstore stats lists workspaces)")
        return
    lines = _audit_lines(report, fixes)
    if cited.citing:  # after the counts: what changed in the code its memories cite
        lines.append(f"citations: {summary_line(cited)}")
        found = stale_lines(cited, named, limit=50)
        if cited.stale:
            lines.append(f"{STALE_TITLE} ({len(cited.stale)}):")
        lines.extend(f"  {line}" for line in found)
    say("\n".join(lines))


@commands.command()
def dedupe(
    list_pairs: Annotated[bool, typer.Option("--list", help="List near-duplicate pairs.")] = False,
    merge: Annotated[
        str | None,
        typer.Option("--merge", metavar="ID", help="Fold ID's near-duplicate into it."),
    ] = None,
    keep_both: Annotated[
        str | None, typer.Option("--keep-both", metavar="ID", help="Stop listing ID's pairs.")
    ] = None,
    vault: VaultOption = None,
    quiet: QuietOption = False,
    as_json: JsonOption = False,
) -> None:
    """List near-duplicate pairs with their texts; then merge a pair or keep both apart.

    Without an option (or with --list) it lists the pairs and changes nothing. A pair
    that contradicts itself (port 8080 vs 3000) is listed as a contradiction, with the
    command that supersedes the older, and --merge refuses it.

    Example:  memstore dedupe --list ; memstore dedupe --merge k3xq
    """
    if sum(map(bool, (list_pairs, merge, keep_both))) > 1:  # it did the first, silently
        raise typer.BadParameter("use one of --list, --merge ID or --keep-both ID")
    settings = shell_settings(vault)
    named = str(settings.vault) if vault else None
    with Store.open(settings) as store:
        curator = Curator(store, now())
        if merge:
            try:
                kept, removed = curator.merge_duplicate(merge)
            except ContradictionError as err:
                raise InvalidInputError(_not_duplicates(err, named)) from err
            if as_json:
                emit_json({"merged": removed, "into": kept.id, "seen": kept.seen})
            elif not quiet:
                say(f"merged {removed} into {kept.id} (seen {kept.seen}): one commit")
        elif keep_both:
            kept_apart = curator.keep_both(keep_both)
            if as_json:
                emit_json({"kept_apart": kept_apart})
            elif not quiet:
                say(f"kept apart: {', '.join(kept_apart)}")
        else:
            with progress_bar("comparing", quiet=quiet or as_json) as step:
                alike = curator.alike(progress=step)
            pairs, disputed = alike.duplicates, alike.contradictions
            if as_json:
                _emit_alike(pairs, disputed, curator, named)
                return
            if not pairs:
                say("no near-duplicates")
            ids = [x for a, b, _ in pairs for x in (a, b)]
            bodies = curator.bodies([*ids, *(x for c in disputed for x in (c.new, c.old))])
            _say_pairs(pairs, bodies)
            if disputed:
                _say_contradictions(disputed, bodies, named)


@commands.command()
def promote(
    memory_id: IdArgument,
    kind: Annotated[
        str,
        typer.Option(
            "--kind",
            help=" | ".join(ADDABLE_KINDS),
            autocompletion=choices(*ADDABLE_KINDS),
            callback=kind_option(ADDABLE_KINDS),
        ),
    ],
    vault: VaultOption = None,
    as_json: JsonOption = False,
) -> None:
    """Change a memory's kind (e.g. a lesson that became a standing rule: core).

    Example:  memstore promote k3xq --kind core
    """
    with Store.open(shell_settings(vault)) as store:
        memory, changed = Curator(store, now()).promote(memory_id, kind)
    if as_json:
        emit_json({"id": memory.id, "kind": memory.kind, "changed": changed})
        return
    say(f"{memory.id} is {'now' if changed else 'already'} {memory.kind}")


@commands.command()
def archive(memory_id: IdArgument, vault: VaultOption = None, as_json: JsonOption = False) -> None:
    """Take a memory out of ordinary recall; `search --archived` still finds it.

    Example:  memstore archive k3xq
    """
    with Store.open(shell_settings(vault)) as store:
        memory, changed = Curator(store, now()).archive(memory_id)
    if as_json:
        emit_json({"id": memory.id, "archived": True, "changed": changed})
        return
    say(
        f"{memory.id} {'archived' if changed else 'was already archived'}; undo with: memstore revive {memory.id}"
    )


@commands.command()
def revive(memory_id: IdArgument, vault: VaultOption = None, as_json: JsonOption = False) -> None:
    """Bring an archived memory back into recall.

    Example:  memstore revive k3xq
    """
    with Store.open(shell_settings(vault)) as store:
        memory, changed = Curator(store, now()).revive(memory_id)
    if as_json:
        emit_json({"id": memory.id, "archived": False, "changed": changed})
        return
    say(f"{memory.id} {'revived' if changed else 'was not archived'}")


@commands.command()
def confirm(
    memory_id: IdArgument,
    vault: VaultOption = None,
    as_json: JsonOption = False,
) -> None:
    """Vouch for a memory: it decays more slowly and ranks a little higher (one commit).

    Run inside a repository, its citations of that code are anchored to today's version.

    Example:  memstore confirm k3xq
    """
    from memstore.service.tiers import locate

    settings = shell_settings(vault)
    with Store.open(settings) as store:
        tier, _, found = locate(store, memory_id)
        if tier:
            raise InvalidInputError(
                f"memory {found} is team {tier}'s: a team memory changes only through review, "
                "and what you recall of it is counted on this machine alone; to vouch for it, "
                f"say so on the team's host, or keep a copy of your own (memstore show "
                f"{tier}:{found}, then memstore add)"
            )
        memory, dropped, unsure = store.confirm_cited(memory_id, checkout_here(settings.vault))
    if as_json:
        emit_json(
            {
                "id": memory.id,
                "confirmed": memory.confirmed,
                "dropped": [{"citation": c.label, "reason": r} for c, r in dropped],
                "kept_unsure": [{"citation": c.label, "reason": r} for c, r in unsure],
            }
        )
        return
    times = count(memory.confirmed, "time")
    say(f"confirmed {memory.id} ({times})")
    for cite, reason in dropped:
        say(f"dropped citation {cite.label}: {reason}")
    for cite, reason in unsure:
        say(
            f"kept citation {cite.label}: {reason}, but this repository never held the cited version"
        )


@commands.command()
def forget(
    memory_id: IdArgument,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show what would happen; change nothing.")
    ] = False,
    force: Annotated[
        bool,
        typer.Option("--force", help="Even if another memory names it as the one it corrects."),
    ] = False,
    purge: Annotated[
        bool,
        typer.Option("--purge", help="Also remove it from every commit of the local history."),
    ] = False,
    vault: VaultOption = None,
    as_json: JsonOption = False,
) -> None:
    """Delete a memory in one commit (git keeps it in history; --purge removes it there too).

    Example:  memstore forget k3xq --yes
    """
    with Store.open(shell_settings(vault)) as store:
        curator = Curator(store, now())
        entry, memory = store.show(memory_id)
        # a memory is often forgotten (or purged) for the credential it holds: the terminal
        # and an agent's transcript see it masked as the scanner sees it (--json: on stderr,
        # beside the question, so stdout holds the JSON alone)
        say(f"# {entry.path}\n{mask_secrets(memory.body.rstrip())}", err=as_json)
        named = curator.correcting(entry)
        if named and not force:
            raise InvalidInputError(
                f"{entry.id} is the memory {named[0].id} corrects (supersedes); pass --force to forget it anyway"
            )
        done: dict[str, object] = {"id": entry.id, "path": entry.path, "dry_run": dry_run}
        done |= {"purge": purge, "forgotten": False, "rewritten_commits": None, "next": None}
        if dry_run:
            _said(
                done,
                f"would forget {entry.id}" + " and purge it from the local history" * purge,
                as_json,
            )
            return
        if purge:
            _purge(store, curator, entry, done, (force, yes, as_json))
            return
        ask(f"Forget {entry.id}?", yes, err=as_json)
        curator.forget(entry, force=force)
        done["forgotten"] = True
        _said(done, f"forgot {entry.id} (one commit; 'git revert' brings it back)", as_json)


def _purge(
    store: Store,
    curator: Curator,
    entry: Entry,
    done: dict[str, object],
    flags: tuple[bool, bool, bool],
) -> None:
    """Forget a memory and rewrite the local history without it; say what finishes it.
    `flags`: forget's --force, --yes and --json."""
    force, yes, as_json = flags
    ask(
        f"Forget {entry.id} and rewrite the local history without it? This cannot be undone.",
        yes,
        err=as_json,
    )
    changed, paths = curator.purge(entry, force=force)
    branch = store.git.branch()
    # the command that works here: without a terminal to ask, it needs --yes too
    finish = "memstore sync --force-purged" + ("" if sys.stdin.isatty() else " --yes")
    done |= {"forgotten": True, "rewritten_commits": changed, "next": finish}
    _said(
        done,
        f"purged {entry.id} from {count(changed, 'commit')} ({', '.join(sorted(paths))}).\n"
        "The remote and other clones still have it, and 'memstore sync' refuses to merge "
        f"it back: run '{finish}' to rewrite the remote the same way "
        f"(in {store.vault.root}, branch {branch}); "
        "every other clone's next 'memstore sync' then drops it too "
        "(docs/sync.md, 'Purged memories'). Rotate the secret if it was one.",
        as_json,
    )


def _said(data: dict[str, object], line: str, as_json: bool) -> None:
    """Print what a command did: `data` as JSON, else the line for a person."""
    if as_json:
        emit_json(data)
    else:
        say(line)


@commands.command()
def gc(
    prune_traces: Annotated[
        int | None,
        typer.Option(
            "--prune-traces",
            metavar="DAYS",
            help="Forget archived traces archived this many days ago.",
            min=0,
        ),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Report what would be removed.")
    ] = False,
    vault: VaultOption = None,
    quiet: QuietOption = False,
    as_json: JsonOption = False,
) -> None:
    """Remove leftover derived state, pack git history and, if asked, old archived traces.

    Example:  memstore gc --prune-traces 90 --dry-run
    """
    with (
        Store.open(shell_settings(vault)) as store,
        progress_bar("collecting", quiet=quiet or as_json) as progress,
    ):
        done = Curator(store, now()).gc(
            prune_traces_days=prune_traces, dry_run=dry_run, progress=progress
        )
    if as_json:
        emit_json({"dry_run": dry_run, **asdict(done)})
        return
    if quiet and not dry_run:
        return
    verb = "would remove" if dry_run else "removed"
    say(f"{verb} {len(done.folders)} leftover index folders, {len(done.traces)} archived traces")
    for item in [*done.folders, *done.traces]:
        say(f"  {item}")
    before = done.before
    size = _kib(before.loose_kib + before.packed_kib)
    if done.after is None:
        say(f"would pack {before.loose:,} loose git objects (history: {size})")
    else:
        after = _kib(done.after.loose_kib + done.after.packed_kib)
        say(f"packed {before.loose:,} loose git objects (history: {size} → {after})")
        say(f"compacted the index: {count(done.index_segments, 'segment')} → 1")


@commands.command()
def edit(memory_id: IdArgument, vault: VaultOption = None) -> None:
    """Open a memory in $VISUAL or $EDITOR; a valid save is one `edit(…)` commit.

    The editor works on a copy: a broken front matter is named and the editor opened
    again (or, without a terminal, nothing is saved).

    Example:  EDITOR=nano memstore edit k3xq
    """
    from memstore.service.editing import choose_editor, edit_memory, run_editor

    settings = shell_settings(vault)
    command, origin = choose_editor(
        os.environ.get("VISUAL", ""),
        os.environ.get("EDITOR", ""),
        terminal=sys.stdin.isatty() and sys.stdout.isatty(),
    )
    edited = edit_memory(
        lambda: Store.open(settings),
        memory_id,
        lambda copy: run_editor(command, origin, copy),
        _reopen,
    )
    if not edited.commit:
        say(f"{edited.id}: no change; nothing saved")
        return
    merged = " (merged with a change made while you edited)" if edited.merged else ""
    say(f"saved {edited.id} in {edited.commit[:8]}: {edited.path}{merged}")


def _by_memory(found: list[tuple[str, str]]) -> dict[str, list[str]]:
    """Group (id, what) pairs by memory, in order: one line a memory, not one a rule (a
    40-character key after `AWS_SECRET_ACCESS_KEY=` matches four)."""
    grouped: dict[str, list[str]] = {}
    for memory, what in found:
        grouped.setdefault(memory, []).append(what)
    return grouped


def _audit_lines(report: Audit, fixes: list[str]) -> list[str]:
    """Return what `memstore audit` prints: the counts, then each section that has items."""
    lines = [
        f"memories: {report.memories}",
        "by workspace: "
        + (", ".join(f"{w} {n}" for w, n in report.by_workspace.items()) or "none"),
        "by kind: " + (", ".join(f"{k} {n}" for k, n in report.by_kind.items()) or "none"),
        "written by: " + (", ".join(f"{s} {n}" for s, n in report.by_source.items()) or "none"),
        f"core memory: ~{report.core_tokens} tokens of a {report.core_cap}-token cap",
    ]
    found = _by_memory(report.secrets)
    sections = [
        (
            "near-duplicates (memstore dedupe)",
            [f"{a} ~ {b} ({v:.0%} shared terms)" for a, b, v in report.near_duplicates],
        ),
        (
            "contradictions (newer first; if it is right, run the command)",
            [
                f"{pair.new} vs {pair.old} ({pair.detail}): {command}"
                for pair, command in zip(report.contradictions, fixes, strict=True)
            ],
        ),
        (
            "superseded, with what replaced them",
            [f"{old} -> {', '.join(new)}" for old, new in report.superseded],
        ),
        ("sync conflicts (both versions kept)", report.conflicts),
        ("files memstore cannot read cleanly", [f"{p}: {r}" for p, r in report.malformed]),
        (
            "possible secrets (memstore forget --purge)",
            [f"{i}: {', '.join(k)}" for i, k in found.items() if i not in report.secrets_on_disk],
        ),
        (
            # never committed (sync held it back): no history to rewrite, only the file
            "possible secrets only on disk, never committed (remove them from the file, or "
            "delete it)",
            [
                f"{i} ({report.secrets_on_disk[i]}): {', '.join(k)}"
                for i, k in found.items()
                if i in report.secrets_on_disk
            ],
        ),
        ("never recalled (30+ days old)", report.never_recalled),
        ("decayed below the recall floor", report.decayed),
        ("stored 3+ times, never recalled", report.stored_never_read),
        ("prunable traces (memstore archive / gc)", report.prunable_traces),
        ("archived", report.archived),
    ]
    for title, items in sections:
        if items:
            lines.append(f"{title} ({len(items)}):")
            lines.extend(f"  {item}" for item in items[:50])
            if len(items) > 50:
                lines.append(f"  … {len(items) - 50} more (--json lists all)")
    return lines


def _emit_alike(
    pairs: list[tuple[str, str, float]],
    disputed: list[Contradicting],
    curator: Curator,
    vault: str | None,
) -> None:
    """Print `dedupe --list --json`: each pair's ids and overlap, each contradiction as
    `audit --json` has it (with the supersede command)."""
    texts = curator.bodies(pair.new for pair in disputed) if disputed else {}
    contradictions = [
        {
            **asdict(pair),
            "command": supersede_command(texts.get(pair.new, ""), pair.workspace, pair.old, vault),
        }
        for pair in disputed
    ]
    found = [{"a": a, "b": b, "overlap": round(overlap, 3)} for a, b, overlap in pairs]
    emit_json({"pairs": found, "contradictions": contradictions})


def _say_pairs(pairs: list[tuple[str, str, float]], bodies: dict[str, str]) -> None:
    """Print near-duplicate pairs with the start of each text (each text shortened once,
    a thousand pairs a write: a dense 100k vault lists ~2 million pairs)."""
    texts: dict[str, str] = {}
    for start in range(0, len(pairs), 1000):
        lines = []
        for a, b, overlap in pairs[start : start + 1000]:
            for x in (a, b):
                if x not in texts:
                    texts[x] = summary(bodies.get(x, ""), 70)
            lines.append(f"{a} ~ {b}  {overlap:.0%}\n  {a}: {texts[a]}\n  {b}: {texts[b]}")
        say("\n".join(lines))


def _say_contradictions(
    pairs: list[Contradicting], bodies: dict[str, str], vault: str | None
) -> None:
    """Print the look-alike pairs that disagree: not duplicates, each with its supersede."""
    lines = [f"contradictions, not duplicates (newer first) ({len(pairs)}):"]
    for pair in pairs:
        command = supersede_command(bodies.get(pair.new, ""), pair.workspace, pair.old, vault)
        lines.append(
            f"{pair.new} vs {pair.old}  ({pair.detail})\n"
            f"  {pair.new}: {summary(bodies.get(pair.new, ''), 70)}\n"
            f"  {pair.old}: {summary(bodies.get(pair.old, ''), 70)}\n"
            f"  if {pair.new} is right: {command}"
        )
    say("\n".join(lines))


def _not_duplicates(err: ContradictionError, vault: str | None) -> str:
    """The refusal of `dedupe --merge` for a pair that disagrees, naming the supersede."""
    pair = err.pair
    command = supersede_command(err.text, pair.workspace, pair.old, vault)
    return (
        f"{pair.new} and {pair.old} contradict each other ({pair.detail}): they are not "
        "duplicates, and merging would delete one's text; nothing was changed. If the newer, "
        f"{pair.new}, is right, mark {pair.old} corrected: {command}"
    )


def _reopen(problem: str) -> bool:
    """Name what is wrong with an edit and ask whether to open it again (only on a terminal;
    without one the edit fails, and the error names the problem)."""
    if not sys.stdin.isatty():
        return False
    say(f"Error: {problem}", err=True)
    return typer.confirm("re-open?", default=True, err=True)


def _kib(kib: int) -> str:
    return f"{kib / 1024:.1f} MB" if kib >= 1024 else f"{kib} KB"
