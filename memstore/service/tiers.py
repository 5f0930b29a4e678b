"""Recall across tiers: the personal vault and each followed team vault, as one ranked list.

Each tier is searched by its own Store with its own index (the workspace rules per tier as
today), and the answers are merged. Whoosh's BM25 scores are not comparable between two
indexes (idf differs per index), but a hit's score is not a raw BM25 score: `find` divides
the lexical score by the best of its own query (core/ranking.score), so each tier's scores
are normalised already, and whether recall is confident in a hit is judged from the share
of the query's evidence it holds. The merge takes confident hits before weak ones, then
the higher normalised score, and keeps each tier's own order (a correction above what it
corrects) — docs/retrieval.md, "Recall across tiers", measures it against one vault.
The same memory in two tiers (a shared copy) appears once, the team's copy winning.

A team tier is opened once per personal store (the daemon keeps it warm between requests)
and reopened when memstore.toml changes; one that cannot be opened is left out of the
answer with a warning, never failing the personal recall.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from memstore.catalog.code_hits import KIND as CODE_KIND
from memstore.catalog.retrieval import with_neighbors
from memstore.core.errors import InvalidInputError, MemstoreError, NotFoundError
from memstore.core.model import CoreMemory, Hit, SearchResult
from memstore.core.ranking import CORE_BUDGET_TOKENS, estimate_tokens, pack
from memstore.core.vault_config import VAULT_CONFIG_NAME
from memstore.index import Query
from memstore.service.teams import Team, find_team, followed
from memstore.vault.git import LogEntry

if TYPE_CHECKING:
    from memstore.service.store import Store

log = logging.getLogger(__name__)


class Tiers:
    """The team tiers one personal store reads, opened lazily and kept between requests."""

    def __init__(self) -> None:
        self.stamp: tuple[int, int] | None = None  # memstore.toml's (mtime, size) read
        self.stores: dict[str, Store] = {}
        self.missing: list[Team] = []  # followed, not cloned (yet): looked for each time
        self.told: set[str] = set()  # tiers already warned about (once per process)

    def open(self, personal: Store) -> dict[str, Store]:
        """Return the team stores `personal` follows (name -> Store), cloned ones only."""
        stamp = _stamp(personal)
        if stamp == self.stamp:
            for team in [t for t in self.missing if (t.path / ".git").exists()]:
                self._add(personal, team)  # cloned since (a sync of another process)
            return self.stores
        self.close()
        self.stamp = stamp
        if stamp == (0, 0):
            return self.stores
        try:
            teams = followed(personal.settings)
        except MemstoreError as err:
            self._warn(VAULT_CONFIG_NAME, f"team vaults not read: {err}")
            return self.stores
        for team in teams:
            self._add(personal, team)
        return self.stores

    def _add(self, personal: Store, team: Team) -> None:
        """Open `team`'s clone as one of the tiers, or note it missing (not cloned yet, or
        not readable: left out with a warning)."""
        try:
            store = _open(personal, team.path)
        except MemstoreError as err:
            store = None
            self._warn(team.name, f"team vault {team.name!r} left out of recall: {err}")
        if team in self.missing:
            self.missing.remove(team)
        if store is None:
            self.missing.append(team)
            self._warn(
                team.name, f"team vault {team.name!r} is not cloned yet: run 'memstore sync'"
            )
            return
        self.stores = dict(sorted({**self.stores, team.name: store}.items()))

    def _warn(self, key: str, message: str) -> None:
        if key not in self.told:
            self.told.add(key)
            log.warning("%s", message)

    def close(self) -> None:
        for store in self.stores.values():
            store.close()
        self.stores = {}
        self.missing = []
        self.stamp = None


def _stamp(personal: Store) -> tuple[int, int]:
    try:
        st = os.stat(personal.vault.root / VAULT_CONFIG_NAME)
    except OSError:
        return (0, 0)
    return (st.st_mtime_ns, st.st_size)


def _open(personal: Store, path: os.PathLike[str]) -> Store | None:
    """Open a team clone as a Store of its own (None when it is not there yet)."""
    from pathlib import Path

    from memstore.service.store import Store

    root = Path(path)
    if not (root / ".git").exists():
        return None
    settings = dataclasses.replace(personal.settings, vault=root, may_create_vault=False)
    store = Store.open(settings)
    store.resident = personal.resident
    return store


def tier_stores(store: Store) -> dict[str, Store]:
    """Return the team tiers the personal `store` follows (name -> an open Store)."""
    return store.shared.tiers.open(store)


def settled(personal: Store, teams: Mapping[str, Store], query: str | Query) -> dict[str, Query]:
    """Return the query each tier ('' the personal one) is asked: a word another tier holds
    is settled where it is missing, so that tier does not walk its lexicon for a typo's
    stand-in (one index of every memory would know the word)."""
    asked = query if isinstance(query, Query) else Query.of(query)
    held: dict[str, set[str]] = {}
    for name, store in {"": personal, **teams}.items():
        with store.reading():
            counts = store.indexer.search.term_frequencies(asked)
        held[name] = {term for term, n in counts.items() if n}
    return {
        name: dataclasses.replace(
            asked,
            settled=frozenset(
                term for other, terms in held.items() if other != name for term in terms
            ),
        )
        for name in held
    }


def search_teams(
    teams: Mapping[str, Store],
    asked: Mapping[str, Query],
    *,
    workspace: str | None,
    k: int,
    archived: bool,
) -> list[SearchResult]:
    """Search each team tier (its own catch-up: no watcher follows a clone), hits labelled;
    a tier that fails is left out with a warning."""
    answers = []
    for name, team in teams.items():
        try:
            with team.reading():
                # no watcher follows a clone and only sync changes it, catching its index
                # up: a reader catches up only a clone whose HEAD moved past its index
                current = team.indexer.saw_head()
            found = team.search(
                asked[name], workspace=workspace, k=k, archived=archived, catch_up=not current
            )
        except MemstoreError as err:
            log.warning("team vault %r left out of this recall: %s", name, err)
            continue
        hits = tuple(dataclasses.replace(hit, tier=name) for hit in found.hits)
        answers.append(dataclasses.replace(found, hits=hits, problems=()))
    return answers


def merge_results(answers: Sequence[SearchResult], k: int) -> SearchResult:
    """Merge the personal answer (first) and the team tiers' into one (merge_hits)."""
    hits = merge_hits([answer.hits for answer in answers], k)
    read_as = tuple(dict.fromkeys(pair for answer in answers for pair in answer.read_as))
    return SearchResult(
        tuple(hits),
        weak=bool(hits) and all(hit.weak for hit in hits),
        problems=answers[0].problems,
        read_as=read_as,
    )


