"""Flat posting lists beside a large segment: raw int32 ids and float32 weights, read by slicing.

A Whoosh posting block (128 postings) is a pickle, most often zlib-compressed, and decoding
one costs ~25–37 µs of Python (index/postings.py): at a million memories a recall decodes
thousands of them, the largest part of its BM25 CPU. Beside each large segment
(MIN_DOCS documents or more) a sidecar file `<segment id>.mps` holds the same lists for its
terms of MIN_POSTINGS postings or more, each as little-endian int32 document numbers and
float32 weights (or one weight where all are equal) with each block's header (last
document, heaviest weight, shortest length byte): reading one is a memory copy from the
file's map. The values are read_postings' and read_blocks' own, written from the segment by
those functions, so a list read either way is the same.

The sidecar is a cache of the segment, never the only copy: a segment without one (an index
written before it, a segment too small, a file torn or of another format) is read from
Whoosh's lists as before. A sidecar is written whole to a hidden temporary name, synced and
renamed, so a reader sees a whole file or none; a file that does not check (magic, format,
size, its segment's id and document count, its directory's checksum) is ignored and written
again by the next `complete`. Whoosh removes it with its segment (its name is the segment's).

Written by a tier merge's helper for the segment it makes (index/merging.py: it moves in
with the part) and by `complete`, which a long-running shell's tidy runs in a helper process
after its merges (index/engine.py `complete_flat`): an index written before sidecars, or
whose large segments came from a rebuild, commits or a compaction, gets them there, one
segment at a time, without a lock and without a rebuild (a rebuild's CPU stays as it was);
until then it answers the same from Whoosh's lists.
"""

from __future__ import annotations

import marshal
import mmap
import operator
import os
import struct
import sys
import time
import zlib
from array import array
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

from whoosh.reading import TermNotFound

from .postings import Blocks, Postings, whoosh_blocks, whoosh_postings

FORMAT = 1  # a file of another format is ignored and written again
SUFFIX = ".mps"
MAGIC = b"MSFLAT\x00\x01"
END = b"MSFLATEND"
MIN_DOCS = 1_000  # segments this large get a sidecar (a commit's small ones do not)
MIN_POSTINGS = 128  # a term's list of at least one whole block is kept flat
RECHECK_S = 10.0  # a segment found without a sidecar is looked at again after this long
# magic, format, document count, directory offset, directory length, directory crc32,
# file size, segment id (utf-8, padded)
_HEADER = struct.Struct("<8sIIQQIQ64s")
_LITTLE = sys.byteorder == "little"
# (ids at, count, weights at (-1: one weight), the one weight, blocks at, blocks)
Entry = tuple[int, int, int, float, int, int]


@dataclass(frozen=True)
class FlatBlocks(Blocks):
    """A term's blocks as its sidecar holds them: read by slicing, no decoding."""

    ids_at: int
    weights_at: int  # -1: every posting weighs `weight`
    weight: float
    starts: array[int]  # each block's first posting, and the list's end

    def read(self, which: Iterable[int]) -> Postings:
        """Return the postings of the blocks `which` (ascending), as Blocks.read would."""
        ids, weights = array("i"), array("f")
        buf, starts = self.buf, self.starts
        for first, end in _runs(which, starts):
            ids.frombytes(buf[self.ids_at + 4 * first : self.ids_at + 4 * end])
            if self.weights_at < 0:
                weights.frombytes(array("f", [self.weight]).tobytes() * (end - first))
            else:
                weights.frombytes(buf[self.weights_at + 4 * first : self.weights_at + 4 * end])
        return ids, weights


def _runs(which: Iterable[int], starts: array[int]) -> Iterable[tuple[int, int]]:
    """Yield the posting ranges of consecutive blocks among `which`, merged."""
    first = end = -1
    for n in which:
        if n + 1 >= len(starts):
            continue
        if starts[n] != end:
            if end > first:
                yield first, end
            first = starts[n]
        end = starts[n + 1]
    if end > first:
        yield first, end


