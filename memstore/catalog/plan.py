"""The catch-up planner: what is on disk and what a manifest recorded → what to index.

Pure: both derived stores (the memories' index, the code index) list their files with a
fingerprint each (size and modification time), hand the listing and their manifest's
record to `plan_catch_up`, and act on the plan. A file or folder changed within RACY_NS of
its reading may change again within the same clock tick, unseen: `settle` records it as
RACY, so the next catch-up looks at it again (git's "racy" rule). A time with a fraction
of a second comes from a file system that keeps fine times, whose clock ticks at most
every ~16 ms (Linux's coarse clock: 1-10 ms; Windows: 15.6 ms): FINE_RACY_NS is enough
there. A whole second may be a coarse file system's (FAT: 2 s; ext3, HFS+: 1 s).

A file is held to the same rule, but its time is not what is recorded: a file read within
its racy window keeps its true fingerprint and is named `unsure` (the memories' manifest
keeps a list of them), so the next catch-up reads it again and re-indexes it only if what it
reads differs from what was indexed (catalog/updater.py). Recording it RACY had the next
catch-up re-index every file of a fresh write (a clone, a sync, a rebuild).
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Mapping
from dataclasses import dataclass

RACY_NS = 2_000_000_000
FINE_RACY_NS = 100_000_000  # > 6 ticks of the coarsest fine clock (15.6 ms)
RACY = -1  # the modification time recorded for what changed too recently to trust


@dataclass(frozen=True)
class Plan:
    """How the files on disk differ from a manifest's record, each tuple sorted."""

    added: tuple[str, ...] = ()  # on disk, not recorded
    changed: tuple[str, ...] = ()  # recorded with another fingerprint
    removed: tuple[str, ...] = ()  # recorded, no longer on disk
    unchanged: tuple[str, ...] = ()  # recorded with the same fingerprint
    # recorded with the same fingerprint, but read within its racy window: read it again
    unsure: tuple[str, ...] = ()

    @property
    def to_index(self) -> list[str]:
        """The files to read and index again: the added and the changed, sorted."""
        return sorted((*self.added, *self.changed))

    def __bool__(self) -> bool:
        return bool(self.added or self.changed or self.removed or self.unsure)


def plan_catch_up(
    on_disk: Mapping[str, Hashable],
    recorded: Mapping[str, Hashable],
    unsure: Collection[str] = (),
) -> Plan:
    """Compare the fingerprints on disk with those a manifest recorded (path → fingerprint);
    a path of `unsure` (read within its racy window) with the same fingerprint is unsure."""
    added, changed, unchanged, same = [], [], [], []
    for path, fingerprint in on_disk.items():
        if path not in recorded:
            added.append(path)
        elif recorded[path] != fingerprint:
            changed.append(path)
        elif path in unsure:
            same.append(path)
        else:
            unchanged.append(path)
    removed = [path for path in recorded if path not in on_disk]
    lists = (added, changed, removed, unchanged, same)
    return Plan(*(tuple(sorted(paths)) for paths in lists))


def settle(mtime_ns: int, started_ns: int) -> int:
    """Return the modification time to record for what was read at `started_ns`: RACY
    when it changed too recently to trust.

    Without the fine margin every reader in the 2 s after a write of memstore's (a usage
    flush of hundreds of files) listed the folders it touched again: ~0.3 → ~0.9 s a
    search at 100,000 memories; now the first look after 0.1 s records them.
    """
    margin = RACY_NS if mtime_ns % 1_000_000_000 == 0 else FINE_RACY_NS
    return mtime_ns if mtime_ns < started_ns - margin else RACY


def is_racy(mtime_ns: int, started_ns: int) -> bool:
    """Say whether what changed at `mtime_ns`, read after `started_ns`, may change again
    unseen (in the clock tick it was read in, its fingerprint the same)."""
    return settle(mtime_ns, started_ns) == RACY


def settle_all(mtimes: Mapping[str, int], started_ns: int) -> dict[str, int]:
    """Return `mtimes` with those changed too recently to trust marked RACY."""
    return {path: settle(mtime, started_ns) for path, mtime in mtimes.items()}
