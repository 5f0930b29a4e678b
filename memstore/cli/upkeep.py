"""The memory-keeping commands of the CLI, a thin typer shell over Curator, History, transfer.

audit, dedupe, promote, archive, revive, forget, log, revert, import, export, restore, gc,
edit (over editing).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from memstore.core.config import Settings
from memstore.core.errors import InvalidInputError, NotFoundError
from memstore.core.model import ADDABLE_KINDS, GLOBAL, summary
from memstore.ops.cli_help import choices
from memstore.ops.lean import complete_id, complete_workspace
from memstore.ops.output import count, printable, render_json, supersede_command
from memstore.service.curation import Contradicting, ContradictionError, Curator
from memstore.service.history import History, no_session, parse_since
from memstore.service.store import Store


def _vault_in_effect(ctx: typer.Context, vault: Path | None) -> Path | None:
    """Return the --vault a command acts on: its own, else the one given to a group above it
    (`memstore remote --vault V add URL`). Every --vault of the CLI goes through here.

    Raises:
        typer.BadParameter: the group and the command name different folders.
    """
    given = [vault] if vault is not None else []
    parent = ctx.parent
    while parent is not None:  # the groups above this command, already parsed
        if parent.params.get("vault") is not None:
            given.append(Path(parent.params["vault"]))
        parent = parent.parent
    if len({os.path.realpath(os.path.expanduser(path)) for path in given}) > 1:
        shown = " and ".join(str(path) for path in given)
        raise typer.BadParameter(f"names two folders ({shown}); give it once")
    return given[0] if given else None


VaultOption = Annotated[
    Path | None,
    typer.Option(
        "--vault",
        metavar="PATH",
        help="Vault folder (default: $MEMSTORE_VAULT or ~/memstore).",
        show_default=False,
        callback=_vault_in_effect,
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]
IdArgument = Annotated[
    str,
    typer.Argument(
        metavar="ID", help="A memory id or a unique prefix of one.", autocompletion=complete_id
    ),
]


def shell_settings(vault: Path | None) -> Settings:
    """Read the environment once, here in the shell (the CLI shares this)."""
    return Settings.from_env(os.environ, home=Path.home(), vault=vault)


def _now() -> datetime:
    return datetime.now(UTC)


def _echo_json(data: Any) -> None:
    typer.echo(render_json(data))


def _say(text: str, err: bool = False) -> None:
    """Print one message for a person: memory text never reaches the terminal raw."""
    typer.echo(printable(text), err=err)


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
        _say("\n".join(lines))


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
    _say("\n".join(lines))


def _not_duplicates(err: ContradictionError, vault: str | None) -> str:
    """The refusal of `dedupe --merge` for a pair that disagrees, naming the supersede."""
    pair = err.pair
    command = supersede_command(err.text, pair.workspace, pair.old, vault)
    return (
        f"{pair.new} and {pair.old} contradict each other ({pair.detail}): they are not "
        "duplicates, and merging would delete one's text; nothing was changed. If the newer, "
        f"{pair.new}, is right, mark {pair.old} corrected: {command}"
    )


def _ask(question: str, yes: bool) -> None:
    """Confirm with the person at the terminal; without one, only --yes may proceed."""
    if yes:
        return
    if not sys.stdin.isatty():
        raise InvalidInputError(
            "no terminal to ask for confirmation; rerun with --yes (or --dry-run to see what would happen)"
        )
    typer.confirm(question, abort=True)


PROGRESS_DELAY_S = 1.0  # work shorter than this shows no bar at all


def _no_progress(_done: int, _total: int) -> None:
    """Ignore progress: a pipe, a file, --quiet or --json."""


def _progress_delay() -> float:
    """Seconds of work before a bar appears: $MEMSTORE_PROGRESS_DELAY, else 1."""
    try:
        return max(0.0, float(os.environ.get("MEMSTORE_PROGRESS_DELAY") or PROGRESS_DELAY_S))
    except ValueError:
        return PROGRESS_DELAY_S


@contextlib.contextmanager
def progress_bar(label: str, *, quiet: bool = False) -> Iterator[Callable[[int, int], None]]:
    """A bar with counts on stderr, moved by the (done, total) calls of long work.

    Only on a terminal, never with --quiet, and only once the work has run for
    PROGRESS_DELAY_S: a quick run, a pipe or a file gets nothing.
    """
    if quiet or not sys.stderr.isatty():
        yield _no_progress
        return
    start, delay = time.monotonic(), _progress_delay()
    with contextlib.ExitStack() as stack:
        bar: Any = None

        def step(done: int, total: int) -> None:
            nonlocal bar
            if bar is None:
                if time.monotonic() - start < delay:
                    return
                bar = stack.enter_context(
                    typer.progressbar(
                        length=max(total, 1),
                        label=label,
                        file=sys.stderr,
                        show_pos=True,
                        show_percent=True,
                    )
                )
            bar.length = max(total, 1)  # a total may grow: restore reads, then writes
            bar.update(done - bar.pos)

        yield step


QuietOption = Annotated[
    bool,
    typer.Option(
        "--quiet", "-q", help="No progress bar and no summary; problems and errors still print."
    ),
]


def register(app: typer.Typer) -> None:
    """Add the memory-keeping commands to the CLI."""

    @app.command()
    def audit(
        workspace: Annotated[
            str | None,
            typer.Option(
                "-w",
                "--workspace",
                help="Only this workspace.",
                autocompletion=complete_workspace,
            ),
        ] = None,
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
            curator = Curator(store, _now())
            report = curator.audit(workspace, step)
            pairs = report.contradictions
            texts = curator.bodies(pair.new for pair in pairs) if pairs else {}
        named = str(settings.vault) if vault else None
        commands = [
            supersede_command(texts.get(pair.new, ""), pair.workspace, pair.old, named)
            for pair in report.contradictions
        ]
        if as_json:
            data = asdict(report)
            for pair, command in zip(data["contradictions"], commands, strict=True):
                pair["command"] = command
            _echo_json(data)
            return
        if workspace and not report.memories:
            _say(f"no memory in workspace {workspace!r} (memstore stats lists workspaces)")
            return
        lines = [
            f"memories: {report.memories}",
            "by workspace: " + ", ".join(f"{w} {n}" for w, n in report.by_workspace.items()),
            "by kind: " + ", ".join(f"{k} {n}" for k, n in report.by_kind.items()),
            "written by: " + ", ".join(f"{s} {n}" for s, n in report.by_source.items()),
            f"core memory: ~{report.core_tokens} tokens of a {report.core_cap}-token cap",
        ]
        sections = [
            (
                "near-duplicates (memstore dedupe)",
                [f"{a} ~ {b} ({v:.0%} shared terms)" for a, b, v in report.near_duplicates],
            ),
            (
                "contradictions (newer first; if it is right, run the command)",
                [
                    f"{pair.new} vs {pair.old} ({pair.detail}): {command}"
                    for pair, command in zip(report.contradictions, commands, strict=True)
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
                [f"{i}: {what}" for i, what in report.secrets],
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
        _say("\n".join(lines))

    @app.command()
    def dedupe(
        list_pairs: Annotated[
            bool, typer.Option("--list", help="List near-duplicate pairs.")
        ] = False,
        merge: Annotated[
            str | None,
            typer.Option("--merge", metavar="ID", help="Fold ID's near-duplicate into it."),
        ] = None,
        keep_both: Annotated[
            str | None, typer.Option("--keep-both", metavar="ID", help="Stop listing ID's pairs.")
        ] = None,
        vault: VaultOption = None,
        quiet: QuietOption = False,
    ) -> None:
        """List near-duplicate pairs with their texts; then merge a pair or keep both apart.

        Without an option (or with --list) it lists the pairs and changes nothing. A pair
        that contradicts itself (port 8080 vs 3000) is listed as a contradiction, with the
        command that supersedes the older, and --merge refuses it.

        Example:  memstore dedupe --list ; memstore dedupe --merge k3xq
        """
        settings = shell_settings(vault)
        named = str(settings.vault) if vault else None
        with Store.open(settings) as store:
            curator = Curator(store, _now())
            if merge:
                try:
                    kept, removed = curator.merge_duplicate(merge)
                except ContradictionError as err:
                    raise InvalidInputError(_not_duplicates(err, named)) from err
                if not quiet:
                    _say(f"merged {removed} into {kept.id} (seen {kept.seen}): one commit")
            elif keep_both:
                kept_apart = curator.keep_both(keep_both)
                if not quiet:
                    _say(f"kept apart: {', '.join(kept_apart)}")
            else:
                with progress_bar("comparing", quiet=quiet) as step:
                    alike = curator.alike(progress=step)
                pairs, disputed = alike.duplicates, alike.contradictions
                if not pairs:
                    _say("no near-duplicates")
                ids = [x for a, b, _ in pairs for x in (a, b)]
                bodies = curator.bodies([*ids, *(x for c in disputed for x in (c.new, c.old))])
                _say_pairs(pairs, bodies)
                if disputed:
                    _say_contradictions(disputed, bodies, named)

    @app.command()
    def promote(
        memory_id: IdArgument,
        kind: Annotated[
            str,
            typer.Option(
                "--kind", help=" | ".join(ADDABLE_KINDS), autocompletion=choices(*ADDABLE_KINDS)
            ),
        ],
        vault: VaultOption = None,
    ) -> None:
        """Change a memory's kind (e.g. a lesson that became a standing rule: core).

        Example:  memstore promote k3xq --kind core
        """
        with Store.open(shell_settings(vault)) as store:
            memory, changed = Curator(store, _now()).promote(memory_id, kind)
        _say(f"{memory.id} is {'now' if changed else 'already'} {memory.kind}")

    @app.command()
    def archive(memory_id: IdArgument, vault: VaultOption = None) -> None:
        """Take a memory out of ordinary recall; `search --archived` still finds it.

        Example:  memstore archive k3xq
        """
        with Store.open(shell_settings(vault)) as store:
            memory, changed = Curator(store, _now()).archive(memory_id)
        _say(
            f"{memory.id} {'archived' if changed else 'was already archived'}; undo with: memstore revive {memory.id}"
        )

    @app.command()
    def revive(memory_id: IdArgument, vault: VaultOption = None) -> None:
        """Bring an archived memory back into recall.

        Example:  memstore revive k3xq
        """
        with Store.open(shell_settings(vault)) as store:
            memory, changed = Curator(store, _now()).revive(memory_id)
        _say(f"{memory.id} {'revived' if changed else 'was not archived'}")

    @app.command()
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
    ) -> None:
        """Delete a memory in one commit (git keeps it in history; --purge removes it there too).

        Example:  memstore forget k3xq --yes
        """
        with Store.open(shell_settings(vault)) as store:
            curator = Curator(store, _now())
            entry, memory = store.show(memory_id)
            _say(f"# {entry.path}\n{memory.body.rstrip()}")
            named = curator.correcting(entry)
            if named and not force:
                raise InvalidInputError(
                    f"{entry.id} is the memory {named[0].id} corrects (supersedes); pass --force to forget it anyway"
                )
            if dry_run:
                _say(
                    f"would forget {entry.id}"
                    + (" and purge it from the local history" if purge else "")
                )
                return
            if purge:
                _ask(
                    f"Forget {entry.id} and rewrite the local history without it? This cannot be undone.",
                    yes,
                )
                changed, paths = curator.purge(entry, force=force)
                branch = store.git.branch()
                _say(
                    f"purged {entry.id} from {count(changed, 'commit')} ({', '.join(sorted(paths))}).\n"
                    "The remote and other clones still have it, and 'memstore sync' refuses to merge "
                    "it back: run 'memstore sync --force-purged' to rewrite the remote the same way "
                    f"(in {store.vault.root}, branch {branch}); "
                    "every other clone's next 'memstore sync' then drops it too "
                    "(docs/sync.md, 'Purged memories'). Rotate the secret if it was one."
                )
                return
            _ask(f"Forget {entry.id}?", yes)
            curator.forget(entry, force=force)
            _say(f"forgot {entry.id} (one commit; 'git revert' brings it back)")

    @app.command()
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
                "--since", help="Only commits since a date or age (2026-11-01, 7d, 2w, 12h)."
            ),
        ] = None,
        limit: Annotated[int, typer.Option("-n", help="At most this many.")] = 50,
        vault: VaultOption = None,
        as_json: JsonOption = False,
    ) -> None:
        """Who wrote what and when, from the commits' Memstore-* trailers.

        Each line ends with the commit's session, which `memstore revert --session` takes.

        Example:  memstore log --source claude-code --since 7d
        """
        cutoff = parse_since(since, _now()) if since else None
        with Store.open(shell_settings(vault)) as store:
            changes = History(store).log(memory_id, source=source, since=cutoff)[:limit]
        if as_json:
            _echo_json([asdict(c) for c in changes])
            return
        if not changes:
            _say("no commit matches" if memory_id or source or since else "no commits yet")
        for change in changes:
            who = change.source or "git"
            session = f"  (session {change.session})" if change.session else ""
            _say(f"{change.commit[:8]} {change.time} {who:12} {change.summary}{session}")

    @app.command()
    def revert(
        session: Annotated[
            str, typer.Option("--session", help="The Memstore-Session of the changes to undo.")
        ],
        yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
        dry_run: Annotated[
            bool, typer.Option("--dry-run", help="List the session's commits; change nothing.")
        ] = False,
        vault: VaultOption = None,
    ) -> None:
        """Undo every change one agent session made, in one commit (e.g. after a prompt injection).

        Example:  memstore revert --session 4f1c2a9e --dry-run
        """
        with Store.open(shell_settings(vault)) as store:
            history = History(store)
            changes = [c for c in history.log() if c.session == session]
            for change in changes:
                _say(f"{change.commit[:8]} {change.summary}")
            if not changes:
                raise NotFoundError(no_session(session))
            if dry_run:
                _say(f"would undo {count(len(changes), 'commit')}")
                return
            _ask(f"Undo these {count(len(changes), 'commit')}?", yes)
            made, changed, kept = history.revert_session(session)
        _say(
            f"reverted {count(len(changed), 'file')} in {made[:8]}"
            if made
            else "nothing left to undo"
        )
        for path in kept:
            _say(f"  kept (edited by others since): {path}")

    @app.command("import")
    def import_command(
        paths: Annotated[
            list[Path],
            typer.Argument(help="CLAUDE.md, AGENTS.md, .cursor/rules/*.mdc, .kiro/steering/*.md …"),
        ],
        workspace: Annotated[
            str | None,
            typer.Option(
                "-w",
                "--workspace",
                help="Workspace (default: detected from the file's repository).",
            ),
        ] = None,
        whole_file: Annotated[
            bool,
            typer.Option("--whole-file", help="One memory per file instead of one per bullet."),
        ] = False,
        dry_run: Annotated[
            bool, typer.Option("--dry-run", help="Show what would be created.")
        ] = False,
        vault: VaultOption = None,
        quiet: QuietOption = False,
    ) -> None:
        """Turn instruction files into memories of kind `imported` (the files are never edited).

        Example:  memstore import CLAUDE.md --dry-run
        """
        from memstore.ops.lean import detected_workspace
        from memstore.service.importing import import_files

        settings = shell_settings(vault)
        chosen = workspace or detected_workspace(settings.vault) or GLOBAL
        bar = progress_bar("importing", quiet=quiet or dry_run)
        with Store.open(settings, create=True) as store, bar as step:
            report = import_files(
                store,
                paths,
                workspace=chosen,
                whole_file=whole_file,
                dry_run=dry_run,
                progress=step,
            )
        if dry_run:
            _say(f"would create {count(len(report.created), 'memory', 'memories')} in {chosen}:")
            for text in report.created:
                _say(f"  - {summary(text, 90)}")
            return
        if not quiet:
            _say(
                f"created {count(len(report.created), 'memory', 'memories')} in {chosen}; "
                f"{report.unchanged} already there"
            )
        for text, reason in report.refused:
            _say(f"  refused {text!r}: {reason}", err=True)

    @app.command()
    def export(
        workspace: Annotated[
            str | None,
            typer.Option(
                "-w",
                "--workspace",
                help="Only this workspace.",
                autocompletion=complete_workspace,
            ),
        ] = None,
        output: Annotated[
            Path | None,
            typer.Option("-o", "--output", help="Write to this file (default: stdout)."),
        ] = None,
        vault: VaultOption = None,
    ) -> None:
        """Write every memory (id, front matter, body) as JSON.

        Example:  memstore export -o memory.json
        """
        from memstore.service.transfer import export as run_export
        from memstore.service.transfer import write_export

        with Store.open(shell_settings(vault)) as store:
            data = run_export(store, workspace)
        text = json.dumps(data, ensure_ascii=False, indent=2) + "\n"
        if output:
            write_export(output, text)
            _say(
                f"exported {count(len(data['memories']), 'memory', 'memories')} to {output}",
                err=True,
            )
        else:
            typer.echo(text, nl=False)

    @app.command()
    def restore(
        file: Annotated[Path, typer.Argument(help="A file written by memstore export.")],
        vault: VaultOption = None,
        quiet: QuietOption = False,
    ) -> None:
        """Merge an export into the vault, all or nothing (ids kept, so supersede links survive).

        Example:  memstore restore memory.json
        """
        from memstore.service.transfer import read_export
        from memstore.service.transfer import restore as run_restore

        files = read_export(file)  # checked whole before the vault is opened or created
        bar = progress_bar("restoring", quiet=quiet)
        with Store.open(shell_settings(vault), create=True) as store, bar as step:
            report = run_restore(store, files, step)
        kept = f", {len(report.kept)} kept as they were" if report.kept else ""
        if not quiet:
            _say(
                f"restored: {report.added} added, {report.merged} merged, "
                f"{report.unchanged} unchanged{kept}"
            )
        for path, reason in report.kept:
            _say(f"  kept {path}: {reason}", err=True)

    @app.command()
    def gc(
        prune_traces: Annotated[
            int | None,
            typer.Option(
                "--prune-traces",
                metavar="DAYS",
                help="Forget archived traces archived this many days ago.",
            ),
        ] = None,
        dry_run: Annotated[
            bool, typer.Option("--dry-run", help="Report what would be removed.")
        ] = False,
        vault: VaultOption = None,
        quiet: QuietOption = False,
    ) -> None:
        """Remove leftover derived state, pack git history and, if asked, old archived traces.

        Example:  memstore gc --prune-traces 90 --dry-run
        """
        with (
            Store.open(shell_settings(vault)) as store,
            progress_bar("collecting", quiet=quiet) as progress,
        ):
            done = Curator(store, _now()).gc(
                prune_traces_days=prune_traces, dry_run=dry_run, progress=progress
            )
        if quiet and not dry_run:
            return
        verb = "would remove" if dry_run else "removed"
        _say(
            f"{verb} {len(done.folders)} leftover index folders, {len(done.traces)} archived traces"
        )
        for item in [*done.folders, *done.traces]:
            _say(f"  {item}")
        before = done.before
        size = _kib(before.loose_kib + before.packed_kib)
        if done.after is None:
            _say(f"would pack {before.loose:,} loose git objects (history: {size})")
        else:
            after = _kib(done.after.loose_kib + done.after.packed_kib)
            _say(f"packed {before.loose:,} loose git objects (history: {size} → {after})")
            _say(f"compacted the index: {count(done.index_segments, 'segment')} → 1")

    @app.command()
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
            _say(f"{edited.id}: no change; nothing saved")
            return
        merged = " (merged with a change made while you edited)" if edited.merged else ""
        _say(f"saved {edited.id} in {edited.commit[:8]}: {edited.path}{merged}")


def _reopen(problem: str) -> bool:
    """Name what is wrong with an edit and ask whether to open it again (only on a terminal;
    without one the edit fails, and the error names the problem)."""
    if not sys.stdin.isatty():
        return False
    _say(f"Error: {problem}", err=True)
    return typer.confirm("re-open?", default=True, err=True)


def _kib(kib: int) -> str:
    return f"{kib / 1024:.1f} MB" if kib >= 1024 else f"{kib} KB"
