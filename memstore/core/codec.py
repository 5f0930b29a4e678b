"""The memory file format: markdown + YAML front matter <-> Memory, plus ids, slugs and hashes.

Pure: strings in, values out. Files memstore writes round-trip byte-identical; keys it does
not know are kept as their raw YAML text; a file whose front matter cannot be read is still a
memory (its whole text is the body) with `problem` set, and is never rewritten. The YAML of
single values (read and rendered) is memstore.core.yaml_values'.
"""

from __future__ import annotations

import base64
import hashlib
import re
import unicodedata
from collections import Counter
from dataclasses import replace
from typing import Any

from memstore.core.citations import CITES_KEY, Cite, cites_yaml, parse_cites
from memstore.core.errors import InvalidInputError
from memstore.core.model import GLOBAL, Kind, Memory, Newline, is_kind, plain_ascii
from memstore.core.own_front_matter import read_own
from memstore.core.yaml_values import (
    load_yaml,
    render_counts,
    render_list,
    render_scalar,
    yaml_error,
    yaml_reason,
)

KNOWN_KEYS = (
    "id",
    "kind",
    "keywords",
    "source",
    "session",
    "created",
    "seen",
    "seen_by",
    "recalled",
    "recalled_by",
    "last_recalled",
    "confirmed",
    "confirmed_by",
    "archived",
    "supersedes",
    "cites",
)


CLOSING = re.compile(r"^---[ \t]*\r?$", re.MULTILINE)
_DOTS = re.compile(r"^\.\.\.[ \t]*\r?$", re.MULTILINE)  # YAML's document end: not a closing
_UNCLOSED = "front matter opened with '---' is never closed"
_DOTTED = "front matter opened with '---' is closed by '...' on line {}: make that line '---'"
_TOP_KEY = re.compile(r"^([^\s#][^:]*?):(?:\s|$)")
_BULLET = re.compile(r"^[ \t]*(?:[-*+]|\d{1,3}[.)])[ \t]+", re.MULTILINE)


# --- hashing, ids and names -------------------------------------------------------------


def normalize_text(text: str) -> str:
    """Return the form two texts share when they say the same thing (for dedup)."""
    text = unicodedata.normalize("NFC", text)
    text = _BULLET.sub("", text)
    # as re.sub(r"\s+", " ", ...).strip() (the same whitespace, str.isspace) in half the time
    return " ".join(text.casefold().split())


def content_hash(text: str) -> str:
    """Return the hash of the normalized text (workspace-independent)."""
    return hashlib.sha256(normalize_text(text).encode("utf-8")).hexdigest()[:20]


def _base32(data: str) -> str:
    digest = hashlib.sha256(data.encode("utf-8")).digest()
    return base64.b32encode(digest).decode("ascii").lower().rstrip("=")


def derive_id(workspace: str, text: str, length: int = 8) -> str:
    """Return the stable id a new memory with this text gets in this workspace."""
    return _base32(f"{workspace}\0{normalize_text(text)}")[:length]


def path_id(relative_path: str) -> str:
    """Return the id of a file without an id of its own (a hand-written note)."""
    return _base32(f"path\0{relative_path}")[:8]


SLUG_WORDS = 6


def slugify(text: str, *, words: int = SLUG_WORDS, max_len: int = 48) -> str:
    """Return a short filename-safe slug of the first words of `text`."""
    slug = "-".join(_ascii_words(text)[:words])[:max_len].strip("-")
    return slug or "memory"


def _ascii_words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", plain_ascii(text).lower())


# Words an agent's closing message is full of that name nothing ("Found it: the fix is done").
# fmt: off
_NARRATION = frozenset({
    "found", "find", "fixed", "fix", "done", "added", "add", "updated", "update", "changed",
    "change", "now", "because", "like", "make", "made", "sure", "need", "needs", "needed",
    "used", "use", "using", "work", "works", "worked", "working", "without", "still", "only",
    "more", "other", "all", "each", "both", "after", "before", "while", "since", "until",
    "then", "once", "again", "instead", "already", "actually", "turns", "turned", "out",
    "seems", "seem", "seemed", "looks", "look", "looked", "think", "thing", "things", "way",
    "got", "get", "gets", "let", "lets", "summary", "session", "next", "first", "also", "just",
    "able", "well", "good",
})
# fmt: on
_NAMED = ("code", "identifier", "path", "version", "mention")


