"""Ranking's pure rules: decay and reinforcement, tiers, corrections, token budgets."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstore.core.model import Hit
from memstore.core.ranking import (
    Candidate,
    Evidence,
    attach_corrections,
    chat_word,
    confident,
    demote_superseded,
    echoes,
    evidence,
    one_topic_word,
    pack,
    prompt_words,
    score,
    strength,
    term_weight,
    topical,
    unknown_weight,
    unmeasured,
)
from memstore.service.store import Store
from tests.conftest import git

NOW = datetime(2026, 11, 29, tzinfo=UTC)


def ago(days: float) -> str:
    return (NOW - timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")


def candidate(**fields: object) -> Candidate:
    base = {
        "key": "k",
        "lexical": 1.0,
        "coverage": 1.0,
        "strict": True,
        "entities": 0,
        "created": ago(30),
    }
    return Candidate(**{**base, **fields})  # type: ignore[arg-type]


def hit(memory_id: str, superseded_by: tuple[str, ...] = (), score_: float = 1.0) -> Hit:
    return Hit(
        memory_id,
        "global",
        "note",
        f"global/{memory_id}.md",
        "text",
        (),
        "",
        "",
        1,
        score_,
        False,
        superseded_by=superseded_by,
    )


@given(st.floats(0, 3000), st.floats(0, 3000))
def test_decay_lowers_strength_with_time_but_never_to_zero(a: float, b: float) -> None:
    young, old = sorted((a, b))
    s_young, s_old = (
        strength(candidate(created=ago(young)), NOW),
        strength(candidate(created=ago(old)), NOW),
    )
    assert 0 < s_old <= s_young <= 1


@given(st.integers(0, 20), st.integers(0, 5), st.floats(1, 2000))
def test_recalls_and_confirmations_slow_the_decay(
    recalled: int, confirmed: int, days: float
) -> None:
    plain = strength(candidate(created=ago(days)), NOW)
    used = strength(candidate(created=ago(days), recalled=recalled + 1, confirmed=confirmed), NOW)
    assert used >= plain


def test_a_memory_that_keeps_coming_back_consolidates() -> None:
    four = strength(candidate(created=ago(400), recalled=4), NOW)
    five = strength(candidate(created=ago(400), recalled=5), NOW)
    assert five > four * 2  # the consolidated tier decays four times slower


def test_last_use_counts_from_the_latest_recall() -> None:
    stale = candidate(created=ago(300))
    fresh = replace(stale, last_recalled=ago(1))
    assert strength(fresh, NOW) > strength(stale, NOW)


def test_decay_lowers_rank_but_a_better_match_still_wins() -> None:
    old_strong = candidate(key="a", lexical=1.0, created=ago(1000))
    new_weak = candidate(key="b", lexical=0.5, created=ago(0), strict=False)
    assert score(old_strong, 1.0, 0, NOW) > score(new_weak, 1.0, 0, NOW)
    assert score(old_strong, 1.0, 0, NOW) > 0


def test_tiers() -> None:
    # Held by 1 of 100 memories: one unit; a request word and an unknown number: nothing.
    assert term_weight("word", 1, 100, request=False, specific=False, named=False) == 1.0
    assert term_weight("word", 30, 100, request=True, specific=False, named=False) == 0.0
    assert term_weight("word", 0, 100, request=False, specific=True, named=True) == 0.0
    assert term_weight("word", 0, 100, request=False, specific=False, named=False) == 1.0  # unknown
    assert term_weight("word", 0, 100, request=False, specific=False, named=True) == 0.0
    assert term_weight("word", 2, 100, request=False, specific=True, named=True) > 1.0
    weights = {"upload": 0.5, "413": 1.6, "over": 0.0, "sandwich": 1.0}
    found = evidence(weights, {"upload", "413", "over"}, {"413"})
    assert found == Evidence(round(2.1 / 3.1, 4), round(0.5 + 1.6 * 1.5, 4))
    assert evidence(weights, {"upload"}, (), core=True).units == 0.75
    assert confident([Evidence(0.7, 1.0), Evidence(0.6, 1.2), Evidence(0.9, 0.5)]) == [
        False,  # below 0.8 of the best share
        False,
        False,  # most of the query, but worth less than a unit
    ]
    assert confident([Evidence(0.8, 1.0), Evidence(0.7, 1.2)]) == [True, True]
    # A lead: under the share, far ahead of the rest and worth enough.
    assert confident([Evidence(0.45, 2.5), Evidence(0.2, 1.25)]) == [True, False]
    assert confident([Evidence(0.45, 2.5), Evidence(0.2, 1.3)]) == [False, False]
    assert confident([Evidence(0.45, 1.9), Evidence(0.2, 0.5)]) == [False, False]
    # … unless what comes close is an older version of it.
    assert confident([Evidence(0.45, 2.5), Evidence(0.4, 2.5)], [{1}, set()]) == [True, False]
    # In a prompt typed to an agent, a hit holding a strict part of the lead's words is no
    # rival (it finds the same words less well); one holding a word the lead lacks still is.
    lead = Evidence(0.45, 2.5, frozenset({"backfill", "export"}))
    part, other = Evidence(0.2, 1.3, frozenset({"export"})), Evidence(0.2, 1.3, frozenset({"gap"}))
    assert confident([lead, part], chat=True) == [True, False]
    assert confident([lead, part]) == [False, False]  # a search means every word: as before
    assert confident([lead, other], chat=True) == [False, False]


def test_an_everyday_word_says_less_of_a_prompts_topic_than_a_rare_one() -> None:
    # Zipf values from the shipped list: "dies" 5.42, "delayed" 4.40; None: a word English
    # rarely uses ("kubernetes", "lorawan") or a product name.
    dies, delayed, rare = unknown_weight(5.42), unknown_weight(4.40), unknown_weight(None)
    assert 0.3 < dies < delayed < 1.0 == rare == unknown_weight(2.0)
    assert unknown_weight(8.0) == 0.0  # in every memory-sized text: says nothing
    # The vault has not measured a word one of 89 memories holds that English puts in about
    # one text of 125; at 100,000 memories, two holding it say the vault rarely speaks of it.
    assert unmeasured(1, 89, 5.42) and unmeasured(0, 89, None) and unmeasured(2, 10**5, None)
    assert not unmeasured(2, 10**5, 5.42) and not unmeasured(3, 89, 5.42)
    # What a word says of the topic: its weight, no more than its English rarity there.
    assert topical(1.0, 1, 89, 5.42) == dies
    assert topical(0.4, 1, 89, 5.42) == 0.4  # below the cap: kept
    assert topical(1.0, 1, 89, None) == 1.0
    assert topical(0.9, 5, 89, 5.42) == 0.9  # measured: the vault's own weight
    assert topical(0.0, 0, 89, 5.42) == 0.0  # a request word or a particular stays nothing


def test_a_word_english_lacks_that_one_or_two_memories_hold_weighs_as_a_name() -> None:
    """In a prompt typed to an agent, "borgmatic" held by one memory of 89 is the vault's name
    for a tool: twice its idf in units, as an identifier; its share of the topic is its idf."""
    one = term_weight("borgmatic", 1, 89, request=False, specific=False, named=False)
    assert chat_word(one, 1, 89, None, True) == (2 * one, one)
    two = term_weight("traefik", 2, 89, request=False, specific=False, named=False)
    assert chat_word(two, 2, 89, None, True) == (2 * two, two)
    # An everyday word the vault happens to hold ("study", Zipf 5.0) stays as it was.
    assert chat_word(one, 1, 89, 5.0, False) == (one, topical(one, 1, 89, 5.0))
    assert chat_word(one, 1, 89, 5.0, False)[0] == one
    # A typo of an everyday word ("prnter" for "printer"): English lacks what was typed, not
    # the vault's word, so it is no name; its topic is still weighed as typed.
    assert chat_word(one, 1, 89, None, False) == (one, one)
    # No memory holds it (it only counts against), or three do (the vault measured it):
    assert chat_word(1.0, 0, 89, None, True) == (1.0, 1.0)
    three = term_weight("helm", 3, 89, request=False, specific=False, named=False)
    assert chat_word(three, 3, 89, None, True) == (three, three)
    assert chat_word(0.0, 1, 89, None, True) == (0.0, 0.0)  # a request word stays nothing


def test_a_prompts_topic_weighs_the_share_not_the_units() -> None:
    """An everyday word no memory holds counts less against the hit's share; the units it
    holds (what clears EVIDENCE_UNITS) are what the vault measured."""
    weights = {"battery": 0.85, "release": 0.6, "die": 1.0, "few": 1.0}
    topic = {**weights, "die": unknown_weight(5.42), "few": unknown_weight(5.77)}
    plain = evidence(weights, {"battery", "release"}, ())
    chat = evidence(weights, {"battery", "release"}, (), topic=topic)
    assert plain.share < 0.65 <= chat.share and plain.units == chat.units == 1.45


def test_superseded_hits_move_below_their_correction() -> None:
    hits = [hit("old", superseded_by=("new",)), hit("other"), hit("new")]
    assert [h.id for h in demote_superseded(hits)] == ["other", "new", "old"]
    assert attach_corrections(hits[0], ["x", "y"]).neighbors == ("new", "x")


@given(st.lists(st.integers(1, 50), max_size=12), st.one_of(st.none(), st.integers(0, 200)))
def test_pack_keeps_order_never_cuts_and_fits_the_budget(
    sizes: list[int], budget: int | None
) -> None:
    items = list(range(len(sizes)))
    kept, dropped = pack(items, sizes, budget)
    assert kept == sorted(kept) and len(kept) + dropped == len(items)
    if budget is not None:
        assert sum(sizes[i] for i in kept) <= budget


def test_a_confirmation_outweighs_recalls_but_not_relevance() -> None:
    """What memory_confirm is meant to change: four months after their last recall, a
    memory the person confirmed once ranks above one recalled four times, which ranks
    above one recalled once; a clearly better match still ranks first."""

    def after(**counts: int) -> float:
        used = candidate(created=ago(400), last_recalled=ago(120), **counts)
        return score(used, 1.0, 0, NOW)

    once, four, confirmed = after(recalled=1), after(recalled=4), after(recalled=1, confirmed=1)
    assert confirmed > four > once
    assert confirmed / once > 1.08  # the boost is at most 15%: it reorders near ties
    fresh_confirmed = candidate(lexical=0.7, confirmed=3, last_recalled=ago(0))
    plain = candidate(created=ago(400))
    assert score(plain, 1.0, 0, NOW) > score(fresh_confirmed, 1.0, 0, NOW)


def test_confirm_is_one_commit_and_raises_strength(store: Store, vault) -> None:  # type: ignore[no-untyped-def]
    added = store.add("Staging uses the shared redis on 6380", workspace="global")
    memory = store.confirm(added.id[:5])
    assert memory.confirmed == 1 and store.show(added.id)[1].confirmed == 1
    assert git(vault, "log", "-1", "--format=%s").startswith("confirm(global): Staging uses")
    assert store.confirm(added.id).confirmed == 2


@given(
    counts=st.dictionaries(st.text(min_size=1, max_size=4), st.integers(1, 4), max_size=60),
    limit=st.integers(1, 8),
)
def test_most_shared_equals_a_full_sort(counts: dict[str, int], limit: int) -> None:
    from memstore.index import most_shared

    assert most_shared(counts, limit) == sorted(counts, key=lambda k: (-counts[k], k))[:limit]


@pytest.mark.parametrize(
    ("text", "terms", "one"),
    [
        ("deploy", ["deploy"], True),
        ("run the tests", ["run", "test"], True),  # "run" is a request word
        ("how do changes get to prod?", ["chang", "get", "prod"], False),  # a question
        ("what is sidekiq", ["sidekiq"], False),
        ("P3009", ["p3009"], False),  # a code is a particular, not a topic
        ("deploy harbor", ["deploy", "harbor"], False),
        ("thanks!", [], True),
        ("resume doesnt work", ["resum"], False),  # a problem stated asks for help
        ("the watchdog is broken", ["watchdog", "broken"], False),
        ("cmake fails", ["cmake"], False),
        ("looks good, commit it", ["commit"], True),
        ("nothing", ["noth"], True),  # "not" inside a word is no negation
    ],
)
def test_one_topic_word(text: str, terms: list[str], one: bool) -> None:
    def specific(term: str) -> bool:
        return any(c.isdigit() for c in term)

    assert one_topic_word(text, terms, {"run", "get", "chang"}, specific) is one


def test_a_rival_of_everyday_words_is_weighed_as_its_share_is_in_a_prompt() -> None:
    """In a prompt typed to an agent, another hit is weighed as the prompt's topic weighs its
    words (`evidence(topic=...)`): one holding "directly" and "internal", which the vault
    happens to hold once each (1.67 units) but English uses every day (0.9 of the topic), is
    no second answer beside a lead of 2.76 units. A search or recall weighs it as before."""
    weights = {"edit": 0.67, "sql": 0.74, "db": 0.67, "intern": 0.67, "direct": 1.0}
    weights |= {"order": 0.74, "line": 0.84}  # held by neither
    topic = {**weights, "direct": 0.44, "intern": 0.45, "line": 0.41}
    keyed = frozenset({"sql"})
    lead = evidence(weights, {"edit", "sql", "db", "intern"}, keyed, topic=topic)
    other = evidence(weights, {"direct", "intern"}, (), topic=topic)
    assert lead.units > 2 and other.units > lead.units / 2 > other.topical  # type: ignore[operator]
    assert confident([lead, other], chat=True) == [True, False]
    assert lead.share < 0.65 and confident([lead, other]) == [False, False]
    assert evidence(weights, lead.held, keyed).topical is None


def ev(
    share: float, units: float, held: str, topical: float | None = None, **kw: object
) -> Evidence:
    return Evidence(share, units, frozenset(held.split()), topical, **kw)  # type: ignore[arg-type]


def test_a_lead_corroborated_by_three_words_needs_a_smaller_share_in_a_prompt() -> None:
    """A prompt typed to an agent says much in passing: a hit holding 3 of its words worth
    2 units, with no other hit worth half as much, leads from a share of 0.2, not 0.4. One
    word, or two worth under 4 units, is a coincidence and still needs 0.4; a search or
    recall (every word meant) keeps 0.4."""
    other = ev(0.1, 0.7, "invoic")
    three = ev(0.3, 2.5, "consum lag invoic")
    assert confident([three, other], chat=True) == [True, False]
    assert confident([three, other]) == [False, False]
    # a word neither a memory nor English knows ("zigbee"): the prompt is about something else
    assert confident([three, other], chat=True, strange=True) == [False, False]
    assert confident([ev(0.3, 2.5, "consum lag"), other], chat=True) == [False, False]
    assert confident([ev(0.19, 2.5, "consum lag invoic"), other], chat=True)[0] is False
    assert confident([ev(0.25, 4.0, "tailwind class"), other], chat=True)[0] is True
    assert confident([ev(0.25, 3.9, "tailwind class"), other], chat=True)[0] is False
    # a rival worth more than half its units still stops it
    assert confident([three, ev(0.2, 1.3, "pdf worker")], chat=True) == [False, False]


def test_a_typos_stand_in_corroborates_nothing() -> None:
    """A typo "sale" searched as "scale": a guess is no corroborating word."""
    guessed = ev(0.33, 2.7, "invoic page scale", guessed=frozenset({"scale"}))
    assert confident([guessed, ev(0.1, 0.7, "invoic")], chat=True)[0] is False
    found = evidence({"invoic": 1.0, "scale": 1.0}, {"invoic", "scale"}, (), guessed={"scale"})
    assert found.guessed == frozenset({"scale"})


def test_a_hit_holding_the_same_words_for_fewer_units_is_no_rival_in_a_prompt() -> None:
    """Two hits hold the same two words; the lead's writer named them as keywords (more
    units). In a prompt the other is no rival; in a search it is, as before; with one word
    each, or equal units, each stays the other's rival."""
    lead, other = ev(0.6, 2.13, "flash usb", 1.8), ev(0.6, 1.42, "flash usb", 1.2)
    assert confident([lead, other], chat=True) == [True, False]
    assert confident([lead, other]) == [False, False]
    one, single = ev(0.5, 2.2, "flash", 2.2), ev(0.5, 1.44, "flash", 1.44)
    assert confident([one, single], chat=True) == [False, False]
    twin = ev(0.6, 2.13, "flash usb", 2.13)
    assert confident([lead, twin], chat=True) == [False, False]


