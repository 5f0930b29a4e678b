"""The stored documents a reader keeps: hits' documents and the keys of tied ones, by segment.

A common word ties many documents at the last place, each read (~40 µs) only for its key,
so tied ones' keys (~120 B each) are kept apart from hits' documents (~1.4 KB each) and do
not push them out (docs/benchmarks.md section 7, "Sixth session"). A segment's documents
never change and a deleted one is never asked for, so nothing kept goes stale; what
belonged to a segment merged away is forgotten at the next searcher (`reset`).
"""

from __future__ import annotations

from bisect import bisect_right
from collections import OrderedDict
from typing import Any

from .schema import Document, parse_stored

CACHE_DOCUMENTS = 4_000
CACHE_KEYS = 16_000

Place = tuple[str, int]  # (segment id, document number in the segment)


class StoredCache:
    """Hits' documents and tied documents' keys of the current searcher, by segment."""

    def __init__(self) -> None:
        self.leaves: list[tuple[int, str]] = []  # (first document number, segment id)
        self.documents: OrderedDict[Place, Document] = OrderedDict()
        self.keys: OrderedDict[Place, str] = OrderedDict()

    def reset(self, leaves: list[tuple[int, str]]) -> None:
        """Take a new searcher's segments; forget what segments no longer live held."""
        self.leaves = leaves
        live = {segment for _, segment in leaves}
        for kept in (self.documents, self.keys):
            for gone in [place for place in kept if place[0] not in live]:
                del kept[gone]

    def place(self, number: int) -> Place:
        """Return (segment id, number in the segment) of the current searcher's `number`."""
        at = bisect_right(self.leaves, (number, "\uffff")) - 1
        base, segment = self.leaves[at] if at >= 0 else (0, "")
        return segment, number - base

    def key(self, searcher: Any, number: int) -> str:
        """Return the key of stored document `number` (ties at the last place are broken by
        it: hundreds can tie, and only the hits kept are built)."""
        place = self.place(number)
        document = self.documents.get(place)
        if document is not None:
            return document.key
        found = self.keys.get(place)
        if found is not None:
            self.keys.move_to_end(place)
            return found
        found = self.keys[place] = str(searcher.stored_fields(number)["key"])
        if len(self.keys) > CACHE_KEYS:
            self.keys.popitem(last=False)
        return found

    def document(self, searcher: Any, number: int) -> Document:
        """Return the current searcher's stored document `number`, kept."""
        place = self.place(number)
        found = self.documents.get(place)
        if found is not None:
            self.documents.move_to_end(place)
            return found
        found = self.documents[place] = parse_stored(searcher.stored_fields(number))
        if len(self.documents) > CACHE_DOCUMENTS:
            self.documents.popitem(last=False)
        return found
