"""The keys sharing a memory's entities, when one entity has a long list (a person's @name at
a million memories: ~31,000 keys): the same ranking as counting every key, without reading
that list whole (index/entity_table.py `shared_with`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstore.index import Document, SearchIndex, entity_table

MENTIONS = ["@ana", "@ben", "@cleo", "src/app/main.py", "v2.3.1", "err_pnpm_peer_dep"]


def _expected(ix: SearchIndex, asked: set[str], exclude: set[str], limit: int) -> list[str]:
    counts = {k: n for k, n in ix.entity_keys(asked).items() if k not in exclude}
    return sorted(counts, key=lambda k: (-counts[k], k))[:limit]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    mentions=st.lists(st.sets(st.sampled_from(MENTIONS)), min_size=1, max_size=25),
    asked=st.sets(st.sampled_from(MENTIONS)),
    excluded=st.sets(st.integers(0, 24)),
    limit=st.integers(0, 6),
    long_list=st.integers(0, 6),
)
def test_shared_with_equals_counting_every_key_whatever_list_is_long(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    mentions: list[set[str]],
    asked: set[str],
    excluded: set[int],
    limit: int,
    long_list: int,
) -> None:
    monkeypatch.setattr(entity_table, "LONG_LIST", long_list)  # "long" above this many keys
    root = tmp_path / f"ix{len(list(tmp_path.iterdir()))}"
    ix = SearchIndex.open(root)
    try:
        ix.apply(
            [
                Document(f"w/{i:02d}.md", f"id{i:06d}", "w", "note", " ".join(["see", *sorted(m)]))
                for i, m in enumerate(mentions)
            ]
        )
        exclude = {f"w/{i:02d}.md" for i in excluded}
        expected = _expected(ix, asked, exclude, limit)
        assert ix.shared_with(asked, limit, exclude) == expected
        assert ix.shared_with(asked, limit, exclude) == expected  # from the cache
        # recall's neighbours leave out entities more than `common` documents mention
        sizes = {e: len(ix.entity_keys([e])) for e in asked}
        telling = {e for e in asked if sizes[e] <= 3}
        expected = _expected(ix, telling, exclude, limit) if telling else []
        assert ix.shared_with(asked, limit, exclude, common=3) == expected
    finally:
        ix.close()


def test_a_long_list_is_read_only_as_far_as_the_answer_needs(tmp_path: Path) -> None:
    ix = SearchIndex.open(tmp_path / "ix")
    docs = [
        Document(f"w/{n:05d}.md", f"id{n:06d}", "w", "note", f"ask @ana about it {n}")
        for n in range(6000)
    ]
    docs += [  # three of @ben's also name @ana
        Document(f"w/b{n}.md", f"ib{n:06d}", "w", "note", f"@ben {'and @ana ' * (n < 3)}{n}")
        for n in range(10)
    ]
    ix.apply(docs)
    asked, exclude = {"@ana", "@ben"}, {"w/b0.md"}
    expected = ["w/b1.md", "w/b2.md", "w/00000.md", "w/00001.md"]
    table = ix._table  # the sqlite work of the look-up: its virtual machine's steps
    steps = [0]

    def step() -> int:
        steps[0] += 1
        return 0

    table.db.set_progress_handler(step, 100)
    assert ix.shared_with(asked, 4, exclude) == expected
    table.db.set_progress_handler(None, 0)
    # reading @ana's 6,003 keys whole took ~720 steps of 100 (and a sort) before
    assert steps[0] < 400, steps[0]
    assert _expected(ix, asked, exclude, 4) == expected
    ix.close()
