"""A typo walk over the large segments is kept across index versions while they live
(index/lexicon.py `_near_terms`): after an add, a recall's stand-ins walk only the small
segments again, and find the same terms as one walk over every segment."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from memstore.index import Document, SearchIndex
from memstore.index import lexicon as lexicon_module
from memstore.index.typos import near_terms


def _docs(words: list[str], start: int, count: int) -> list[Document]:
    return [
        Document(f"ws/{n:05d}.md", f"{n:08x}", "ws", "note", " ".join(words[n : n + 4]))
        for n in range(start, start + count)
    ]


def test_the_large_segments_walk_is_kept_after_an_add_and_the_terms_are_the_union(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lexicon_module, "LASTING_DOCS", 200)
    walks: list[int] = []  # the tables each walk was given
    real = lexicon_module.near_terms

    def counted(term: str, edits: int, lookups: Any) -> set[str]:
        lookups = list(lookups)
        walks.append(len(lookups))
        return real(term, edits, lookups)

    monkeypatch.setattr(lexicon_module, "near_terms", counted)
    rng = random.Random(7)
    letters = "abcdefgilmnoprstu"
    words = ["".join(rng.choice(letters) for _ in range(rng.randint(5, 10))) for _ in range(900)]
    index = SearchIndex.open(tmp_path / "ix")
    index.apply(_docs(words, 0, 300))  # two lasting segments
    index.apply(_docs(words, 300, 300))
    lexicon = index.reader.lexicon
    index.reader.searcher()
    typos = [w[0] + w[2:] for w in rng.sample(words[:600], 20)]
    before = {t: lexicon._near_terms(t, 2) for t in typos}
    assert walks == [2] * len(typos)  # one walk over the two large segments' tables
    near = typos[0][:3] + "x" + typos[0][3:]  # a word one edit from the first typo
    index.apply([Document("ws/new.md", "feedbeef", "ws", "note", f"a new word {near}")])
    index.reader.searcher()  # the add's index version
    walks.clear()
    for typo in typos:
        found = lexicon._near_terms(typo, 2)
        every = real(typo, 2, [run.find for run in lexicon.term_runs()])
        assert found == every  # the same terms as a walk over every segment
        assert found >= before[typo]
    assert near in lexicon._near_terms(typos[0], 2)
    assert walks == [1] * (len(typos) + 1)  # only the add's small segment walked again
    index.close()


def test_a_merge_of_the_large_segments_walks_them_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lexicon_module, "LASTING_DOCS", 200)
    rng = random.Random(9)
    words = ["".join(rng.choice("abcdeilmnorst") for _ in range(7)) for _ in range(700)]
    index = SearchIndex.open(tmp_path / "ix")
    index.apply(_docs(words, 0, 300))
    index.apply(_docs(words, 300, 300))
    lexicon = index.reader.lexicon
    index.reader.searcher()
    typo = words[5][:-1]
    lexicon._near_terms(typo, 1)
    index.compact()  # one segment in place of the two
    index.reader.searcher()
    assert lexicon._near_terms(typo, 1) == near_terms(
        typo, 1, [run.find for run in lexicon.term_runs()]
    )
    assert len(lexicon._near_of) == 1 and len(lexicon._near) == 1
    index.close()
