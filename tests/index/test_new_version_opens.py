"""What a new index version costs to open after one add, made cheaper without changing an
answer: a term table's directory read at once, a stored column's offsets summed at once, the
analyzers unpickled with each table of contents sharing one word cache, and document
frequencies counted per kept segment."""

from __future__ import annotations

import pickle
import random
import threading
from pathlib import Path
from typing import Any

import pytest
from whoosh import columns
from whoosh.filedb import filetables
from whoosh.filedb.filestore import RamStorage

from memstore.index import Document, SearchIndex, _patches
from memstore.index import lexicon as lexicon_module
from memstore.index.analysis import ExactAnalyzer, WordCachedAnalyzer
from memstore.index.schema import make_schema

WORDS = ["nginx", "upload", "deploy", "kafka", "redis", "retry", "queue", "worker", "token"]
WORDS += ["Über", "dấu", "l'erreur", "v2.3.1", "src/app/main.py", "部署需要审批"]


def _doc(rng: random.Random, n: int) -> Document:
    body = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 30)))
    keywords = tuple(sorted({rng.choice(WORDS) for _ in range(rng.randint(0, 3))}))
    return Document(f"ws/{n}.md", f"{n:08x}", "ws", "note", body, keywords)


def test_a_term_tables_directory_read_at_once_is_whooshs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = SearchIndex.open(tmp_path / "ix")
    rng = random.Random(5)
    for n in range(8):  # several segments, each with its term table
        index.apply([_doc(rng, n)])
    index.close()
    opened: list[str] = []

    def both(self: Any, dbfile: Any, length: Any = None, *args: Any) -> None:
        theirs = object.__new__(type(self))
        _patches.WHOOSH_HASH_READER_INIT(theirs, dbfile, length, *args)
        _patches._hash_reader_init(self, dbfile, length, *args)
        for field in ("tables", "endofdata", "startofdata", "hashtype", "extras"):
            assert getattr(self, field) == getattr(theirs, field), field
        opened.append(type(self).__name__)

    monkeypatch.setattr(filetables.HashReader, "__init__", both)
    reopened = SearchIndex.open(tmp_path / "ix")
    hits = reopened.search("nginx upload kafka", any_term=True, limit=20)
    # every segment's term table went through both (tiers merged some of the eight)
    assert hits and len(opened) >= reopened.segment_count() > 2
    reopened.close()


def test_a_hash_file_read_with_the_directory_at_once_finds_every_key() -> None:
    storage = RamStorage()
    writer = filetables.HashWriter(storage.create_file("table"))
    pairs = {f"key-{n}".encode(): f"value {n}".encode() for n in range(3000)}
    for key, value in pairs.items():
        writer.add(key, value)
    writer.close()
    _patches.apply()
    reader = filetables.HashReader.open(storage, "table")
    assert len(reader.tables) == 256 and sum(n for _, n in reader.tables) >= len(pairs)
    assert all(reader[key] == value for key, value in pairs.items())
    assert b"key-absent" not in reader
    reader.close()


@pytest.mark.parametrize("count", [0, 1, 3, 70, 3000])
@pytest.mark.parametrize("ordered", [False, True])
def test_hash_tables_written_at_once_are_whooshs_bytes(count: int, ordered: bool) -> None:
    """A term table's 256 hash tables and directory, packed and written once each (an add's
    segment has ~500 slots), are byte for byte what Whoosh writes a slot at a time."""
    kind = filetables.OrderedHashWriter if ordered else filetables.HashWriter
    rng = random.Random(count)
    keys = sorted({f"{rng.choice(WORDS)}-{n}".encode() for n in range(count)})
    values = [key[::-1] * rng.randint(0, 3) for key in keys]
    written = []
    for way in ("whoosh", "patched"):
        storage = RamStorage()
        writer = kind(storage.create_file("table"))
        if way == "whoosh":  # on the instance: the class keeps the patch apply() installs
            writer._write_hashes = _patches.WHOOSH_WRITE_HASHES.__get__(writer)
            writer._write_directory = _patches.WHOOSH_WRITE_DIRECTORY.__get__(writer)
        else:
            writer._write_hashes = _patches._write_hashes.__get__(writer)
            writer._write_directory = _patches._write_directory.__get__(writer)
        for key, value in zip(keys, values, strict=True):
            writer.add(key, value)
        writer.close()
        written.append(bytes(storage.open_file("table").read()))
    assert written[0] == written[1] and len(written[0]) > 256 * 12


