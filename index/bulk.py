"""A Whoosh segment writer that gathers postings by term and writes each term's blocks at once.

Whoosh's `SegmentWriter` turns every posting into a 5-tuple, sorts all of them at commit,
and hands them one at a time through three method calls (with type assertions) to its
posting writer: at 100,000 memories, ~3 million postings and most of a rebuild's time
outside the analyzer. This writer files each posting under its field and term as it comes
(a term's postings arrive in document order, so nothing is sorted but the terms), and
writes each term's blocks and terms-table entry as bytes of its own making, the ones
Whoosh's posting writer and hash table would write. The segment it writes is byte for byte
the one Whoosh writes from the same documents (`tests/index/test_bulk.py` compares the files);
only the path there changed.

Everything is kept in memory until the commit, as Whoosh's pool does within its `limitmb`
(the callers' budgets hold every posting of their commits); `compact`, which merges a
whole index, keeps Whoosh's own writer and its spilling to disk.
"""

from __future__ import annotations

import functools
import hashlib
import struct
import zlib
from array import array
from collections import Counter
from collections.abc import Iterator
from itertools import repeat
from pickle import dumps
from typing import Any

from whoosh import formats
from whoosh.analysis import IDTokenizer
from whoosh.codec.whoosh3 import LENGTHS_COLUMN, WHOOSH3_HEADER_MAGIC, W3PerDocWriter
from whoosh.filedb.filestore import FileStorage, RamStorage
from whoosh.system import pack_uint, pack_ushort
from whoosh.util.numeric import length_to_byte
from whoosh.writing import SegmentWriter

from . import _patches
from ._patches import SMALL_BLOCK, length_column
from .analysis import WordCachedAnalyzer

# One term's postings: document numbers, weights and encoded values, in document order.
Postings = tuple[list[int], list[float], list[bytes]]
# A field as the fast path writes it: its name, the field, whether it is indexed and
# stored, its column, and its lengths column's name (W3PerDocWriter's `_lenfield`)
_FieldPlan = tuple[str, Any, bool, bool, Any, str]


class TermPool:
    """Postings by field and term (what a `SegmentWriter` calls its pool): by term as they
    come (`fields`), or, for a field whose postings are counts (`Counted`), in runs."""

    def __init__(self) -> None:
        self.fields: dict[str, dict[bytes, Postings]] = {}
        self.counted: dict[str, Counted] = {}

    def counts_of(self, fieldname: str, scale: float) -> Counted | None:
        """Return the runs of a field's counts (None: its postings are filed by term)."""
        if fieldname in self.fields:
            return None
        runs = self.counted.get(fieldname)
        if runs is None:
            runs = self.counted[fieldname] = Counted(scale)
        return runs

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
            runs = self.counted.pop(fieldname, None)
            if runs is not None:
                # what _file_postings files for a count (a posting of a later document
                # filed by term, a boosted one, comes after these)
                for term, docnums, counts in runs.by_term():
                    weights = [float(count) * runs.scale for count in counts]
                    terms[term] = (docnums, weights, [pack_uint(count) for count in counts])
        return terms

    def cleanup(self) -> None:
        self.fields = {}
        self.counted = {}


# Below this many postings a field's runs are grouped in plain Python (an add's one-memory
# segment: numpy's import cost more than the whole add's grouping); above, by numpy.
PLAIN_POSTINGS = 20_000