def neighbors_of(personal: Store, teams: Mapping[str, Store], hit: Hit) -> Hit:
    """Attach a hit's corrections and related memories, from the tier it was found in."""
    store = teams.get(hit.tier, personal) if hit.tier else personal
    with store.reading():
        return with_neighbors(store.indexer, hit)


def team_core(teams: Mapping[str, Store], scope: set[str] | None) -> list[tuple[CoreMemory, ...]]:
    """Return each team tier's core memories for `scope`, labelled with the tier."""
    blocks = []
    for name, team in teams.items():
        with team.reading():
            try:
                core = team.reader.core_block(scope)
            except MemstoreError as err:
                log.warning("team vault %r left out of this recall: %s", name, err)
                continue
        blocks.append(tuple(dataclasses.replace(c, tier=name) for c in core))
    return blocks


def team_changes(teams: Mapping[str, Store], agent: str) -> list[LogEntry]:
    """Return each team tier's commits since `agent` last asked, each summary naming its
    team (a tier asked the first time says none: it remembers where it is now)."""
    found = []
    for name, team in teams.items():
        try:
            changes, _ = team.changes_since_last_session(agent)
        except MemstoreError as err:
            log.warning("team vault %r left out of this briefing: %s", name, err)
            continue
        found += [dataclasses.replace(c, summary=f"{c.summary} (team {name})") for c in changes]
    return found


