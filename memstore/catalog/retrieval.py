"""Recall's pipeline over the index: views fused, ranked and tiered; corrections, neighbours, core."""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from datetime import datetime

from memstore.catalog import english_prior, particulars
from memstore.catalog.indexer import Entry, Indexer
from memstore.catalog.particulars import camel_wholes, is_specific, named_terms, orphan_parts
from memstore.catalog.request_terms import REQUEST_TERMS
from memstore.catalog.sessions import session_neighbours_raised
from memstore.catalog.subject import subject_first
from memstore.catalog.when import tells_when
from memstore.core import ranking
from memstore.core.conflicts import display_text
from memstore.core.model import GLOBAL, CoreMemory, Hit, SearchResult, summary, unsure_lead
from memstore.core.ranking import (
    CORE_BUDGET_TOKENS,
    Candidate,
    attach_corrections,
    confident,
    confident_first,
    estimate_tokens,
    evidence,
    pack,
    score,
    term_weight,
)
from memstore.index import (
    Document,
    IndexHit,
    Query,
    SearchIndex,
    StandIn,
    extract_entities,
    most_shared,
    terms,
)
from memstore.index.concepts import related

CANDIDATES = 30  # per view, before ranking cuts to k
# An entity more memories than this mention says little about which of them belong together
# (a person's @name: ~3,200 holders at 100,000 memories, ~31,000 at a million): a hit's
# neighbours leave it out. Probing its holders was ~25-37% of a recall's CPU at 1M.
COMMON_ENTITY = 1_000
# The semantic view (optional; docs/retrieval.md): each list's first SEMANTIC_DEPTH; confident
# lexical hits first and the first SEMANTIC_HEAD weak ones after them, as lexical ranked them;
# the rest fused by reciprocal rank (vector list at half weight) only when the two views'
# first SEMANTIC_AGREE share a memory, else vector-only hits after every lexical one.
SEMANTIC_DEPTH = 20
SEMANTIC_RRF_K = 60
SEMANTIC_WEIGHT = 0.5
SEMANTIC_HEAD = 2
SEMANTIC_AGREE = 5
# Concept terms (index/concepts.py) in more than this share of the memories (or
# CONCEPT_MIN_COMMON, in a small vault) say little and are not searched.
CONCEPT_MAX_SHARE = 0.1
CONCEPT_BOOST = 0.3  # a concept's term weighs this share of the query's own (0: none)
CONCEPT_MIN_COMMON = 5
FEEDBACK_DOCS = 3  # pseudo-relevance feedback: the any-word search's first hits …
FEEDBACK_TERMS = 15  # … lend their most characteristic terms to a second, boosted search …
FEEDBACK_MAX_MEMORIES = 5000  # … in vaults up to this size (above, it costs more than it helps)
# A memory holding the query's words only in its own questions ("any tips for X?") asks
# what the prompt asks: its BM25 score is lowered by this share of its idf-weighted share of
# such words (docs/retrieval.md, "Questions are not answers").
ASKED_DISCOUNT = 0.5


