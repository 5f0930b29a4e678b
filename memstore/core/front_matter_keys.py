"""Keys a memory file's front matter states twice: YAML keeps the last unsaid; doctor names them.

A person who writes `kind: note` and, lower down, `kind: lesson` sees two values; every
reader takes the last. The file still reads (it is no `problem`, and memstore patches it in
place: `codec.render_changes`), so this is found only when asked (`memstore doctor`).
"""

from __future__ import annotations

from collections import Counter

from memstore.core.codec import CLOSING, split_top_level


def repeated_keys(text: str) -> tuple[str, ...]:
    """Return the top-level keys `text`'s front matter states more than once, sorted."""
    text = text.removeprefix("\ufeff")
    opening = "---\r\n" if text.startswith("---\r\n") else "---\n"
    closing = CLOSING.search(text, len(opening)) if text.startswith(opening) else None
    if closing is None:
        return ()  # no front matter, or one that is never closed: a problem of its own
    keys = Counter(key for key, _ in split_top_level(text[len(opening) : closing.start()]))
    return tuple(sorted(key for key, count in keys.items() if count > 1))
