"""The catch-up planner: what is on disk and what a manifest recorded → what to index.

Pure: both derived stores (the memories' index, the code index) list their files with a
fingerprint each (size and modification time), hand the listing and their manifest's
record to `plan_catch_up`, and act on the plan. A file or folder changed within RACY_NS of
its reading may change again within the same clock tick, unseen: `settle` records it as
RACY, so the next catch-up looks at it again (git's "racy" rule).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass

RACY_NS = 2_000_000_000
RACY = -1  # the modification time recorded for what changed too recently to trust


@dataclass(frozen=True)
class Plan:
    """How the files on disk differ from a manifest's record, each tuple sorted."""

    added: tuple[str, ...] = ()  # on disk, not recorded
    changed: tuple[str, ...] = ()  # recorded with another fingerprint
    removed: tuple[str, ...] = ()  # recorded, no longer on disk
    unchanged: tuple[str, ...] = ()  # recorded with the same fingerprint

    @property
    def to_index(self) -> list[str]:
        """The files to read and index again: the added and the changed, sorted."""
        return sorted((*self.added, *self.changed))

    def __bool__(self) -> bool:
        return bool(self.added or self.changed or self.removed)


def plan_catch_up(on_disk: Mapping[str, Hashable], recorded: Mapping[str, Hashable]) -> Plan:
    """Compare the fingerprints on disk with those a manifest recorded (path → fingerprint)."""
    added, changed, unchanged = [], [], []
    for path, fingerprint in on_disk.items():
        if path not in recorded:
            added.append(path)
        elif recorded[path] == fingerprint:
            unchanged.append(path)
        else:
            changed.append(path)
    removed = [path for path in recorded if path not in on_disk]
    return Plan(*(tuple(sorted(paths)) for paths in (added, changed, removed, unchanged)))


def settle(mtime_ns: int, started_ns: int) -> int:
    """Return the modification time to record for what was read at `started_ns`: RACY
    when it changed too recently to trust."""
    return mtime_ns if mtime_ns < started_ns - RACY_NS else RACY


def settle_all(mtimes: Mapping[str, int], started_ns: int) -> dict[str, int]:
    """Return `mtimes` with those changed too recently to trust marked RACY."""
    return {path: settle(mtime, started_ns) for path, mtime in mtimes.items()}
