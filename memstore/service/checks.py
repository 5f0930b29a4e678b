"""Checks of what a caller hands the store: ids, memory text, keywords, source names."""

from __future__ import annotations

import re

from memstore.core.codec import slugify, trace_slug
from memstore.core.errors import InvalidInputError
from memstore.core.model import Memory

MAX_TEXT_BYTES = 100_000
MAX_KEYWORD_CHARS = 64
SLUG_SCAN_CHARS = 600  # the slug's words lie within a text's first few hundred characters
SAFE_WORD_CHARS = 12  # a credential is longer, or holds a digit or a sign
_SOURCE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def memory_path(memory: Memory, *, may_hold_secret: bool = True) -> str:
    """Return where a new memory's file goes: `<workspace>/<YYYY-MM>/<DD>/<slug>-<id>.md`.

    A trace (an agent's closing message, "Found it: the …") is named by its most specific
    words rather than its first ones. A text holding a credential near its start is named by
    its plain short words only: a file's name reaches commit subjects, shares and listings
    (`may_hold_secret` False: the caller's scan found none, and the text is not scanned).
    """
    body = memory.body
    from memstore.core.secrets import find_secrets  # imported by writers only

    if may_hold_secret and find_secrets(body[:SLUG_SCAN_CHARS]):  # never in a file's name
        body = " ".join(w for w in body.split() if w.isalpha() and len(w) <= SAFE_WORD_CHARS)
    slug = trace_slug(body) if memory.kind == "trace" else slugify(body)
    return f"{memory.workspace}/{_created_folder(memory.created)}/{slug}-{memory.id}.md"


def _created_folder(created: str) -> str:
    """`2026-12-07T…` → `2026-12/07`: the month, then the day (UTC), so no folder a commit
    rewrites whole holds more than one day's new memories (docs/file-format.md)."""
    month, day = created[:7], created[8:10]
    return f"{month}/{day}" if day.isdigit() else month


def check_id(id_prefix: str) -> str:
    """Return `id_prefix` normalized, or raise InvalidInputError if it cannot be an id."""
    prefix = id_prefix.strip().lower()
    if not re.fullmatch(r"[a-z0-9]{1,40}", prefix):
        raise InvalidInputError(f"{id_prefix!r} is not a memory id; ids look like k3xq9v2m")
    return prefix


def check_text(text: str) -> str:
    """Return the body to store for `text`, or raise InvalidInputError."""
    if "\0" in text:
        raise InvalidInputError("memory text contains NUL bytes; store plain text, not binary data")
    size = len(check_encodable(text, "memory text").encode("utf-8"))
    if size > MAX_TEXT_BYTES:
        raise InvalidInputError(
            f"memory text is {size:,} bytes; the limit is {MAX_TEXT_BYTES:,}: store a short "
            "summary and point at the document instead"
        )
    body = text.strip()
    if not body:
        raise InvalidInputError(
            'memory text is empty; pass the text to remember, e.g. memstore add "…"'
        )
    return body.replace("\r\n", "\n") + "\n"


def check_encodable(text: str, what: str) -> str:
    """Return `text` if it can be written as UTF-8, else raise InvalidInputError.

    Invalid UTF-8 on a command line or stdin reaches Python as lone surrogates.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        raise InvalidInputError(
            f"{what} is not valid UTF-8 (character {err.start + 1}); pass plain UTF-8 text"
        ) from err
    return text


def check_keywords(keywords: tuple[str, ...]) -> tuple[str, ...]:
    """Return cleaned, distinct keywords, or raise InvalidInputError."""
    cleaned: dict[str, None] = {}
    for raw in keywords:
        for word in raw.split(","):
            word = " ".join(check_encodable(word, "a keyword").split()).lower()
            if not word:
                continue
            if len(word) > MAX_KEYWORD_CHARS or "\0" in word:
                raise InvalidInputError(
                    f"keyword {word[:20]!r}… is too long; keep keywords under {MAX_KEYWORD_CHARS} characters"
                )
            cleaned.setdefault(word, None)
    return tuple(cleaned)


def check_source(source: str) -> str:
    """Return `source` if it is a valid agent or person name, else raise InvalidInputError."""
    if not _SOURCE.match(source):
        raise InvalidInputError(
            f"invalid --source {source!r}; use a short name such as claude-code"
        )
    return source
