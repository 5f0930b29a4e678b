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

Whoosh reads a term table's directory of 256 hash tables with one read each when it opens
one: every new segment (each add writes one) paid 256 reads. Here the directory is one read.
Writing a term table, Whoosh writes each of those 256 hash tables a slot at a time (a
one-document segment, an add's, has ~500 slots, most of them 256 empty tables' positions):
here the tables and the directory are packed and written once each, the same bytes.
A stored-fields column derives its offsets from its lengths in a Python loop when it is
first read (a 21,871-document segment: ~5 ms, each process, each segment a hit comes from);
here in one `accumulate`.
"""

from __future__ import annotations

import os
import pickle
import threading
import zlib
from array import array
from itertools import accumulate
from typing import Any

from whoosh import columns
from whoosh.codec import whoosh3
from whoosh.filedb import filetables, structfile
from whoosh.util.numeric import byte_to_length, length_to_byte

# A stored length byte to the length it stands for; 0 means the field is absent (None).
BYTE_TO_LENGTH: tuple[int | None, ...] = (None, *(byte_to_length(b) for b in range(1, 256)))
_NO_COLUMN = ()
SMALL_BLOCK = 20  # a block's pickle below this many bytes is not compressed (Whoosh's own)
WHOOSH_HASH_READER_INIT = filetables.HashReader.__init__  # Whoosh's own, before apply()
WHOOSH_READ_OFFSETS = columns.VarBytesColumn.Reader._read_offsets_and_lengths  # the same
WHOOSH_WRITE_HASHES = filetables.HashWriter._write_hashes  # the same
WHOOSH_WRITE_DIRECTORY = filetables.HashWriter._write_directory  # the same


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


def _hash_reader_init(
    self: Any, dbfile: Any, length: int | None = None, magic: bytes = b"HSH3", startoffset: int = 0
) -> None:
    # Whoosh's HashReader.__init__, reading the directory of hash tables at once.
    self.dbfile = dbfile
    self.startoffset = startoffset
    self.is_closed = False
    if length is None:
        dbfile.seek(0, os.SEEK_END)
        length = dbfile.tell() - startoffset
    dbfile.seek(startoffset)
    filemagic = dbfile.read(4)
    if filemagic != magic:
        raise filetables.FileFormatError(f"Unknown file header {filemagic!r}")
    self.hashtype = dbfile.read_byte()
    self.hashfn = filetables._hash_functions[self.hashtype]
    dbfile.read_int()  # two ints Whoosh keeps for future use
    dbfile.read_int()
    self.startofdata = dbfile.tell()
    exptr = startoffset + length - filetables._INT_SIZE
    expos = exptr - dbfile.get_int(exptr)  # the extras' length ends the file
    dbfile.seek(expos)
    self._read_extras()
    dbfile.seek(expos - filetables._directory_size)
    directory = dbfile.read(filetables._directory_size)
    if len(directory) != filetables._directory_size:
        raise EOFError("the term table's directory is cut short")
    self.tables = list(filetables._dir_entry.iter_unpack(directory))
    self.endofdata = self.tables[0][0]


def _write_hashes(self: Any) -> None:
    # Whoosh's HashWriter._write_hashes (same slots, same bytes), written at once.
    pointer, null = filetables._pointer, (0, 0)  # no key starts at 0: the header is there
    start = self.dbfile.tell()
    out: list[bytes] = []
    size = 0
    for entries in self.buckets:
        numslots = 2 * len(entries)
        self.directory.append((start + size, numslots))
        if not numslots:
            continue
        table = [null] * numslots
        for hashval, position in entries:
            slot = (hashval >> 8) % numslots
            while table[slot] != null:
                slot = (slot + 1) % numslots
            table[slot] = (hashval, position)
        out.extend(pointer.pack(hashval, position) for hashval, position in table)
        size += numslots * pointer.size
    self.dbfile.write(b"".join(out))


def _write_directory(self: Any) -> None:
    # Whoosh's HashWriter._write_directory, written at once.
    entry = filetables._dir_entry
    self.dbfile.write(b"".join(entry.pack(position, slots) for position, slots in self.directory))


def _read_offsets_and_lengths(self: Any) -> None:
    # Whoosh's VarBytesColumn.Reader._read_offsets_and_lengths, offsets summed in C.
    dbfile, doccount = self._dbfile, self._doccount
    lastbyte = self._basepos + self._length - 1
    lens_code = chr(dbfile.get_byte(lastbyte))  # the lengths' type code ends the column
    offsets = None
    if lens_code == "X":  # the offsets were written too
        self.had_stored_offsets = True
        lens_code = chr(dbfile.get_byte(lastbyte - 2))
        offsets_code = chr(dbfile.get_byte(lastbyte - 1))
        offsetstart = (lastbyte - 2) - doccount * array(offsets_code).itemsize
        offsets = dbfile.get_array(offsetstart, offsets_code, doccount)
        lastbyte = offsetstart
    lenstart = lastbyte - array(lens_code).itemsize * doccount
    lengths = dbfile.get_array(lenstart, lens_code, doccount)
    if offsets is None:
        offsets = array("L", accumulate(lengths, initial=0))
        offsets.pop()  # the end of the last value
    self._offsets = offsets
    self._lengths = lengths


_applied = False
_lock = threading.Lock()


def apply() -> None:
    """Make Whoosh read mapped segment files in place, lengths a column at a time, a term
    table's directory at once and a stored column's offsets summed in C, and write small
    posting blocks uncompressed and term tables' hash tables at once (idempotent: the first
    call patches)."""
    global _applied
    if _applied:
        return
    with _lock:
        if not _applied:
            whoosh3.W3PostingsWriter._write_block = _write_block
            structfile.BufferFile.__init__ = _mapped_buffer_file
            whoosh3.W3PerDocReader.doc_field_length = _doc_field_length
            filetables.HashReader.__init__ = _hash_reader_init
            filetables.HashWriter._write_hashes = _write_hashes
            filetables.HashWriter._write_directory = _write_directory
            columns.VarBytesColumn.Reader._read_offsets_and_lengths = _read_offsets_and_lengths
            _applied = True
