"""Keeping memory healthy: audit, near-duplicates and dedupe, promote, archive, forget, gc."""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime

from memstore.catalog.indexer import Entry, Progress, has_conflict
from memstore.core import ranking
from memstore.core.codec import merged_ids, render_memory, with_merged
from memstore.core.contradictions import Disagreement, disagreement
from memstore.core.errors import InvalidInputError
from memstore.core.faults import crash_point
from memstore.core.merge import KIND_RANK, union
from memstore.core.model import ADDABLE_KINDS, DisagreementKind, Memory, check_kind, summary
from memstore.core.ranking import CORE_BUDGET_TOKENS, Candidate, estimate_tokens, strength
from memstore.core.secrets import find_secrets
from memstore.core.similar import neighbours, similar_pairs, term_sets
from memstore.index import Document
from memstore.service.hints import CONTRADICTION_CANDIDATES, CONTRADICTION_CLOSE, UNHINTED
from memstore.service.store import Store
from memstore.service.sync import unnote_forgotten
from memstore.vault import remote
from memstore.vault.edits import secret_only_on_disk
from memstore.vault.files import MAX_FILE_BYTES
from memstore.vault.purges import Purge, commit_marker, finish_local, mark_applied, record_purge

NEAR_DUPLICATE = 0.7  # term containment; the capture gate's measured threshold (docs/agents.md)
RECALL_FLOOR = 0.05  # strength below which a memory has decayed out of mind
NEVER_RECALLED_DAYS = 30
STORED_OFTEN = 3  # seen this often and never recalled: stored again and again, never read


@dataclass
class Audit:
    """A read-only report on what the vault holds."""

    memories: int = 0
    by_workspace: dict[str, int] = field(default_factory=dict)
    by_kind: dict[str, int] = field(default_factory=dict)
    by_source: dict[str, int] = field(default_factory=dict)
    near_duplicates: list[tuple[str, str, float]] = field(default_factory=list)
    superseded: list[tuple[str, list[str]]] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    malformed: list[tuple[str, str]] = field(default_factory=list)
    core_tokens: int = 0
    core_cap: int = CORE_BUDGET_TOKENS
    never_recalled: list[str] = field(default_factory=list)
    decayed: list[str] = field(default_factory=list)
    stored_never_read: list[str] = field(default_factory=list)
    prunable_traces: list[str] = field(default_factory=list)
    secrets: list[tuple[str, str]] = field(default_factory=list)
    secrets_on_disk: dict[str, str] = field(default_factory=dict)  # id: path, never committed
    archived: list[str] = field(default_factory=list)
    contradictions: list[Contradicting] = field(default_factory=list)


@dataclass(frozen=True)
class Contradicting:
    """Two memories of one workspace that disagree: `new` would supersede `old`."""

    new: str
    old: str
    workspace: str
    kind: DisagreementKind
    detail: str  # new's side first: 'port 8443 vs 8080'


@dataclass(frozen=True)
class Alike:
    """Near-duplicate pairs of memories, split by whether their texts agree."""

    duplicates: list[tuple[str, str, float]]  # (id, id, share of terms), most similar first
    contradictions: list[Contradicting]  # those audit lists (its rules), newer first
    disputed: list[Contradicting]  # every pair whose texts disagree: never folded


class ContradictionError(InvalidInputError):
    """A pair asked to be merged disagrees: folding it would delete one side's claim."""

    def __init__(self, pair: Contradicting, text: str) -> None:
        self.pair = pair
        self.text = text  # the newer memory's, for the command that supersedes the older
        super().__init__(
            f"{pair.new} and {pair.old} contradict each other ({pair.detail}); they are not "
            "duplicates and --merge would delete one's text. If the newer is right, add its "
            f"text again with --supersedes {pair.old} (memstore audit prints the command)"
        )


def _scan_file(store: Store, entry: Entry) -> tuple[list[str], bool]:
    """Kinds of credential anywhere in a memory's file, and whether sync left a conflict in it."""
    try:
        with store.vault.path(entry.path).open("rb") as file:
            data = file.read(MAX_FILE_BYTES)
    except OSError:
        return [], False  # gone or unreadable since the catch-up: nothing to scan
    # Only a file naming `conflict` can be one: parsing every file's YAML costs more than the scan.
    conflict = b"conflict" in data and has_conflict(store.vault.read(entry.path))
    return find_secrets(data.decode("utf-8", errors="replace")), conflict


