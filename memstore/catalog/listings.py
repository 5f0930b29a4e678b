"""What this process's index holds of the folders it listed: each entry's name and inode.

A quick catch-up lists a folder again, a stat per file, whenever its modification time is
not the one recorded; an add changes its month folder's, so each add of a burst listed it
again (~1,200 files at 100,000 memories: ~9 ms an add). Recording the time the add leaves
is not enough: a person's save in the same clock tick leaves the same time.

`Listings` keeps, per folder, the time and the entries (names and inode numbers) of the
listing the index was last brought up to date from, moved on by each file this process
then writes and indexes (the folder's time after that write). A folder still at that time
and holding exactly those entries (`unchanged`: one stat and one `scandir`, no stat per
file) is as indexed: a change in a later tick shows in its time; one in the same tick adds,
drops or re-numbers an entry (a new file, a deletion, a rename, an atomic save: the temp
file takes a new inode while the old one still lives). What it cannot see is what a quick
catch-up never sees: a file rewritten in place, or deleted and created again under its
name on the inode it freed, without the folder's time moving on (docs/search.md).

A listing that read a file of somebody else's changed too recently to trust (plan.py's
racy rule: it may be half written, and filled in place next) is not remembered: the folder
is listed again, as before, until its files settle. A file this process wrote is whole.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence

from memstore.catalog.plan import RACY, RACY_NS, settle

Entries = dict[str, int]  # entry name → inode number (dot entries left out)
Seen = tuple[int, Entries]  # a folder's modification time (ns) and its entries
OWN_KEPT_S = 2 * RACY_NS / 1e9  # how long a file this process wrote is known as its own
# What a long-lived process keeps between requests (`trim`): the folders recorded last, up
# to this many entries (~100 bytes each). A counter flush at a million memories adopts a
# few hundred month folders of ~5,000 entries (~90 MiB) that nothing reads again until
# they change; a folder forgotten is listed again then, as one never listed.
KEEP_ENTRIES = 100_000


def read_entries(where: str) -> Entries | None:
    """Return the names and inode numbers in folder `where` (None: it cannot be listed).

    Dot entries are left out: they are never memories, and a writer's temp files are dot
    files. `DirEntry.inode()` costs no system call on POSIX (it comes with the listing).
    """
    try:
        with os.scandir(where) as entries:
            return {e.name: e.inode() for e in entries if e.name[0] != "."}
    except OSError:
        return None


class Listings:
    """The entries of each folder as the index holds them, as far as this process knows."""

    def __init__(self, root: str) -> None:
        self._root = root
        self._folders: dict[str, Seen] = {}
        # files this process wrote lately: path → (inode, when), for the racy rule
        self._own: dict[str, tuple[int, float]] = {}
        self._armed: set[str] = set()  # folders of the write under way (`writing`)

    def _where(self, folder: str) -> str:
        return os.path.join(self._root, folder) if folder else self._root

    def snapshot(self, folder: str) -> Entries | None:
        """Read a folder's entries now: taken before a listing the index is then brought up
        to date from, they may miss what the listing found (the folder is then listed
        again) but never name what it did not see."""
        return read_entries(self._where(folder))

    def remember(
        self,
        listed: Mapping[str, Seen],
        files: Mapping[str, tuple[int, int]],
        started_ns: int,
    ) -> None:
        """Record folders as indexed: the time a listing read (before listing) and the
        entries a snapshot read before that. `files` is what the listing found (path →
        (mtime, size)), begun at `started_ns`: a folder holding a file of somebody else's
        changed too recently to trust is left out (listed again next time)."""
        racy = {
            path.rpartition("/")[0]
            for path, (mtime, _) in files.items()
            if settle(mtime, started_ns) == RACY and not self._is_own(path, listed)
        }
        for folder, (mtime, entries) in listed.items():
            if folder in racy:  # what was kept of it is older still
                self._folders.pop(folder, None)
            elif folder:  # the vault's own folder holds no memories
                self._folders.pop(folder, None)  # recorded last: kept longest (`trim`)
                self._folders[folder] = (mtime, dict(entries))

    def adopt(self, recorded: Mapping[str, int], read: Mapping[str, Seen] | None = None) -> None:
        """Know folders as indexed without listing them: those not known yet whose time is
        still the one the manifest `recorded` (a settled time: anything changed since moved
        it on). Their entries are read once, no stat per file, between two looks at that
        time. For a writer about to touch files in folders it never listed (a sync's
        counter flush: hundreds of folders, each listed again whole after its write).
        `read`: what `read_ahead` found earlier, taken where the folder's time is still
        the one it read at (one stat instead of a listing)."""
        for folder, mtime in recorded.items():
            if not folder or folder in self._folders or mtime < 0 or self._mtime(folder) != mtime:
                continue
            seen = (read or {}).get(folder)
            entries = seen[1] if seen and seen[0] == mtime else read_entries(self._where(folder))
            if entries is not None and self._mtime(folder) == mtime:
                self._folders[folder] = (mtime, entries)

    def read_ahead(self, recorded: Mapping[str, int]) -> dict[str, Seen]:
        """Read the folders `adopt(recorded)` would list, changing nothing this process
        knows: for a writer that lists them before it takes the store's lock (the periodic
        counter flush at 1,000,000 memories: ~130 folders of ~5,000 entries, ~1 s)."""
        found: dict[str, Seen] = {}
        for folder, mtime in recorded.items():
            if not folder or folder in self._folders or mtime < 0 or self._mtime(folder) != mtime:
                continue
            entries = read_entries(self._where(folder))
            if entries is not None and self._mtime(folder) == mtime:
                found[folder] = (mtime, entries)
        return found

    def _is_own(self, path: str, listed: Mapping[str, Seen]) -> bool:
        folder, _, name = path.rpartition("/")
        own = self._own.get(path)
        seen = listed.get(folder)
        return own is not None and seen is not None and seen[1].get(name) == own[0]

    def unchanged(self, folder: str, mtime: int | None) -> bool:
        """Say whether `folder`, now at `mtime`, is as recorded: the same time and exactly
        the same entries (False when nothing is recorded)."""
        known = self._folders.get(folder)
        if known is None or mtime is None or known[0] != mtime:
            return False
        return read_entries(self._where(folder)) == known[1]

    @contextlib.contextmanager
    def writing(self, paths: Iterable[str]) -> Iterator[None]:
        """Hold while this process writes (or deletes) `paths` and indexes them: a folder of
        theirs whose time moved on since it was recorded is forgotten first (somebody
        changed it after this process last looked); `wrote` and `removed` move the others
        on. A folder written outside such a block is forgotten by them."""
        for folder in {path.rpartition("/")[0] for path in paths}:
            known = self._folders.get(folder)
            if known is None:
                continue
            if self._mtime(folder) == known[0]:
                self._armed.add(folder)
            else:
                del self._folders[folder]
        try:
            yield
        finally:
            self._armed.clear()

    def wrote(self, written: Iterable[tuple[str, int]]) -> None:
        """Record files this process wrote and has indexed (path, inode) in their folders,
        at the time each folder has after the writes. Only folders `writing` kept are
        moved on; the others are forgotten (listed again next time)."""
        written = list(written)
        now = time.monotonic()
        for path, inode in written:
            self._own.pop(path, None)  # re-inserted last: the oldest stay first
            self._own[path] = (inode, now)
        while self._own and next(iter(self._own.values()))[1] < now - OWN_KEPT_S:
            del self._own[next(iter(self._own))]
        self._moved_on(written)

    def removed(self, paths: Iterable[str]) -> None:
        """Record files this process deleted and dropped from the index (see `wrote`)."""
        self._moved_on([(path, None) for path in paths])

    def _moved_on(self, changes: Sequence[tuple[str, int | None]]) -> None:
        folders = {path.rpartition("/")[0] for path, _ in changes}
        for folder in folders - self._armed:
            self._folders.pop(folder, None)
        for path, inode in changes:
            folder, _, name = path.rpartition("/")
            if folder in self._folders:
                if inode is None:
                    self._folders[folder][1].pop(name, None)
                else:
                    self._folders[folder][1][name] = inode
        for folder in folders & self._folders.keys():
            mtime = self._mtime(folder)
            entries = self._folders.pop(folder)[1]  # recorded last: kept longest (`trim`)
            if mtime is not None:
                self._folders[folder] = (mtime, entries)
        self._armed -= folders

    def trim(self, keep: int | None = None) -> int:
        """Forget the folders recorded longest ago until at most `keep` entries (default
        KEEP_ENTRIES) are kept; return how many folders were forgotten. A forgotten folder
        is listed again when its time moves on, as one never listed; one a write under way
        holds (`writing`) is kept."""
        keep = KEEP_ENTRIES if keep is None else keep
        total = sum(len(entries) for _, entries in self._folders.values())
        forgotten = 0
        for folder in list(self._folders):
            if total <= keep:
                break
            if folder not in self._armed:
                total -= len(self._folders.pop(folder)[1])
                forgotten += 1
        return forgotten

    def _mtime(self, folder: str) -> int | None:
        try:
            return os.stat(self._where(folder), follow_symlinks=False).st_mtime_ns
        except OSError:
            return None

    def forget(self, folders: Iterable[str] | None = None) -> None:
        """Forget some folders and what is under them (None: all; the index was replaced)."""
        if folders is None:
            self._folders.clear()
            self._armed.clear()
            return
        for gone in folders:
            for folder in [f for f in self._folders if f == gone or f.startswith(f"{gone}/")]:
                del self._folders[folder]