class Sidecar:
    """One segment's sidecar, mapped: its terms' flat posting lists.

    The directory's checksum says it was written whole, not that its numbers are right: each
    term's entry is checked before its first read (`_entry`) against the file's layout and
    its segment's own term info (count, first and last document, heaviest weight); a term
    whose entry does not check is read from Whoosh's list (never a crash, never a wrong list).
    """

    def __init__(
        self,
        buf: memoryview,
        directory: dict[tuple[str, str], Entry],
        *,
        end: int | None = None,
        info: Callable[[str, str], Any] | None = None,
    ) -> None:
        self.buf = buf
        self.directory = directory
        self.end = len(buf) if end is None else end  # where the postings end (the directory)
        self.info = info  # (field, text) -> the segment's term info (None: not checked)
        self._checked: dict[tuple[str, str], Entry | None] = {}

    def _entry(self, fieldname: str, text: str) -> Entry | None:
        """Return the term's entry if it checks (None: absent, or Whoosh's list is read)."""
        key = (fieldname, text)
        try:
            return self._checked[key]
        except KeyError:
            pass
        entry = self.directory.get(key)
        found = entry if entry is not None and self._checks(key, entry) else None
        self._checked[key] = found
        return found

    def _checks(self, key: tuple[str, str], entry: object) -> bool:
        """Say whether an entry lies where a writer puts it and agrees with the segment's
        term info (a directory of wrong numbers, whatever its checksum, is not read)."""
        if not (
            isinstance(entry, tuple)
            and len(entry) == 6
            and all(type(v) is int for i, v in enumerate(entry) if i != 3)
            and type(entry[3]) is float
        ):
            return False
        at, count, weights_at, weight, blocks_at, nblocks = entry
        end = at + 4 * count
        if weights_at >= 0:
            if weights_at != end:
                return False
            end += 4 * count
        elif weights_at != -1:
            return False
        if not (
            at >= _HEADER.size
            and at % 8 == 0
            and 1 <= nblocks <= count
            and blocks_at == end + (-end % 8)
            and blocks_at + 17 * nblocks + 4 <= self.end
        ):
            return False
        if self.info is None:
            return True
        try:
            info = self.info(*key)
            maximum = info.max_weight()
            agrees = (
                info.doc_frequency() == count
                and _INT.unpack_from(self.buf, at)[0] == info.min_id()
                and _INT.unpack_from(self.buf, at + 4 * count - 4)[0] == info.max_id()
            )
        except (TermNotFound, AttributeError, struct.error):  # Whoosh's list, then
            return False
        if not agrees or (weights_at < 0 and _float32(weight) != _float32(maximum)):
            return False
        return self._blocks_check(entry, info.max_id(), maximum)

    def _blocks_check(self, entry: Entry, last_id: int, maximum: float) -> bool:
        """Say whether a term's block headers describe its postings: starts from 0 to its
        count, each block's last document the posting before the next block's start."""
        at, count, _, _, blocks_at, nblocks = entry
        starts, last, heaviest = self._headers(blocks_at, nblocks)
        if starts[0] != 0 or starts[-1] != count or last[-1] != last_id:
            return False
        if not all(map(operator.lt, starts, islice(starts, 1, None))):
            return False
        ids = self.buf[at : at + 4 * count].cast("i")  # native order: _LITTLE, as `of` asks
        if array("i", [ids[end - 1] for end in islice(starts, 1, None)]) != last:
            return False
        return _float32(max(heaviest)) == _float32(maximum)

    def _headers(self, position: int, nblocks: int) -> tuple[array[int], array[int], array[float]]:
        buf = self.buf
        starts, last, heaviest = array("i"), array("i"), array("d")
        starts.frombytes(buf[position : position + 4 * (nblocks + 1)])
        position += 4 * (nblocks + 1)
        last.frombytes(buf[position : position + 4 * nblocks])
        position += 4 * nblocks
        heaviest.frombytes(buf[position : position + 8 * nblocks])
        return starts, last, heaviest

    def postings(self, fieldname: str, text: str) -> Postings | None:
        """Return the term's (document numbers, weights) as read_postings returns them
        (None: not kept here)."""
        entry = self._entry(fieldname, text)
        if entry is None:
            return None
        at, count, weights_at, weight, _, _ = entry
        ids = array("i")
        ids.frombytes(self.buf[at : at + 4 * count])
        weights = array("f")
        if weights_at < 0:
            weights.append(weight)
        else:
            weights.frombytes(self.buf[weights_at : weights_at + 4 * count])
        return ids, weights

    def blocks(self, fieldname: str, text: str) -> FlatBlocks | None:
        """Return the term's blocks as read_blocks describes them (None: not kept here)."""
        entry = self._entry(fieldname, text)
        if entry is None:
            return None
        at, count, weights_at, weight, blocks_at, nblocks = entry
        starts, last, heaviest = self._headers(blocks_at, nblocks)
        position = blocks_at + 16 * nblocks + 4
        shortest = bytes(self.buf[position : position + nblocks])
        return FlatBlocks(
            self.buf, [], last, heaviest, shortest, count, at, weights_at, weight, starts
        )


