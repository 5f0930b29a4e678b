"""A one-shot search's searcher: Whoosh's Searcher as far as it is used, without its modules.

A process that answers one search (scoring.PLAIN) asks its searcher for the reader, whether
the index moved on, and stored fields; importing `whoosh.searching` for that brings in
highlighting, classification and Whoosh's scoring too (~2 ms of CPU, 4 modules), and
building a Searcher makes one more per segment (12 at 100,000 memories). `ReaderSearcher` answers those from the
reader as the Searcher does, and on the first use of anything else builds that Searcher
over the same reader, once, and answers through it (tests/index/test_lean_searcher.py).
"""

from __future__ import annotations

from typing import Any

# What Whoosh's Searcher copies from its reader on construction (whoosh/searching.py).
COPIED = (
    *("stored_fields", "all_stored_fields", "has_vector", "vector", "vector_as", "lexicon"),
    *("field_terms", "frequency", "doc_frequency", "term_info", "doc_field_length"),
    *("corrector", "iter_docs"),
)


class ReaderSearcher:
    """Whoosh's Searcher over `reader` of `ix`, answering from the reader what it can."""

    def __init__(self, reader: Any, ix: Any) -> None:
        self._reader = reader
        self._ix = ix
        self._searcher: Any = None  # Whoosh's, once something only it has is asked for
        for name in COPIED:
            setattr(self, name, getattr(reader, name))

    def reader(self) -> Any:
        return self._reader

    def up_to_date(self) -> bool:
        """Whether the index is still at this reader's generation (as Searcher says)."""
        return bool(self._ix.latest_generation() == self._reader.generation())

    def doc_count(self) -> int:
        return int(self._reader.doc_count())

    def doc_count_all(self) -> int:
        return int(self._reader.doc_count_all())

    def close(self) -> None:
        if self._searcher is not None:
            self._searcher.close()  # closes the reader, as it would have
        else:
            self._reader.close()

    def __enter__(self) -> ReaderSearcher:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_reader", "_ix", "_searcher"):
            raise AttributeError(name)
        if self._searcher is None:
            from whoosh.searching import Searcher

            self._searcher = Searcher(self._reader, fromindex=self._ix)
        return getattr(self._searcher, name)
