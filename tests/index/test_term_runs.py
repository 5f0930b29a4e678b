"""A typo walk looks terms up in each segment's sorted terms held in memory (index/lexicon.py
`TermRun`), read once per segment, not in Whoosh's term files at every step: the same
answers, and a walk after the first reads no term file."""

from __future__ import annotations

import heapq
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from whoosh.codec import whoosh3

from memstore.index import Document, SearchIndex
from memstore.index.scoring import SCORED_FIELDS
from memstore.index.typos import near_terms

LETTERS = "abcdefgilmnoprstuüé"


@settings(max_examples=200, deadline=None)
@given(
    fields=st.lists(st.lists(st.text(LETTERS, min_size=1, max_size=9), max_size=60), max_size=2),
    asked=st.lists(st.text(LETTERS + "\x00z", max_size=10), min_size=1, max_size=20),
)
def test_a_run_answers_the_first_term_at_or_after_a_word(
    fields: list[list[str]], asked: list[str]
) -> None:
    from memstore.index.lexicon import TermRun  # here: the last test runs on the code before

    tables = [sorted({w.encode("utf-8") for w in words}) for words in fields]
    run = TermRun(heapq.merge(*tables))
    every = sorted({w for words in fields for w in words})
    assert len(run) == len(every)
    for word in asked:
        assert run.find(word) == next((t for t in every if t >= word), None)


@pytest.fixture
def many(tmp_path: Path) -> tuple[SearchIndex, list[str]]:
    """An index of ten segments of words drawn from one alphabet (typos land near many)."""
    rng = random.Random(7)
    letters = LETTERS[:-2]  # ASCII: a stand-in's written form is its term
    words = ["".join(rng.choice(letters) for _ in range(rng.randint(4, 11))) for _ in range(3000)]
    index = SearchIndex.open(tmp_path / "ix")
    for start in range(0, 3000, 300):  # ten segments
        index.apply(
            [
                Document(
                    f"ws/{n:05d}.md",
                    f"{n:08x}",
                    "ws",
                    "note",
                    " ".join(words[n : n + 4]),
                    keywords=(words[(n * 7) % 3000],),
                )
                for n in range(start, start + 300)
            ]
        )
    return index, words


def test_runs_find_the_terms_whooshs_term_files_find(
    many: tuple[SearchIndex, list[str]],
) -> None:
    index, words = many
    lexicon = index.reader.lexicon
    index.reader.searcher()
    runs = [run.find for run in lexicon.term_runs()]
    leaves = [s for s, _ in index.reader.searcher().reader().leaf_readers()]
    assert len(runs) == len(leaves) >= 3
    files = [s.cursor(f).find for s in leaves for f in SCORED_FIELDS]
    rng = random.Random(8)
    for word in rng.sample(words, 80):
        typo = word[0] + word[2:] if len(word) > 4 else word + "x"
        for edits in (1, 2):
            assert near_terms(typo, edits, runs) == near_terms(typo, edits, files)
    index.close()


def test_a_walk_after_the_first_reads_no_term_file(
    many: tuple[SearchIndex, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    index, words = many
    find = whoosh3.W3FieldCursor.find  # a binary search of one field's term file
    seeks: list[object] = []

    def counted(self: object, term: object) -> object:
        seeks.append(term)
        return find(self, term)

    monkeypatch.setattr(whoosh3.W3FieldCursor, "find", counted)
    long = [w for w in words if len(w) >= 8]
    typos = [w[0] + w[2:] for w in (long[10], long[500], long[900])]  # a letter left out
    assert index.stand_ins(typos[0])  # the first walk reads each segment's terms once
    seeks.clear()
    assert index.stand_ins(typos[1]) and index.stand_ins(typos[2])
    assert seeks == []  # ten segments × two fields at each step, before
    index.close()