def specific_words(text: str) -> list[str]:
    """Return the words of `text` that say what it is about, most specific first.

    The things it names (identifiers, codes, paths, versions) first, then words with digits
    or inner punctuation, then plain words: those the text repeats (its topic), then the
    longer; function words and narration ("found", "done", "now") are left out. Ties keep
    the text's order. Pure: the same text gives the same words on every machine.
    """
    from memstore.index.analysis import STOP_WORDS, TOKEN_PATTERN
    from memstore.index.entities import extract_entities

    named = {value for value, kind in extract_entities(text) if kind in _NAMED}
    first: dict[str, int] = {}
    count: Counter[str] = Counter()
    for match in re.finditer(TOKEN_PATTERN, text.lower()):
        word = match.group(0).strip("./-_")
        technical = bool(_TECHNICAL.search(word))
        if len(word) >= (2 if technical else 3) and word not in STOP_WORDS | _NARRATION:
            first.setdefault(word, match.start())
            count[word] += 1

    def rank(word: str) -> tuple[int, int, int, int]:
        if word in named or (word.strip("@/~") in named):
            return (0, 0, 0, first[word])
        if _TECHNICAL.search(word):
            return (1, 0, 0, first[word])
        return (2, -count[word], -len(word), first[word])

    return sorted(first, key=rank)


_TECHNICAL = re.compile(r"[\d_./]")


def trace_slug(text: str, words: int = 4) -> str:
    """Return a file name slug of `text`'s most specific words (for a trace: an agent's
    closing message, whose first words are mostly preamble)."""
    parts: list[str] = []
    taken = 0
    for word in specific_words(text):
        more = _ascii_words(word)
        if more and len(parts) + len(more) <= SLUG_WORDS and len("-".join(parts + more)) <= 48:
            parts += more  # whole words only: a word cut in half says nothing
            taken += 1
        if taken == words:
            break
    return "-".join(parts) if parts else slugify(text)


def workspace_of(relative_path: str) -> str:
    """Return the workspace a vault-relative path belongs to (its first folder)."""
    parts = relative_path.replace("\\", "/").split("/")
    return parts[0] if len(parts) > 1 else GLOBAL


# --- parsing ----------------------------------------------------------------------------


def parse_memory(text: str, *, path: str) -> Memory:
    """Read a memory file's text; never raises for bad content (sets `problem`)."""
    text = text.removeprefix("\ufeff")
    newline: Newline = "\r\n" if text.startswith("---\r\n") else "\n"
    workspace = workspace_of(path)

    def fallback() -> Memory:  # built only when needed: path_id hashes the path
        return Memory(
            id=path_id(path),
            workspace=workspace,
            body=text,
            has_front_matter=False,
            newline=newline,
        )

    if not (text.startswith("---\n") or text.startswith("---\r\n")):
        return fallback()
    closing = CLOSING.search(text, len("---") + len(newline))
    if closing is None:
        dots = _DOTS.search(text, len("---") + len(newline))
        reason = _DOTTED.format(text.count("\n", 0, dots.start()) + 1) if dots else _UNCLOSED
        return _with_problem(fallback(), reason)
    header = text[len("---") + len(newline) : closing.start()]
    body = text[closing.end() :].removeprefix("\n")
    own = read_own(header, body, workspace=workspace, newline=newline)
    if own is not None:  # the keys memstore writes, read without YAML (own_front_matter.py)
        return own
    try:
        data = load_yaml(header) if header.strip() else {}
    except yaml_error() as err:
        reason = yaml_reason(err, first_line=2)
        # The stated id is kept (`show <id>` finds it), the body whole (a merge drops no line)
        stated = _STATED_ID.search(header)
        salvaged = replace(fallback(), id=stated.group(1).lower()) if stated else fallback()
        return _with_problem(salvaged, f"malformed YAML front matter: {reason}")
    if not isinstance(data, dict):
        return _with_problem(fallback(), "front matter is not a mapping of keys to values")
    return _memory_from(data, header, body, path=path, workspace=workspace, newline=newline)


_STATED_ID = re.compile(r"^id:[ \t]*[\"']?([A-Za-z0-9]{4,40})[\"']?[ \t]*$", re.MULTILINE)


def _with_problem(memory: Memory, reason: str) -> Memory:
    return Memory(**{**memory.__dict__, "problem": reason})