_INT = struct.Struct("<i")


def _float32(value: float) -> float:
    """Return `value` as a float32 holds it (Whoosh's term info and the weights keep those;
    NaN, equal to nothing, for one no float32 holds)."""
    try:
        return float(struct.unpack("<f", struct.pack("<f", value))[0])
    except (OverflowError, struct.error):
        return float("nan")


def path_of(folder: Path, segment_id: str) -> Path:
    return folder / f"{segment_id}{SUFFIX}"


def segment_folder(segment: Any) -> Path | None:
    """Return the folder of a SegmentReader's index (None: not on disk)."""
    storage = getattr(segment, "_storage", None)
    storage = getattr(storage, "b", storage)  # a compound segment's overlay
    folder = getattr(storage, "folder", None)
    return Path(folder) if folder else None


def of(segment: Any) -> Sidecar | None:
    """Return a SegmentReader's sidecar, opened once (None: it has none that checks;
    looked at again RECHECK_S later, as a background `complete` may write it)."""
    found = getattr(segment, "_memstore_flat", None)
    if isinstance(found, Sidecar):
        return found
    if found is False or (found is not None and time.monotonic() - found < RECHECK_S):
        return None
    opened: Sidecar | float | bool = False
    try:
        documents = segment.doc_count_all()
        folder = segment_folder(segment)
        if documents >= MIN_DOCS and folder is not None and _LITTLE:
            sid = str(segment._segid)
            info = _term_info(segment)
            opened = load(path_of(folder, sid), sid, documents, info) or time.monotonic()
        segment._memstore_flat = opened
    except AttributeError:  # not a Whoosh SegmentReader: Whoosh's lists
        return None
    return opened if isinstance(opened, Sidecar) else None


def _term_info(segment: Any) -> Callable[[str, str], Any]:
    """Return a look-up of a SegmentReader's term info (raising for a term it lacks)."""
    terms, to_bytes = segment._terms, segment._text_to_bytes
    return lambda fieldname, text: terms.term_info(fieldname, to_bytes(fieldname, text))