def test_a_rival_holding_half_as_many_words_as_a_corroborated_lead_is_none_in_a_prompt() -> None:
    """A lead holding 4 of a prompt's words ("export", "bookings", "csv", "year"); another
    hit holds 2 (a core rule's "studio" and "bookings", worth more than half the lead's
    units). In a prompt the 2 words answer less of it: no rival. A search counts it; a lead of
    3 words beside 2 keeps its rival; a joined identifier's terms are one word."""
    lead = ev(0.58, 3.46, "book csv export year", 3.0)
    other = ev(0.21, 2.89, "book studio", 1.95)
    assert confident([lead, other], chat=True) == [True, False]
    assert confident([lead, other]) == [False, False]
    three = ev(0.5, 3.0, "book csv export", 3.0)
    assert confident([three, other], chat=True) == [False, False]
    weights = {"dev": 0.85, "tti": 1.0, "0": 0.6, "monitor": 1.0}
    path = (frozenset({"dev", "tti", "0", "/dev/ttyusb0"}),)
    parts = evidence(weights, {"dev", "tti", "0"}, (), topic=weights, joined=path)
    assert prompt_words(parts) == 1 and len(parts.held) == 3
    assert prompt_words(evidence(weights, {"dev", "tti", "0"}, (), topic=weights)) == 3
    assert evidence(weights, {"dev"}, (), joined=path).words is None  # a search: terms