@pytest.mark.parametrize("kind", [WordCachedAnalyzer, ExactAnalyzer])
def test_analyzers_unpickled_with_the_schema_share_one_word_cache(kind: type[Any]) -> None:
    schema = make_schema()
    first = pickle.loads(pickle.dumps(kind()))
    text = "Über den dấu l'erreur: the workers were running v2.3.1 deploys"
    expected = kind().terms(text)
    assert first.terms(text) == expected
    second = pickle.loads(pickle.dumps(kind()))
    assert second is not first and second._terms is first._terms  # the words known already
    assert second.terms(text) == expected
    assert second == first and hash(second) == hash(first)
    # the schema's own analyzers (what a table of contents unpickles) answer the same
    again = pickle.loads(pickle.dumps(schema))
    assert [t.text for t in again["content"].analyzer(text, mode="index")] == [
        t.text for t in schema["content"].analyzer(text, mode="index")
    ]
    if kind is WordCachedAnalyzer:  # the exact analyzer keeps its own cache and chain
        exact = pickle.loads(pickle.dumps(ExactAnalyzer()))
        assert exact._terms is not second._terms and exact._chain is not second._chain


def test_each_thread_shares_its_own_word_cache() -> None:
    # a cache another thread starts over (past WORD_CACHE words) must not lose the words a
    # thread's term_counts just filled: threads never share one
    here = pickle.loads(pickle.dumps(WordCachedAnalyzer()))
    there: list[Any] = []
    thread = threading.Thread(
        target=lambda: there.extend(pickle.loads(pickle.dumps(WordCachedAnalyzer())) for _ in "ab")
    )
    thread.start()
    thread.join(timeout=60)
    assert not thread.is_alive()
    assert there[0]._terms is there[1]._terms  # shared within the other thread
    assert there[0]._terms is not here._terms
    assert there[0].terms("the workers were running") == here.terms("the workers were running")


def _whoosh_counts(index: SearchIndex, terms: list[str]) -> dict[tuple[str, str], int]:
    reader = index.reader.searcher().reader()
    return {
        (field, term): reader.doc_frequency(field, term)
        for field in ("content", "keywords")
        for term in terms
    }


@pytest.mark.parametrize("read_whole_after", [lexicon_module.READ_WHOLE_AFTER, 1])
def test_document_frequencies_kept_per_segment_are_whooshs_through_many_versions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, read_whole_after: int
) -> None:
    # 1: a small segment's terms are read whole at its first look-up (Lexicon._asked_of)
    monkeypatch.setattr(lexicon_module, "READ_WHOLE_AFTER", read_whole_after)
    rng = random.Random(23)
    index = SearchIndex.open(tmp_path / "ix")
    lexicon = index.reader.lexicon
    terms = ["nginx", "upload", "deploy", "kafka", "redi", "worker", "token", "absent"]
    keys: list[str] = []
    for commit in range(45):  # one document a commit, as adds make them: tiers merge
        n = len(keys) + commit
        replaced = [] if commit % 4 else [_doc(rng, int(k[3:-3])) for k in keys[-2:]]
        gone = [keys.pop(rng.randrange(len(keys)))] if commit % 6 == 5 and keys else []
        index.apply([_doc(rng, n), *replaced], gone)
        keys.append(f"ws/{n}.md")
        index.reader.searcher()
        asked = rng.sample(terms, 4)  # some terms asked in earlier versions, some not
        expected = _whoosh_counts(index, asked)
        assert {(f, t): lexicon.frequency(f, t) for f, t in expected} == expected
        assert all(
            lexicon.held_by(t) == expected["content", t] + expected["keywords", t] for t in asked
        )
    live = {segment for segment, _, counts in lexicon._segments if counts is not None}
    assert len(lexicon._segment_counts) == len(live)  # merged-away segments dropped
    assert bool(lexicon._whole) == (read_whole_after == 1) and lexicon._whole <= set(
        lexicon._segment_counts
    )
    index.compact()
    index.reader.searcher()
    assert {(f, t): lexicon.frequency(f, t) for f in ("content",) for t in terms} == {
        k: v for k, v in _whoosh_counts(index, terms).items() if k[0] == "content"
    }
    assert len(lexicon._segment_counts) == 1
    index.close()


def test_a_stored_columns_offsets_summed_at_once_are_whooshs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(9)
    docs = [_doc(rng, n) for n in range(300)]
    docs[5] = Document("ws/5.md", "00000005", "ws", "note", "", ())  # empty values too
    index = SearchIndex.open(tmp_path / "ix")
    index.apply(docs, new={d.key for d in docs})
    index.close()
    read: list[int] = []

    def both(self: Any) -> None:
        _patches.WHOOSH_READ_OFFSETS(self)
        theirs = (list(self._offsets), list(self._lengths), self.had_stored_offsets)
        _patches._read_offsets_and_lengths(self)
        assert (list(self._offsets), list(self._lengths), self.had_stored_offsets) == theirs
        assert self._offsets.typecode == "L" or self.had_stored_offsets
        read.append(len(self._offsets))

    monkeypatch.setattr(columns.VarBytesColumn.Reader, "_read_offsets_and_lengths", both)
    reopened = SearchIndex.open(tmp_path / "ix")
    assert reopened.get([d.key for d in docs]) == {d.key: d for d in docs}
    assert read and max(read) == len(docs)
    reopened.close()