def _memory_from(
    data: dict[Any, Any], header: str, body: str, *, path: str, workspace: str, newline: Newline
) -> Memory:
    problems: list[str] = []
    stated = _as_str(data.get("kind", "note"))
    kind: Kind = "note"
    if is_kind(stated):
        kind = stated
    else:
        problems.append(f"unknown kind {stated!r}")
    memory_id = _as_str(data.get("id", "")) or path_id(path)
    cites, kept = _as_cites(data.get(CITES_KEY), problems)
    return Memory(
        id=memory_id.lower(),
        workspace=workspace,
        body=body,
        kind=kind,
        keywords=_as_list(data.get("keywords")),
        source=_as_str(data.get("source", "")),
        session=_as_str(data.get("session", "")),
        created=_as_str(data.get("created", "")),
        seen=_as_count(data.get("seen", 1), "seen", problems, default=1),
        seen_by=_as_counts(data.get("seen_by"), "seen_by", problems),
        recalled=_as_count(data.get("recalled", 0), "recalled", problems, default=0),
        recalled_by=_as_counts(data.get("recalled_by"), "recalled_by", problems),
        last_recalled=_as_str(data.get("last_recalled", "")),
        confirmed=_as_count(data.get("confirmed", 0), "confirmed", problems, default=0),
        confirmed_by=_as_counts(data.get("confirmed_by"), "confirmed_by", problems),
        archived=_as_str(data.get("archived", "")),
        supersedes=tuple(s.lower() for s in _as_list(data.get("supersedes"))),
        cites=cites,
        extra=tuple(
            (key, raw)
            for key, raw in split_top_level(header)
            if key not in KNOWN_KEYS or key in kept
        ),
        problem="; ".join(problems),
        newline=newline,
    )


def _as_cites(value: object, problems: list[str]) -> tuple[tuple[Cite, ...], tuple[str, ...]]:
    """Read `cites:`; a malformed one is a problem and stays verbatim among the user keys."""
    try:
        return parse_cites(value), ()
    except InvalidInputError as err:
        problems.append(str(err))
        return (), (CITES_KEY,)


def _as_str(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value).strip()


def _as_list(value: object) -> tuple[str, ...]:
    if value is None or value == "":
        return ()
    items = value if isinstance(value, list) else str(value).split(",")
    seen: dict[str, None] = {}
    for item in items:
        text = _as_str(item)
        if text:
            seen.setdefault(text, None)
    return tuple(seen)


def _as_count(value: object, key: str, problems: list[str], *, default: int) -> int:
    try:
        count = int(str(value).strip())
    except ValueError:
        problems.append(f"{key} is not a whole number: {value!r}")
        return default
    return max(count, 0)


def _as_counts(value: object, key: str, problems: list[str]) -> tuple[tuple[str, int], ...]:
    """Read a per-replica counter map `{name: count, …}`, sorted by name."""
    if value is None or value == {}:
        return ()
    if not isinstance(value, dict) or not all(
        isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in value.values()
    ):
        problems.append(f"{key} is not a map of names to whole numbers: {value!r}")
        return ()
    return tuple(sorted((_as_str(name), count) for name, count in value.items()))


def split_top_level(header: str) -> list[tuple[str, str]]:
    """Split front matter into (key, raw text) entries, comments kept with the next key."""
    entries: list[tuple[str, str]] = []
    pending: list[str] = []
    for line in header.splitlines():
        match = _TOP_KEY.match(line)
        if match and not line.startswith(("-", "#")):
            entries.append((match.group(1).strip().strip("'\""), "\n".join([*pending, line])))
            pending = []
        elif entries and not (line.startswith("#") or not line.strip()):
            key, raw = entries[-1]
            entries[-1] = (key, f"{raw}\n{line}")
        else:
            pending.append(line)
    if pending and entries:
        key, raw = entries[-1]
        entries[-1] = (key, "\n".join([raw, *pending]))
    return entries


# --- the ids a memory absorbed ------------------------------------------------------------

# `merged: [id, …]` names the memories `dedupe --merge` folded into this one, so their ids
# keep resolving. It is kept among the user keys (`extra`): the merge rules keep a list
# a side changed, and a file with the key reads as before in any memstore.
MERGED_KEY = "merged"


def merged_ids(memory: Memory) -> tuple[str, ...]:
    """Return the ids of the memories folded into `memory` (its `merged:` key), lowercased."""
    raw = dict(memory.extra).get(MERGED_KEY)
    if raw is None:
        return ()
    try:
        data = load_yaml(raw)
    except yaml_error():
        return ()  # a hand-broken key: the memory still reads; only the aliases are lost
    value = data.get(MERGED_KEY) if isinstance(data, dict) else None
    return tuple(dict.fromkeys(i.lower() for i in _as_list(value)))


def with_merged(memory: Memory, ids: tuple[str, ...]) -> Memory:
    """Return `memory` with `ids` added to its `merged:` key (order kept, no repeats)."""
    every = tuple(dict.fromkeys((*merged_ids(memory), *(i.lower() for i in ids))))
    line = f"{MERGED_KEY}: {render_list(every)}"
    extra = dict(memory.extra)
    above = []  # the comments written above the key stay
    for old in extra[MERGED_KEY].split("\n") if MERGED_KEY in extra else ():
        if not _is_note(old):
            break
        above.append(old)
    extra[MERGED_KEY] = "\n".join([*above, line])
    return replace(memory, extra=tuple(extra.items()))


