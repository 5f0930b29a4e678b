"""A new index version keeps the readers of the segments it did not change (issue 39: adds)."""

from __future__ import annotations

from pathlib import Path

from memstore.index import Document, SearchIndex


def doc(n: int, text: str, workspace: str = "w") -> Document:
    return Document(f"{workspace}/{n}.md", f"id{n:06d}", workspace, "note", text, ())


def leaves(index: SearchIndex) -> dict[str, object]:
    reader = index.reader.searcher().reader()
    return {str(r.segment().segment_id()): r for r, _ in reader.leaf_readers()}


def keys(index: SearchIndex, query: str) -> list[str]:
    return sorted(h.document.key for h in index.search(query, limit=20, any_term=True))


def test_an_add_opens_only_the_new_segment_and_finds_the_new_document(tmp_path: Path) -> None:
    index = SearchIndex.open(tmp_path / "ix")
    index.apply([doc(1, "nginx upload limit"), doc(2, "staging deploy approval")])
    index.apply([doc(3, "redis cache eviction")])
    before = leaves(index)
    assert len(before) == 2
    index.apply([doc(4, "nginx worker timeout")], new=("w/4.md",))
    after = leaves(index)
    kept = [segment for segment in before if segment in after]
    assert kept and all(after[s] is before[s] for s in kept)  # the very same reader objects
    assert set(after) - set(before)  # the new segment, opened
    assert keys(index, "nginx") == ["w/1.md", "w/4.md"]
    assert index.reader.lexicon.held_by("nginx") == 2
    index.close()


def test_a_commit_that_only_deletes_is_seen_by_the_next_searcher(tmp_path: Path) -> None:
    index = SearchIndex.open(tmp_path / "ix")
    index.apply([doc(1, "nginx upload limit"), doc(2, "nginx staging deploy")])
    index.apply([doc(3, "nginx cache eviction")])
    assert keys(index, "nginx") == ["w/1.md", "w/2.md", "w/3.md"]
    before = leaves(index)
    index.apply([], ["w/2.md"])  # no new segment: one segment gains a deletion
    after = leaves(index)
    changed = [s for s in before if s in after and after[s] is not before[s]]
    assert changed  # the segment that lost a document is read afresh
    assert keys(index, "nginx") == ["w/1.md", "w/3.md"]
    assert index.count() == 2
    index.close()