def candidate(entry: Entry) -> Candidate:
    """A memory's entry as ranking's decay reads it (audit's and the view's strength)."""
    return Candidate(
        entry.path,
        0.0,
        0.0,
        False,
        0,
        entry.created,
        entry.last_recalled,
        entry.seen,
        entry.recalled,
        entry.confirmed,
    )


class Curator:
    """The memory-keeping commands, over one open store."""

    def __init__(self, store: Store, now: datetime) -> None:
        self.store = store
        self.now = now

    # --- audit ---------------------------------------------------------------------

    def audit(self, workspace: str | None = None, progress: Progress | None = None) -> Audit:
        """Report on the vault; reads files and the index, writes nothing.

        `progress(done, total)` follows the two long parts: reading every file (the first
        half), then comparing the memories for near-duplicates (the second)."""
        store = self.store
        store.catch_up()
        entries = [
            e for e in store.indexer.entries() if workspace is None or e.workspace == workspace
        ]
        report = Audit(memories=len(entries))
        report.by_workspace = dict(sorted(Counter(e.workspace for e in entries).items()))
        report.by_kind = dict(sorted(Counter(e.kind for e in entries).items()))
        paths = {e.path for e in entries}
        documents = {d.key: d for d in store.indexer.search.documents() if d.key in paths}
        unsourced = store.git.added_by(k for k, d in documents.items() if not d.source)
        written = (d.source or unsourced.get(k, "uncommitted") for k, d in documents.items())
        report.by_source = dict(sorted(Counter(written).items()))
        everything = store.indexer.entries()
        ids = {e.id: e for e in everything}
        replaced: dict[str, list[str]] = {}
        for entry in entries:
            for old in entry.supersedes:
                replaced.setdefault(old, []).append(entry.id)
        report.superseded = sorted((old, new) for old, new in replaced.items() if old in ids)
        count = len(entries)
        for done, entry in enumerate(entries, 1):
            self._review(entry, replaced, report)
            if progress is not None and (done % 200 == 0 or done == count):
                progress(done, 2 * count)
        core = [documents[e.path] for e in entries if e.kind == "core" and e.path in documents]
        report.core_tokens = sum(estimate_tokens(d.content) + 10 for d in core)

        def quarter(first: int) -> Progress | None:
            """Progress of the second half's parts: comparing (0), then checking pairs (1)."""
            if progress is None:
                return None
            tell = progress
            return lambda done, total: tell(
                count + (first * total + done) * count // (2 * total), 2 * count
            )

        alike = self.audit_alike(list(documents.values()), everything, quarter(0), quarter(1))
        report.near_duplicates = alike.duplicates
        report.contradictions = alike.contradictions
        return report

    def audit_alike(
        self,
        documents: list[Document],
        everything: list[Entry],
        comparing: Progress | None = None,
        checking: Progress | None = None,
    ) -> Alike:
        """Audit's near-duplicates and contradictions among `documents` (`everything`: the
        vault's entries, for the supersedes that settle a pair); the view lists the same."""
        # One comparison serves both lists. Contradictions: each memory is read beside its few
        # closest, as an add reads the new one beside its CONTRADICTION_CANDIDATES search hits
        # (a generated 100k vault has ~4 million pairs at this containment, ~30 µs each).
        found = neighbours(
            _items(documents),
            NEAR_DUPLICATE,
            loose=CONTRADICTION_CLOSE,
            per_set=CONTRADICTION_CANDIDATES,
            progress=comparing,
        )
        # One reading of the texts serves both lists: a near-duplicate pair that disagrees
        # is a contradiction, not a duplicate, even when it is not among the few closest.
        return self._alike(
            documents, found.pairs, everything, closest=found.closest, progress=checking
        )

    def _review(self, entry: Entry, replaced: dict[str, list[str]], report: Audit) -> None:
        """Add what one memory needs (its file scanned, its use weighed) to the report."""
        if entry.problem:
            report.malformed.append((entry.path, entry.problem))
        if entry.archived:
            report.archived.append(entry.id)
        secrets, conflict = _scan_file(self.store, entry)
        report.secrets.extend((entry.id, name) for name in secrets)
        if secrets and secret_only_on_disk(self.store.git, entry.path):
            report.secrets_on_disk[entry.id] = entry.path
        if conflict:
            report.conflicts.append(entry.path)
        memory_strength = strength(candidate(entry), self.now)
        age = int(ranking.days_between(entry.created, self.now))
        if entry.recalled == 0 and age >= NEVER_RECALLED_DAYS:
            report.never_recalled.append(entry.id)
        if memory_strength < RECALL_FLOOR:
            report.decayed.append(entry.id)
        if entry.seen >= STORED_OFTEN and entry.recalled == 0:
            report.stored_never_read.append(entry.id)
        if (
            entry.kind == "trace"
            and (entry.archived or (entry.recalled == 0 and age >= NEVER_RECALLED_DAYS))
            and entry.id not in replaced
        ):
            report.prunable_traces.append(entry.id)

    def near_duplicates(
        self, workspace: str | None = None, progress: Progress | None = None
    ) -> list[tuple[str, str, float]]:
        """Pairs of memories of one workspace that say nearly the same thing, most similar first.

        Pairs kept apart with --keep-both are left out, and so is a correction with the memory
        it supersedes: the two are alike by design, not duplicates. So is a pair whose texts
        disagree (`alike` lists those as contradictions).
        """
        return self.alike(workspace, progress).duplicates

    def alike(self, workspace: str | None = None, progress: Progress | None = None) -> Alike:
        """The near-duplicate pairs of one workspace (or all), split by whether they disagree."""
        store = self.store
        store.catch_up()  # cheap after audit's; the list must not miss a memory added since
        documents = [
            doc
            for doc in store.indexer.search.documents()
            if workspace is None or doc.workspace == workspace
        ]
        found = similar_pairs(_items(documents), NEAR_DUPLICATE, progress)
        return self._alike(documents, found, store.indexer.entries())

    def _alike(
        self,
        documents: Iterable[Document],
        found: dict[tuple[str, str], float],
        entries: list[Entry],
        *,
        closest: Iterable[tuple[str, str]] = (),
        progress: Progress | None = None,
    ) -> Alike:
        """The pairs of `found` (by key) close enough to be near-duplicates, by id, split into
        those that agree and those the contradiction detector says disagree; contradictions
        are also looked for among the `closest` pairs (audit's)."""
        apart = set(self.store.vault.read_state("dedupe-kept").split()) | {
            ":".join(sorted((entry.id, old))) for entry in entries for old in entry.supersedes
        }
        by_key = {doc.key: doc for doc in documents}
        pairs: dict[tuple[str, str], float] = {}
        paths: dict[tuple[str, str], tuple[str, str]] = {}
        for (first, second), share in found.items():
            a, b = sorted((by_key[first].id, by_key[second].id))
            if share >= NEAR_DUPLICATE and f"{a}:{b}" not in apart:
                pairs[(a, b)] = round(max(share, pairs.get((a, b), 0.0)), 3)
                paths[(a, b)] = (first, second)
        by_path = {e.path: e for e in entries}
        checked = contradicting(
            by_key,
            by_path,
            [*paths.values(), *closest],
            entries,
            self.store.git.added_order,
            progress,
            every=True,
        )
        near = {frozenset(pair) for pair in pairs}
        disputed = [c for c in checked if frozenset((c.new, c.old)) in near]
        split = {frozenset((c.new, c.old)) for c in disputed}
        corrected = {old for entry in entries for old in entry.supersedes}
        by_id = {e.id: e for e in entries}
        return Alike(
            duplicates=sorted(
                ((a, b, v) for (a, b), v in pairs.items() if not split or {a, b} not in split),
                key=lambda p: (-p[2], p[0], p[1]),
            ),
            contradictions=[
                c
                for c in checked
                if all(_is_hinted(by_id[i], corrected) for i in (c.new, c.old))
                and by_id[c.old].kind not in UNHINTED
            ],
            disputed=disputed,
        )

    def bodies(self, ids: Iterable[str]) -> dict[str, str]:
        """The text of each memory named, as indexed (no catch-up per memory: one for all)."""
        wanted = set(ids)
        return {d.id: d.content for d in self.store.indexer.search.documents() if d.id in wanted}

    # --- changing one memory ---------------------------------------------------------

    def promote(self, id_prefix: str, kind: str) -> tuple[Memory, bool]:
        check_kind(kind, allowed=ADDABLE_KINDS)  # imported is import's mark, not a kind to give
        return self.store.update(id_prefix, lambda m: replace(m, kind=kind), f"promote:{kind}")

    def archive(self, id_prefix: str) -> tuple[Memory, bool]:
        stamp = self.now.strftime("%Y-%m-%dT%H:%M:%SZ")
        return self.store.update(
            id_prefix, lambda m: m if m.archived else replace(m, archived=stamp), "archive"
        )

    def revive(self, id_prefix: str) -> tuple[Memory, bool]:
        return self.store.update(id_prefix, lambda m: replace(m, archived=""), "revive")

    def correcting(self, entry: Entry) -> list[Entry]:
        """Memories that name `entry` as the memory they correct."""
        return self.store.indexer.superseded_by(entry.id)

    def forget(self, entry: Entry, *, force: bool = False) -> str:
        """Delete one memory's file in one commit (refused if another memory corrects it)."""
        named = self.correcting(entry)
        if named and not force:
            raise InvalidInputError(
                f"{entry.id} is the memory {named[0].id} corrects (supersedes); forgetting it "
                "breaks that link — pass --force to forget it anyway"
            )
        return self.store.forget(
            entry, lambda current: f"forget({entry.workspace}): {summary(current.body)}"
        )

    def purge(self, entry: Entry, *, force: bool = False) -> tuple[int, set[str]]:
        """Forget a memory and remove it from every commit of the local history."""
        store = self.store
        exists = store.vault.path(entry.path).exists()
        text = summary(store.vault.read(entry.path).body) if exists else ""
        if exists:
            self.forget(entry, force=force)
        with store.transaction(catch_up=False) as tx:
            git = tx.git
            finish_local(git, tx.vault, tx.trailers)  # one killed half-way before
            paths = git.paths_ever(f"-{entry.id}.md") | {entry.path}
            replacement = f"[purged memory {entry.id}]"
            done = git.rewrite_without(paths, scrub=text, replacement=replacement, move=False)
            changed = done.changed
            # Recorded before any ref moves: sync refuses to merge the old history back
            # until the remote is purged too, and finishes this purge if it is killed.
            remotes = tuple(sorted(remote.remote_urls(tx.vault.root, store.settings.env)))
            purge = Purge(
                entry.id,
                tuple(sorted(paths)),
                tuple(done.roots),
                replacement,
                done.mapping,
                remotes,
                applied=False,
            )
            record_purge(tx.vault, purge)
            crash_point("purge-recorded")
            git.move_rewritten(done.mapping)
            crash_point("purge-moved")
            # the marker by which other clones' syncs recognise the rewritten history
            git.move_to(commit_marker(git, git.head(), [purge], tx.trailers))
            mark_applied(tx.vault, purge.id)
            unnote_forgotten(tx.vault, paths)  # its file name quotes the memory's text
            remote.prune_unreachable(tx.vault.root, store.settings.env)
        store.reindex()  # the old index still holds the text in its segment files
        return changed, paths

    # --- duplicates ------------------------------------------------------------------

    def merge_duplicate(self, id_prefix: str) -> tuple[Memory, str]:
        """Fold a memory's nearest duplicate into it, in one commit; returns (kept, folded id).

        The memory named keeps its id, file and text; counters are summed, keywords united,
        the higher kind kept (core > lesson > note > trace), the folded id recorded in its
        `merged:` key (so the id still resolves) and supersede links to it redirected.
        """
        store = self.store
        entry = store.resolve(id_prefix)
        alike = self.alike(entry.workspace)
        partner = next(
            (b if a == entry.id else a for a, b, _ in alike.duplicates if entry.id in (a, b)),
            None,
        )
        disputed = next((c for c in alike.disputed if entry.id in (c.new, c.old)), None)
        if partner is None and disputed is not None:
            raise ContradictionError(disputed, self.bodies([disputed.new]).get(disputed.new, ""))
        if partner is None:
            raise InvalidInputError(
                f"{entry.id} has no near-duplicate; see 'memstore dedupe --list'"
            )
        other = store.resolve(partner)
        with store.transaction(catch_up=False) as tx:
            tx.commit_edits([entry.path, other.path])
            kept = fold(tx.vault.read(entry.path), tx.vault.read(other.path))
            touched = {entry.path: kept}
            for follower in tx.indexer.superseded_by(other.id):
                if follower.path == entry.path:
                    continue
                memory = tx.vault.read(follower.path)
                links = (entry.id if s == other.id else s for s in memory.supersedes)
                touched[follower.path] = replace(memory, supersedes=tuple(dict.fromkeys(links)))
            tx.git.check_secrets({p: render_memory(m).encode() for p, m in touched.items()})
            for path, memory in touched.items():
                tx.vault.write_atomic(path, render_memory(memory))
            tx.vault.path(other.path).unlink()
            tx.commit(
                f"dedupe({kept.workspace}): {summary(kept.body)} (merged {other.id})",
                add=tuple(touched),
                remove=(other.path,),
            )
            tx.indexer.remove([other.path])
            tx.indexer.record_all(touched)
        return kept, other.id

    def keep_both(self, id_prefix: str) -> list[str]:
        """Mark a memory's near-duplicate pairs as reviewed: they are not listed again."""
        store = self.store
        entry = store.resolve(id_prefix)
        pairs = [
            f"{a}:{b}" for a, b, _ in self.near_duplicates(entry.workspace) if entry.id in (a, b)
        ]
        if not pairs:
            raise InvalidInputError(f"{entry.id} has no near-duplicate to keep apart")
        kept = set(store.vault.read_state("dedupe-kept").split()) | set(pairs)
        store.vault.write_state("dedupe-kept", " ".join(sorted(kept)))
        return pairs

    # --- gc --------------------------------------------------------------------------

    def gc(
        self,
        *,
        prune_traces_days: int | None = None,
        dry_run: bool = False,
        progress: Progress | None = None,
    ) -> Collected:
        """Remove leftover derived state, pack git history and, if asked, forget archived
        traces older than N days. A trace another memory names as its correction stays.

        `progress(done, total)` counts the traces forgotten, then packing and compacting
        as one step each."""
        store = self.store
        state = store.vault.state_dir
        # Set-aside damage and half-built indexes (a rebuild holds the vault lock, which the
        # removal below takes, so one in progress is never removed).
        damaged = store.vault.root / ".git" / "memstore-damaged"
        leftovers = sorted(
            str(p.relative_to(store.vault.root))
            for p in [*state.glob("index.*"), *([damaged] if damaged.exists() else [])]
        )
        traces: list[Entry] = []
        if prune_traces_days is not None:
            for entry in store.indexer.entries():
                if entry.kind != "trace" or not entry.archived or self.correcting(entry):
                    continue
                if ranking.days_between(entry.archived, self.now) >= prune_traces_days:
                    traces.append(entry)
        before = remote.count_objects(store.vault.root, store.settings.env)
        if dry_run:
            return Collected(leftovers, [e.id for e in traces], before, None)
        with store.transaction(catch_up=False, serialize=False):
            for leftover in leftovers:
                path = store.vault.root / leftover
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    path.unlink(missing_ok=True)
        steps = len(traces) + 2
        step = progress or (lambda done, total: None)
        for done, entry in enumerate(traces, 1):
            self.forget(entry)
            step(done, steps)
        with store.transaction(catch_up=False, serialize=False):
            remote.pack(store.vault.root, store.settings.env, auto=False)
        step(steps - 1, steps)
        after = remote.count_objects(store.vault.root, store.settings.env)
        segments = store.compact_index()
        step(steps, steps)
        return Collected(leftovers, [e.id for e in traces], before, after, segments)


