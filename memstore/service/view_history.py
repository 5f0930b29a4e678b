"""The view's timeline: every commit as a change (kind, who, which memories, its diff) and sessions.

Read in one pass of `git log --raw` (vault/git_walk.py); diffs only for the newest changes,
a person's edits and merges, each cut to a few dozen lines, so the page stays small at
100,000 commits. Every text that leaves here is masked as the secret scanner sees it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from memstore.core.codec import path_id
from memstore.service.view_masking import Masker
from memstore.vault.git_walk import Walked, read_diffs, walk_history

ChangeKind = Literal[
    "add",
    "seen",
    "confirm",
    "edit",
    "supersede",
    "archive",
    "forget",
    "merge",
    "conflict",
    "recall",
    "import",
    "other",
]
# The verb of a commit subject (`verb(workspace): …`) and the kind of change it is.
VERBS: dict[str, ChangeKind] = {
    "add": "add",
    "seen": "seen",
    "confirm": "confirm",
    "edit": "edit",
    "supersede": "supersede",
    "archive": "archive",
    "forget": "forget",
    "recall": "recall",
    "import": "import",
    "restore": "import",
    "resolve": "conflict",  # settling a conflict sync kept: shown beside the conflicts
}
_VERB = re.compile(r"^([a-z]+)\b")
_ID = re.compile(r"-([a-z0-9]{4,40})\.md$")
_WRITTEN_ID = re.compile(r"[a-z2-7]{8,}")  # derive_id's base32, 8 letters or more
DIFF_NEWEST = 1000  # changes, newest first, shown with their diff
DIFF_EXTRA = 500  # older changes shown with a diff anyway: a person's edits and merges
DIFF_LINES = 40  # lines of one change's diff (a memory file is ~10)
SUBJECT_CHARS = 200
# Changes listed one by one, newest first; older ones count in their sessions only. At 10
# changes a memory a 100,000-memory vault has a million: no page holds them usefully.
MAX_CHANGES = 20_000
NO_UNDO = "sync merges are not undone by revert"  # shown for a session holding a merge


@dataclass
class Timeline:
    """The changes (newest first), the sessions, and each memory's changes and first host."""

    changes: list[dict[str, Any]] = field(default_factory=list)
    sessions: list[dict[str, Any]] = field(default_factory=list)
    by_memory: dict[str, list[int]] = field(default_factory=dict)
    host_of: dict[str, str] = field(default_factory=dict)  # id -> machine of its oldest change
    added_at: dict[str, str] = field(default_factory=dict)  # id -> when its file was added
    capped: dict[str, str] = field(default_factory=dict)  # what was left out, in words


def memory_id_of(path: str, known: Mapping[str, str]) -> str:
    """The id of the memory at `path`: the index's (`known`, path -> id) for a file the
    vault has; for one gone since, the id its name ends with (`<slug>-<id>.md`) when that is
    an id memstore would write, else the id a hand-written file is given (its path's hash)."""
    if path in known:
        return known[path]
    found = _ID.search(path)
    if found and _WRITTEN_ID.fullmatch(found.group(1)):
        return found.group(1)
    return path_id(path)


_TRAILER = re.compile(r"^Memstore-([A-Za-z-]+): (.+)$", re.MULTILINE)


def trailers(message: str) -> dict[str, str]:
    """The `Memstore-<name>: <value>` lines of a commit message, the first of each name."""
    found: dict[str, str] = {}
    if "Memstore-" in message:
        for name, value in _TRAILER.findall(message):
            found.setdefault(name, value.strip())
    return found


def change_kind(walked: Walked, tags: Mapping[str, str] | None = None) -> ChangeKind:
    """What kind of change a commit is, from its subject's verb and its parents (`tags`:
    its trailers, when read already)."""
    subject = walked.message.split("\n", 1)[0]
    if len(walked.parents) > 1:
        return "merge"
    verb = _VERB.match(subject)
    kind = VERBS.get(verb.group(1), "other") if verb else "other"
    # A commit made by hand with git (no memstore trailers) that changed memories.
    if (
        kind == "other"
        and not (trailers(walked.message) if tags is None else tags).get("Source")
        and any(path.endswith(".md") and "/" in path for _, path in walked.touched)
    ):
        return "edit"
    return kind