# --- rendering --------------------------------------------------------------------------


def render_memory(memory: Memory) -> str:
    """Render a memory as file text: fixed key order, unknown keys verbatim, body verbatim."""
    if not memory.has_front_matter:
        return memory.body
    lines = [
        "---",
        f"id: {render_scalar(memory.id)}",
        f"kind: {memory.kind}",
        f"keywords: {render_list(memory.keywords)}",
    ]
    if memory.source:
        lines.append(f"source: {render_scalar(memory.source)}")
    if memory.session:
        lines.append(f"session: {render_scalar(memory.session)}")
    if memory.created:
        lines.append(f"created: {render_scalar(memory.created)}")
    lines.append(f"seen: {memory.seen}")
    if memory.seen_by:
        lines.append(f"seen_by: {render_counts(memory.seen_by)}")
    if memory.recalled or memory.recalled_by:
        lines.append(f"recalled: {memory.recalled}")
    if memory.recalled_by:
        lines.append(f"recalled_by: {render_counts(memory.recalled_by)}")
    if memory.last_recalled:
        lines.append(f"last_recalled: {render_scalar(memory.last_recalled)}")
    if memory.confirmed or memory.confirmed_by:
        lines.append(f"confirmed: {memory.confirmed}")
    if memory.confirmed_by:
        lines.append(f"confirmed_by: {render_counts(memory.confirmed_by)}")
    if memory.archived:
        lines.append(f"archived: {render_scalar(memory.archived)}")
    if memory.supersedes:
        lines.append(f"supersedes: {render_list(memory.supersedes)}")
    if memory.cites:
        lines.extend(cites_yaml(memory.cites).split("\n"))
    # a malformed `cites:` stays among the user keys until cites are written in its place
    lines.extend(raw for key, raw in memory.extra if not (memory.cites and key == CITES_KEY))
    lines.append("---")
    return memory.newline.join(lines) + memory.newline + memory.body


# --- patching a file in place ----------------------------------------------------------


def render_changes(text: str, before: Memory, after: Memory) -> str:
    """Return `text` (read as `before`) changed to say `after`, touching only changed keys.

    Each changed key's block is replaced in place (a one-line value keeps its trailing
    comment); a new key goes before the closing `---`. Every other byte stays: comments,
    order, quoting, CRLF, a BOM, the body. Falls back to `render_memory(after)` when the
    body or the line ending changed, or when the patched text would not read as `after`.
    """
    if after.body != before.body or after.newline != before.newline:
        return render_memory(after)
    if not (before.has_front_matter and after.has_front_matter):
        return text if before == after else render_memory(after)
    patched = _patch_front_matter(text, before, after)
    if patched is None or not _reads_as_memory(patched, after):
        return render_memory(after)
    return patched


def _patch_front_matter(text: str, before: Memory, after: Memory) -> str | None:
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    text = text.removeprefix("\ufeff")
    opening = "---" + before.newline
    closing = CLOSING.search(text, len(opening)) if text.startswith(opening) else None
    if closing is None:
        return None
    lines = [line + "\n" for line in text[len(opening) : closing.start()].split("\n")][:-1]
    blocks = _blocks(lines)
    keys = [key for key, _, _ in blocks]
    twice = {key for key in keys if keys.count(key) > 1}
    changes = list(_changed_blocks(before, after))
    if twice & {key for key, _ in changes}:
        return None  # a key stated twice changes: which one YAML keeps is not ours to guess
    where = {key: (first, end) for key, first, end in blocks if key not in twice}
    replaced: dict[int, tuple[int, list[str]]] = {}  # first line -> (end, new lines)
    inserted: dict[int, list[str]] = {}  # a block's end -> new lines that follow it
    appended: list[str] = []
    for key, new in changes:
        if key not in where and new and _COUNT_MAPS.get(key) in where:
            anchor_end = where[_COUNT_MAPS[key]][1]
            inserted.setdefault(anchor_end, []).extend(line + before.newline for line in new)
        elif key in where:
            first, end = where[key]
            if new and end - first == 1:
                new = [_with_comment(new[0], lines[first])]
            ending = lines[end - 1][len(lines[end - 1].rstrip("\r\n")) :]
            replaced[first] = (end, [line + ending for line in new])
        elif new:
            appended += [line + before.newline for line in new]
    out: list[str] = []
    index = 0
    while index < len(lines):
        end, new = replaced.get(index, (index + 1, [lines[index]]))
        out += new + inserted.get(end, [])
        index = end
    return bom + opening + "".join(out + appended) + text[closing.start() :]


