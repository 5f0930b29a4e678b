"""Planning one root's chunks: what changed, and what the index and the manifest get.

Which files changed, which of their chunks are new, moved or gone: a plan made before
anything is written.

Re-ingesting costs what changed. A file whose size and modification time match the last
run is not read (`plan_catch_up`); one whose text hashes the same is not chunked; a chunk
whose text hashes the same as one the file had keeps its index document (its key names the
digest, not the lines), and only a chunk that moved is written again, with its new lines.
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import PurePosixPath

from memstore.catalog.chunking import Chunk, chunk_source, prose
from memstore.catalog.code_hits import KIND
from memstore.catalog.plan import plan_catch_up, settle
from memstore.catalog.sources import Walk, read_source
from memstore.core.secret_mask import mask_secrets
from memstore.index import Document

Progress = Callable[[int, int], None]
# a file's manifest row as last recorded: size, mtime_ns, digest (None: a run was killed
# while its documents changed, so they are checked)
Seen = tuple[int, int, str | None]


SHOWN_PATHS = 100  # at most this many already-chunked paths in an ingest's summary


@dataclass
class IngestSummary:
    """What one ingest of a root did (or, with `dry_run`, would do)."""

    root: str
    workspace: str
    dry_run: bool = False
    files_scanned: int = 0  # files the walk listed (skipped ones not counted)
    files_read: int = 0  # files whose size or time changed, so were read again
    files_removed: int = 0  # files gone since the last ingest
    files_skipped: dict[str, int] = field(default_factory=dict)  # reason → count
    created: int = 0  # chunks new to the index
    updated: int = 0  # chunks whose text is unchanged but which moved to other lines
    unchanged: int = 0
    removed: int = 0
    seconds: float = 0.0
    # files changed since the last ingest that a running memstore (the daemon's watcher, a
    # search's catch-up) already chunked: this ingest found them current, but they changed
    already_chunked: int = 0
    already_chunked_paths: list[str] = field(default_factory=list)  # the first SHOWN_PATHS

    def as_json(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class Stored:
    """A chunk the manifest holds: its key, file, lines and text's digest."""

    key: str
    path: str
    start: int
    end: int
    digest: str


@dataclass(frozen=True)
class _Plan:
    kept: list[tuple[Chunk, str, str]]  # chunk, key, "created" | "updated" | "unchanged"
    gone: list[str]  # keys of the file's old chunks it no longer has


def _match(root: str, path: str, chunks: list[Chunk], old: list[Stored]) -> _Plan:
    """Pair a file's new chunks with its old ones by digest: same text, same key."""
    by_digest: dict[str, list[Stored]] = defaultdict(list)
    for stored in sorted(old, key=lambda s: (s.start, s.end)):
        by_digest[stored.digest].append(stored)
    kept = []
    occurrences: Counter[str] = Counter()
    used = {s.key for s in old}
    for chunk in chunks:
        digest = chunk.digest
        candidates = by_digest.get(digest)
        if candidates:
            same = next(
                (s for s in candidates if (s.start, s.end) == (chunk.start, chunk.end)), None
            )
            stored = same or candidates[0]
            candidates.remove(stored)
            status = "unchanged" if same is not None else "updated"
            kept.append((chunk, stored.key, status))
            continue
        while True:  # a key not taken: the n-th chunk of this text in this file
            key = chunk_key(root, path, digest, occurrences[digest])
            occurrences[digest] += 1
            if key not in used:
                break
        used.add(key)
        kept.append((chunk, key, "created"))
    gone = [s.key for rest in by_digest.values() for s in rest]
    return _Plan(kept, gone)


def chunk_key(root: str, path: str, digest: str, occurrence: int) -> str:
    """Name a chunk by its root, file and text (not its lines: a moved chunk keeps it)."""
    return f"{root_id(root)}:{path}#{digest[:16]}.{occurrence}"


def _document(key: str, workspace: str, path: str, chunk: Chunk, root: str) -> Document:
    """The index document of a chunk, each credential in its text masked (`[secret: …]`, as
    core/secret_mask.py does): a key a source file holds is neither kept in the index nor
    shown in a hit, a recall or a briefing, and a memory written from one holds none."""
    ref = f"{path}:{chunk.start}-{chunk.end}"
    label = " ".join(part for part in (ref, chunk.kind, chunk.name) if part)
    text = mask_secrets(chunk.text)
    comments = "" if chunk.kind == "module" else prose(chunk)
    return Document(
        key=key,
        id=hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:12],
        workspace=workspace,
        kind=KIND,
        # the path, kind and name are searched beside the code (localmind embeds the same),
        # and so are a definition's comments and docstrings (`prose`) once more: a module
        # chunk's are left to its text (they describe the whole file, and gave every
        # question about a file the code between its definitions: recall@5 0.77 → 0.75)
        content=f"{label}\n{text}",
        keywords=tuple(
            k for k in (path, chunk.name, mask_secrets(comments) if comments else "") if k
        ),
        source=f"{ref}\n{root}",
        hash=chunk.digest,
    )


