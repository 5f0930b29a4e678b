"""A stored column's offsets summed in C (index/_patches.py): the same arrays and values as
Whoosh's own reader, with and without offsets written, empty values and empty columns."""

from __future__ import annotations

import random

import pytest
from whoosh import columns
from whoosh.filedb.filestore import RamStorage

from memstore.index import _patches


def _written(values: list[bytes], doccount: int) -> tuple[RamStorage, int]:
    storage = RamStorage()
    out = storage.create_file("column")
    writer = columns.VarBytesColumn().writer(out)
    for docnum, value in enumerate(values):
        if value is not None:
            writer.add(docnum, value)
    writer.finish(doccount)
    length = out.tell()
    out.close()
    return storage, length


@pytest.mark.parametrize("count", [0, 1, 7, 3_000, 40_000])  # 40,000: Whoosh writes offsets
def test_offsets_and_lengths_are_whooshs_own(count: int) -> None:
    rng = random.Random(count)
    values = [
        bytes(rng.randrange(256) for _ in range(rng.choice((0, 1, 5, 40)))) for _ in range(count)
    ]
    doccount = count + 3  # documents past the last value: lengths 0
    storage, length = _written(values, doccount)
    readers = []
    for read in (_patches._WHOOSH_OFFSETS, _patches._var_bytes_offsets_and_lengths):
        reader = columns.VarBytesColumn.Reader.__new__(columns.VarBytesColumn.Reader)
        reader.__dict__.update(
            _dbfile=storage.open_file("column"), _basepos=0, _length=length, _doccount=doccount
        )
        reader.had_stored_offsets = False
        read(reader)
        readers.append(reader)
    whooshs, ours = readers
    assert ours._offsets == whooshs._offsets and ours._offsets.typecode == whooshs._offsets.typecode
    assert ours._lengths == whooshs._lengths
    assert ours.had_stored_offsets == whooshs.had_stored_offsets == (doccount > 2**15)
    assert [ours[n] for n in range(doccount)] == [*values, b"", b"", b""]