def _blocks(lines: list[str]) -> list[tuple[str, int, int]]:
    """Return (key, first line, end line) of each top-level key, trailing comments excluded."""
    starts = [
        (number, match.group(1).strip().strip("'\""))
        for number, line in enumerate(lines)
        if (match := _TOP_KEY.match(line)) and not line.startswith(("-", "#"))
    ]
    blocks = []
    for n, (first, key) in enumerate(starts):
        end = starts[n + 1][0] if n + 1 < len(starts) else len(lines)
        while end > first + 1 and _is_note(lines[end - 1]):
            end -= 1  # comments and blank lines after a value belong to what follows
        blocks.append((key, first, end))
    return blocks


def _is_note(line: str) -> bool:
    stripped = line.strip()
    return not stripped or stripped.startswith("#")


def _changed_blocks(before: Memory, after: Memory) -> list[tuple[str, list[str]]]:
    """Return (key, new lines without endings; [] deletes) for every key that changed."""
    changed = [
        # A key render_memory leaves out when empty goes (revive: no `archived: ""` left).
        (
            key,
            _render_block(key, value)
            if _present(after, key) and (value or key not in _OPTIONAL_KEYS)
            else [],
        )
        for key in KNOWN_KEYS
        if (value := getattr(after, key)) != getattr(before, key)
    ]
    old, new = dict(before.extra), dict(after.extra)
    for key, raw in after.extra:
        if old.get(key) != raw:
            lines = raw.split("\n")
            first = next(i for i, line in enumerate(lines) if not _is_note(line))
            body = lines[first:] if key in old else lines  # a new key brings its comments
            while len(body) > 1 and _is_note(body[-1]):
                body.pop()
            changed.append((key, body))
    changed += [(key, []) for key in old if key not in new]
    return changed


# The keys render_memory writes only when they hold something.
# fmt: off
_OPTIONAL_KEYS = frozenset((
    "source", "session", "created", "recalled", "last_recalled", "confirmed", "archived",
    "supersedes", "cites",
))
# fmt: on


def _present(memory: Memory, key: str) -> bool:
    """Return whether `key` has a line in `memory`'s front matter (an empty map has none)."""
    return key not in _COUNT_MAPS or bool(getattr(memory, key))


# A counter map's line goes right below its counter's, where render_memory puts it.
_COUNT_MAPS = {"seen_by": "seen", "recalled_by": "recalled", "confirmed_by": "confirmed"}


def _render_block(key: str, value: object) -> list[str]:
    if key == CITES_KEY and isinstance(value, tuple):
        return cites_yaml(value).split("\n")
    return [f"{key}: {_render_value(value)}"]


def _render_value(value: object) -> str:
    if isinstance(value, tuple) and value and isinstance(value[0], tuple):
        return render_counts(value)
    if isinstance(value, tuple):
        return render_list(value)
    if isinstance(value, int):
        return str(value)
    return render_scalar(str(value))


def _with_comment(new: str, old: str) -> str:
    """Return line `new` with the `# comment` that ended `old`, at the same column if it fits."""
    content = old.rstrip("\r\n")
    try:
        whole = load_yaml(content)
        for match in re.finditer(r"[ \t]+#", content):
            if load_yaml(content[: match.start()]) == whole:
                column = match.end() - 1
                return new + " " * max(1, column - len(new)) + content[column:]
    except yaml_error():
        pass
    return new


def _reads_as_memory(text: str, expected: Memory) -> bool:
    """Return whether `text` parses to `expected` (comments may attach to other keys)."""
    hint = f"{expected.workspace}/memory.md"
    parsed = parse_memory(text, path=hint)
    if parsed.id == path_id(hint):
        parsed = replace(parsed, id=expected.id)  # no id stated: it comes from the real path

    def meaning(memory: Memory) -> Memory:
        extra = tuple((key, _without_notes(raw)) for key, raw in memory.extra)
        return replace(memory, extra=extra, workspace="", problem="")

    return meaning(parsed) == meaning(expected)


def _without_notes(raw: str) -> str:
    return "\n".join(line for line in raw.split("\n") if not _is_note(line))


def is_utf8_name(name: str) -> bool:
    """Say whether a file name read from the disk is UTF-8 text (not bytes smuggled in as
    surrogate escapes, which no index, id or commit message can hold)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def escape_name(name: str) -> str:
    """Return a file name fit to print: bytes that are not UTF-8 shown as \\xNN."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