def ids_by_tier(hits: Iterable[Hit]) -> dict[str, list[str]]:
    """Return the memory ids among `hits` by tier ('' personal), code chunks left out."""
    found: dict[str, list[str]] = {}
    for hit in hits:
        if hit.kind != CODE_KIND:
            found.setdefault(hit.tier, []).append(hit.id)
    return found


def merge_hits(answers: Sequence[Sequence[Hit]], k: int) -> list[Hit]:
    """Merge each tier's ranked hits into one list of at most `k`.

    Confident before weak, then the higher (per tier normalised) score; each tier's own
    order is kept (its best remaining hit competes). A memory id found in several tiers
    appears once: a team's copy wins over the personal one, in the better of its places
    and as confident as the surer of them.
    """
    best: dict[str, Hit] = {}
    for hits in answers:
        for hit in hits:
            held = best.get(hit.id)
            if held is None:
                best[hit.id] = hit
                continue
            # one memory, found twice: the team's copy, as sure as the surer of the two
            kept = hit if not held.tier and hit.tier else held
            best[hit.id] = dataclasses.replace(
                kept, weak=held.weak and hit.weak, score=max(held.score, hit.score)
            )
    heads = [0] * len(answers)
    merged: list[Hit] = []
    placed: set[str] = set()
    while len(merged) < k:
        choice = None
        for i, hits in enumerate(answers):
            while heads[i] < len(hits) and hits[heads[i]].id in placed:
                heads[i] += 1
            if heads[i] < len(hits):
                hit = hits[heads[i]]
                if choice is None or _rank(hit) < _rank(answers[choice][heads[choice]]):
                    choice = i
        if choice is None:
            break
        hit = answers[choice][heads[choice]]
        heads[choice] += 1
        merged.append(best[hit.id])
        placed.add(hit.id)
    return merged


def _rank(hit: Hit) -> tuple[bool, float]:
    return (hit.weak, -round(hit.score, 6))


def merge_core(blocks: Sequence[Sequence[CoreMemory]]) -> tuple[CoreMemory, ...]:
    """Merge each tier's core memories into one block within CORE_BUDGET_TOKENS (the
    personal tier first, a memory id once, the team's copy winning)."""
    teams = {c.id for block in blocks for c in block if c.tier}
    core = [c for block in blocks for c in block if c.tier or c.id not in teams]
    unique = list({(c.tier, c.id): c for c in core}.values())
    kept, _ = pack(unique, [estimate_tokens(c.content) + 10 for c in unique], CORE_BUDGET_TOKENS)
    return tuple(kept)


def locate(store: Store, ref: str) -> tuple[str, Store, str]:
    """Return the tier ('' personal), the store and the id a memory reference names:
    `TEAM:ID` in that team tier, else an id of the personal vault, else of the one team
    tier that holds it.

    Raises:
        NotFoundError: no tier holds it, or TEAM is not a followed team cloned here.
        InvalidInputError: a bare id several team tiers hold (the message says how to pick).
    """
    name, colon, rest = ref.partition(":")
    if colon:
        teams = tier_stores(store)
        if name not in teams:
            find_team(store.settings, name)  # not followed: says which are
            raise NotFoundError(f"team vault {name!r} is not cloned here yet: run 'memstore sync'")
        teams[name].resolve(rest)
        return name, teams[name], rest
    try:
        store.resolve(ref)
        return "", store, ref
    except NotFoundError as err:
        holders = [(n, team) for n, team in tier_stores(store).items() if _holds(team, ref)]
        if not holders:
            raise err from None
    if len(holders) > 1:
        names = ", ".join(f"{n}:{ref}" for n, _ in holders)
        raise InvalidInputError(f"several team vaults hold {ref!r}; name one: {names}")
    return holders[0][0], holders[0][1], ref


def _holds(team: Store, ref: str) -> bool:
    try:
        team.resolve(ref)
    except (NotFoundError, InvalidInputError):
        return False
    return True
