"""The read lane: search, recall, resolve and show, stats and the other questions."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from memstore.catalog import indexer as indexing
from memstore.catalog.code_hits import KIND as CODE_KIND
from memstore.catalog.code_hits import fuse
from memstore.catalog.code_roots import ingested
from memstore.catalog.code_semantic import similarity
from memstore.catalog.indexer import Entry
from memstore.catalog.retrieval import (
    SEMANTIC_DEPTH,
    core_memories,
    find,
    fuse_similar,
    recall_message,
    stand_ins,
    with_corrections,
)
from memstore.catalog.staleness import confident_fresh_first, mark_stale
from memstore.core.codec import merged_ids
from memstore.core.errors import InvalidInputError, NotFoundError
from memstore.core.model import (
    GLOBAL,
    AddResult,
    CoreMemory,
    Hit,
    Memory,
    Recall,
    SearchResult,
    check_workspace,
)
from memstore.core.ranking import HIT_OVERHEAD_TOKENS, estimate_tokens, pack
from memstore.index import Query, SearchIndexError, terms
from memstore.service.checks import check_id, check_source
from memstore.service.resources import Part, serialized
from memstore.service.tiers import (
    ids_by_tier,
    merge_core,
    merge_results,
    neighbors_of,
    search_teams,
    settled,
    team_changes,
    team_core,
    tier_stores,
)

if TYPE_CHECKING:
    from memstore.catalog.codebase import CodeIndex
    from memstore.vault.git import LogEntry


@dataclass(frozen=True)
class Stats:
    """A summary of the vault."""

    vault: Path
    memories: int
    by_workspace: dict[str, int]
    by_kind: dict[str, int]
    problems: int
    index_bytes: int
    last_commit: LogEntry | None


class Reader(Part):
    """Questions asked of the vault: none takes the vault lock or waits for a writer."""

    @serialized
    def search(
        self,
        query: str | Query,
        *,
        workspace: str | None = None,
        k: int = 5,
        catch_up: bool = True,
        archived: bool = False,
        tiers: bool = False,
        cwd: Path | None = None,
    ) -> SearchResult:
        """Return up to `k` hits, ranked: all query terms first, then any term; a memory
        another corrects comes just below its correction.

        `workspace` None searches every workspace; a name searches it plus `global`.
        `catch_up` False skips the scan for files changed outside memstore (a running
        watcher already keeps the index current). `tiers`: the followed team vaults too,
        one ranked list (service/tiers.py). `cwd`: where the caller works; hits citing code
        of its repository are checked, marked stale and ranked below fresh ones
        (catalog/staleness.py).
        """
        if k < 1:
            raise InvalidInputError(f"-k must be at least 1, not {k}")
        store = self.store
        if tiers and (teams := tier_stores(store)):
            from memstore.service.shared_marks import without_shared  # it imports the store

            asked = settled(store, teams, query)
            mine = store.search(
                asked[""], workspace=workspace, k=k, catch_up=catch_up, archived=archived, cwd=cwd
            )
            # a memory marked shared with a tier read here: the team's copy speaks for it
            answers = [replace(mine, hits=tuple(without_shared(store, mine.hits, set(teams))))]
            answers += search_teams(teams, asked, workspace=workspace, k=k, archived=archived)
            merged = merge_results(answers, k)
            return replace(merged, hits=tuple(confident_fresh_first(merged.hits)))
        text = query if isinstance(query, str) else query.text
        scope = None if workspace is None else {check_workspace(workspace), GLOBAL}
        if catch_up:
            store.maintenance.catch_up()
            if ingested(store.vault.state_dir) and not store.vault.is_watched():
                # no watcher chunks changed code (no daemon): this reader does, unless a
                # writer holds the code index right now (readers never wait for it)
                store.sources.refresh_now_and_then()
        # with the semantic view on, each view's first SEMANTIC_DEPTH are fused, then cut to k
        depth = max(k, SEMANTIC_DEPTH) if store.settings.semantic else k
        now = store.shared.clock()
        try:
            result = find(store.indexer, query, scope, depth, now, archived=archived)
        except SearchIndexError as err:
            # Not under the vault lock: a read-only vault's search still answers.
            store.maintenance.rebuild_damaged(err)
            result = find(store.indexer, query, scope, depth, now, archived=archived)
        if store.indexer.deferred_full and self._left_stale(result.hits):
            result = find(store.indexer, query, scope, depth, now, archived=archived)
        indexer = store.indexer
        hits = with_corrections(indexer, result.hits, depth, scope)
        vectors = store.vectors.view(locked=False)
        if vectors is not None:
            similar = [key for key, _ in vectors.hits(text, SEMANTIC_DEPTH, scope)]
            hits = fuse_similar(indexer, hits, similar, k, archived=archived)
            if hits:
                result = replace(result, weak=all(hit.weak for hit in hits))
        hits = self._checked(hits, cwd)
        read_as = tuple((s.word, s.stand_in) for s in stand_ins(indexer, query))
        code = store.sources.code_index()
        if code is not None:
            hits = [self._with_code(code, hit) for hit in hits]
            opinion = None if vectors is None else similarity(vectors.embedder)
            if chunks := code.find(text, scope, k, opinion):
                hits = fuse(hits, chunks, k)
                return replace(
                    result, hits=tuple(hits), read_as=read_as, weak=all(h.weak for h in hits)
                )
        return replace(result, hits=tuple(hits), read_as=read_as)

    def _left_stale(self, hits: Sequence[Hit]) -> bool:
        """Compare every file now if a hit's file is not as indexed, and say so: this search
        left the comparison of every file to the daemon its command starts (docs/search.md,
        rule 1), and never shows a memory's text as it was before a rewrite in place."""
        indexer = self.store.indexer
        paths = [hit.path for hit in hits if not hit.tier]
        if not paths or not indexing.changed_among(indexer, paths):
            return False
        indexer.defer_timed_full = indexer.deferred_full = False
        self.store.maintenance.catch_up()  # now due: every file compared
        return True

    def _checked(self, hits: list[Hit], cwd: Path | None) -> list[Hit]:
        """Mark the hits whose citations of the caller's repository changed (stale), ranked
        below the fresh ones of their tier; the rows read are the manifest's, never files."""
        if cwd is None or not hits:
            return hits
        store = self.store
        cites = {e.path: e.cites for e in store.indexer.by_path([h.path for h in hits]) if e.cites}
        if not cites:
            return hits
        repository = store.shared.repositories.at(store.vault.root, cwd)
        if repository is None:
            return hits
        return mark_stale(hits, cites, repository, store.shared.cite_checker(repository.root))

    def _with_code(self, code: CodeIndex, hit: Hit) -> Hit:
        """Attach where the code a memory names is (a decision beside the code it is about)."""
        entities = [entity for entity, _ in self.store.indexer.search.entities_of(hit.path)]
        refs = code.named(entities, {hit.workspace, GLOBAL})
        return replace(hit, code=tuple(refs)) if refs else hit

    @serialized
    def recall(
        self,
        query: str,
        *,
        workspace: str | None,
        k: int = 5,
        max_tokens: int | None = None,
        catch_up: bool = True,
        record_usage: bool = False,
        tiers: bool = False,
        cwd: Path | None = None,
    ) -> Recall:
        """Search, then attach corrections and neighbours, add core memories, fit a budget.

        `max_tokens` covers hits and core memories together (hits first, whole or not at all).
        `tiers`: the followed team vaults too (their hits and core memories labelled).
        `cwd`: where the caller works (search's: citations of its repository are checked).
        """
        if max_tokens is not None and max_tokens < 1:
            raise InvalidInputError(f"max_tokens must be at least 1, not {max_tokens}")
        store = self.store
        result = store.search(
            query, workspace=workspace, k=k, catch_up=catch_up, tiers=tiers, cwd=cwd
        )
        scope = None if workspace is None else {workspace, GLOBAL}
        teams = tier_stores(store) if tiers else {}
        indexer = store.indexer
        hits = [
            hit if hit.kind == CODE_KIND else neighbors_of(store, teams, hit) for hit in result.hits
        ]
        sizes = [estimate_tokens(hit.content) + HIT_OVERHEAD_TOKENS for hit in hits]
        kept, dropped = pack(hits, sizes, max_tokens)
        core = self.core_block(scope)
        if teams:
            core = merge_core([core, *team_core(teams, scope)])
        if max_tokens is not None:
            # The budget covers the whole answer: core memories fill what the hits leave.
            taken = {id(hit) for hit in kept}
            left = max_tokens - sum(
                n for hit, n in zip(hits, sizes, strict=True) if id(hit) in taken
            )
            core = tuple(pack(core, [estimate_tokens(c.content) + 10 for c in core], left)[0])
        if record_usage:  # a team tier's counts stay in its journal (service/counters.py)
            when = store.writer.timestamp()
            for tier, ids in ids_by_tier(kept).items():
                teams.get(tier, store).usage.record(ids, when)
        message = recall_message(indexer, query, kept, result.weak, dropped, result.read_as)
        return Recall(tuple(kept), core, message, result.weak, dropped)

    def core_block(self, scope: set[str] | None) -> tuple[CoreMemory, ...]:
        """Return the core memories of `scope` (None: all) that fit the core block."""
        # The block is the same for every recall until the index changes: compute it once.
        shared, indexer = self.store.shared, self.store.indexer
        key = (indexer.search.version(), tuple(sorted(scope)) if scope else None)
        if key not in shared.core_cache:
            # An index version that changed no core memory (an add of a note) has the block of
            # the one before: reading thousands of documents cost ~0.3 s at 100k (issue 39).
            entries = indexer.by_kind("core", scope)
            files = (key[1], tuple((e.path, e.hash) for e in entries))
            block = shared.core_cache.get(files) or core_memories(indexer, scope, entries)
            shared.core_cache = {key: block, files: block}
        return shared.core_cache[key]

    @serialized
    def resolve(self, id_prefix: str) -> Entry:
        """Return the one memory whose id starts with `id_prefix`."""
        prefix = check_id(id_prefix)
        self.store.maintenance.catch_up()
        return self.resolve_indexed(id_prefix, prefix)

    def resolve_indexed(self, id_prefix: str, prefix: str) -> Entry:
        """Return the one memory the index holds for `prefix` (`id_prefix` as typed)."""
        # An id `dedupe --merge` folded away names the memory it was merged into.
        entries = self.store.indexer.by_id_prefix(prefix) or self._merged_into(prefix)
        exact = [e for e in entries if e.id == prefix]
        if exact:
            entries = exact  # an id that is also a prefix of longer ids names itself
        ids = sorted({e.id for e in entries})
        if not entries:
            raise NotFoundError(
                f"no memory with id {id_prefix!r}; run 'memstore search' to find ids"
            )
        if len(ids) > 1:
            shown = ", ".join(ids[:5]) + (" …" if len(ids) > 5 else "")
            raise InvalidInputError(
                f"id prefix {id_prefix!r} matches {len(ids)} memories ({shown}); type more of it"
            )
        if len(entries) > 1:
            paths = ", ".join(e.path for e in entries)
            raise InvalidInputError(
                f"id {ids[0]!r} is used by {len(entries)} files ({paths}); rename or remove one"
            )
        return entries[0]

    def _merged_into(self, prefix: str) -> list[Entry]:
        """Return the memories whose `merged:` key names an id starting with `prefix`.

        Asked only when no memory has such an id. A merge sums `seen`, so only memories
        stored twice or more are read, and only those whose file names a `merged:` key.
        """
        vault = self.store.vault
        found = []
        for entry in self.store.indexer.entries():
            if entry.seen < 2:
                continue
            try:
                data = vault.path(entry.path).read_bytes()
            except OSError:
                continue  # gone since the catch-up: not the memory asked for
            if b"\nmerged:" in data and any(
                folded.startswith(prefix) for folded in merged_ids(vault.read(entry.path))
            ):
                found.append(entry)
        return found

    @serialized
    def hint(self, result: AddResult, text: str) -> AddResult:
        """Return an add's `result` with the memories the new one (`text`) contradicts: asked
        by whoever shows the add once it returned, outside the vault lock (service/hints.py)."""
        from memstore.service.hints import hinted

        return hinted(self.store, result, text)

    @serialized
    def show(self, id_prefix: str) -> tuple[Entry, Memory]:
        """Return a memory by id (or unique id prefix), read from its file."""
        entry = self.resolve(id_prefix)
        return entry, self.store.vault.read(entry.path)

    @serialized
    def stats(self) -> Stats:
        """Summarize the vault: memories by workspace and kind, index size, last commit."""
        store = self.store
        store.maintenance.catch_up()
        docs = store.indexer.search.documents()
        log = store.git.log(limit=1)
        return Stats(
            vault=store.vault.root,
            memories=len(docs),
            by_workspace=dict(sorted(Counter(d.workspace for d in docs).items())),
            by_kind=dict(sorted(Counter(d.kind for d in docs).items())),
            problems=len(store.indexer.problems()),
            index_bytes=store.indexer.search.size_bytes(),
            last_commit=log[0] if log else None,
        )

    @serialized
    def problems(self) -> list[tuple[str, str]]:
        """Return (path, reason) for every file that could not be read cleanly."""
        self.store.maintenance.catch_up()
        return [(p.path, p.reason) for p in self.store.indexer.problems()]

    @serialized
    def overlap(self, text: str, workspace: str) -> float:
        """Return how much of `text` an existing memory already says (0–1, term containment).

        The share of the text's index terms found in its most similar memory in the
        workspace or `global`.
        """
        wanted = terms(text)
        if not wanted:
            return 1.0
        self.store.maintenance.catch_up()
        scope = {check_workspace(workspace), GLOBAL}
        search = self.store.indexer.search
        candidates = search.search(text, workspaces=scope, limit=5, any_term=True)
        best = max((len(wanted & terms(h.document.content)) for h in candidates), default=0)
        return best / len(wanted)

    @serialized
    def changes_since_last_session(
        self, agent: str, *, tiers: bool = False
    ) -> tuple[list[LogEntry], bool]:
        """Return the commits since `agent` last asked (newest first) and remember HEAD.

        The second value is False the first time an agent asks (nothing to compare with).
        `tiers`: the followed team vaults' commits too, each summary naming its team.
        """
        store = self.store
        marker = f"briefing-{check_source(agent)}"
        since = store.vault.read_state(marker)
        head = store.git.head()
        changes = store.git.log(limit=200, since=since) if since and since != head else []
        if head:
            store.vault.write_state(marker, head)
        if tiers and (teams := tier_stores(store)):
            changes = sorted(
                [*changes, *team_changes(teams, agent)], key=lambda c: c.time, reverse=True
            )
        return changes, bool(since)

    @serialized
    def log(self, limit: int = 20) -> list[LogEntry]:
        return self.store.git.log(limit)
