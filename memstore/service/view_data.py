"""The data of `memstore view`: history, memories, health queues and a picture of the vault.

`collect_view` returns one JSON-able dict (schema 1) that the page (ops/view_page.py) embeds.
Every text in it is masked as the secret scanner sees it (core/secret_mask.py). What a page
could not show at 100,000 memories is capped or sampled, and `vault.sampled` says how.
"""

from __future__ import annotations

import hashlib
import heapq
import os
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from datetime import datetime
from operator import itemgetter
from pathlib import Path
from typing import Any

from memstore.catalog.indexer import Entry
from memstore.core.errors import NotFoundError
from memstore.core.model import check_workspace, summary
from memstore.core.secrets import find_secrets
from memstore.index import Document
from memstore.service.history import parse_date, parse_since
from memstore.service.store import Store
from memstore.service.view_history import Timeline, iso, read_timeline
from memstore.service.view_masking import Masker
from memstore.service.view_queues import (
    QUEUE_ITEMS,
    alike_queues,
    cited_queue,
    core_queue,
    usage_queues,
    with_vault,
)
from memstore.vault.files import MAX_FILE_BYTES
from memstore.vault.git_walk import first_added

SCHEMA = 1
NEIGHBOURS = 8
NEIGHBOUR_CANDIDATES = 64  # memories weighed per memory: rare entities' holders first
GRAPH_MEMORIES = 1500  # a drawing of more is neither readable nor quick in a page
GRAPH_ENTITIES = 300
FRONT_CHARS = 4000
TEXT_CHARS = 20000

Progress = Callable[[int, int], None]
_CONFLICT = re.compile(
    r"^conflict:[ \t]*['\"]?true", re.MULTILINE | re.IGNORECASE
)  # sync kept both


def collect_view(
    store: Store,
    *,
    workspace: str | None,
    since: str | None,
    progress: Progress | None,
    vault_option: str | None = None,
    cwd: Path | None = None,
) -> dict[str, Any]:
    """Return the view's data (see docs/view.md, "Data"); changes no memory and no commit
    (it catches the index up and remembers clean texts under .memstore/, both derived).

    `since` (a date or an age, as `memstore log --since`) keeps the changes since then and
    the memories they touched or that were created since; `workspace` keeps one workspace.
    `vault_option`: the vault as the person named it, added to every command shown.
    `cwd`: where the command runs; citations of its repository (and of the code index's
    registered roots) are checked for the stale-citations queue (service/citations.py).
    Raises InvalidInputError for a bad date or workspace name, NotFoundError for a
    workspace the vault does not have.
    """
    now = store.shared.clock()
    cutoff = _cutoff(since, now)
    store.catch_up()
    everything = store.indexer.entries()
    workspaces = sorted({e.workspace for e in everything})
    if workspace is not None:
        check_workspace(workspace)
        if workspace not in workspaces:
            raise NotFoundError(
                f"no memory in workspace {workspace!r}; workspaces: {', '.join(workspaces)}"
            )
    entries = [e for e in everything if workspace is None or e.workspace == workspace]
    steps = _Steps(progress, len(entries))
    masker = Masker(store.vault)
    files = _Files(store)
    timeline = read_timeline(
        store.vault.root,
        masker,
        since=int(cutoff.timestamp()) if cutoff else None,
        workspace=workspace,
        known={e.path: e.id for e in everything},
        progress=steps.history,
        drawn=files.drawn({e.path: e.id for e in entries}),
    )
    if cutoff is not None:
        stamp = cutoff.strftime("%Y-%m-%dT%H:%M:%SZ")
        entries = [e for e in entries if e.created >= stamp or e.id in timeline.by_memory]
    documents = {d.key: d for d in store.indexer.search.documents()}
    memories, read = _memories(store, files, entries, documents, timeline, masker, steps)
    sampled = dict(timeline.capped)
    queues = _queues(store, entries, everything, documents, read, now, vault_option, sampled)
    queues["stale_citations"] = cited_queue(store, cwd, workspace, vault_option, sampled)
    _mask_items(queues, masker)
    for session in timeline.sessions:
        if session["undo"]:
            session["undo"] = with_vault(session["undo"], vault_option)
    graph = _graph(memories, masker)
    masker.save(everything=workspace is None and cutoff is None)
    if graph["sampled"]:
        sampled["graph"] = graph["note"]
    return {
        "schema": SCHEMA,
        "vault": {
            "path": masker.text(str(store.vault.root)),
            "generated": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "memories": len(memories),
            "workspaces": workspaces,
            "since": cutoff.strftime("%Y-%m-%dT%H:%M:%SZ") if cutoff else None,
            "workspace": workspace,
            "sampled": sampled,
        },
        "memories": memories,
        "changes": timeline.changes,
        "sessions": timeline.sessions,
        "queues": queues,
        "stats": _stats(memories, _born(store, entries, memories, timeline, now, cutoff)),
        "graph": graph,
    }