def find(
    indexer: Indexer,
    text: str | Query,
    scope: set[str] | None,
    k: int,
    now: datetime,
    *,
    archived: bool = False,
) -> SearchResult:
    """Return the `k` best memories for `text` in `scope` (None: every workspace).

    Archived memories are left out unless `archived` is true. The text is analysed once:
    every search, coverage and frequency below reads the same `Query`.
    """
    index = indexer.search
    query = _query(text)
    # typos=True: a word no memory holds is searched as its nearest known term (marked).
    strict = index.search(query, workspaces=scope, limit=CANDIDATES, typos=True)
    # Concepts are searched only when no memory holds every word (and weighed only with
    # credit): beside an all-words match, a related word's weak hits are noise.
    wanted = not strict or ranking.CONCEPT_CREDIT > 0
    concepts = concept_terms(index, query) if wanted else {}
    # Memories holding only some of the words fill the places all-words matches leave,
    # the words' concepts searched beside them (index/concepts.py); feedback (a second,
    # costlier search) runs only when no memory holds every word.
    loose = (
        []
        if len(strict) >= k
        else _loose(index, query, scope, feedback=not strict, concepts=sorted(concepts))
    )
    lexical: dict[str, IndexHit] = {h.document.key: h for h in [*loose, *strict]}
    complete = {h.document.key for h in strict}
    entities = [entity for entity, _ in extract_entities(query.text)]
    named = index.entity_keys(entities) if entities else {}
    documents: dict[str, Document] = {key: h.document for key, h in lexical.items()}
    others = most_shared({key: n for key, n in named.items() if key not in lexical}, CANDIDATES)
    documents.update(index.get(others))
    if scope is not None:
        documents = {key: doc for key, doc in documents.items() if doc.workspace in scope}
    if not documents:
        return SearchResult()
    entries = {entry.path: entry for entry in indexer.by_path(list(documents))}
    if not archived:
        documents = {
            key: d for key, d in documents.items() if not getattr(entries.get(key), "archived", "")
        }
        if not documents:
            return SearchResult()
    candidates = [
        _candidate(key, lexical.get(key), key in complete, named.get(key, 0), entries.get(key))
        for key in documents
    ]
    candidates = _answers_first(index, query, candidates, documents)
    candidates = tells_when(query, candidates, documents)
    candidates = subject_first(query, candidates, documents)
    best = max(c.lexical for c in candidates)
    values = {c.key: score(c, best, len(entities), now) for c in candidates}
    # The memories written beside the first hits in their sessions (catalog/sessions.py).
    values = session_neighbours_raised(indexer, candidates, values, entries, k)
    ranked = sorted(candidates, key=lambda c: (-round(values[c.key], 6), c.key))[:k]
    chosen = [(c, documents[c.key], values[c.key]) for c in ranked]
    older = _older_versions(indexer, [d for _, d, _ in chosen])
    hits = _tiered(index, query, chosen, older, concepts)
    return SearchResult(tuple(hits), weak=all(hit.weak for hit in hits))


def _answers_first(
    index: SearchIndex,
    query: Query,
    candidates: list[Candidate],
    documents: Mapping[str, Document],
) -> list[Candidate]:
    """Return `candidates` with the BM25 score of each that holds the query's words only in
    its own questions lowered: a memory asking "any tips for X?" asks what the prompt
    asks, it does not answer it (its `asked` share, weighed by idf, × ASKED_DISCOUNT)."""
    if ASKED_DISCOUNT <= 0 or not any("?" in documents[c.key].content for c in candidates):
        return candidates
    wanted = frozenset(query.terms)
    weights = _idf_weights(index, query)
    out = []
    for c in candidates:
        text = documents[c.key].content
        share = _asked(text, wanted, weights) if c.lexical > 0 and "?" in text else 0.0
        out.append(replace(c, lexical=c.lexical * (1 - ASKED_DISCOUNT * share)) if share else c)
    return out


def _idf_weights(index: SearchIndex, query: Query) -> dict[str, float]:
    documents = index.document_count()
    return {
        t: math.log((documents + 1) / max(df, 1))
        for t, df in index.holder_counts(query, typos=False).items()
    }


# where a sentence ends: after . ! or ? and a space, or at a line's end ("orders?status=open"
# in a URL is no question)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n")


def _asked(text: str, wanted: frozenset[str], weights: Mapping[str, float]) -> float:
    """Return the idf-weighted share of the query terms `text` holds that it holds only in
    sentences ending with a question mark."""
    asked: set[str] = set()
    told: set[str] = set()
    for sentence in _SENTENCE_END.split(text):
        found = terms(sentence) & wanted
        if found:
            (asked if sentence.rstrip().endswith("?") else told).update(found)
    held = asked | told
    total = sum(weights.get(t, 0.0) for t in held)
    if not total:
        return 0.0
    return sum(weights.get(t, 0.0) for t in asked - told) / total