@dataclass(frozen=True)
class Collected:
    """What `gc` removed (or would remove) and the history's size before and after packing."""

    folders: list[str]
    traces: list[str]
    before: remote.ObjectCounts
    after: remote.ObjectCounts | None  # None on a dry run
    index_segments: int = 0  # how many segments the index had before it was compacted


def _items(documents: list[Document]) -> list[tuple[str, str, frozenset[str]]]:
    """Each document's (key, workspace, terms), as similar_pairs compares them."""
    sets = term_sets([doc.content for doc in documents])
    return [(d.key, d.workspace, t) for d, t in zip(documents, sets, strict=True)]


AddedOrder = Callable[[Iterable[str]], Mapping[str, int]]  # GitRepo.added_order


def contradicting(
    documents: Mapping[str, Document],
    entries: Mapping[str, Entry],
    close: Iterable[tuple[str, str]],
    everything: list[Entry],
    added_order: AddedOrder,
    progress: Progress | None = None,
    *,
    every: bool = False,
) -> list[Contradicting]:
    """The close pairs (by path) that disagree, the newer memory first, as an add would find.

    Left out, as at an add: archived memories, memories something already corrects, traces,
    and a core memory as the older one (the one a supersede would correct); with `every`,
    none of them is left out (a pair that disagrees is never a duplicate to fold).
    The newer is the later `created`; within one second (the stamp's precision) the one
    committed later (`added_order` of their paths), then the larger id.
    """
    corrected = {old for entry in everything for old in entry.supersedes}
    # Each pair once, a memory's pairs together: the detector remembers the texts it read
    # last (a few thousand), so a text is read about once, not once per pair.
    pairs = sorted({(min(pair), max(pair)) for pair in close})
    found: list[tuple[Entry, Entry, Disagreement]] = []
    for done, (first, second) in enumerate(pairs, 1):
        if progress is not None and (done % 200 == 0 or done == len(pairs)):
            progress(done, len(pairs))
        one, other = entries.get(first), entries.get(second)
        if one is None or other is None:
            continue
        if not every and not (_is_hinted(one, corrected) and _is_hinted(other, corrected)):
            continue
        new, old = sorted((one, other), key=lambda e: (e.created, e.id), reverse=True)
        how = disagreement(documents[new.path].content, documents[old.path].content)
        if how is not None:
            found.append((new, old, how))
    tied = {e.path for new, old, _ in found if new.created == old.created for e in (new, old)}
    order = added_order(tied) if tied else {}
    latest = max(order.values(), default=0) + 1  # not committed yet: newer than any commit

    def committed(entry: Entry) -> tuple[int, str]:
        return order.get(entry.path, latest), entry.id

    listed = []
    for new, old, how in found:
        if new.created == old.created:
            later, earlier = sorted((new, old), key=committed, reverse=True)
            if later is not new:
                new, old = later, earlier
                swapped = disagreement(documents[new.path].content, documents[old.path].content)
                how = swapped or how
        if not every and old.kind in UNHINTED:
            continue
        listed.append(Contradicting(new.id, old.id, new.workspace, how.kind, how.detail))
    return sorted(listed, key=lambda p: (p.workspace, p.new, p.old))


