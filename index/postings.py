"""Whoosh3 posting lists read whole, straight from a segment's memory map, as compact arrays."""

from __future__ import annotations

import io
import pickle
import struct
import zlib
from array import array
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from whoosh.codec.whoosh3 import LENGTHS_COLUMN as _LENGTHS_COLUMN
from whoosh.codec.whoosh3 import WHOOSH3_HEADER_MAGIC, W3TermInfo
from whoosh.util.numeric import length_to_byte

# A posting list: document numbers (ascending) and weights, as compact arrays (8 bytes a
# posting, where Python lists of ints and floats cost ~75); one weight when all are equal.
Postings = tuple["array[int]", "array[float]"]


def read_postings(segment: Any, fieldname: str, text: str) -> Postings:
    """Return one segment's (document numbers, weights) for a term, deleted ones included:
    from its sidecar (index/flat.py) where it has one, from Whoosh's list otherwise."""
    from . import flat

    sidecar = flat.of(segment)
    found = None if sidecar is None else sidecar.postings(fieldname, text)
    return whoosh_postings(segment, fieldname, text) if found is None else found


def whoosh_postings(segment: Any, fieldname: str, text: str) -> Postings:
    """Return read_postings' lists as Whoosh's posting blocks hold them."""
    # The raw posting list, deleted documents included (the deleted set changes while the
    # segment lives; callers filter).
    tbytes = segment._text_to_bytes(fieldname, text)
    ids = array("i")
    # W3 writes a block's weights as float32 (array "f", Whoosh's and index/bulk.py's): kept
    # as such, a third less memory a posting than doubles, every value the same
    weights = array("f")
    if not _read_listed(segment._terms, fieldname, tbytes, ids, weights):
        matcher = segment._terms.matcher(fieldname, tbytes, segment.schema[fieldname].format)
        if not _read_blocks(matcher, ids, weights):
            ids, weights = array("i"), array("d")  # doubles: a Python float, kept exactly
            while matcher.is_active():  # an inlined list, or another codec: the slower way
                ids.append(matcher.id())
                weights.append(matcher.weight())
                matcher.next()
    if len(weights) > 1 and weights.count(weights[0]) == len(weights):
        # one weight for every posting (about half of a 100k index's lists, most often 1.0):
        # kept once, numpy repeats it when scored (a posting costs 4 bytes instead of 8)
        weights = array(weights.typecode, weights[:1])
    return ids, weights


def _read_listed(terms: Any, fieldname: str, tbytes: bytes, ids: Any, weights: Any) -> bool:
    """Read a whoosh3 posting list that is not inlined in its term's entry from where the
    entry says it starts (False, nothing read, for anything else): Whoosh's matcher,
    made only to be read whole, first decodes its opening block's header and data (~70%
    of a list's read at 100,000 memories, where an add's hint reads its rarest term's
    lists afresh in each large segment)."""
    start = _listed_start(terms, fieldname, tbytes)
    return start is not None and _read_blocks_at(start[0], start[1], ids, weights)


def _listed_start(terms: Any, fieldname: str, tbytes: bytes) -> tuple[memoryview, int] | None:
    """Return the postings file's bytes and where a term's whoosh3 list begins after its
    magic (None where the list is inlined in its term's entry or not whoosh3's)."""
    buf = getattr(getattr(terms, "_postfile", None), "_buf", None)
    if not isinstance(buf, memoryview) or not hasattr(terms, "term_info"):
        return None
    info = terms.term_info(fieldname, tbytes)
    if not isinstance(info, W3TermInfo) or info.is_inlined():
        return None
    offset = info.extent()[0]
    if buf[offset : offset + len(WHOOSH3_HEADER_MAGIC)] != WHOOSH3_HEADER_MAGIC:
        return None
    return buf, offset + len(WHOOSH3_HEADER_MAGIC)


_BLOCK_LENGTH = struct.Struct("!i")  # whoosh.system.pack_int


def _read_blocks(matcher: Any, ids: array[int], weights: array[float]) -> bool:
    """Decode a whoosh3 posting list straight from its segment's memory map, block by block,
    into `ids` and `weights` (False, nothing read, if it is not one): Whoosh's matcher
    spends ~35 µs of Python calls a block and undoes the id deltas in a generator; this is
    the same format read with C calls.

    A block is a signed length (negative on the last block), the pickled tuple
    (count, max id, max weight, compression, min length, max length), then the pickled
    (ids as deltas, weights, values), zlib-compressed when compression is set.
    """
    buf = getattr(getattr(matcher, "_postfile", None), "_buf", None)
    position = getattr(matcher, "_baseoffset", None)
    if not isinstance(buf, memoryview) or position is None or getattr(matcher, "_byteids", True):
        return False
    return _read_blocks_at(buf, position, ids, weights)


