"""Whoosh patched: segments read through their memory map, lengths a column at once (private).

`apply()` installs the patches, once per process; opening an index, writing a part and a
`TermWriter` call it (nothing is patched by importing the package).

Whoosh maps each compound segment file, then wraps every part of it (postings, terms,
lengths, stored fields) in a `BufferFile` whose constructor copies that part into a
`BytesIO`: a new process at 100,000 memories copied ~144 MB before its first query. Here
the part is read through the map in place, so a reader costs the pages it touches.

Whoosh also reads a document's field length with a seek and a read each time; writing a
segment asks once per posting (~40 system calls per memory indexed). Here a reader loads
a field's whole lengths column on first use.

Whoosh means to leave a posting block uncompressed when its pickle is under 20 bytes
("don't bother compressing"), but the next line sets the compression anyway: every term
that only one or two documents hold (a memory's key, id and hash, most words) paid a zlib
stream that made its block larger. Here the block is written as Whoosh meant: readers take
the compression from each block's header, so segments written either way read the same.
"""

from __future__ import annotations

import os
import pickle
import threading
import zlib
from typing import Any

from whoosh.codec import whoosh3
from whoosh.filedb import structfile
from whoosh.util.numeric import byte_to_length, length_to_byte

# A stored length byte to the length it stands for; 0 means the field is absent (None).
BYTE_TO_LENGTH: tuple[int | None, ...] = (None, *(byte_to_length(b) for b in range(1, 256)))
_NO_COLUMN = ()
SMALL_BLOCK = 20  # a block's pickle below this many bytes is not compressed (Whoosh's own)


class MappedFile:
    """A read-only file over a memoryview (no copy): what Whoosh's readers call on a file."""

    def __init__(self, view: memoryview) -> None:
        self._view = view
        self._pos = 0

    def read(self, size: int = -1) -> bytes:
        start = self._pos
        end = len(self._view) if size is None or size < 0 else min(start + size, len(self._view))
        self._pos = max(end, start)
        return bytes(self._view[start:end])

    def readline(self, size: int = -1) -> bytes:
        view, start = self._view, self._pos
        end = len(view) if size is None or size < 0 else min(start + size, len(view))
        found = bytes(view[start:end]).find(b"\n")
        return self.read(end - start if found < 0 else found + 1)

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(memoryview(buffer).cast("B")))
        memoryview(buffer).cast("B")[: len(data)] = data
        return len(data)

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        base = {os.SEEK_SET: 0, os.SEEK_CUR: self._pos, os.SEEK_END: len(self._view)}[whence]
        self._pos = base + offset
        return self._pos

    def tell(self) -> int:
        return self._pos

    def close(self) -> None:
        self._view = memoryview(b"")

    def __iter__(self) -> Any:
        while line := self.readline():
            yield line


def _mapped_buffer_file(self: Any, buf: Any, name: str | None = None, onclose: Any = None) -> None:
    self._buf = buf
    self._name = name
    self.file = MappedFile(memoryview(buf))
    self.onclose = onclose
    self.is_real = False
    self.is_closed = False


def _doc_field_length(self: Any, docnum: int, fieldname: str, default: Any = 0) -> Any:
    # Whoosh's W3PerDocReader.doc_field_length, answered from the whole column.
    if docnum > self._doccount:
        raise IndexError(f"Asked for docnum {docnum!r} of {self._doccount}")
    cache = self.__dict__.setdefault("_memstore_lengths", {})
    lengths = cache.get(fieldname)
    if lengths is None:
        lengths = cache[fieldname] = length_column(self, fieldname)
    if lengths is _NO_COLUMN:
        return default
    return lengths[docnum] if docnum < len(lengths) else None


def length_column(perdoc: Any, fieldname: str) -> tuple[int | None, ...]:
    reader = perdoc._cached_reader(f"_{fieldname}_len", whoosh3.LENGTHS_COLUMN)
    if reader is None:
        return _NO_COLUMN
    raw = reader._dbfile.get(reader._basepos, reader._count)
    return tuple(BYTE_TO_LENGTH[b] for b in raw)


def _write_block(self: Any, last: bool = False) -> None:
    # Whoosh's W3PostingsWriter._write_block, with its small-block rule applied.
    if not self._blockcount:
        self._postfile.write(whoosh3.WHOOSH3_HEADER_MAGIC)
    self._terminfo.add_block(self)
    data = (self._mini_ids(), self._mini_weights(), self._mini_values())
    databytes = pickle.dumps(data, 2)
    compression = self._compression if len(databytes) >= SMALL_BLOCK else 0
    if compression:
        databytes = zlib.compress(databytes, compression)
    ids = self._ids
    info = (
        *(len(ids), ids[-1], self._maxweight, compression),
        *(length_to_byte(self._minlength), length_to_byte(self._maxlength)),
    )
    infobytes = pickle.dumps(info, 2)
    size = len(infobytes) + len(databytes)
    self._postfile.write_int(-size if last else size)  # the last block's size is negative
    self._postfile.write(infobytes)
    self._postfile.write(databytes)
    self._blockcount += 1
    self._new_block()


_applied = False
_lock = threading.Lock()


def apply() -> None:
    """Make Whoosh read mapped segment files in place and lengths a column at a time, and
    write small posting blocks uncompressed (idempotent: the first call patches)."""
    global _applied
    if _applied:
        return
    with _lock:
        if not _applied:
            whoosh3.W3PostingsWriter._write_block = _write_block
            structfile.BufferFile.__init__ = _mapped_buffer_file
            whoosh3.W3PerDocReader.doc_field_length = _doc_field_length
            _applied = True