class Counted:
    """A Frequency field's postings in runs of (document, term, count), as the documents
    come: a document's counts join with three C-level extends instead of ~30 Python steps
    per posting (~3 million postings at 100,000 memories). They are grouped by term when
    written (`by_term`); a posting's weight (its count times the field's `scale`) and its
    value (the packed count) are made then."""

    def __init__(self, scale: float) -> None:
        self.scale = scale
        self.docnums = array("q")
        self.terms: list[str] = []
        self.counts = array("q")

    def add(self, docnum: int, counts: Counter[str]) -> None:
        self.docnums.extend(repeat(docnum, len(counts)))
        self.terms.extend(counts)
        self.counts.extend(counts.values())

    def by_term(self) -> Iterator[tuple[bytes, list[int], list[int]]]:
        """Yield each term (encoded, in order) with its documents and counts, in the order
        they came (document order)."""
        if len(self.terms) < PLAIN_POSTINGS:
            yield from self._by_term_plain()
            return
        import numpy  # a rebuild's millions of postings: sorted as arrays

        numbers: dict[str, int] = dict.fromkeys(self.terms, 0)
        for number, term in enumerate(numbers):
            numbers[term] = number
        ids = numpy.fromiter(map(numbers.__getitem__, self.terms), numpy.intp, len(self.terms))
        order = numpy.argsort(ids, kind="stable")  # by term, each in document order
        docnums = numpy.frombuffer(self.docnums, numpy.int64)[order].tolist()
        counts = numpy.frombuffer(self.counts, numpy.int64)[order].tolist()
        ends = numpy.cumsum(numpy.bincount(ids, minlength=len(numbers))).tolist()
        for term in sorted(numbers):  # code point order: the order of their UTF-8 bytes
            number = numbers[term]
            start, end = ends[number - 1] if number else 0, ends[number]
            yield term.encode("utf-8"), docnums[start:end], counts[start:end]

    def _by_term_plain(self) -> Iterator[tuple[bytes, list[int], list[int]]]:
        """by_term for a few postings (an add's segment), without numpy: the same lists."""
        grouped: dict[str, tuple[list[int], list[int]]] = {}
        for docnum, term, count in zip(self.docnums, self.terms, self.counts, strict=True):
            found = grouped.get(term)
            if found is None:
                found = grouped[term] = ([], [])
            found[0].append(docnum)
            found[1].append(count)
        for term in sorted(grouped):
            yield term.encode("utf-8"), *grouped[term]


class TermWriter(SegmentWriter):
    """A `SegmentWriter` over a `TermPool`, for schemas without spelling or vectors.

    `temp_in_memory`: keep the commit's temporary files (the stored fields and length
    columns before they join the segment) in memory, not in a folder Whoosh makes and
    removes for every commit; for a commit of a few documents (an add's: about half its
    wall time on a busy disk, docs/benchmarks.md "Eighth session: adds").
    """

    def __init__(self, ix: Any, *, temp_in_memory: bool = False, **kwargs: Any) -> None:
        _patches.apply()  # its blocks are written as Whoosh meant (index/_patches.py)
        super().__init__(_InMemoryTemp.target(ix) if temp_in_memory else ix, **kwargs)
        self.pool = TermPool()
        self._values: dict[int, bytes] = {}
        # per set of field names given (in order): each field's plan, in Whoosh's order
        # (sorted); None: the general path (a name starting with "_": boosts, stored values
        # of their own)
        self._plans: dict[tuple[str, ...], tuple[_FieldPlan, ...] | None]
        self._plans = {}
        if any(f.separate_spelling() or f.vector for _, f in self.schema.items()):
            raise ValueError("TermWriter writes no spelling words or term vectors")

    def add_document(self, **fields: Any) -> None:
        """Add one document (Whoosh's `add_document`, postings filed by term)."""
        self._check_state()
        names = tuple(fields)
        plans = self._plans
        plan = plans[names] if names in plans else self._plan(names)
        if plan is None:
            self._add_general(fields)
            return
        # The general path's steps for fields without boosts or stored values of their
        # own (every document memstore writes), the schema looked up once per set of names.
        perdocwriter = self.perdocwriter
        docnum = self.docnum
        perdocwriter.start_doc(docnum)
        # W3PerDocWriter.add_field's steps, its dictionaries and column names at hand
        storedfields, fieldlengths = perdocwriter._storedfields, perdocwriter._fieldlengths
        try:
            for fieldname, field, indexed, stored, column, lenfield in plan:
                value = fields[fieldname]
                if value is None:
                    continue
                length = self._file_postings(fieldname, field, value, docnum, 1.0) if indexed else 0
                if stored:
                    storedfields[fieldname] = value
                if length:
                    perdocwriter.add_column_value(lenfield, LENGTHS_COLUMN, length_to_byte(length))
                    fieldlengths[fieldname] += length
                if column:
                    perdocwriter.add_column_value(fieldname, column, field.to_column_value(value))
        except Exception:
            perdocwriter.cancel_doc()
            raise
        perdocwriter.finish_doc()
        self._added = True
        self.docnum += 1

    def _plan(self, names: tuple[str, ...]) -> tuple[_FieldPlan, ...] | None:
        """Return (and remember) the fast path's plan for documents giving `names`."""
        plan = None
        if not any(name.startswith("_") for name in names):
            fieldnames = sorted(names)
            self._check_fields(self.schema, fieldnames)  # an unknown field raises here
            fields = [(name, self.schema[name]) for name in fieldnames]
            plan = tuple(
                (n, f, bool(f.indexed), bool(f.stored), f.column_type, f"_{n}_len")
                for n, f in fields
            )
        if type(self.perdocwriter) is not W3PerDocWriter:
            plan = None  # another codec's: its own add_field (the general path)
        self._plans[names] = plan
        return plan

    def _add_general(self, fields: dict[str, Any]) -> None:
        """Whoosh's `add_document` for any fields (boosts, `_stored_` values)."""
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
            counts = field.analyzer.term_counts(value)
            runs = self.pool.counts_of(fieldname, scale) if boost == 1.0 else None
            if runs is not None:  # weights and values made when written (Counted)
                runs.add(docnum, counts)
                return sum(counts.values()) if field.scorable else 0
            terms = self.pool._terms(fieldname)
            values = self._values
            for term, freq in counts.items():
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
        if (
            type(fmt) is formats.Existence
            and type(field.analyzer) is IDTokenizer
            and isinstance(value, str)
        ):
            # Existence.word_values of an IDTokenizer's one token: the whole value, once
            terms = self.pool._terms(fieldname)
            postings = terms.get(key := value.encode("utf-8"))
            if postings is None:
                postings = terms[key] = ([], [], [])
            postings[0].append(docnum)
            postings[1].append(fmt.field_boost * boost)
            postings[2].append(b"")
            return 1 if field.scorable else 0
        terms = self.pool._terms(fieldname)
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