def iso(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def read_timeline(
    root: Path,
    masker: Masker,
    *,
    since: int | None,
    workspace: str | None,
    known: Mapping[str, str],
    progress: Callable[[int, int], None] | None = None,
    drawn: Callable[[str, str], str] | None = None,
) -> Timeline:
    """Read the history into changes and sessions (see the module's docstring); `known`
    maps the path of each memory file the vault has to its id, as the index has it.

    `drawn(path, blob)`: the id of the memory the page shows whose file is that blob,
    exactly as the page shows it ("" if none). A commit that only added that file gets
    `added` (the id) instead of its diff: the page draws the diff from the memory's text
    and front matter, which are masked already (no second scan, no `git log -p`)."""
    timeline = Timeline()
    walked = list(walk_history(root, since=since, under=workspace))
    tags = [trailers(w.message) for w in walked]
    kinds = [change_kind(w, t) for w, t in zip(walked, tags, strict=True)]
    listed = walked[:MAX_CHANGES]
    with_diff = [w.id for w in listed[:DIFF_NEWEST]]
    extra = [
        w.id
        for w, kind in zip(listed[DIFF_NEWEST:], kinds[DIFF_NEWEST:], strict=False)
        if kind in ("edit", "merge")
    ][:DIFF_EXTRA]
    added = _drawn(listed, {*with_diff, *extra}, drawn if workspace is None else None)
    diffs = read_diffs(
        root, [c for c in [*with_diff, *extra] if c not in added], max_lines=DIFF_LINES
    )
    if len(listed) > len(with_diff):
        timeline.capped["diffs"] = (
            f"diffs shown for the newest {len(with_diff):,} changes and {len(extra):,} older "
            f"edits and merges, each cut to {DIFF_LINES} lines; 'git show <commit>' in the "
            "vault shows any change"
        )
    if len(walked) > MAX_CHANGES:
        timeline.capped["changes"] = (
            f"the newest {MAX_CHANGES:,} of {len(walked):,} changes are listed; the older ones "
            "count in their sessions ('memstore log' lists them all)"
        )
    sessions: dict[str, dict[str, Any]] = {}
    names: dict[str, str] = {}  # trailer values (sessions, agents, machines) as shown
    _prefetch(masker, listed, tags)
    for number, (commit, kind) in enumerate(zip(walked, kinds, strict=True)):
        change = _change(commit, kind, known, tags[number])
        for key in ("session", "source", "host"):
            value = change[key]
            if value not in names:
                names[value] = masker.text(value)
            change[key] = names[value]
        for status, path in commit.touched:
            if status == "A" and _is_memory(path):  # newest first: the oldest add wins
                timeline.added_at[memory_id_of(path, known)] = change["time"]
        for memory_id in change["ids"]:
            if change["host"]:
                timeline.host_of[memory_id] = change["host"]  # newest first: the oldest wins
        if number < MAX_CHANGES:
            if commit.id in added:
                change["added"] = added[commit.id]
            diff = masker.text(_body(diffs.get(commit.id, "")))
            if kind == "merge" and "\n+conflict: true" in f"\n{diff}":
                change["kind"] = "conflict"
            change.update(subject=masker.text(change["subject"]), diff=diff)
            change["author"] = masker.text(change["author"])
            timeline.changes.append(change)
            for memory_id in change["ids"]:
                timeline.by_memory.setdefault(memory_id, []).append(number)
        if change["session"]:
            _add_to_session(sessions, change, listed=number < MAX_CHANGES)
        if progress is not None and number % 500 == 0:
            progress(number, len(walked))
    timeline.sessions = sorted(sessions.values(), key=lambda s: s["last"], reverse=True)
    for session in timeline.sessions:
        session["ids"] = list(dict.fromkeys(session["ids"]))
    return timeline


def _drawn(
    commits: list[Walked], wanted: set[str], drawn: Callable[[str, str], str] | None
) -> dict[str, str]:
    """Commit -> memory id, for the commits with a diff wanted that only added one file the
    page shows as it is (its diff is that file's lines, each with a '+')."""
    if drawn is None:
        return {}
    found = {}
    for commit in commits:
        if commit.id in wanted and len(commit.parents) <= 1 and len(commit.touched) == 1:
            (status, path), blob = commit.touched[0], commit.blobs[0] if commit.blobs else ""
            memory_id = drawn(path, blob) if status == "A" and blob else ""
            if memory_id:
                found[commit.id] = memory_id
    return found


def _body(diff: str) -> str:
    """A diff with one line naming each file (`diff <path>`) instead of git's four or five
    (`diff --git`, `index`, modes, `---`/`+++`): then its hunks."""
    lines, in_header = [], False
    for line in diff.split("\n"):
        if line.startswith("diff --git "):
            in_header = True
            lines.append("diff " + line.rpartition(" b/")[2])
        elif line.startswith("@@"):
            in_header = False
        if not in_header:
            lines.append(line)
    return "\n".join(lines)


def _prefetch(masker: Masker, listed: list[Walked], tags: list[dict[str, str]]) -> None:
    """Scan the subjects and names of the listed changes in batches (Masker.prefetch)."""
    masker.prefetch(
        text
        for commit, tag in zip(listed, tags, strict=False)
        for text in (_subject(commit), commit.author, *tag.values())
    )


def _subject(commit: Walked) -> str:
    return commit.message.split("\n", 1)[0][:SUBJECT_CHARS]


def _is_memory(path: str) -> bool:
    """Whether a changed path is a memory file: markdown in a workspace's folder (not at the
    vault's top, like README.md), no part of it a dotfile or dot folder (vault/files.py)."""
    parts = path.split("/")
    return path.endswith(".md") and len(parts) > 1 and not any(p.startswith(".") for p in parts)


def _change(
    commit: Walked, kind: ChangeKind, known: Mapping[str, str], tags: Mapping[str, str]
) -> dict[str, Any]:
    subject = _subject(commit)
    ids = [memory_id_of(path, known) for _, path in commit.touched if _is_memory(path)]
    return {
        "commit": commit.id[:10],
        "time": iso(commit.time),
        "kind": kind,
        "subject": subject,
        "author": commit.author,
        "session": tags.get("Session", ""),
        "source": tags.get("Source", ""),
        "host": tags.get("Host", ""),
        "ids": [i for i in dict.fromkeys(ids) if i],
        "diff": "",
    }


def _add_to_session(
    sessions: dict[str, dict[str, Any]], change: dict[str, Any], *, listed: bool
) -> None:
    name = change["session"]
    session = sessions.get(name)
    if session is None:
        session = sessions[name] = {
            "session": name,
            "source": change["source"],
            "host": change["host"],
            "first": change["time"],
            "last": change["time"],
            "changes": 0,
            "ids": [],
            "undo": f"memstore revert --session {name}",
            "no_undo": "",
        }
    session["changes"] += 1
    session["first"] = min(session["first"], change["time"])
    session["last"] = max(session["last"], change["time"])
    if change["kind"] in ("merge", "conflict"):
        # Reverting a sync's merge would delete what the other machine added: no undo offered.
        session["undo"], session["no_undo"] = "", NO_UNDO
    elif listed:
        session["ids"].extend(change["ids"])  # a merge brings others' memories: not its own