def _leaf(name: str) -> str:
    return name.rsplit(".", 1)[-1].lower()


def _base(path: str) -> str:
    return PurePosixPath(path).name.lower()


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def root_id(root: str) -> str:
    return hashlib.sha256(root.encode("utf-8", "surrogatepass")).hexdigest()[:8]


@dataclass
class Changes:
    """What bringing one root up to date writes: documents in and out of the index, and
    the manifest's rows (files whose documents change are `dirty`: marked before)."""

    root: str
    workspace: str
    upserts: list[Document] = field(default_factory=list)
    new_keys: set[str] = field(default_factory=set)
    deletes: list[str] = field(default_factory=list)
    chunk_rows: list[tuple[str | int, ...]] = field(default_factory=list)
    dropped_rows: list[str] = field(default_factory=list)
    file_rows: list[tuple[str, str, int, int, str]] = field(default_factory=list)
    dirty: list[str] = field(default_factory=list)
    suspect: dict[str, set[str]] = field(default_factory=dict)  # left dirty → its plan's keys
    gone_files: list[str] = field(default_factory=list)

    def add_file(self, path: str, plan: _Plan, was_dirty: bool, summary: IngestSummary) -> None:
        """Take a changed file's chunk plan (`was_dirty`: a killed run left it marked)."""
        self.dirty.append(path)
        if was_dirty:
            self.suspect[path] = {key for _, key, _ in plan.kept}
        for chunk, key, status in plan.kept:
            if status == "unchanged" and not was_dirty:
                summary.unchanged += 1
                continue
            if status == "created":
                summary.created += 1
                if not was_dirty:
                    self.new_keys.add(key)
            elif status == "updated":
                summary.updated += 1
            else:
                summary.unchanged += 1  # written again: the index may have lost it
            self.upserts.append(_document(key, self.workspace, path, chunk, self.root))
            self.chunk_rows.append(
                (key, self.root, path, chunk.start, chunk.end, chunk.kind, chunk.name,
                 chunk.digest, self.workspace, _leaf(chunk.name), _base(path))
            )  # fmt: skip
        summary.removed += len(plan.gone)
        self.deletes += plan.gone
        self.dropped_rows += plan.gone

    def drop_file(
        self, path: str, keys: list[str], was_dirty: bool, summary: IngestSummary
    ) -> None:
        """Take a file that is gone (or can no longer be read) with its chunks' keys."""
        summary.files_removed += 1
        summary.removed += len(keys)
        self.deletes += keys
        self.dropped_rows += keys
        self.dirty.append(path)
        self.gone_files.append(path)
        if was_dirty:
            self.suspect[path] = set()


def plan_root(
    walk: Walk,
    workspace: str,
    summary: IngestSummary,
    seen: dict[str, Seen],
    stored: dict[str, list[Stored]],
    progress: Progress | None = None,
    now_ns: int = 0,
) -> Changes:
    """Plan a walked root's changes against its manifest rows (`seen`, `stored`): read and
    chunk the files whose size or time changed, counting what it finds in `summary`."""
    root = str(walk.root)
    changes = Changes(root, workspace)
    on_disk = {source.path: (source.size, source.mtime_ns) for source in walk.files}
    unchanged = set(plan_catch_up(on_disk, {p: row[:2] for p, row in seen.items()}).unchanged)
    unreadable = []
    for done, source in enumerate(walk.files, 1):
        if progress is not None:
            progress(done, len(walk.files))
        if source.path in unchanged:
            summary.unchanged += len(stored.get(source.path, ()))
            continue
        text = read_source(walk.root, source.path)
        summary.files_read += 1
        if text is None:  # became binary or too large, or went, since the walk
            summary.files_skipped["unreadable"] = summary.files_skipped.get("unreadable", 0) + 1
            unreadable.append(source.path)
            continue
        digest = _digest(text)
        mtime = settle(source.mtime_ns, now_ns)
        changes.file_rows.append((root, source.path, source.size, mtime, digest))
        before = seen.get(source.path)
        if before is not None and before[2] == digest:
            summary.unchanged += len(stored.get(source.path, ()))
            continue
        old = stored.get(source.path, [])
        plan = _match(root, source.path, chunk_source(source.path, text), old)
        changes.add_file(source.path, plan, before is not None and before[2] is None, summary)
    listed = set(on_disk) - set(unreadable)
    for path in sorted(set(seen) - listed):
        keys = [s.key for s in stored.get(path, ())]
        changes.drop_file(path, keys, seen[path][2] is None, summary)
    return changes
