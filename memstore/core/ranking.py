"""Ranking recall results: view fusion, boosts and decay, tiers, corrections, token budgets."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TypeVar

from memstore.core.model import Hit

CHARS_PER_TOKEN = 4  # a rough, stated estimate; see docs/benchmarks.md for its error
HIT_OVERHEAD_TOKENS = 30  # id, workspace, kind, keywords, score around each hit's text
CORE_BUDGET_TOKENS = 400

T = TypeVar("T")


def estimate_tokens(text: str) -> int:
    """Estimate how many tokens a model spends on `text`."""
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def demote_superseded(hits: Sequence[Hit]) -> list[Hit]:
    """Move each hit just below the correction that supersedes it, when both were found."""
    ordered = list(hits)
    for _ in range(len(ordered)):  # bounded: a supersede cycle cannot loop forever
        ids = [hit.id for hit in ordered]
        for i, hit in enumerate(ordered):
            later = [ids.index(c) for c in hit.superseded_by if c in ids and ids.index(c) > i]
            if later:
                # After pop(i) the correction sits at max(later) - 1: insert right after it.
                ordered.insert(max(later), ordered.pop(i))
                break
        else:
            break
    return ordered


def attach_corrections(hit: Hit, related: Sequence[str], limit: int = 2) -> Hit:
    """Return `hit` with its neighbours: its corrections first, then `related`, at most `limit`."""
    neighbors = list(dict.fromkeys([*hit.superseded_by, *related]))
    neighbors = [n for n in neighbors if n != hit.id][:limit]
    return replace(hit, neighbors=tuple(neighbors))


def pack(items: Sequence[T], sizes: Sequence[int], budget: int | None) -> tuple[list[T], int]:
    """Keep items, in order, whose sizes fit the budget; an item is kept whole or not at all.

    Returns the kept items and how many were left out (None: no budget, keep all).
    """
    if budget is None:
        return list(items), 0
    kept: list[T] = []
    used = 0
    for item, size in zip(items, sizes, strict=True):
        if used + size > budget:
            continue
        kept.append(item)
        used += size
    return kept, len(items) - len(kept)


# --- ranking candidates --------------------------------------------------------------
# Every constant below is measured on the shipped evaluation fixture (memstore eval) and,
# where it applies, on LoCoMo; docs/retrieval.md gives the figures behind each.

ENTITY_WEIGHT = 0.5  # a shared exact entity (path, identifier, URL …) next to BM25F
STRICT_BONUS = 1.0  # a memory holding every query word ranks above ones holding some
STRENGTH_WEIGHT = 0.15  # how much a memory in active use outranks a forgotten one
SEEN_WEIGHT = 0.05  # per doubling of how often the same memory was stored
STABILITY_DAYS = 60.0  # decay time of a memory never recalled
RECALL_GAIN = 0.5  # each recall adds half a stability
CONFIRM_GAIN = 2.0  # a person's confirmation counts four recalls
CONSOLIDATE_AFTER = 5  # recalls after which a memory decays four times slower
CONSOLIDATED_FACTOR = 4.0
# Tiers (docs/retrieval.md step 7): one evidence score per hit, measured in "units", the
# weight of a word only one memory holds (ln(N + 1) for N memories).
CONFIDENT_SHARE = 0.65  # a confident hit holds this share of the query's evidence weight …
EVIDENCE_UNITS = 1.0  # … worth at least this many units …
NEAR_BEST = 0.8  # … and at least this share of what the best hit holds;
LEAD_SHARE = 0.4  # or it holds this share, worth …
LEAD_UNITS = 2.0  # … this many units, and no other hit's evidence is worth more than …
LEAD_RATIO = 0.5  # … this share of its own.
# In a prompt typed to an agent, a lead corroborated by CORROBORATING terms of the prompt, or
# worth CORROBORATED_UNITS × LEAD_UNITS, needs only this share (`corroborated`).
CORROBORATED_SHARE = 0.2
CORROBORATING = 3
CORROBORATED_UNITS = 2.0
# In such a prompt, a hit holding the same words (this many or more) as a lead, for fewer
# units, is no rival of it (`rivals`).
SAME_WORDS = 2
# In such a prompt, a hit holding at most 1 / FEWER_WORDS as many of the prompt's words as a
# lead holding CORROBORATING or more is no rival of it (`rivals`, `prompt_words`).
FEWER_WORDS = 2
SPECIFIC_GAIN = 2.0  # a number, code or identifier ("413", "p3009", "checkout.spec.ts")
KEYWORD_GAIN = 1.5  # a term the memory's stored keywords hold (its writer's own evidence)
CORE_GAIN = 1.5  # a core memory: a standing rule, meant to apply whenever its subject comes up
UNKNOWN_WEIGHT = 1.0  # a word no memory holds counts against every hit, in units, at most
# … scaled by how rare the word is in English (`unknown_weight`; catalog/english_prior.py
# ships the frequencies): its English idf over memory-sized texts of PRIOR_TEXT_WORDS words,
# as a share of the idf of a word at PRIOR_FLOOR_ZIPF, the rarest the shipped list holds.
PRIOR_TEXT_WORDS = 30
PRIOR_FLOOR_ZIPF = 2.5
# A plain word at most this many memories hold, where English expects no more in a vault
# that size either, is one the vault has not measured: it counts no more than English says.
SAMPLE_DF = 2
# In a prompt typed to an agent, a word English lacks that one to this many memories hold is
# the vault's own name for a thing (a product, a tool, a host): it weighs as a name (`chat_word`).
NAME_DF = 2
# A query word a memory holds only as another word of its concept ("revert" as "rollback",
# index/concepts.py) counts this share of its weight (0: a concept only ranks, never counts).
CONCEPT_CREDIT = 0.0
# General English request and chat vocabulary: what people ask an agent *to do*, not what
# about. These words say nothing about which memory a prompt wants; they weigh nothing.
_REQUEST_TEXT = """
    make fix fail work help need want get use try run see show tell know think look find
    change add remove set let go come take give keep put check say ask like mean
    thing stuff way issue problem question idea thank thanks hey hi hello ok okay sure
    now again still already yet really actually maybe quite even ever lately recently
    day week yesterday tomorrow
    over under after before up down out off via without within across around
    all every each other another same new old good bad big small many much more most less
    one first last next time today always sometimes lot bit almost anymore anyway pretty
    please pls plz thx btw whats thats theres dont doesnt didnt isnt cant wont im ive
    someone something anything everything nothing somewhere anywhere seem
    since too until while though although because whether either both such instead rather
    enough also per quick quickly somehow asap
