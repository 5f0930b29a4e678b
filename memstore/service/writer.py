"""The write lane: add, supersede, update, confirm, forget, and the recall counters' flush."""

from __future__ import annotations

import base64
import logging
import os
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from memstore.catalog.citing import CiteChecker
from memstore.catalog.indexer import Entry
from memstore.core.citations import Cite, merge_cites
from memstore.core.codec import content_hash, derive_id
from memstore.core.errors import InvalidInputError, NotFoundError, VaultError
from memstore.core.merge import tally
from memstore.core.model import (
    ADDABLE_KINDS,
    AddResult,
    AddStatus,
    Caller,
    Memory,
    check_kind,
    check_workspace,
    summary,
    written_in,
)
from memstore.core.secrets import FieldScan, scan_fields
from memstore.service import counters
from memstore.service.checks import check_keywords, check_source, check_text, memory_path
from memstore.service.resources import Part, serialized
from memstore.service.transaction import Transaction

REPLICA = "replica"  # state file: this clone's name in per-replica counters, and its path
log = logging.getLogger(__name__)


class Writer(Part):
    """Every change memstore makes to memories: each one transaction, one commit."""

    @serialized
    def add(
        self,
        text: str,
        *,
        workspace: str,
        kind: str = "note",
        keywords: tuple[str, ...] = (),
        source: str | None = None,
        supersedes: tuple[str, ...] = (),
        allowed_kinds: tuple[str, ...] = ADDABLE_KINDS,
        allow_secret: bool = False,
        merge_duplicate: bool = True,
        caller: Caller | None = None,
        cites: tuple[Cite, ...] = (),
    ) -> AddResult:
        """Store a memory: a new file and commit, or a duplicate folded into its file.

        A text that looks like it holds a credential is refused unless `allow_secret`; with
        `merge_duplicate` false a duplicate is reported and left untouched (re-imports).
        `caller` (default: the store's) is who writes; `source` names another author.
        `cites`: the code it cites, anchored (memstore.catalog.citing), kept in its file.
        """
        caller = caller or self.store.caller
        body = check_text(text)
        fields = {
            "text": body,
            "keywords": keywords,
            "source": source or caller.source,
            "session": caller.session,
        }
        scan = FieldScan(None) if allow_secret else scan_fields(fields)  # once per add
        if scan.found:
            field, kind = scan.found
            where = "memory text" if field == "text" else f"the memory's {field}"
            verb = "contain" if field == "keywords" else "contains"  # the keywords are many
            raise InvalidInputError(
                f"{where} {verb} what looks like {kind}; remove it "
                "(memory is shared through git); a person can store it anyway with "
                "memstore add --allow-secret"
            )
        check_workspace(workspace, for_add=True)
        check_kind(kind, allowed=allowed_kinds)
        keywords = check_keywords(keywords)
        source = check_source(source or caller.source)
        # Duplicates live in the same workspace: catching up its folder is enough.
        watched = self.store.vault.is_watched()
        with self.store.transaction(caller, catch_up=not watched, workspace=workspace) as tx:
            targets = tuple(_resolve_target(tx, s) for s in supersedes)
            existing = tx.indexer.by_hash(workspace, content_hash(body))
            if existing and not merge_duplicate:
                current = existing[0]
                return AddResult(
                    "duplicate_skipped", current.id, current.path, current.seen, workspace
                )
            if existing:
                return self._merge_duplicate(
                    tx, existing[0], keywords, targets, source, allow_secret, cites
                )
            path, memory = self.plan_memory(
                body,
                workspace=workspace,
                kind=kind,
                keywords=keywords,
                source=source,
                may_hold_secret=allow_secret,  # else the scan above refused one already
                session=written_in(caller),
            )
            memory = replace(memory, supersedes=tuple(dict.fromkeys(targets)), cites=cites)
            message = f"add({workspace}): {summary(body)}"
            commit = tx.write_memory(
                path, memory, message, source, allow_secret=allow_secret, clean=scan.clean
            )
        # The contradiction hint is not looked for here, under the vault lock: whoever shows
        # the add asks Store.hint (memstore.service.hints) once it has returned.
        return AddResult("added", memory.id, path, 1, workspace, commit, cites=cites)

    def _merge_duplicate(
        self,
        tx: Transaction,
        entry: Entry,
        keywords: tuple[str, ...],
        supersedes: tuple[str, ...],
        source: str,
        allow_secret: bool = False,
        cites: tuple[Cite, ...] = (),
    ) -> AddResult:
        current = tx.vault.read(entry.path)
        # The text again with --supersedes is a correction being recorded (a contradiction
        # hint followed), not the memory stored again: `seen` stays, and a correction
        # already recorded changes nothing.
        if current.id in supersedes:
            raise InvalidInputError(
                f"this text is memory {current.id} itself, which cannot supersede itself; "
                "nothing was stored (to correct it, add the corrected text with "
                f"--supersedes {current.id})"
            )
        named = tuple(dict.fromkeys(supersedes))
        links = tuple(s for s in named if s not in current.supersedes)
        if links and current.problem:
            raise InvalidInputError(
                f"{entry.path} holds this text but cannot be read cleanly ({current.problem}); "
                f"fix it (memstore doctor) before it can supersede {', '.join(links)}"
            )
        if named and not links:
            return AddResult(
                "supersede_recorded",
                current.id,
                entry.path,
                current.seen,
                current.workspace,
                linked=named,
            )
        if (not current.has_front_matter and not links) or current.problem:
            # A hand-written or unreadable file is never rewritten by an add: not counted.
            return AddResult(
                "duplicate_uncounted", current.id, entry.path, current.seen, current.workspace
            )
        merged = replace(
            tally(current, "seen", self.replica()) if not named else current,
            keywords=tuple(dict.fromkeys((*current.keywords, *keywords))),
            supersedes=(*current.supersedes, *links),
            cites=merge_cites((), current.cites, cites),
            # A hand-written file asked to correct another gets the front matter that says so.
            has_front_matter=True,
        )
        workspace, text = current.workspace, summary(current.body)
        if links:
            message = f"supersede({workspace}): {text} (corrects {', '.join(links)})"
        else:
            message = f"seen({workspace}): {text} (seen {merged.seen})"
        commit = tx.write_memory(
            entry.path, merged, message, source, basis=current, allow_secret=allow_secret
        )
        status: AddStatus = "supersede_recorded" if links else "duplicate_merged"
        recorded = tuple(cite for cite in cites if cite in merged.cites)
        return AddResult(
            status,
            merged.id,
            entry.path,
            merged.seen,
            merged.workspace,
            commit,
            linked=named,
            cites=recorded,
        )

    @serialized
    def plan_memory(
        self,
        body: str,
        *,
        workspace: str,
        kind: str,
        keywords: tuple[str, ...],
        source: str,
        may_hold_secret: bool = True,
        session: str = "",
    ) -> tuple[str, Memory]:
        """Return the path and memory `add` would write for a new `body`; writes nothing.
        `may_hold_secret`: whether `body` may hold a credential its file name must leave out
        (False when a scan found none, saving memory_path its own). `session`: the agent
        session it records ('' none: `written_in`).

        The id is free among the memories indexed now (in a transaction: as it stands).
        The file goes in a folder for the day it was created (UTC, inside its month's), so no
        git tree a commit rewrites grows with the vault (docs/file-format.md, "Where files go").
        """
        memory = Memory(
            id=self._free_id(workspace, body),
            workspace=workspace,
            body=body,
            kind=kind,
            keywords=keywords,
            source=source,
            session=session,
            created=self.timestamp(),
        )
        return memory_path(memory, may_hold_secret=may_hold_secret), memory

    def _free_id(self, workspace: str, body: str) -> str:
        for length in range(8, 27, 2):
            candidate = derive_id(workspace, body, length)
            if not self.store.indexer.by_id_prefix(candidate):
                return candidate
        raise VaultError(f"no free id for this memory in {workspace}; run 'memstore reindex'")

    @serialized
    def update(
        self, id_prefix: str, change: Callable[[Memory], Memory], verb: str
    ) -> tuple[Memory, bool]:
        """Apply `change` to one memory and commit it as `verb(workspace): …`.

        Returns the memory and whether anything changed (an unchanged memory is not
        rewritten, so commands like promote are idempotent).
        """
        with self.store.transaction(catch_up=False) as tx:
            entry = tx.resolve(id_prefix)
            current = tx.vault.read(entry.path)
            if not current.has_front_matter or current.problem:
                raise InvalidInputError(
                    f"{entry.path} has no front matter memstore can update; add front matter by "
                    "hand (see docs/file-format.md) or fix the reported problem first"
                )
            updated = change(current)
            if updated == current:
                return current, False
            message = f"{verb}({current.workspace}): {summary(current.body)}"
            tx.write_memory(entry.path, updated, message, basis=current)
            return updated, True

    def confirm(self, id_prefix: str) -> Memory:
        """Record that a person vouches for a memory: it decays more slowly from now on."""
        return self.confirm_cited(id_prefix, None)[0]

    def confirm_cited(
        self, id_prefix: str, checkout: tuple[Path, str] | None
    ) -> tuple[Memory, tuple[tuple[Cite, str], ...], tuple[tuple[Cite, str], ...]]:
        """Confirm a memory and anchor its citations of `checkout` (root, repository name) to
        today's code, in the one commit; return it, the citations dropped as gone, and those
        gone here but kept: this repository does not hold the version they cite, so it may
        be another with the same name (or an old branch), and nothing is dropped on a guess."""
        dropped: list[tuple[Cite, str]] = []
        unsure: list[tuple[Cite, str]] = []
        now = self.timestamp()

        def change(memory: Memory) -> Memory:
            memory = tally(memory, "confirmed", self.replica())
            if checkout is None or not memory.cites:
                return memory
            kept = []
            checker = CiteChecker(checkout[0])
            for cite in memory.cites:
                if cite.repo != checkout[1]:
                    kept.append(cite)  # another repository's code: not here to look at
                    continue
                anchored = checker.reanchor(cite, now)
                reason = "" if anchored else checker.check(cite).reason or f"{cite.label} is gone"
                if anchored is None and not checker.holds_version(cite):
                    kept.append(cite)
                    unsure.append((cite, reason))
                elif anchored is None:
                    dropped.append((cite, reason))
                else:
                    kept.append(anchored)
            return replace(memory, cites=tuple(kept))

        memory, _ = self.update(id_prefix, change, "confirm")
        return memory, tuple(dropped), tuple(unsure)

    @serialized
    def forget(self, entry: Entry, message: Callable[[Memory], str]) -> str:
        """Delete a memory's file in one commit and drop it from the index; `message` is
        made from the memory as read under the lock."""
        with self.store.transaction(catch_up=False) as tx:
            return tx.delete(entry, message(tx.vault.read(entry.path)))

    @serialized
    def timestamp(self) -> str:
        return self.store.shared.clock().strftime("%Y-%m-%dT%H:%M:%SZ")

    def flush_usage(
        self, every: float | None = None, stopping: Callable[[], bool] = lambda: False
    ) -> int:
        """Write the pending recall counts into the memory files, in one commit (`every`:
        only the files due, each written at most once per `every` seconds, as the periodic
        flush does; None: all); return how many memories. The store's lock is held only
        for short steps (counters.flush_beside): readers and adds go on meanwhile. Once
        `stopping` says so it gives up before writing anything (the counts stay pending)."""
        with self.store.shared.mutex:
            replica = self.replica()
        return counters.flush_beside(self.store, replica, every, stopping)

    def replica(self) -> str:
        """Return this clone's name in the files' per-replica counters (`seen_by`).

        The host's name and a random tag, kept under .memstore/state with the vault's path:
        two clones on one host, or a vault copied elsewhere, count apart. A new name is
        always safe (its entry starts at 0); only two clones sharing one would lose a count.
        The path is compared resolved: a vault reached through a symlink, or spelled another
        way, keeps its name (each new one would add an entry to every memory it counts).
        """
        shared = self.store.shared
        if shared.replica is not None:
            return shared.replica
        vault = self.store.vault
        root = os.path.realpath(vault.root)
        name, _, where = vault.read_state(REPLICA).partition(" ")
        if not name or os.path.realpath(where) != root:
            host = re.sub(r"[^a-z0-9.-]+", "-", self.store.settings.host.lower()).strip("-.")
            tag = base64.b32encode(os.urandom(5)).decode("ascii").lower()[:4]
            name = f"{(host or 'host')[:40]}-{tag}"
            vault.write_state(REPLICA, f"{name} {root}")
        shared.replica = name
        return name

    def flush_usage_held(self, tx: Transaction, every: float | None = None) -> int:
        """Write pending recall counts in `tx`'s one commit (`every`: only those due, see
        flush_usage; None: all, as sync does); return how many memories."""
        return counters.flush(self.store, tx, self.replica(), every)


def _resolve_target(tx: Transaction, id_prefix: str) -> str:
    try:
        return tx.resolve(id_prefix).id
    except NotFoundError as err:
        raise NotFoundError(
            f"supersedes {id_prefix!r}: no memory has that id; nothing was stored "
            "(memstore search or memory_recall shows ids)"
        ) from err