def query_weights(
    index: SearchIndex,
    query: Query,
    concepts: Mapping[str, tuple[frozenset[str], int]] | None = None,
) -> tuple[dict[str, float], dict[str, float] | None, frozenset[str]]:
    """Return what each of the query's terms (stand-ins for unknown ones) is worth as
    evidence (core.ranking.term_weight) and, for a prompt typed to an agent (Query.chat),
    what it says of the prompt's topic (core.ranking.chat_word: English rarity caps a word the
    vault has not measured; one English lacks weighs as a name; english_prior.py), else None;
    and the prompt's strange words: plain words neither a memory nor English holds ("zigbee").
    With CONCEPT_CREDIT, an unheld word is worth its concept's commonest term (`concepts`)."""
    documents = index.document_count()
    request, named = _request_terms(), named_terms(query.text)
    camel = camel_wholes(query.text)
    # A stand-in is judged as the word typed: "want" read as "went" is still a request word.
    typed = {s.stand_in_term: s.term for s in index.stand_ins(query)}
    through = _concept_frequency(concepts) if ranking.CONCEPT_CREDIT > 0 and concepts else {}
    weights, topic, strange = {}, {}, set()
    counts = index.holder_counts(query, typos=True)
    orphans = orphan_parts(query.text, counts) if query.chat else frozenset()
    for term, df in counts.items():
        word = typed.get(term, term)
        if df <= 0 and word in through:
            df = through[word]
        specific = is_specific(word) and word not in orphans
        naming = word in named or (df <= 0 and word in camel)
        weight = term_weight(
            word, df, documents, request=word in request, specific=specific, named=naming
        )
        weights[term] = topic[term] = weight
        if query.chat and weight and df <= ranking.SAMPLE_DF and not specific and not naming:
            zipf = english_prior.zipf(word)  # a name is judged as the vault's word (a typo's
            name = (zipf if term == word else english_prior.zipf(term)) is None  # stand-in)
            weights[term], topic[term] = ranking.chat_word(weight, df, documents, zipf, name)
            if df <= 0 and name:
                strange.add(term)
    return weights, topic if query.chat else None, frozenset(strange)


def concept_terms(index: SearchIndex, query: Query) -> dict[str, tuple[frozenset[str], int]]:
    """Return the terms of the concepts the query names (index/concepts.py) that some
    memories hold, each with the query terms it stands for and how many memories hold it;
    request words and terms in more than CONCEPT_MAX_SHARE of the memories (they say
    little) are left out."""
    if CONCEPT_BOOST <= 0:
        return {}
    request = _request_terms()  # "show me" names no concert: request words name nothing
    found = related(t for t in query.terms if t not in request)
    wanted = tuple(sorted(t for t in found if t not in request))
    if not wanted:
        return {}
    # Exact live counts: Whoosh's own still count a replaced memory, and a rebuilt index
    # must search the same concepts (the index is a cache).
    held = index.live_holder_counts(Query(query.text, wanted))
    common = max(CONCEPT_MAX_SHARE * index.document_count(), CONCEPT_MIN_COMMON)
    return {t: (found[t], held[t]) for t in wanted if 0 < held.get(t, 0) <= common}


def _concept_frequency(concepts: Mapping[str, tuple[frozenset[str], int]]) -> dict[str, int]:
    """Return, per query term, how many memories hold its concept's most common term."""
    found: dict[str, int] = {}
    for sources, held in concepts.values():
        for source in sources:
            found[source] = max(found.get(source, 0), held)
    return found


def _older_versions(indexer: Indexer, documents: Sequence[Document]) -> list[set[int]]:
    """Return, for each document, the positions of those it supersedes."""
    position = {doc.id: n for n, doc in enumerate(documents)}
    older: list[set[int]] = [set() for _ in documents]
    for n, doc in enumerate(documents):
        for entry in indexer.superseded_by(doc.id) if len(documents) > 1 else ():
            if entry.id in position:
                older[position[entry.id]].add(n)
    return older


def _tiered(
    index: SearchIndex,
    query: Query,
    ranked: list[tuple[Candidate, Document, float]],
    older: list[set[int]],
    concepts: Mapping[str, tuple[frozenset[str], int]] | None = None,
) -> list[Hit]:
    """Return the ranked candidates as hits, each marked confident or weak by the evidence
    it holds (core.ranking.is_confident; docs/retrieval.md step 7), confident ones first."""
    weights, topic, strange = query_weights(index, query, concepts)
    # a typo's stand-in is a guess: it corroborates nothing (core.ranking.corroborated)
    guessed = frozenset(s.stand_in_term for s in index.stand_ins(query)) if query.chat else ()
    joined = particulars.joined_words(query.text) if query.chat else ()  # one word each
    weigh = functools.partial(evidence, weights, topic=topic, guessed=guessed, joined=joined)
    hits, found = [], []
    for candidate, doc, value in ranked:
        coverage = 1.0 if candidate.strict else index.coverage(doc, query, typos=True)
        hits.append(_hit(doc, replace(candidate, coverage=coverage), value))
        keyed = _keyword_terms(doc.keywords) if doc.keywords else frozenset()
        held = index.held_terms(doc)
        via = _held_through(concepts, held) if ranking.CONCEPT_CREDIT > 0 and concepts else ()
        found.append(weigh(held, keyed, core=doc.kind == "core", related=via))
    tiers = confident(found, older, chat=query.chat, strange=bool(strange))
    if query.chat:  # a second memory holding only the answer's words is not injected beside it
        tiers = ranking.echoes(found, tiers, older)
    hits = [replace(hit, weak=not sure) for hit, sure in zip(hits, tiers, strict=True)]
    return sorted(hits, key=lambda hit: hit.weak)  # stable: score order within each tier