"""
REQUEST_WORDS = frozenset(_REQUEST_TEXT.split())


@dataclass(frozen=True)
class Candidate:
    """One memory a view proposed, with what ranking needs to know about it."""

    key: str
    lexical: float  # BM25F score; 0 when only the entity view found it
    coverage: float  # share of the query's terms it contains
    strict: bool  # it contains every query term
    entities: int  # query entities it names
    created: str = ""
    last_recalled: str = ""
    seen: int = 1
    recalled: int = 0
    confirmed: int = 0


def days_between(earlier: str, now: datetime) -> float:
    """Days from an ISO timestamp to `now` (0 when unknown or in the future)."""
    if not earlier:
        return 0.0
    try:
        then = datetime.fromisoformat(earlier.replace("Z", "+00:00"))
    except ValueError:
        return 0.0
    if then.tzinfo is None:
        then = then.replace(tzinfo=UTC)
    return max((now - then).total_seconds() / 86400, 0.0)


def strength(candidate: Candidate, now: datetime) -> float:
    """Reinforcement and decay: exp(-time since last use / stability), in (0, 1]."""
    stability = STABILITY_DAYS * (
        1 + RECALL_GAIN * candidate.recalled + CONFIRM_GAIN * candidate.confirmed
    )
    if candidate.recalled >= CONSOLIDATE_AFTER or candidate.confirmed:
        stability *= CONSOLIDATED_FACTOR
    last_use = max(candidate.last_recalled, candidate.created)
    return math.exp(-days_between(last_use, now) / stability)


def score(candidate: Candidate, best_lexical: float, query_entities: int, now: datetime) -> float:
    """Fuse the views and apply the boosts; decay lowers a score, it never removes a hit."""
    lexical = candidate.lexical / best_lexical if best_lexical > 0 else 0.0
    entity = (
        ENTITY_WEIGHT * min(candidate.entities, query_entities) / query_entities
        if query_entities
        else 0.0
    )
    boost = (
        1
        + STRENGTH_WEIGHT * strength(candidate, now)
        + SEEN_WEIGHT * math.log2(max(candidate.seen, 1))
    )
    return (lexical + entity + (STRICT_BONUS if candidate.strict else 0.0)) * boost


@dataclass(frozen=True)
class Evidence:
    """What a memory shares with a query, weighed: see `evidence`."""

    share: float  # of the query's evidence weight, the share this memory holds
    units: float  # what it holds, in units (a word only one memory holds is worth 1)
    held: frozenset[str] = field(default=frozenset(), compare=False)  # query terms it holds
    topical: float | None = field(default=None, compare=False)  # units, weighed by topic
    guessed: frozenset[str] = field(default=frozenset(), compare=False)  # held as stand-ins
    words: int | None = field(default=None, compare=False)  # the prompt's words it holds


def unknown_weight(zipf: float | None) -> float:
    """Return the most a plain word the vault has not measured says of a prompt's topic, in
    units, from how common it is in English: `zipf`, log10 of its frequency per billion
    words (None: not among the shipped list's words, as rare as a word gets).

    A word's English document frequency over texts of PRIOR_TEXT_WORDS words is p =
    min(1, PRIOR_TEXT_WORDS * 10^(zipf - 9)); the word says UNKNOWN_WEIGHT times its idf
    -log p as a share of the idf of a word at PRIOR_FLOOR_ZIPF: an everyday word ("dies",
    "delayed") that any prompt may use in passing about half, a rare one (an identifier, a
    product name the vault lacks) in full, one in most texts nothing.
    """
    if zipf is None or zipf <= PRIOR_FLOOR_ZIPF:
        return UNKNOWN_WEIGHT
    every = 9 - math.log10(PRIOR_TEXT_WORDS)  # the Zipf value of a word in every such text
    share = (every - zipf) / (every - PRIOR_FLOOR_ZIPF)
    return UNKNOWN_WEIGHT * min(max(share, 0.0), 1.0)


def unmeasured(df: int, documents: int, zipf: float | None) -> bool:
    """Say whether a vault of `documents` memories, SAMPLE_DF or fewer of which hold a word
    (`df`), is too small to have measured how rare the word is: English (`zipf`) expects no
    more than SAMPLE_DF of that many memory-sized texts to hold it either. (In 89 memories,
    one holding "dies" is chance; in 100,000, two holding it say the vault rarely speaks of
    it.)"""
    if df > SAMPLE_DF:
        return False
    if zipf is None:
        return True
    texts = min(1.0, PRIOR_TEXT_WORDS * 10 ** (zipf - 9))
    return documents * texts <= SAMPLE_DF


def topical(weight: float, df: int, documents: int, zipf: float | None) -> float:
    """Return what a plain word of a prompt typed to an agent says of its topic, in units:
    its `weight` (term_weight), but no more than its English rarity (unknown_weight) where
    the vault has not measured the word (`unmeasured`: no memory, or as few as English would
    expect, holds it). A hit's share of the prompt is weighed by this (`evidence`); the units
    it holds stay what the vault measured."""
    if weight <= 0 or not unmeasured(df, documents, zipf):
        return weight
    return min(weight, unknown_weight(zipf))


def chat_word(
    weight: float, df: int, documents: int, zipf: float | None, name: bool
) -> tuple[float, float]:
    """Return what a plain word of a prompt typed to an agent, held by at most SAMPLE_DF
    memories, is worth: in units, and of the prompt's topic (`topical`, from the word's
    English frequency `zipf`). A word English lacks (`name`: judged as the vault's word, so a
    typo of an everyday word is none) that one to NAME_DF memories hold is the vault's own
    name for a thing ("mlflow", "testflight", a host): it counts SPECIFIC_GAIN in units, as
    an identifier does; its share of the topic stays what it was. An everyday word stays."""
    topic = topical(weight, df, documents, zipf)
    if name and 0 < df <= NAME_DF and weight > 0:
        return weight * SPECIFIC_GAIN, topic
    return weight, topic


def term_weight(
    term: str, df: int, documents: int, *, request: bool, specific: bool, named: bool
) -> float:
    """Return what a query term is worth as evidence, in units: its inverse document
    frequency ln((N + 1) / df) / ln(N + 1), times SPECIFIC_GAIN for a number, code or whole
    identifier (`specific`).

    A request word weighs nothing. A word no memory holds (df 0) is never held, so it only
    counts against: UNKNOWN_WEIGHT, as much as a word one memory holds; unless it comes from
    a number, code or identifier (`named`: "1MB", "lodash-es") or has under 3 letters (a
    flag's "-h"): a prompt's particulars, not its topic, weigh nothing when no memory knows
    them.
    """
    if request or documents <= 0:
        return 0.0
    if df <= 0:
        return 0.0 if named or specific or len(term) < 3 else UNKNOWN_WEIGHT
    idf = math.log((documents + 1) / df) / math.log(documents + 1)
    return idf * SPECIFIC_GAIN if specific else idf


def evidence(
    weights: Mapping[str, float],
    held: Collection[str],
    keyed: Collection[str],
    *,
    core: bool = False,
    related: Collection[str] = (),
    topic: Mapping[str, float] | None = None,
    guessed: Collection[str] = (),
    joined: Sequence[frozenset[str]] = (),
) -> Evidence:
    """Weigh what a memory holds of a query: `weights` per query term (term_weight), `held`
    the terms the memory contains, `keyed` those its stored keywords hold (worth
    KEYWORD_GAIN more in the units, not in the share); a `core` memory's units count
    CORE_GAIN more. Query terms in `related` but not in `held`, which the memory holds only
    as another word of their concept, count CONCEPT_CREDIT of their weight. The share is
    weighed by `topic` where given (a prompt typed to an agent: `topical`), and so are the
    units it holds as a rival of another hit (`Evidence.topical`). `guessed`: the query's
    terms that stand in for a word no memory holds (a typo's nearest term), which the
    memory holds as guesses (`Evidence.guessed`: no corroboration, `corroborated`).
    `joined`: the terms of each joined identifier of a prompt typed to an agent
    (catalog.particulars.joined_words), one word each (`Evidence.words`, `prompt_words`)."""
    shares = weights if topic is None else topic
    total = sum(shares.values())
    if total <= 0:
        return Evidence(0.0, 0.0)
    matched = [term for term, weight in weights.items() if weight and term in held]
    via = sum(w for t, w in shares.items() if w and t in related and t not in held)
    share = (sum(shares[t] for t in matched) + CONCEPT_CREDIT * via) / total
    units = sum(weights[t] * (KEYWORD_GAIN if t in keyed else 1.0) for t in matched)
    units += CONCEPT_CREDIT * via
    units *= CORE_GAIN if core else 1.0
    plain = None
    if topic is not None:
        plain = sum(topic[t] * (KEYWORD_GAIN if t in keyed else 1.0) for t in matched)
        plain = round(plain * (CORE_GAIN if core else 1.0), 4)
    held_terms = frozenset(matched)
    stand_ins = held_terms & set(guessed)
    words = None
    if topic is not None:  # a prompt typed to an agent: a joined identifier is one word
        left = held_terms - stand_ins
        groups = [group for group in joined if left & group]
        words = len(left.difference(*groups)) + len(groups)
    return Evidence(round(share, 4), round(units, 4), held_terms, plain, stand_ins, words)


def prompt_words(found: Evidence) -> int:
    """Return how many of a prompt's words a hit holds: its terms, a typo's stand-in left
    out, the terms of one joined identifier ("/dev/ttyUSB0": `dev`, `tti`, `0`) counted once."""
    if found.words is not None:
        return found.words
    return len(found.held - found.guessed)


# A question: a question mark anywhere, or an English question word first.
_QUESTION = re.compile(
    r"\?|^\W*(?:how|what|whats|why|where|when|which|who|whom|whose|is|are|can|could|do|does"
    r"|did|should|would|will)\b",
    re.IGNORECASE,
)
# A problem stated: a negation or a word of failure ("resume doesn't work", "X is not set,
# cmake fails"). A prompt saying something is wrong with its topic asks for help with it.
_PROBLEM = re.compile(
    r"\b(?:not|never|cannot|can'?t|doesn'?t|don'?t|isn'?t|won'?t|didn'?t|aren'?t|wasn'?t"
    r"|broken|breaks|fails|failing|failed|crash(?:es|ed|ing)?|stuck|wrong)\b",
    re.IGNORECASE,
)


def one_topic_word(
    text: str,
    query_terms: Collection[str],
    request: Collection[str],
    specific: Callable[[str], bool],
) -> bool:
    """Say whether a prompt names one topic and asks nothing of it: one term besides request
    words ("deploy", "run the tests", "looks good, commit it"), not a number, code or
    identifier (`specific`: "P3009" or "pm_static.yml" alone are particulars a memory may
    hold), not a question ("how do changes get to prod?" asks) and states no problem with
    it ("resume doesn't work" asks for help: `_PROBLEM`). Such a prompt finds what mentions
    the word, not an answer: what injects context (the prompt hook, `search --context`)
    injects nothing for it (catalog.retrieval.names_one_topic)."""
    content = [t for t in query_terms if t not in request]
    if len(content) > 1 or any(specific(t) for t in content):
        return False
    return _QUESTION.search(text) is None and _PROBLEM.search(text) is None


def confident(
    found: Sequence[Evidence],
    older: Sequence[Collection[int]] | None = None,
    *,
    chat: bool = False,
    strange: bool = False,
) -> list[bool]:
    """Say, for each hit of one query, whether recall is confident in it.

    Confident: it holds at least CONFIDENT_SHARE of the query's evidence, worth at least
    EVIDENCE_UNITS, and at least NEAR_BEST of what the best hit holds; or it leads: it holds
    LEAD_SHARE, worth LEAD_UNITS, and no other hit's evidence is worth more than LEAD_RATIO
    of its own (an older version of it, `older[i]`: the positions of the hits it supersedes,
    is not another answer; nor, in a prompt typed to an agent, `chat`, is a hit holding only
    part of its words: `rivals`; and another hit there counts its `topical` units, its words
    weighed as the prompt's topic weighs them: one holding everyday words the vault happens to
    hold once is no second answer; and there a `corroborated` lead needs only
    CORROBORATED_SHARE, unless the prompt holds a `strange` word, one neither a memory nor
    English knows, "zigbee": it says the prompt is about something the vault lacks). One common word that stems to a vault word is not
    evidence; a code only this memory holds is. (A prompt of one topic word injects
    nothing: `one_topic_word`, read by what injects context, not here: a search for that
    word is answered.)
    """
    best = max((f.share for f in found), default=0.0)
    tiers = []
    for i, f in enumerate(found):
        if f.units < EVIDENCE_UNITS - 1e-9 or f.share < NEAR_BEST * best - 1e-9:
            tiers.append(False)
            continue
        skip = older[i] if older else ()
        runner_up = max(
            (
                o.topical if chat and o.topical is not None else o.units
                for j, o in enumerate(found)
                if j not in skip and rivals(o, f, chat=chat)
            ),
            default=0.0,
        )
        floor = CORROBORATED_SHARE if chat and not strange and corroborated(f) else LEAD_SHARE
        leads = f.share >= floor and f.units >= LEAD_UNITS and runner_up <= LEAD_RATIO * f.units
        tiers.append(f.share >= CONFIDENT_SHARE - 1e-9 or leads)
    return tiers


def corroborated(found: Evidence) -> bool:
    """Say whether a hit's evidence is more than one coincidence: it holds CORROBORATING
    terms of the query (a typo's stand-in, a guess, is none), or is worth CORROBORATED_UNITS
    times what a lead needs."""
    words = len(found.held - found.guessed)
    return words >= CORROBORATING or found.units >= CORROBORATED_UNITS * LEAD_UNITS - 1e-9


def rivals(other: Evidence, lead: Evidence, *, chat: bool) -> bool:
    """Say whether `other` is another answer to a query `lead` may lead. In a prompt typed to
    an agent (`chat`), a hit holding a strict part of the lead's words ("nightly_export"
    where the lead holds it and "backfill") is not: it finds the same words less well, it
    answers nothing else. Nor is one holding the same SAME_WORDS or more words as the lead
    for fewer units: the lead's writer named those words as its keywords, or it is a core
    rule (`evidence`), the other merely mentions them. Nor, beside a lead holding
    CORROBORATING or more of the prompt's words, is a hit holding at most half as many
    (FEWER_WORDS, `prompt_words`): two words, one a core rule's or a number's, worth more than
    half of a lead that holds four ("export", "bookings", "csv", "year") answer less of the
    prompt. A search or recall (every word meant) counts both, as before."""
    if other is lead:
        return False
    if not chat or not other.held:
        return True
    if other.held < lead.held:
        return False
    mine, theirs = prompt_words(lead), prompt_words(other)
    if mine >= CORROBORATING and FEWER_WORDS * theirs <= mine:
        return False
    return not (
        other.held == lead.held and len(other.held) >= SAME_WORDS and other.units < lead.units
    )


def echoes(
    found: Sequence[Evidence], tiers: Sequence[bool], older: Sequence[Collection[int]]
) -> list[bool]:
    """Return `tiers` (a prompt typed to an agent's, `confident`) with each confident hit that
    echoes another made weak: it holds exactly the words another confident hit holds, for
    fewer units (that hit's writer named them as its keywords, or it is a core rule). It adds
    no word of the prompt the other lacks, only a second memory on the same topic beside the
    answer ("how does the api get deployed": the deploy rule, not also the note that
    mentions the api's deploy). A hit with words of its own stays. An older version found
    with its correction (`older[i]`: the positions of the hits hit i supersedes) is left as it
    is, and so is that pair: the hook shows the correction in its place."""
    replaced: set[int] = set().union(*older) if older else set()
    out = list(tiers)
    for i, f in enumerate(found):
        if not tiers[i] or i in replaced:
            continue
        out[i] = not any(
            tiers[j] and o.held == f.held and o.units > f.units
            for j, o in enumerate(found)
            if j != i and j not in replaced and j not in older[i] and i not in older[j]
        )
    return out


def confident_first(hits: Sequence[Hit]) -> list[Hit]:
    """Return `hits` with every confident one before every weak one, in order otherwise;
    a superseded memory that recall is confident in makes its correction confident (what is
    true now is as sure as what it replaced), and the correction goes first."""
    sure = {h.id for h in hits if not h.weak}
    lifted = [
        replace(h, weak=False)
        if h.weak and any(o.id in sure for o in hits if h.id in o.superseded_by)
        else h
        for h in hits
    ]
    return sorted(demote_superseded(lifted), key=lambda h: h.weak)