def _read_blocks_at(buf: memoryview, position: int, ids: Any, weights: Any) -> bool:
    """Decode the whoosh3 blocks starting at `position` of `buf` (see _read_blocks)."""
    while True:
        (length,) = _BLOCK_LENGTH.unpack_from(buf, position)
        start = position + _BLOCK_LENGTH.size
        block = io.BytesIO(buf[start : start + abs(length)])
        info = pickle.load(block)
        _decode(block.read(), info[0], info[3], ids, weights)
        if length < 0:
            return True
        position = start + length


def _decode(data: Any, count: int, compression: int, ids: Any, weights: Any) -> None:
    """Append one block's document numbers and weights (its data, after its header)."""
    raw_ids, raw_weights = pickle.loads(zlib.decompress(data) if compression else data)[:2]
    # fromlist of a list, not extend from an iterator or a tuple: ~40% less a block
    # (extend converts item by item through the iterator protocol); the same values
    ids.fromlist(list(accumulate(raw_ids)))
    # as W3LeafMatcher._read_weights: None is all 1.0, one float is every weight
    if raw_weights is None:
        weights.fromlist([1.0] * count)
    elif isinstance(raw_weights, float):
        weights.fromlist([array("f", [raw_weights])[0]] * count)
    else:
        weights.fromlist(list(raw_weights))


@dataclass(frozen=True)
class Blocks:
    """A whoosh3 posting list's blocks as their headers describe them: where each one's data
    is, its last document, its heaviest weight and shortest length byte (what a block can
    score at most: index/pruning.py), read without decoding any block's postings."""

    buf: memoryview
    spans: list[tuple[int, int, int, int]]  # (data start, data end, postings, compression)
    last: array[int]  # each block's last document number (ascending)
    heaviest: array[float]
    shortest: bytes  # length bytes (a field's BYTE_TO_LENGTH decodes)
    postings: int  # in all blocks

    def read(self, which: Iterable[int]) -> Postings:
        """Return the postings of the blocks `which` (ascending), as read_postings would."""
        ids, weights = array("i"), array("f")
        buf, spans = self.buf, self.spans
        for n in which:
            start, end, count, compression = spans[n]
            _decode(buf[start:end], count, compression, ids, weights)
        return ids, weights


_HEADER_MAX = 128  # a block header's pickle: six numbers, ~40 bytes


def read_blocks(segment: Any, fieldname: str, text: str) -> Blocks | None:
    """Return a term's posting blocks in a segment (None where the list is inlined in its
    term's entry, absent, or not whoosh3's: read_postings reads those whole), from its
    sidecar where it has one (index/flat.py)."""
    from . import flat

    sidecar = flat.of(segment)
    found = None if sidecar is None else sidecar.blocks(fieldname, text)
    return whoosh_blocks(segment, fieldname, text) if found is None else found


def whoosh_blocks(segment: Any, fieldname: str, text: str) -> Blocks | None:
    """Return read_blocks' blocks as Whoosh's posting list's headers describe them."""
    terms = segment._terms
    tbytes = segment._text_to_bytes(fieldname, text)
    if (fieldname, tbytes) not in terms:
        return None
    listed = _listed_start(terms, fieldname, tbytes)
    if listed is None:
        return None
    buf, position = listed
    spans, last, heaviest, shortest, total = [], array("i"), array("d"), bytearray(), 0
    while True:
        (length,) = _BLOCK_LENGTH.unpack_from(buf, position)
        start = position + _BLOCK_LENGTH.size
        end = start + abs(length)
        header = io.BytesIO(bytes(buf[start : min(end, start + _HEADER_MAX)]))
        count, final, weight, compression, low = pickle.load(header)[:5]
        spans.append((start + header.tell(), end, count, compression))
        last.append(final)
        heaviest.append(weight)
        shortest.append(low)
        total += count
        if length < 0:
            return Blocks(buf, spans, last, heaviest, bytes(shortest), total)
        position = end


def field_bytes(segment: Any, fieldname: str) -> bytes:
    """Return one segment's stored length byte per document, deleted documents included
    (0 where the document has no such field; BYTE_TO_LENGTH decodes)."""
    count = segment.doc_count_all()
    try:
        # Whoosh's lengths column, read whole: asking doc_field_length per document cost
        # ~0.3 s a field at 100,000 documents in every new process.
        perdoc = segment._perdoc
        column = perdoc._cached_reader(f"_{fieldname}_len", _LENGTHS_COLUMN)
        if column is None:
            return bytes(count)
        raw = bytes(column._dbfile.get(column._basepos, column._count))[:count]
    except AttributeError:  # another codec: the public, slower way
        codes = bytearray(count)
        for n in range(count):
            length = segment.doc_field_length(n, fieldname, None)
            codes[n] = 0 if length is None else length_to_byte(length)
        return bytes(codes)
    return raw + bytes(count - len(raw))