def names_one_topic(text: str | Query) -> bool:
    """Say whether a prompt names one topic and asks nothing of it ("deploy", "run the
    tests": core.ranking.one_topic_word). What injects context (the prompt hook, `search
    --context`) injects nothing for it; a search for that word still finds its memories,
    confident where they hold it."""
    query = _query(text)
    return ranking.one_topic_word(query.text, query.terms, _request_terms(), is_specific)


def _held_through(
    concepts: Mapping[str, tuple[frozenset[str], int]], held: frozenset[str]
) -> set[str]:
    """Return the query terms a memory holds through a concept term (a typo's stand-in is
    judged as it is)."""
    return {s for term, (found, _) in concepts.items() if term in held for s in found}


def _request_terms() -> frozenset[str]:
    """The request words' terms (written out in catalog/request_terms.py, which a test
    compares with analysing REQUEST_WORDS)."""
    return REQUEST_TERMS


@functools.lru_cache(maxsize=4096)
def _keyword_terms(keywords: tuple[str, ...]) -> frozenset[str]:
    return frozenset(terms(" ".join(keywords)))


def _loose(
    index: SearchIndex,
    query: Query,
    scope: set[str] | None,
    *,
    feedback: bool,
    concepts: Sequence[str] = (),
) -> list[IndexHit]:
    """Any-word search whose tail is refilled by pseudo-relevance feedback.

    The first hits stay as the query found them; the terms most characteristic of them feed
    a second search whose results fill the places after them, scored just below.
    """
    first = index.search(
        query,
        workspaces=scope,
        limit=CANDIDATES,
        any_term=True,
        expansion=concepts,
        expansion_boost=CONCEPT_BOOST,
        typos=True,
    )
    if not feedback or len(first) <= FEEDBACK_DOCS or not FEEDBACK_TERMS:
        return first
    if index.count() > FEEDBACK_MAX_MEMORIES:
        return first
    head = first[:FEEDBACK_DOCS]
    extra = index.expansion_terms(
        [h.document for h in head], exclude=set(query.terms), count=FEEDBACK_TERMS
    )
    extra = [*concepts, *(t for t in extra if t not in concepts)]
    kept = {h.document.key for h in head}
    second = [
        h
        for h in index.search(
            query, workspaces=scope, limit=CANDIDATES, any_term=True, expansion=extra, typos=True
        )
        if h.document.key not in kept
    ]
    if not second:
        return first
    floor = min(h.score for h in head) * 0.99
    top = second[0].score or 1.0
    return [*head, *(IndexHit(h.document, floor * h.score / top) for h in second)]


def _hit_for(document: Document, score: float, weak: bool) -> Hit:
    """Return a hit for a memory found through another (its correction), not by the query."""
    candidate = Candidate(document.key, 0.0, 0.0, False, 0)
    return replace(_hit(document, candidate, score), weak=weak, view="correction")


def with_corrections(
    indexer: Indexer, hits: Sequence[Hit], k: int, scope: set[str] | None
) -> list[Hit]:
    """Link each hit to the memories that supersede it, bring in a correction in `scope`
    that the query did not find itself, and rank what is superseded just below what
    corrects it, keeping at most `k`: a reader should see what is true now."""
    hits = [_linked(indexer, hit) for hit in hits]
    found = {hit.id for hit in hits}
    missing = {c: hit for hit in hits for c in hit.superseded_by if c not in found}
    if not missing:
        return confident_first(hits)
    entries = [
        e
        for c in missing
        for e in indexer.by_id_prefix(c)
        if e.id == c and (scope is None or e.workspace in scope)
    ]
    documents = indexer.search.get([e.path for e in entries])
    extra = [
        _linked(indexer, _hit_for(documents[e.path], missing[e.id].score, missing[e.id].weak))
        for e in entries
        if e.path in documents
    ]
    # Ties go to the correction: it sorts before the memory it replaces.
    ordered = sorted([*extra, *hits], key=lambda h: -h.score)
    return confident_first(ordered[:k])