class _InMemoryTemp(FileStorage):
    """An index's folder whose writers keep their temporary files in memory."""

    @classmethod
    def target(cls, ix: Any) -> Any:
        """Return what a SegmentWriter reads of `ix` (its lock, table of contents, name and
        folder), the folder's temporary files kept in memory."""
        storage = ix.storage
        view = _WriteTarget()
        view.storage = cls(storage.folder, storage.supports_mmap, storage.readonly)
        view.indexname = ix.indexname
        view.lock = ix.lock
        view._read_toc = ix._read_toc
        return view

    def temp_storage(self, name: str | None = None) -> Any:
        return RamStorage()


class _WriteTarget:
    """The parts of a Whoosh index a SegmentWriter's constructor reads."""

    storage: Any
    indexname: str
    lock: Any
    _read_toc: Any


def write_terms(fieldwriter: Any, schema: Any, lengths: Any, pool: TermPool) -> None:
    """Write the pool's postings and terms table for a W3 field writer: the bytes its
    posting writer and terms table would write for each term (`_Blocks`), put together
    here and written a buffer at a time (Whoosh spent ~15 method calls on each term, and
    a 100,000-memory vault has ~400,000 terms)."""
    tindex = fieldwriter._tindex
    md5 = hashlib.md5  # imported as a module: a one-shot search may leave it unrun
    for fieldname in sorted({*pool.fields, *pool.counted}):
        runs = pool.counted.get(fieldname)
        terms = pool.fields.get(fieldname, {})
        if not terms and (runs is None or not runs.terms):
            continue  # Whoosh starts only the fields that have postings
        column = length_column(lengths, fieldname) if lengths is not None else ()
        field = schema[fieldname]
        fieldwriter.start_field(fieldname, field)
        writer = fieldwriter._postwriter
        if writer._inlinelimit > 1 or tindex.hashtype != 0:
            raise ValueError("write_terms writes W3's defaults: no inlined postings, MD5 keys")
        blocks = _Blocks(
            writer._blocklimit, writer._compression, field.format.fixed_value_size(), column
        )
        prefix = pack_ushort(fieldwriter._fieldid)
        postfile, tfile = fieldwriter._postfile, tindex.dbfile
        posts, table = bytearray(), bytearray()
        post_at, table_at = postfile.tell(), tfile.tell()
        buckets, positions = tindex.buckets, tindex.index
        key = b""
        for term, postings in _by_term(terms, runs):
            offset = post_at + len(posts)
            info = blocks.write(posts, *postings)
            key = prefix + term
            value = info + _EXTENT.pack(offset, post_at + len(posts) - offset)
            position = table_at + len(table)
            positions.append(position)
            table += _KEY_VALUE_LENGTHS.pack(len(key), len(value))
            table += key
            table += value
            digest = int.from_bytes(md5(key, usedforsecurity=False).digest()[-4:], "big")
            buckets[digest & 255].append((digest, position))
            if len(posts) > FLUSH_BYTES:
                postfile.write(bytes(posts))
                post_at, posts = postfile.tell(), bytearray()
            if len(table) > FLUSH_BYTES:
                tfile.write(bytes(table))
                table_at, table = tfile.tell(), bytearray()
        postfile.write(bytes(posts))
        tfile.write(bytes(table))
        tindex.lastkey = key
        fieldwriter.finish_field()