def _mask_items(queues: dict[str, list[dict[str, Any]]], masker: Masker) -> None:
    """Mask what each queue item says (a contradiction's text, its command), once."""
    masker.prefetch(
        item[key]
        for items in queues.values()
        for item in items
        for key in ("why", "command")
        if key in item
    )
    for items in queues.values():
        for item in items:
            for key in ("why", "command"):
                if key in item:
                    item[key] = masker.text(item[key])


def _cutoff(since: str | None, now: datetime) -> datetime | None:
    if since is None:
        return None
    return parse_date(parse_since(since, now), end_of_day=False)


class _Steps:
    """Progress over the two long parts, as (done, total): the history, then the memories
    (each counted as half of the whole)."""

    def __init__(self, progress: Progress | None, memories: int) -> None:
        self.progress = progress
        self.half = max(memories, 1)

    def history(self, done: int, total: int) -> None:
        if self.progress is not None:
            self.progress(done * self.half // max(total, 1), 2 * self.half)

    def memories(self, done: int) -> None:
        if self.progress is not None:
            self.progress(self.half + min(done, self.half), 2 * self.half)


class _Read:
    """What reading the files found beyond the memories: credentials, conflicts, core text."""

    def __init__(self) -> None:
        self.secrets: list[dict[str, Any]] = []
        self.conflicts: list[Entry] = []
        self.core: list[tuple[Entry, str]] = []


def _memories(
    store: Store,
    files: _Files,
    entries: Sequence[Entry],
    documents: dict[str, Document],
    timeline: Timeline,
    masker: Masker,
    steps: _Steps,
) -> tuple[list[dict[str, Any]], _Read]:
    read = _Read()
    corrected_by: dict[str, list[str]] = defaultdict(list)
    for entry in entries:
        for old in entry.supersedes:
            corrected_by[old].append(entry.id)
    named = [[name for name, _ in store.indexer.search.entities_of(e.path)] for e in entries]
    masker.prefetch(
        [
            *(k for e in entries if (d := documents.get(e.path)) for k in d.keywords),
            *(name for names in named for name in names),
        ]
    )
    memories = []
    for number, entry in enumerate(entries):
        doc = documents.get(entry.path)
        raw_front, raw_body = files.read(entry.path, doc)
        (path, front, body), kinds = masker.parts(
            [entry.path, raw_front[:FRONT_CHARS], raw_body[:TEXT_CHARS]]
        )
        if kinds:
            read.secrets.extend(_secret_items(entry.id, path, raw_front, raw_body, kinds))
        if _CONFLICT.search(front):
            read.conflicts.append(entry)
        keywords = doc.keywords if doc else ()
        if entry.kind == "core":
            read.core.append((entry, body))
        memories.append(
            {
                "id": entry.id,
                "workspace": entry.workspace,
                "kind": entry.kind,
                "created": entry.created,
                "source": doc.source if doc else "",
                "host": timeline.host_of.get(entry.id, ""),
                "text": body,
                "front": front,
                "keywords": [masker.text(k) for k in keywords],
                "seen": entry.seen,
                "recalled": entry.recalled,
                "confirmed": entry.confirmed,
                "last_recalled": entry.last_recalled,
                "archived": entry.archived,
                "path": path,
                "supersedes": list(entry.supersedes),
                "superseded_by": corrected_by.get(entry.id, []),
                "entities": [masker.text(name) for name in named[number]],
                "history": timeline.by_memory.get(entry.id, []),
                "neighbours": [],
            }
        )
        if number % 500 == 0:
            steps.memories(number)
    _link_neighbours(memories)
    steps.memories(len(entries))
    return memories, read


class _Files:
    """Memory files as the page shows them: front matter (the text between the `---` lines)
    and body, each read once; and which git blob a file is, where the page shows all of it."""

    def __init__(self, store: Store) -> None:
        self.root = str(store.vault.root)
        self.kept: dict[str, tuple[str, str]] = {}  # read for a drawn diff, kept for _memories

    def read(self, path: str, doc: Document | None) -> tuple[str, str]:
        kept = self.kept.pop(path, None)
        return kept if kept is not None else self._read(path, doc, whole=False)[:2]

    def drawn(self, shown: dict[str, str]) -> Callable[[str, str], str]:
        """`read_timeline`'s `drawn`: the id of the memory at `path` if its file is `blob`
        and the page shows every byte of it (front and body uncut, nothing decoded away)."""

        def memory_of(path: str, blob: str) -> str:
            if path not in shown or not path.isprintable() or any(c in path for c in '"\\'):
                return ""  # git would quote its name in a diff
            front, body, raw = self._read(path, None, whole=True)
            self.kept[path] = (front, body)
            return shown[path] if raw is not None and _blob_id(raw) == blob else ""

        return memory_of

    def _read(
        self, path: str, doc: Document | None, *, whole: bool
    ) -> tuple[str, str, bytes | None]:
        """(front, body, and with `whole` the file's bytes if front and body show them
        exactly: not cut, UTF-8, no BOM or CRLF taken out; else None)."""
        try:
            raw = _read_bytes(os.path.join(self.root, path), MAX_FILE_BYTES)
        except OSError:
            return "", doc.content if doc else "", None
        text = raw.decode("utf-8", errors="replace")
        front, body = _split(text.removeprefix("\ufeff").replace("\r\n", "\n"))
        if not whole:
            return front, body, None
        shown = f"---\n{front}---\n{body}" if front else body
        exact = (
            bool(raw)
            and shown == text
            and len(raw) < MAX_FILE_BYTES
            and len(front) <= FRONT_CHARS
            and len(body) <= TEXT_CHARS
            and shown.encode("utf-8") == raw
        )
        return front, body, raw if exact else None


def _read_bytes(path: str, limit: int) -> bytes:
    """The first `limit` bytes of a file. Through os.read, asking for its size (+1 to see
    the end): `file.read(limit)` allocates `limit` bytes a call, 3x the time of a 100,000-file
    view's reading."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        chunks, got = [], 0
        ask = min(os.fstat(fd).st_size, limit) + 1
        while got <= limit:
            chunk = os.read(fd, ask)
            chunks.append(chunk)
            got += len(chunk)
            if len(chunk) < ask:  # the end of the file
                break
            ask = limit + 1 - got
    finally:
        os.close(fd)
    return b"".join(chunks)[:limit]


def _blob_id(data: bytes) -> str:
    """The id git gives a file of these bytes (SHA-1 of its blob object)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def _split(text: str) -> tuple[str, str]:
    """A memory file's front matter (the text between its `---` lines) and body."""
    if text.startswith("---\n"):
        end = text.find("\n---\n", 3)
        if end >= 0:
            return text[4 : end + 1], text[end + 5 :]
        if text.endswith("\n---"):
            return text[4:-3], ""
    return "", text


def _secret_items(
    memory_id: str, path: str, front: str, body: str, kinds: list[str]
) -> list[dict[str, Any]]:
    """The credentials found in a file, one item per kind audit names (its scan of the whole
    file), each on the first line where the scanner finds it (1 when it spans lines or is
    in the file's name), with the command that removes it from the history too."""
    text = f"---\n{front}---\n{body}" if front else body
    lines = text.split("\n")
    on_line: list[list[str]] = []

    def line_of(kind: str) -> int:
        for number, line in enumerate(lines, 1):
            if number > len(on_line):
                on_line.append(find_secrets(line) if line.strip() else [])
            if kind in on_line[number - 1]:
                return number
        return 1

    command = f"memstore forget {memory_id} --purge"
    return [
        {"path": path, "line": line_of(kind), "kind": kind, "command": command}
        for kind in find_secrets(text) or kinds
    ]


def _link_neighbours(memories: list[dict[str, Any]]) -> None:
    """Each memory's neighbours: those sharing its entities, rarer entities weighing more.

    Only the first NEIGHBOUR_CANDIDATES holders of its entities, rarest entity first, are
    weighed: at 100,000 memories a common entity has thousands, and weighing them all cost
    more than the rest of the view."""
    holders: dict[str, list[int]] = defaultdict(list)
    for number, memory in enumerate(memories):
        for entity in memory["entities"]:
            holders[entity].append(number)
    size = {entity: len(held) for entity, held in holders.items()}
    for number, memory in enumerate(memories):
        if not memory["entities"]:
            continue
        scores: dict[int, float] = {}
        score = scores.get
        budget = NEIGHBOUR_CANDIDATES
        for entity in sorted(memory["entities"], key=size.__getitem__):
            held = holders[entity]
            if len(held) < 2 or budget <= 0:
                continue
            weight = 1.0 / len(held)
            for other in held[:budget]:
                scores[other] = score(other, 0.0) + weight
            budget -= len(held)
        scores.pop(number, None)
        # highest score first; a tie in the vault's order (deterministic: nlargest is stable)
        best = heapq.nlargest(NEIGHBOURS, scores.items(), key=itemgetter(1))
        memory["neighbours"] = [memories[other]["id"] for other, _ in best]


def _queues(
    store: Store,
    entries: Sequence[Entry],
    everything: Sequence[Entry],
    documents: dict[str, Document],
    read: _Read,
    now: datetime,
    vault: str | None,
    sampled: dict[str, str],
) -> dict[str, list[dict[str, Any]]]:
    paths = {e.path for e in entries}
    shown = [d for key, d in documents.items() if key in paths]
    contradictions, duplicates, compared = alike_queues(
        store, shown, entries, vault, now, everything
    )
    if compared < len(shown):
        sampled["duplicates"] = (
            f"near-duplicates and contradictions looked for among the newest {compared:,} "
            f"of {len(shown):,} memories; 'memstore audit' compares them all"
        )
    stale, never = usage_queues(entries, now, vault)
    queues = {
        "contradictions": contradictions,
        "duplicates": duplicates,
        "conflicts": [
            {
                "id": e.id,
                "why": "sync kept two versions of its text (edited differently on two machines)",
                "command": with_vault(f"memstore conflicts resolve {e.id} --edit", vault),
            }
            for e in read.conflicts
        ],
        "stale": stale,
        "never_recalled": never,
        "secrets": [{**s, "command": with_vault(s["command"], vault)} for s in read.secrets],
        "core_over_budget": core_queue(read.core, vault),
    }
    for name, items in queues.items():
        if len(items) > QUEUE_ITEMS:
            sampled[f"queue {name}"] = f"the first {QUEUE_ITEMS} of {len(items):,} are listed"
            queues[name] = items[:QUEUE_ITEMS]
    return queues


def _born(
    store: Store,
    entries: Sequence[Entry],
    memories: list[dict[str, Any]],
    timeline: Timeline,
    now: datetime,
    cutoff: datetime | None,
) -> list[str]:
    """When each memory came: its `created`; for a file without one (written by hand), the
    commit that added it — looked up in git when that is older than a --since window — or
    now, for a file not committed yet."""
    born = [m["created"] or timeline.added_at.get(m["id"], "") for m in memories]
    path_of = {e.id: e.path for e in entries}
    unknown = {path_of[m["id"]] for m, b in zip(memories, born, strict=True) if not b}
    # Without --since the history read holds every add: a file it has none of is not committed.
    added = first_added(store.vault.root, unknown) if unknown and cutoff else {}
    for number, memory in enumerate(memories):
        if not born[number]:
            stamp = added.get(path_of[memory["id"]])
            born[number] = iso(stamp) if stamp else now.strftime("%Y-%m-%dT%H:%M:%SZ")
    return born


def _stats(memories: list[dict[str, Any]], born: list[str]) -> dict[str, Any]:
    """Sizes by workspace and kind, and growth per month (a memory counts in the month it
    came: `born`, one per memory)."""
    months = Counter(stamp[:7] for stamp in born if stamp)
    growth, total = [], 0
    for month in sorted(months):
        total += months[month]
        growth.append([month, months[month], total])
    return {
        "by_workspace": dict(sorted(Counter(m["workspace"] for m in memories).items())),
        "by_kind": dict(sorted(Counter(m["kind"] for m in memories).items())),
        "growth": growth,
    }


def _graph(memories: list[dict[str, Any]], masker: Masker) -> dict[str, Any]:
    """Memories and the entities they name; past GRAPH_MEMORIES, a sample around the
    entities named most."""
    degree = Counter(e for m in memories for e in m["entities"])
    shared = {e for e, n in degree.items() if n >= 2}
    sampled = len(memories) > GRAPH_MEMORIES or len(shared) > GRAPH_ENTITIES
    if not sampled:
        chosen, entities = memories, sorted(shared)
        note = "every memory and every entity two or more memories name"
    else:
        entities = sorted(
            (e for e, _ in degree.most_common(GRAPH_ENTITIES) if e in shared),
        )
        top = set(entities)
        ranked = sorted(memories, key=lambda m: (-len(top.intersection(m["entities"])), m["id"]))
        chosen = [m for m in ranked[:GRAPH_MEMORIES] if top.intersection(m["entities"])]
        note = (
            f"sampled: the {len(entities)} entities named by the most memories (of "
            f"{len(shared):,} named by two or more) and the {len(chosen):,} memories naming "
            f"the most of them (of {len(memories):,})"
        )
    nodes: list[dict[str, Any]] = []
    at: dict[str, int] = {}
    for memory in chosen:
        at[f"m:{memory['id']}"] = len(nodes)
        nodes.append(
            {
                "id": memory["id"],
                "label": masker.text(summary(memory["text"], 40)),
                "type": "memory",
                "size": 1 + memory["recalled"],
            }
        )
    for entity in entities:
        at[f"e:{entity}"] = len(nodes)
        nodes.append({"id": entity, "label": entity, "type": "entity", "size": degree[entity]})
    edges = [
        [at[f"m:{m['id']}"], at[f"e:{e}"]] for m in chosen for e in m["entities"] if f"e:{e}" in at
    ]
    return {"nodes": nodes, "edges": edges, "sampled": sampled, "note": note}
