"""A Whoosh segment writer that gathers postings by term and writes each term's blocks at once.

Whoosh's `SegmentWriter` turns every posting into a 5-tuple, sorts all of them at commit,
and hands them one at a time through three method calls (with type assertions) to its
posting writer: at 100,000 memories, ~3 million postings and most of a rebuild's time
outside the analyzer. This writer files each posting under its field and term as it comes
(a term's postings arrive in document order, so nothing is sorted but the terms) and fills
a whole block of Whoosh's posting writer at once. The segment it writes is byte for byte
the one Whoosh writes from the same documents (`tests/index/test_bulk.py` compares the files);
only the path there changed.

Everything is kept in memory until the commit, as Whoosh's pool does within its `limitmb`
(the callers' budgets hold every posting of their commits); `compact`, which merges a
whole index, keeps Whoosh's own writer and its spilling to disk.
"""

from __future__ import annotations

from array import array
from collections import Counter
from typing import Any

from whoosh import formats
from whoosh.system import pack_uint
from whoosh.writing import SegmentWriter

from . import _patches
from ._patches import length_column
from .analysis import WordCachedAnalyzer

# One term's postings: document numbers, weights and encoded values, in document order.
Postings = tuple[list[int], list[float], list[bytes]]


class TermPool:
    """Postings by field and term (what a `SegmentWriter` calls its pool)."""

    def __init__(self) -> None:
        self.fields: dict[str, dict[bytes, Postings]] = {}

    def add(self, item: tuple[str, bytes, int, float, bytes | None]) -> None:
        """File one (field, term, document, weight, value) posting (merges add these)."""
        fieldname, term, docnum, weight, value = item
        postings = self._terms(fieldname).get(term)
        if postings is None:
            postings = self.fields[fieldname][term] = ([], [], [])
        postings[0].append(docnum)
        postings[1].append(weight)
        postings[2].append(value or b"")

    def _terms(self, fieldname: str) -> dict[bytes, Postings]:
        terms = self.fields.get(fieldname)
        if terms is None:
            terms = self.fields[fieldname] = {}
        return terms

    def cleanup(self) -> None:
        self.fields = {}


class TermWriter(SegmentWriter):
    """A `SegmentWriter` over a `TermPool`, for schemas without spelling or vectors."""

    def __init__(self, ix: Any, **kwargs: Any) -> None:
        _patches.apply()  # its blocks are written as Whoosh meant (index/_patches.py)
        super().__init__(ix, **kwargs)
        self.pool = TermPool()
        self._values: dict[int, bytes] = {}
        if any(f.separate_spelling() or f.vector for _, f in self.schema.items()):
            raise ValueError("TermWriter writes no spelling words or term vectors")

    def add_document(self, **fields: Any) -> None:
        """Add one document (Whoosh's `add_document`, postings filed by term)."""
        self._check_state()
        perdocwriter = self.perdocwriter
        schema = self.schema
        docnum = self.docnum
        docboost = self._doc_boost(fields)
        fieldnames = sorted(name for name in fields if not name.startswith("_"))
        self._check_fields(schema, fieldnames)
        perdocwriter.start_doc(docnum)
        try:
            for fieldname in fieldnames:
                value = fields.get(fieldname)
                if value is None:
                    continue
                field = schema[fieldname]
                length = 0
                if field.indexed:
                    boost = self._field_boost(fields, fieldname, docboost)
                    length = self._file_postings(fieldname, field, value, docnum, boost)
                stored = fields.get(f"_stored_{fieldname}", value)
                perdocwriter.add_field(fieldname, field, stored if field.stored else None, length)
                column = field.column_type
                if column and stored is not None:
                    perdocwriter.add_column_value(fieldname, column, field.to_column_value(stored))
        except Exception:
            perdocwriter.cancel_doc()
            raise
        perdocwriter.finish_doc()
        self._added = True
        self.docnum += 1

    def _file_postings(
        self, fieldname: str, field: Any, value: Any, docnum: int, boost: float
    ) -> int:
        """File a field's postings for one document; return its length (0 if not scorable)."""
        terms = self.pool._terms(fieldname)
        fmt = field.format
        length = 0
        if (
            type(fmt) is formats.Frequency
            and isinstance(value, str)
            and isinstance(field.analyzer, WordCachedAnalyzer)
        ):
            # Frequency.word_values: a term's weight is its count times the field boost,
            # its value the packed count (the same floats and bytes, without the tuples).
            scale = fmt.field_boost
            values = self._values
            for term, freq in Counter(field.analyzer.terms(value)).items():
                key = term.encode("utf-8")
                postings = terms.get(key)
                if postings is None:
                    postings = terms[key] = ([], [], [])
                postings[0].append(docnum)
                postings[1].append(float(freq) * scale * boost)
                vbytes = values.get(freq)
                if vbytes is None:
                    vbytes = values[freq] = pack_uint(freq)
                postings[2].append(vbytes)
                length += freq
            return length if field.scorable else 0
        for key, freq, weight, vbytes in field.index(value):
            postings = terms.get(key)
            if postings is None:
                postings = terms[key] = ([], [], [])
            postings[0].append(docnum)
            postings[1].append(weight * boost)
            postings[2].append(vbytes or b"")
            length += freq
        return length if field.scorable else 0

    def _flush_segment(self) -> None:
        self.perdocwriter.close()
        lengths = self.per_document_reader() if self.codec.length_stats else None
        write_terms(self.fieldwriter, self.schema, lengths, self.pool)
        self.fieldwriter.close()
        if lengths is not None:
            lengths.close()


def write_terms(fieldwriter: Any, schema: Any, lengths: Any, pool: TermPool) -> None:
    """Write the pool's postings through a W3 field writer, a block at a time: the calls
    `FieldWriter.add_postings` makes per posting, made per block with the same values."""
    for fieldname in sorted(pool.fields):
        terms = pool.fields[fieldname]
        if not terms:
            continue  # Whoosh starts only the fields that have postings
        column = length_column(lengths, fieldname) if lengths is not None else ()
        fieldwriter.start_field(fieldname, schema[fieldname])
        for term in sorted(terms):
            docnums, weights, values = terms[term]
            fieldwriter.start_term(term)
            writer = fieldwriter._postwriter
            limit = writer._blocklimit
            for start in range(0, len(docnums), limit):
                end = start + limit
                _fill_block(
                    writer, docnums[start:end], weights[start:end], values[start:end], column
                )
                if end < len(docnums):
                    writer._write_block()
            fieldwriter.finish_term()
        fieldwriter.finish_field()


def _fill_block(
    writer: Any,
    docnums: list[int],
    weights: list[float],
    values: list[bytes],
    column: tuple[int | None, ...],
) -> None:
    """Put one block's postings in a W3 posting writer's buffer, as `add_posting` would."""
    writer._ids = array("I", docnums)
    writer._weights = array("f", weights)
    writer._values = [v for v in values if v]
    writer._maxweight = max(0, *weights)
    # Only lengths a posting has (not None, not 0) count, as in `add_posting`.
    found = [n for d in docnums if (n := column[d] if d < len(column) else None)]
    writer._minlength = min(found) if found else None
    writer._maxlength = max(found) if found else 0
