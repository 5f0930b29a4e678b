"""The engine's public face: documents and a query in, hits out; patches applied on open."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import memstore.index
from memstore.index import Document, Query, SearchIndex, query
from memstore.index.analysis import WordCachedAnalyzer
from memstore.service.store import Store

PUBLIC = [
    "Document",
    "IndexHit",
    "Part",
    "Query",
    "SearchIndex",
    "SearchIndexError",
    "StandIn",
    "connect_read_only",
    "document_entities",
    "extract_entities",
    "most_shared",
    "terms",
]


def test_the_index_exports_documents_and_a_query_in_hits_out_and_nothing_else() -> None:
    assert sorted(memstore.index.__all__) == sorted(PUBLIC)
    for name in memstore.index.__all__:
        assert getattr(memstore.index, name) is not None, name
    # the process pool and the Whoosh patches are no part of it
    assert not {"shared", "as_helper", "usable_cores", "write_part"} & set(memstore.index.__all__)
    assert not any("patch" in name.lower() for name in memstore.index.__all__)


def test_whoosh_is_patched_when_an_index_is_opened_not_when_the_package_is_imported(
    tmp_path: Path,
) -> None:
    code = (
        "from whoosh.filedb import structfile\n"
        "original = structfile.BufferFile.__init__\n"
        "import memstore.index\n"
        "from memstore.index import SearchIndex, _patches\n"
        "assert structfile.BufferFile.__init__ is original, 'patched on import'\n"
        f"SearchIndex.open(__import__('pathlib').Path({str(tmp_path / 'ix')!r})).close()\n"
        "patched = structfile.BufferFile.__init__\n"
        "assert patched is not original and patched is _patches._mapped_buffer_file\n"
        "_patches.apply()\n"
        "assert structfile.BufferFile.__init__ is patched  # once: a second apply changes nothing\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_query_is_analysed_once_and_is_the_same_value_for_the_same_text() -> None:
    first = Query.of("Why doesn't the nginx upload_limit apply?")
    assert first.terms == ("nginx", "upload_limit", "upload", "limit", "appli")
    assert Query.of(first.text) is first
    assert first.sources["appli"] == "apply"
    assert set(first.terms) == memstore.index.terms(first.text)


def test_a_search_analyses_the_query_text_once(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    for text in ("nginx upload limit is 1MB", "the nginx proxy buffers", "upload to s3 fails"):
        store.add(text, workspace="w")
    text = "nginx uplaod timeout proxy"  # a typo, a word no memory holds: every step runs
    analysed: list[str] = []
    real = WordCachedAnalyzer.terms

    def counted(self: WordCachedAnalyzer, value: str) -> list[str]:
        if value == text:
            analysed.append(value)
        return real(self, value)

    monkeypatch.setattr(WordCachedAnalyzer, "terms", counted)
    query._parse.cache_clear()
    result = store.search(text, workspace="w", k=5)
    assert result.hits and result.read_as == (("uplaod", "upload"),)
    assert len(analysed) == 1


def test_documents_in_hits_out(tmp_path: Path) -> None:
    index = SearchIndex.open(tmp_path / "ix")
    index.apply([Document("w/a.md", "a1", "w", "note", "nginx upload limit")])
    hits = index.search(Query.of("upload limits"))
    assert [(h.document.key, h.document.id) for h in hits] == [("w/a.md", "a1")]
    assert index.search("upload limits") == hits  # a text is read as its Query
    index.close()