def _by_term(
    terms: dict[bytes, Postings], runs: Counted | None
) -> Iterator[tuple[bytes, Postings | tuple[list[int], list[float], None, list[int]]]]:
    """A field's terms in order, each with its postings (or its counts, from `runs`)."""
    if runs is None:
        for term in sorted(terms):
            yield term, terms[term]
        return
    scale = runs.scale
    for term, docnums, counts in runs.by_term():
        yield term, (docnums, [float(count) * scale for count in counts], None, counts)


FLUSH_BYTES = 1 << 22  # postings and table entries buffered before a write
PACKED = 1 << 16  # compressed blocks a field's writer remembers (_Blocks._compressed)
_EXTENT = struct.Struct("!qi")  # W3TermInfo.to_bytes: the postings' offset and length
_KEY_VALUE_LENGTHS = struct.Struct("!ii")  # HashWriter.add, before a key and its value
_TERM_INFO = struct.Struct("!BfIBBfII")  # W3TermInfo._struct
_BLOCK_SIZE = struct.Struct("!i")
_UINT = struct.Struct("!I")  # whoosh.system.pack_uint


@functools.lru_cache(maxsize=256)
def _uint_run(count: int) -> struct.Struct:
    return struct.Struct(f"!{count}I")


class _Blocks:
    """One field's posting blocks, byte for byte as W3PostingsWriter writes them (with
    `_patches`' small-block rule) and the term's W3TermInfo bytes (without its extent)."""

    def __init__(
        self, limit: int, compression: int, fixed: int | None, column: tuple[int | None, ...]
    ) -> None:
        self.limit = limit
        self.compression = compression
        self.fixed = fixed
        self.column = column
        # A block's pickle compressed, by its bytes: a third of a rebuild's blocks repeat
        # one before them (a document's one-posting terms with the same count), and a
        # `zlib.compress` costs ~9 µs however small (its state is made each time).
        self._packed: dict[bytes, bytes] = {}

    def write(
        self,
        out: bytearray,
        docnums: list[int],
        weights: list[float],
        values: list[bytes] | None,
        counts: list[int] | None = None,
    ) -> bytes:
        """Append one term's blocks to `out`; return its term info's leading bytes (the
        values are `values`, or the `counts` packed as Frequency packs them)."""
        if len(docnums) == 1:
            value = values[0] if values is not None else None
            return self._write_one(out, docnums[0], weights[0], value, counts)
        out += WHOOSH3_HEADER_MAGIC
        total: float = 0
        minlength: int | None = None
        maxlength = 0
        maxweight: float = 0
        limit, count = self.limit, len(docnums)
        for start in range(0, count, limit):
            end = min(start + limit, count)
            ids, floats = docnums[start:end], array("f", weights[start:end])
            total += sum(floats)
            low, high = self._lengths(ids)
            # as W3TermInfo.add_block (which fails as it would on a block without lengths)
            minlength = low if minlength is None else min(minlength, low)  # type: ignore[type-var]
            maxlength = max(maxlength, high)
            heaviest = max(0, *weights[start:end])
            maxweight = max(maxweight, heaviest)
            if values is not None:
                mini = self._mini(values[start:end])
            else:  # W3PostingsWriter._mini_values of pack_uint(count) each: 4 bytes fixed
                assert counts is not None and self.fixed == _UINT.size
                mini = _uint_run(end - start).pack(*counts[start:end])
            data = dumps((_deltas(ids), _mini_weights(floats), mini), 2)
            compression = self.compression if len(data) >= SMALL_BLOCK else 0
            if compression:
                data = self._compressed(data)
            info = dumps(
                (
                    *(len(ids), ids[-1], heaviest, compression),
                    *(length_to_byte(low), length_to_byte(high)),
                ),
                2,
            )
            size = len(info) + len(data)
            out += _BLOCK_SIZE.pack(-size if end == count else size)
            out += info
            out += data
        return _TERM_INFO.pack(
            *(0, total, count, 0 if minlength is None else length_to_byte(minlength)),
            *(length_to_byte(maxlength), maxweight, docnums[0], docnums[-1]),
        )

    def _write_one(
        self, out: bytearray, docnum: int, weight: float, value: bytes | None, counts: Any
    ) -> bytes:
        """`write` of a term with one posting (nine in ten of a rebuild's terms: each key,
        most numbers and names): the same bytes, without the block loop's lists."""
        out += WHOOSH3_HEADER_MAGIC
        stored = array("f", (weight,))[0]  # the weight as the block holds it (a C float)
        column = self.column
        length = column[docnum] if docnum < len(column) else None
        low, high = (length, length) if length else (None, 0)
        heaviest = max(0, weight)
        if value is not None:
            mini = self._mini([value])
        else:
            assert counts is not None and self.fixed == _UINT.size
            mini = _UINT.pack(counts[0])
        data = dumps(((docnum,), None if stored == 1.0 else stored, mini), 2)
        compression = self.compression if len(data) >= SMALL_BLOCK else 0
        if compression:
            data = self._compressed(data)
        low_byte, high_byte = length_to_byte(low), length_to_byte(high)
        info = dumps((1, docnum, heaviest, compression, low_byte, high_byte), 2)
        out += _BLOCK_SIZE.pack(-(len(info) + len(data)))
        out += info
        out += data
        minimum = 0 if low is None else low_byte
        return _TERM_INFO.pack(0, stored, 1, minimum, high_byte, max(0, heaviest), docnum, docnum)

    def _compressed(self, data: bytes) -> bytes:
        """Return `zlib.compress(data, self.compression)`, remembered (up to PACKED)."""
        packed = self._packed.get(data)
        if packed is None:
            if len(self._packed) >= PACKED:
                self._packed.clear()
            packed = self._packed[data] = zlib.compress(data, self.compression)
        return packed

    def _lengths(self, ids: list[int]) -> tuple[int | None, int]:
        # Only lengths a posting has (not None, not 0) count, as in `add_posting`.
        column = self.column
        size = len(column)
        found = [n for d in ids if (n := column[d] if d < size else None)]
        return (min(found), max(found)) if found else (None, 0)

    def _mini(self, values: list[bytes]) -> Any:
        # W3PostingsWriter._mini_values over the block's non-empty values
        fixed = self.fixed
        if fixed is None or fixed < 0:
            return tuple(v for v in values if v)
        if fixed == 0:
            return None
        return b"".join(values)


def _deltas(ids: list[int]) -> tuple[int, ...]:
    return tuple(b - a for a, b in zip([0, *ids], ids, strict=False))


def _mini_weights(weights: array[float]) -> Any:
    # W3PostingsWriter._mini_weights: None when all are 1, one value when all are equal
    first = weights[0]
    if first == 1.0 and weights.count(1.0) == len(weights):
        return None
    if weights.count(first) == len(weights):
        return first
    return tuple(weights)