def fuse_similar(
    indexer: Indexer, hits: Sequence[Hit], similar: Sequence[str], k: int, *, archived: bool
) -> list[Hit]:
    """Rank lexical `hits` and the semantic view's `similar` memory paths together, keeping `k`.

    The vector view may add and reorder weak hits, never demote a confident one: confident
    lexical hits come first, then the first SEMANTIC_HEAD weak ones in lexical order (a weak
    first hit the vectors miss is still the likeliest answer). The rest follow by 1/(K +
    lexical rank) + w/(K + vector rank) when the views agree on the question (their first
    SEMANTIC_AGREE share a memory); when they do not, lexical order stands and memories only
    the vectors found come after. A memory only the vector view found is a weak hit (view
    "semantic"): sharing no word with the question, it is at most related. What a
    correction supersedes still goes just below it.
    """
    lexical = {hit.path: hit for hit in hits}
    lexical_rank = {path: rank for rank, path in enumerate(lexical, 1)}
    vector_rank = {path: rank for rank, path in enumerate(similar, 1)}
    head = {hit.path for hit in hits if not hit.weak}
    head.update([hit.path for hit in hits if hit.weak][:SEMANTIC_HEAD])
    agree = not set(list(lexical)[:SEMANTIC_AGREE]).isdisjoint(similar[:SEMANTIC_AGREE])

    def order(path: str) -> tuple[int, float, int]:
        if path in head:
            return (0 if not lexical[path].weak else 1, 0.0, lexical_rank[path])
        fused = SEMANTIC_WEIGHT / (SEMANTIC_RRF_K + vector_rank[path]) if path in vector_rank else 0
        if path in lexical:
            fused += 1 / (SEMANTIC_RRF_K + lexical_rank[path])
            return (2, -fused if agree else 0.0, lexical_rank[path])
        return (2 if agree else 3, -fused, len(lexical) + vector_rank[path])

    ranked = sorted(lexical.keys() | vector_rank.keys(), key=order)
    kept: list[Hit] = []
    while ranked and len(kept) < k:  # hits are made only for what makes the cut
        taken, ranked = ranked[: k - len(kept)], ranked[k - len(kept) :]
        kept.extend(_similar_hits(indexer, taken, lexical, vector_rank, archived=archived))
    return confident_first(kept)


def _similar_hits(
    indexer: Indexer,
    paths: Sequence[str],
    lexical: dict[str, Hit],
    similar: Collection[str],
    *,
    archived: bool,
) -> list[Hit]:
    """Return hits for `paths` in order: found lexically (marked when also similar), or
    found by the vector view alone (left out when archived or no longer indexed)."""
    others = [path for path in paths if path not in lexical]
    entries = {e.path: e for e in indexer.by_path(others)} if others else {}
    documents = indexer.search.get(others)
    made = []
    for path in paths:
        if path in lexical:
            hit = lexical[path]
            made.append(replace(hit, view=f"{hit.view}+semantic") if path in similar else hit)
        elif path in documents and path in entries and (archived or not entries[path].archived):
            candidate = Candidate(path, 0.0, 0.0, False, 0)
            hit = _hit(documents[path], candidate, 0.0)
            made.append(_linked(indexer, replace(hit, weak=True, view="semantic")))
    return made


def _linked(indexer: Indexer, hit: Hit) -> Hit:
    return replace(hit, superseded_by=tuple(e.id for e in indexer.superseded_by(hit.id)))


def with_neighbors(indexer: Indexer, hit: Hit) -> Hit:
    """Attach the ids of the memories that correct `hit` (see with_corrections) and of up to
    four that share its entities, leaving out an entity more than COMMON_ENTITY memories
    mention (a person's @name at team scale: it tells nothing about which belong together)."""
    index = indexer.search
    entities = (e for e, _ in index.entities_of(hit.path))
    ranked = index.shared_with(entities, 4, {hit.path}, common=COMMON_ENTITY)
    related = [e.id for e in sorted(indexer.by_path(ranked), key=lambda e: ranked.index(e.path))]
    return attach_corrections(hit, related)