def _is_hinted(entry: Entry, corrected: set[str]) -> bool:
    """Whether a memory may be one side of a contradiction hint (see `contradicting`)."""
    return not (entry.archived or entry.id in corrected or entry.kind == "trace")


def fold(kept: Memory, folded: Memory) -> Memory:
    """Return `kept` with `folded` merged into it: its text and id stay, nothing is downgraded."""
    created = [t for t in (kept.created, folded.created) if t]
    return with_merged(
        replace(
            kept,
            kind=max(kept.kind, folded.kind, key=lambda kind: KIND_RANK.get(kind, -1)),
            seen=kept.seen + folded.seen,
            recalled=kept.recalled + folded.recalled,
            confirmed=kept.confirmed + folded.confirmed,
            last_recalled=max(kept.last_recalled, folded.last_recalled),
            created=min(created) if created else "",
            # Archived only if both were: folding in a memory still in use revives it.
            archived=kept.archived if folded.archived else "",
            keywords=union((), kept.keywords, folded.keywords),
            supersedes=tuple(
                s for s in union((), kept.supersedes, folded.supersedes) if s != kept.id
            ),
            # The folded memory's own keys (a person's tags) are kept beside the survivor's.
            extra=(
                *kept.extra,
                *((k, raw) for k, raw in folded.extra if k not in dict(kept.extra)),
            ),
            has_front_matter=True,  # asked to merge: the counters and the alias need one
        ),
        (folded.id, *merged_ids(folded)),
    )
