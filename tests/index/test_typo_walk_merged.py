"""One walk of a typo's automaton over every segment's term table at once (index/typos.py
`merged`) finds exactly the terms that walking each table on its own finds: their union."""

from __future__ import annotations

import bisect
import random
from collections.abc import Callable
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from whoosh.automata.fsa import find_all_matches

from memstore.index import Document, SearchIndex
from memstore.index.scoring import SCORED_FIELDS
from memstore.index.typos import automaton, distance, merged, near_terms

Lookup = Callable[[str], "str | None"]


def _table(words: list[str]) -> tuple[Lookup, list[str]]:
    table = sorted(set(words))
    asked: list[str] = []

    def first_at_or_after(text: str) -> str | None:
        asked.append(text)
        at = bisect.bisect_left(table, text)
        return table[at] if at < len(table) else None

    return first_at_or_after, asked


def _each(term: str, edits: int, lookups: list[Lookup]) -> set[str]:
    """The walk before: one per table."""
    found: set[str] = set()
    for lookup in lookups:
        found.update(find_all_matches(automaton(term, edits), lookup))
    return found


@settings(max_examples=200, deadline=None)
@given(
    term=st.text("abcdeor", min_size=4, max_size=10),
    tables=st.lists(
        st.lists(st.text("abcdeor", min_size=1, max_size=12), max_size=120), min_size=1, max_size=9
    ),
)
def test_one_walk_over_all_tables_finds_each_tables_terms(
    term: str, tables: list[list[str]]
) -> None:
    for edits in (1, 2):
        lookups = [_table(words)[0] for words in tables]
        found = near_terms(term, edits, lookups)
        assert found == _each(term, edits, lookups)
        every = {w for words in tables for w in words}
        assert found == {t for t in every if t[:1] == term[:1] and distance(term, t) <= edits}


def test_a_table_is_asked_again_only_once_the_walk_passed_its_answer() -> None:
    near, asked_near = _table(["apple", "apply", "applz"])
    far, asked_far = _table(["zebra"])
    lookup = merged([near, far])
    assert [lookup(w) for w in ("app", "apple", "apple\x00", "applz\x00")] == [
        "apple",
        "apple",
        "apply",
        "zebra",
    ]
    assert asked_far == ["app"]  # its answer stayed after every word asked
    assert asked_near == ["app", "apple\x00", "applz\x00"]
    assert lookup("aaa") == "apple"  # a word before the last: every table again
    assert asked_far[-1] == "aaa"


def test_a_many_segment_index_finds_the_same_stand_ins_either_way(tmp_path: Path) -> None:
    rng = random.Random(4)
    letters = "abcdefgilmnoprstu"
    words = ["".join(rng.choice(letters) for _ in range(rng.randint(4, 11))) for _ in range(3000)]
    index = SearchIndex.open(tmp_path / "ix")
    for start in range(0, 3000, 300):  # ten segments
        index.apply(
            [
                Document(f"ws/{n:05d}.md", f"{n:08x}", "ws", "note", " ".join(words[n : n + 4]))
                for n in range(start, start + 300)
            ]
        )
    searcher = index.reader.searcher()
    leaves = [s for s, _ in searcher.reader().leaf_readers()]
    assert len(leaves) >= 3
    tables = [s.cursor(f).find for s in leaves for f in SCORED_FIELDS]
    for word in rng.sample(words, 60):
        typo = word[0] + word[2:] if len(word) > 4 else word + "x"
        for edits in (1, 2):
            assert near_terms(typo, edits, tables) == _each(typo, edits, tables)
    index.close()
