"""Plain values: the memory, its kinds, workspace names, and what add and search return."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, TypeGuard, get_args

from memstore.core.citations import Cite
from memstore.core.errors import InvalidInputError

# A memory's kind. A Literal, not a StrEnum: the value travels as a plain string into files,
# the index and JSON, and KINDS still lists it for help texts and checks.
Kind = Literal["note", "trace", "lesson", "core", "imported"]
KINDS: tuple[Kind, ...] = get_args(Kind)
ADDABLE_KINDS: tuple[Kind, ...] = ("note", "trace", "lesson", "core")
Newline = Literal["\n", "\r\n"]  # the line endings a memory file may use
GLOBAL = "global"
ALL = "all"

_WORKSPACE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
# Names of files at a vault's top (its config, a README or LICENSE): no workspace folder
# may take one (a folder "memstore.toml" would replace the team's config).
_TOP_FILES = re.compile(r"memstore\.toml|(readme|license|licence|copying)(\.[a-z0-9]+)?")


def check_workspace(name: str, *, for_add: bool = False) -> str:
    """Return `name` if it is a valid workspace name, else raise InvalidInputError."""
    if for_add and name == ALL:
        raise InvalidInputError(
            "workspace 'all' is reserved for searching every workspace; "
            "pass a real workspace name with -w"
        )
    if not _WORKSPACE.match(name) or ".." in name:
        raise InvalidInputError(
            f"invalid workspace name {name!r}; use lowercase letters, digits, '.', '_' "
            "and '-' (starting with a letter or digit, no '..'), e.g. -w my-project"
        )
    if _TOP_FILES.fullmatch(name):
        raise InvalidInputError(
            f"workspace name {name!r} is the name of a file at the vault's top; "
            "pick another, e.g. -w my-project"
        )
    return name


def is_kind(value: str, allowed: tuple[str, ...] = KINDS) -> TypeGuard[Kind]:
    """Say whether `value` is a kind, one of `allowed` (a tuple of kinds)."""
    return value in allowed and value in KINDS


def check_kind(kind: str, *, allowed: tuple[str, ...] = ADDABLE_KINDS) -> Kind:
    """Return `kind` if it is one of `allowed`, else raise InvalidInputError."""
    if is_kind(kind, allowed):
        return kind
    if is_kind(kind):
        who = "memstore import" if kind == "imported" else "a person (memstore promote)"
        raise InvalidInputError(f"kind {kind!r} is set by {who}; use one of: {', '.join(allowed)}")
    raise InvalidInputError(f"unknown kind {kind!r}; use one of: {', '.join(allowed)}")


MIN_TEXT_CHARS = 2  # letters or digits a new memory holds at least ("x", "-", "?" do not)


def check_new_text(text: str) -> str:
    """Return `text` unless it is too short to be a memory: fewer than two letters or digits
    is a slip ('x', '-', '?'), nothing a recall could find. The one rule of `add`, the lean
    path and `memory_add`; an empty text has its own message first."""
    if not text.strip():
        return text  # empty: the empty rule's own message says it
    found = 0
    for char in text:
        found += char.isalnum()
        if found >= MIN_TEXT_CHARS:
            return text
    raise InvalidInputError(
        f"memory text {text.strip()[:20]!r} is too short to recall; write the fact itself "
        'in words, e.g. "staging deploys need approval from @maria"'
    )


@dataclass(frozen=True)
class Memory:
    """One memory file: front matter fields plus the markdown body, verbatim."""

    id: str
    workspace: str
    body: str
    # One of KINDS (the codec reads nothing else). A str until service/store.py builds its
    # memories from check_kind's Kind; then this field becomes a Kind.
    kind: str = "note"
    keywords: tuple[str, ...] = ()
    source: str = ""
    # The agent session that wrote it ('' when unknown: a person's add, an older file).
    # Memories of one session, in the order they were created, are each other's context.
    session: str = ""
    created: str = ""
    seen: int = 1
    recalled: int = 0
    last_recalled: str = ""
    confirmed: int = 0  # times a person confirmed it (memstore confirm): slows its decay
    archived: str = ""  # when it was archived: out of ordinary recall, found with --archived
    supersedes: tuple[str, ...] = ()
    cites: tuple[Cite, ...] = ()  # the code it names (memstore.core.citations)
    # Each clone's share of `seen`, `recalled` and `confirmed` (replica name, count), sorted
    # by name: a clone bumps only its own entry, so two machines' bumps never look alike to
    # git and a merge takes each entry's larger value. What the map does not explain (an old
    # file's plain `seen: 8`, a hand edit) is the counter's unattributed part.
    seen_by: tuple[tuple[str, int], ...] = ()
    recalled_by: tuple[tuple[str, int], ...] = ()
    confirmed_by: tuple[tuple[str, int], ...] = ()
    # Keys memstore does not know, as (key, raw YAML text of that entry), kept verbatim.
    extra: tuple[tuple[str, str], ...] = ()
    # False for a hand-written file without front matter: it is never given one unasked.
    has_front_matter: bool = True
    # Why the front matter could not be read (the file is still searchable by its text).
    problem: str = ""
    # Line ending the file uses, kept when memstore rewrites it.
    newline: Newline = "\n"


@dataclass(frozen=True)
class Hit:
    """One search result."""

    id: str
    workspace: str
    kind: str
    path: str
    content: str
    keywords: tuple[str, ...]
    source: str
    created: str
    seen: int
    score: float
    weak: bool
    # Share of the query's terms this memory contains (1.0 for an all-terms match).
    coverage: float = 1.0
    # Which view found it: "lexical" (all terms), "any-word", "entity", or a "+" pair.
    view: str = "lexical"
    # Ids of the memories that correct this one (their `supersedes` names it).
    superseded_by: tuple[str, ...] = ()
    # Up to two related memory ids: the correction first, then memories sharing entities.
    neighbors: tuple[str, ...] = ()
    # Where the code this memory names is (ingested source trees): "path:start-end" or "path".
    code: tuple[str, ...] = ()
    # The team vault it was found in ('' for the personal vault): recall reads every tier.
    tier: str = ""
    # Its citations whose code changed since they were anchored (empty: fresh, or not
    # checked: no citation of the caller's repository; docs/citations.md).
    stale: tuple[StaleCite, ...] = ()


@dataclass(frozen=True)
class StaleCite:
    """A citation of a memory whose code changed or went away since it was anchored."""

    cite: str  # what it cites: "src/upload.py:handle_upload", "src/upload.py:12-40"
    state: Literal["changed", "gone"]
    reason: str  # "src/upload.py:handle_upload changed in 3f2a1c9, 2 days ago"


@dataclass(frozen=True)
class CoreMemory:
    """A standing rule (kind core) returned beside every recall."""

    id: str
    workspace: str
    content: str
    tier: str = ""  # the team vault it comes from ('' for the personal vault)


@dataclass(frozen=True)
class Recall:
    """What an agent gets back: hits in rank order, core memories, and a note for it."""

    hits: tuple[Hit, ...]
    core: tuple[CoreMemory, ...]
    message: str
    weak: bool = False
    dropped: int = 0  # hits left out to fit max_tokens


# How two memories disagree (memstore.core.contradictions explains each).
DisagreementKind = Literal["negation", "number", "value", "antonym"]


@dataclass(frozen=True)
class Contradiction:
    """An existing memory a new one disagrees with, and how (memstore.core.contradictions)."""

    id: str  # the existing memory
    kind: DisagreementKind
    detail: str  # the new memory's side first: 'port 8443 vs 8080'


# What an add did: "added" | "duplicate_merged" | "duplicate_uncounted" (the file it matches
# has no front matter, or unreadable front matter: memstore never rewrites it, so seen stays)
# | "supersede_recorded" (the text of a stored memory with --supersedes ids it did not name
# yet: the links are added, seen stays) | "duplicate_skipped" (a re-import found it
# stored already: nothing written).
AddStatus = Literal[
    "added", "duplicate_merged", "duplicate_uncounted", "supersede_recorded", "duplicate_skipped"
]


@dataclass(frozen=True)
class AddResult:
    """What an add did: a new file, or a duplicate folded into an existing one."""

    status: AddStatus
    id: str
    path: str
    seen: int
    workspace: str
    commit: str = ""
    # Memories of the same workspace a new memory disagrees with: a hint, never a refusal.
    contradicts: tuple[Contradiction, ...] = ()
    # The ids a "supersede_recorded" add named as corrected (they were not named before).
    linked: tuple[str, ...] = ()
    # The code this add cited (--cite, or named by its text), as recorded in the file.
    cites: tuple[Cite, ...] = ()


@dataclass(frozen=True)
class FileProblem:
    """A file the indexer could not read as a memory, and why."""

    path: str
    reason: str


@dataclass(frozen=True)
class SearchResult:
    """Hits in rank order; `weak` is true when they come from the any-term fallback."""

    hits: tuple[Hit, ...] = ()
    weak: bool = False
    problems: tuple[FileProblem, ...] = field(default=())
    # words no memory holds, each with the known word searched in its place (typos)
    read_as: tuple[tuple[str, str], ...] = ()


def unsure_lead(hits: Sequence[Hit]) -> str:
    """What a recall whose hits are all weak says first: that no memory has every word, or,
    when some do (their words are in several memories, or a rival holds as much), that none
    stands out; "no memory has every word" above a memory holding the one word asked was
    false."""
    if any(hit.coverage >= 1.0 for hit in hits):
        return "No memory stands out, though some hold every word"
    return "No memory has every word"


def to_workspace_name(name: str) -> str:
    """Turn a repository or folder name into a valid workspace name ('My App' → 'my-app',
    'Some%20Thing' → 'some-thing', 'Ünïcode' → 'unicode')."""
    cleaned = re.sub(r"[^a-z0-9._-]+", "-", plain_ascii(name).lower()).strip("-._")[:64]
    cleaned = cleaned.replace("..", ".")
    return cleaned if cleaned and cleaned != ALL else GLOBAL


_ESCAPES = re.compile(r"(?:%[0-9A-Fa-f]{2})+")
# Latin letters NFKD does not take apart into a letter and a mark
_LETTERS = str.maketrans(
    {"ß": "ss", "æ": "ae", "Æ": "AE", "œ": "oe", "Œ": "OE", "ø": "o", "Ø": "O", "đ": "d",
     "Đ": "D", "ð": "d", "Ð": "D", "ł": "l", "Ł": "L", "þ": "th", "Þ": "Th", "ı": "i"}
)  # fmt: skip


def plain_ascii(text: str) -> str:
    """Return `text` in ASCII for a name: percent escapes of UTF-8 decoded (a URL's
    'Some%20Thing'), accented Latin letters without their marks ('Ünïcode' → 'Unicode');
    what has no ASCII form is dropped. Callers still keep only the characters they allow."""
    if "%" in text:
        text = _ESCAPES.sub(_unescape, text)
    decomposed = unicodedata.normalize("NFKD", text.translate(_LETTERS))
    return "".join(c for c in decomposed if not unicodedata.combining(c) and c.isascii())


def _unescape(match: re.Match[str]) -> str:
    try:
        return bytes.fromhex(match[0].replace("%", "")).decode("utf-8")
    except UnicodeDecodeError:  # not an escape of text ('100%ff'): keep it as written
        return match[0]


def summary(body: str, width: int = 60) -> str:
    """Return the first words of a memory, shortened for a commit message or a listing.

    Lines that hold no words are left out: a `<!-- memstore: … -->` line a merge wrote
    above the versions of a conflicted memory, and a rule (`---`) a body starts with.
    """
    lines = [line for line in body.splitlines() if _has_words(line)]
    return clip(" ".join(" ".join(lines or body.splitlines()).split()), width)


def clip(text: str, width: int) -> str:
    """Return `text` cut to `width` characters, the cut marked with "…"."""
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


_MARKER_LINE = re.compile(r"\s*<!-- memstore: .* -->\s*")


def _has_words(line: str) -> bool:
    """Whether a line of a memory says something (a marker or a rule does not)."""
    return any(c.isalnum() for c in line) and _MARKER_LINE.fullmatch(line) is None


@dataclass(frozen=True)
class Caller:
    """Who is writing: the agent or person (`source`), its session and its host.

    Passed explicitly to a store's writes (the trailers of their commits), never swapped
    on a shared object for the length of a request.
    """

    source: str
    session: str
    host: str


PERSON_SOURCE = "cli"  # the source of a person at the command line (Settings' default)


def written_in(caller: Caller) -> str:
    """Return the session a memory `caller` adds records (front matter `session`): an
    agent's session, or '' for a person at the command line, whose every command is a
    session of its own (nothing it wrote before is its context)."""
    return "" if caller.source == PERSON_SOURCE else caller.session