def core_memories(
    indexer: Indexer, scope: set[str] | None, entries: list[Entry] | None = None
) -> tuple[CoreMemory, ...]:
    """Return the core memories of `scope` (None: all) that fit the core block's budget
    (`entries`: the scope's core entries, if the caller has them)."""
    entries = indexer.by_kind("core", scope) if entries is None else entries
    documents = indexer.search.get([e.path for e in entries])
    core = [
        CoreMemory(d.id, d.workspace, display_text(d.content).strip())
        for d in (documents[e.path] for e in entries if e.path in documents)
    ]
    core.sort(key=lambda c: (c.workspace == GLOBAL, c.workspace, c.id))
    kept, _ = pack(core, [estimate_tokens(c.content) + 10 for c in core], CORE_BUDGET_TOKENS)
    return tuple(kept)


def recall_message(
    indexer: Indexer,
    query: str | Query,
    hits: list[Hit],
    weak: bool,
    dropped: int,
    read_as: Sequence[tuple[str, str]] | None = None,
) -> str:
    """Return the one line a recall says about what it found (friendly when nothing).
    `read_as`: the (word, stand-in) pairs the search already found (across tiers: a word
    one tier holds is no typo), so the lexicon is not walked again."""
    if not hits and not indexer.count():
        return "Memory is empty. Store what you learn with memory_add."
    if not hits and dropped:
        return (
            f"{dropped} {'memory matches' if dropped == 1 else 'memories match'}, but none "
            "fits max_tokens; ask again with a larger max_tokens."
        )
    if not hits:
        text = _query(query).text
        return f"No memory matches {summary(text, 80)!r}. Proceed; store what you learn with memory_add."
    found = f"{len(hits)} {'memory' if len(hits) == 1 else 'memories'}"
    text = f"{unsure_lead(hits)}; {found} might be related." if weak else f"{found} found."
    if dropped:
        text += f" {dropped} more left out to fit max_tokens."
    if read_as is None:
        return typo_note(indexer, query) + text
    pairs = ", ".join(f"{word} → {known}" for word, known in read_as)
    return (f"Searched unknown words as known ones: {pairs}. " if pairs else "") + text


def stand_ins(indexer: Indexer, query: str | Query) -> list[StandIn]:
    """Return the stand-ins a search of `query` used for words no memory holds."""
    return indexer.search.stand_ins(query)


def typo_note(indexer: Indexer, query: str | Query) -> str:
    """Return the sentence that says which words were searched as others ("" if none)."""
    found = stand_ins(indexer, query)
    if not found:
        return ""
    return f"Searched unknown words as known ones: {', '.join(s.label() for s in found)}. "


def _query(query: str | Query) -> Query:
    """Return `query` as a Query: a caller that analysed it passes the value on."""
    return query if isinstance(query, Query) else Query.of(query)


def _candidate(
    key: str, hit: IndexHit | None, strict: bool, entities: int, entry: Entry | None
) -> Candidate:
    signals = {}
    if entry is not None:
        signals = {
            "created": entry.created,
            "last_recalled": entry.last_recalled,
            "seen": entry.seen,
            "recalled": entry.recalled,
            "confirmed": entry.confirmed,
        }
    return Candidate(
        key=key,
        lexical=hit.score if hit else 0.0,
        coverage=0.0,  # measured for the hits that make the cut
        strict=strict,
        entities=entities,
        **signals,  # type: ignore[arg-type]
    )


def _hit(doc: Document, candidate: Candidate, value: float) -> Hit:
    views = [
        name
        for name, found in (
            ("lexical" if candidate.strict else "any-word", candidate.lexical > 0),
            ("entity", candidate.entities > 0),
        )
        if found
    ]
    return Hit(
        id=doc.id,
        workspace=doc.workspace,
        kind=doc.kind,
        path=doc.key,
        content=display_text(doc.content),  # a conflict's versions, without markers
        keywords=doc.keywords,
        source=doc.source,
        created=doc.created,
        seen=doc.seen,
        score=round(value, 4),
        weak=True,  # until _tiered weighs its evidence
        coverage=candidate.coverage,
        view="+".join(views),
    )
