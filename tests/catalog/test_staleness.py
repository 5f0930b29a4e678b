"""catalog/staleness.py's pure parts: the manifest's cites column and the order of stale hits."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memstore.catalog.staleness import cites_column, confident_fresh_first, parse_cites_column
from memstore.core.citations import Cite
from memstore.core.model import Hit, StaleCite

_TEXT = st.text(min_size=0, max_size=12)
_CITES = st.lists(
    st.builds(
        Cite,
        repo=_TEXT.filter(bool),
        path=_TEXT.filter(bool),
        symbol=_TEXT,
        lines=st.none() | st.tuples(st.integers(1, 99), st.integers(100, 999)),
        blob=_TEXT,
        digest=_TEXT,
        at=_TEXT,
    ),
    max_size=4,
)


@given(_CITES)
def test_the_cites_column_reads_back_the_same_citations(cites: list[Cite]) -> None:
    assert parse_cites_column(cites_column(cites)) == tuple(cites)


def test_a_column_another_version_wrote_reads_as_no_citation() -> None:
    assert parse_cites_column("") == ()
    assert parse_cites_column("{not json") == ()
    assert parse_cites_column('[["only", "three", "fields"]]') == ()


def hit(memory_id: str, *, weak: bool, stale: bool, superseded_by: tuple[str, ...] = ()) -> Hit:
    marks = (StaleCite("a.py:f", "changed", "a.py:f changed"),) if stale else ()
    return Hit(
        id=memory_id,
        workspace="w",
        kind="note",
        path=f"w/{memory_id}.md",
        content=memory_id,
        keywords=(),
        source="",
        created="",
        seen=1,
        score=1.0,
        weak=weak,
        superseded_by=superseded_by,
        stale=marks,
    )


def test_stale_hits_go_below_the_fresh_ones_of_their_tier_in_their_order() -> None:
    hits = [
        hit("cs1", weak=False, stale=True),
        hit("cf1", weak=False, stale=False),
        hit("cs2", weak=False, stale=True),
        hit("ws1", weak=True, stale=True),
        hit("wf1", weak=True, stale=False),
        hit("cf2", weak=False, stale=False),
    ]
    order = [h.id for h in confident_fresh_first(hits)]
    assert order == ["cf1", "cf2", "cs1", "cs2", "wf1", "ws1"]


def test_what_a_stale_correction_supersedes_stays_just_below_it() -> None:
    hits = [
        hit("new", weak=False, stale=True),
        hit("old", weak=False, stale=False, superseded_by=("new",)),
        hit("other", weak=False, stale=False),
    ]
    assert [h.id for h in confident_fresh_first(hits)] == ["other", "new", "old"]