def test_a_confident_hit_holding_only_another_ones_words_for_fewer_units_echoes_it() -> None:
    """Two confident hits hold "api" and "deploy"; the deploy rule (core, keywords) for more
    units: the other echoes it and is made weak. One holding a word of its own stays, so do
    equal units, and an older version found with its correction is left as it is."""
    rule, note = ev(1.0, 1.99, "api deploy"), ev(1.0, 1.01, "api deploy")
    assert echoes([rule, note], [True, True], [set(), set()]) == [True, False]
    assert echoes([rule, note], [False, True], [set(), set()]) == [False, True]
    more = ev(0.9, 1.2, "api deploy worker")
    assert echoes([rule, more], [True, True], [set(), set()]) == [True, True]
    twin = ev(1.0, 1.99, "api deploy")
    assert echoes([rule, twin], [True, True], [set(), set()]) == [True, True]
    # the note is the rule's older version (the rule supersedes it): the hook shows the rule
    assert echoes([rule, note], [True, True], [{1}, set()]) == [True, True]
    # an older version of something else with more units silences nothing
    old, correction = ev(1.0, 2.5, "api deploy"), ev(1.0, 1.2, "api deploy")
    assert echoes([old, correction, note], [True, True, True], [set(), {0}, set()]) == [
        True,
        True,
        False,
    ]