def load(
    path: Path, segment_id: str, documents: int, info: Callable[[str, str], Any] | None = None
) -> Sidecar | None:
    """Map the sidecar at `path` if it is whole and `segment_id`'s (None otherwise); its
    terms' entries are checked against `info` (the segment's term info) as they are read."""
    try:
        with open(path, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            if size < _HEADER.size + len(END):
                return None
            mapped = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None
    buf = memoryview(mapped)
    magic, fmt, count, dir_at, dir_length, crc, total, sid = _HEADER.unpack_from(buf, 0)
    whole = (
        magic == MAGIC
        and fmt == FORMAT
        and count == documents
        and total == size
        and sid.rstrip(b"\x00") == segment_id.encode()
        and bytes(buf[size - len(END) :]) == END
        and dir_at + dir_length <= size - len(END)
    )
    if not whole:
        return None
    raw = bytes(buf[dir_at : dir_at + dir_length])
    if zlib.crc32(raw) != crc:
        return None
    try:
        directory = marshal.loads(raw)
    except (EOFError, ValueError, TypeError):
        return None
    if not isinstance(directory, dict):
        return None
    return Sidecar(buf, directory, end=dir_at, info=info)


_TERM_HEAD = struct.Struct("!BfI")  # a whoosh3 term entry's start: inlined, weight, postings


def long_terms(segment: Any) -> list[tuple[str, str]]:
    """Return the segment's terms (field, text) of MIN_POSTINGS postings or more whose
    lists are not inlined in their entries."""
    terms = segment._terms
    table, decode = getattr(terms, "_tindex", None), getattr(terms, "_keydecoder", None)
    if table is None or decode is None:  # another codec: its term infos, the slower way
        entries = ((key, info.doc_frequency()) for key, info in terms.items())
    else:  # whoosh3's entries: only their first bytes read (no term info made for each)
        head = _TERM_HEAD
        entries = (
            (decode(key), 0 if inlined else postings)
            for key, raw in table.items()
            for inlined, _, postings in (head.unpack_from(raw),)
        )
    found = []
    for (fieldname, tbytes), postings in entries:
        if postings >= MIN_POSTINGS:
            try:
                found.append((fieldname, tbytes.decode("utf-8")))
            except UnicodeDecodeError:
                continue
    return found


def write(segment: Any, folder: Path) -> Path | None:
    """Write a SegmentReader's sidecar into `folder` (its segment's files' folder);
    return its path (None: the segment is below MIN_DOCS or not whoosh3's)."""
    documents = segment.doc_count_all()
    if documents < MIN_DOCS or not _LITTLE:
        return None
    sid = str(segment._segid)
    final = path_of(folder, sid)
    temporary = folder / f".{final.name}.tmp-{os.getpid()}"
    directory: dict[tuple[str, str], Entry] = {}
    try:
        # owner-only, as the segment's own files: its directory holds the memories' words
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with open(descriptor, "wb") as out:
            out.write(bytes(_HEADER.size))
            for fieldname, text in long_terms(segment):
                blocks = whoosh_blocks(segment, fieldname, text)
                if blocks is None:
                    continue
                ids, weights = whoosh_postings(segment, fieldname, text)
                if len(ids) != blocks.postings or weights.typecode != "f":
                    continue
                directory[fieldname, text] = _write_term(out, blocks, ids, weights)
            raw = marshal.dumps(directory)
            dir_at = out.tell()
            out.write(raw)
            out.write(END)
            total = out.tell()
            out.seek(0)
            out.write(
                _HEADER.pack(
                    MAGIC, FORMAT, documents, dir_at, len(raw), zlib.crc32(raw), total, sid.encode()
                )
            )
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, final)
    finally:
        if temporary.exists():
            temporary.unlink()
    return final


def _write_term(out: Any, blocks: Blocks, ids: array[int], weights: array[float]) -> Entry:
    """Write one term's postings and block headers at `out`'s end; return its entry."""
    _align(out)
    at = out.tell()
    out.write(ids.tobytes())
    weights_at, weight = -1, 0.0
    if len(weights) == 1 and len(ids) > 1:
        weight = weights[0]
    elif len(weights) == len(ids):
        weights_at = out.tell()
        out.write(weights.tobytes())
    else:  # pragma: no cover - read_postings gives one weight or one a posting
        raise ValueError("posting weights do not match their documents")
    starts = array("i", [0])
    for span in blocks.spans:
        starts.append(starts[-1] + span[2])
    _align(out)
    blocks_at = out.tell()
    out.write(starts.tobytes())
    out.write(array("i", blocks.last).tobytes())
    out.write(array("d", blocks.heaviest).tobytes())
    out.write(blocks.shortest)
    return at, len(ids), weights_at, weight, blocks_at, len(blocks.last)


def _align(out: Any) -> None:
    out.write(bytes(-out.tell() % 8))


def write_segment(folder: Path, segment: Any) -> Path | None:
    """Write the sidecar of the segment a part's index under `folder` holds (write_part's),
    beside its files: adopted, the part's files and its sidecar move in together."""
    from whoosh import index as whoosh_index
    from whoosh.reading import SegmentReader

    from . import _patches

    if segment.doc_count_all() < MIN_DOCS:
        return None
    _patches.apply()
    ix = whoosh_index.open_dir(str(folder))
    try:
        reader = SegmentReader(ix.storage, ix.schema, segment)
        try:
            return write(reader, folder)
        finally:
            reader.close()
    finally:
        ix.close()


def _lacking(whoosh_dir: Path) -> bool:
    """Say whether an index has a large segment without a sidecar that checks (a look
    at each one's header: no helper is started for nothing at every tidy)."""
    from whoosh import index as whoosh_index

    from . import _patches

    _patches.apply()
    try:
        ix = whoosh_index.open_dir(str(whoosh_dir))
    except Exception:  # no index, or a damaged one: its opener's to report
        return False
    try:
        return bool(missing(ix))
    finally:
        ix.close()


def missing(ix: Any) -> list[str]:
    """Return the ids of a Whoosh index's segments that should have a sidecar and have
    none that checks."""
    folder = Path(ix.storage.folder)
    wanted = []
    for segment in ix._segments():
        count = segment.doc_count_all()
        sid = str(segment.segment_id())
        if count >= MIN_DOCS and load(path_of(folder, sid), sid, count) is None:
            wanted.append(sid)
    return wanted


def complete(whoosh_dir: Path, stopped: Callable[[], bool] = lambda: False) -> list[str]:
    """Write the sidecars an index's large segments lack (an index older than them, a file
    torn): return the ids written. Each is written whole or not at all; a segment merged
    away meanwhile leaves a file Whoosh's next commit removes."""
    from whoosh import index as whoosh_index
    from whoosh.reading import SegmentReader

    from . import _patches

    _patches.apply()
    clear_stale(whoosh_dir)
    ix = whoosh_index.open_dir(str(whoosh_dir))
    written = []
    try:
        wanted = set(missing(ix))
        for segment in ix._segments():
            if stopped():
                break
            if str(segment.segment_id()) not in wanted:
                continue
            reader = SegmentReader(ix.storage, ix.schema, segment)
            try:
                if write(reader, whoosh_dir) is not None:
                    written.append(str(segment.segment_id()))
            except FileNotFoundError:  # merged away meanwhile
                continue
            finally:
                reader.close()
    finally:
        ix.close()
    return written


def clear_stale(folder: Path) -> None:
    """Remove temporary sidecars whose writer is gone (killed mid-write)."""
    for path in folder.glob(f".*{SUFFIX}.tmp-*"):
        pid = path.name.rsplit("-", 1)[-1]
        if pid.isdigit() and not _alive(int(pid)):
            path.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


COMPLETE_CODE = f"from {__name__} import serve_complete; serve_complete()"


def complete_aside(whoosh_dir: Path, stopper: Any = None) -> list[str]:
    """Run `complete` in a helper process (the caller's interpreter is not shared: a
    daemon goes on answering), in this one if it cannot start; `stopper` (a
    parts.Stopper) kills it when its store closes. Return the ids written."""
    from .parts import Helper, Stopper

    stopper = stopper or Stopper()
    if stopper.is_stopped or not _LITTLE or not _lacking(whoosh_dir):
        return []
    helper = Helper.start(COMPLETE_CODE, [(str(whoosh_dir), MIN_DOCS, MIN_POSTINGS)])
    if helper is None:
        return complete(whoosh_dir, lambda: stopper.is_stopped)
    try:
        with stopper.running(helper):
            found = helper.receive()
            return list(found) if found is not None and helper.succeeded() else []
    finally:
        helper.stop()


def serve_complete() -> None:
    """Run as a helper process: complete the sidecars of the index named on stdin."""
    from .parts import serve

    def work(receive: Callable[[], Any], answer: Callable[[object], None]) -> None:
        global MIN_DOCS, MIN_POSTINGS
        whoosh_dir, MIN_DOCS, MIN_POSTINGS = receive()  # the caller's (a test's smaller)
        answer(complete(Path(whoosh_dir)))

    serve(work)
