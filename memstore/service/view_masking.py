"""The view's masking: each text as the secret scanner sees it, clean texts remembered between views.

The scanner reads about a microsecond a character: a 10,000-memory vault's files, subjects
and diffs are ~6 MB, ~6 s. A text once found clean is remembered by a 64-bit digest under
`.memstore/state/` (derived, local, rebuilt freely), tagged with a digest of the scanner's
own source, so a changed rule set scans everything again. A memory's path, front matter and
text are scanned as one text, apart so that no credential can span two of them (a line of
`SEPARATOR` ends every token, run of words and line the rules read).
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterable, Sequence
from pathlib import Path

from memstore.core import secrets
from memstore.core.errors import VaultError
from memstore.core.secret_mask import mask_secrets
from memstore.core.secrets import find_secrets
from memstore.vault.files import Vault

STATE = "view-clean"
SEPARATOR = "\n\n\u00a7\n\n"  # '§' is no token character: it ends a run of words
# A key's base64 body is judged by the BEGIN line above it: never scanned apart from it.
_KEY_HEADER = "-----BEGIN"
MAX_REMEMBERED = 2_000_000
SHORT = 200  # characters: a text this short is remembered by itself within one view
BATCH = 40  # short texts scanned together by `prefetch` (~8,000 characters at most)


def scanner_digest() -> str:
    """A digest of the scanner's rules (the source of core/secret*.py, every module of it):
    a new rule invalidates the memory."""
    digest = hashlib.blake2b(digest_size=8)
    with contextlib.suppress(OSError, TypeError):
        for path in sorted(Path(str(secrets.__file__)).parent.glob("secret*.py")):
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


class Masker:
    """Masks texts for the view, scanning each distinct text at most once a scanner version."""

    def __init__(self, vault: Vault) -> None:
        self.vault = vault
        self.version = scanner_digest()
        words = vault.read_state(STATE).split()
        self.known = set(words[1:]) if words and words[0] == self.version else set()
        self.clean: set[str] = set()  # digests found or confirmed clean in this view
        self.scanned = 0  # characters scanned (not taken from memory)
        # Short texts met again and again (names, keywords, entities): their verdict by the
        # text itself, without hashing it each time.
        self.short: dict[str, list[str]] = {}

    def kinds(self, text: str) -> list[str]:
        """The kinds of credential `text` holds ([] when none, or when known clean)."""
        if not text:
            return []
        if len(text) <= SHORT:
            found = self.short.get(text)
            if found is None:
                found = self.short[text] = self._kinds(text)
            return found
        return self._kinds(text)

    def prefetch(self, texts: Iterable[str]) -> None:
        """Learn the verdicts of many short texts (subjects, names, keywords) at once: those
        not known are scanned BATCH at a time, joined by SEPARATOR (as `parts` joins a
        file's); a batch found clean clears each of its texts, one found dirty is left for
        `kinds` to scan text by text. A scan's fixed cost is most of a short text's."""
        pending: list[tuple[str, str]] = []
        for text in dict.fromkeys(texts):
            if not text or len(text) > SHORT or text in self.short or _KEY_HEADER in text:
                continue
            key = _digest(text)
            if key in self.known or key in self.clean:
                self.clean.add(key)
                self.short[text] = []
            else:
                pending.append((text, key))
        for start in range(0, len(pending), BATCH):
            batch = pending[start : start + BATCH]
            joined = SEPARATOR.join(text for text, _ in batch)
            self.scanned += len(joined)
            if not find_secrets(joined):
                for text, key in batch:
                    self.clean.add(key)
                    self.short[text] = []

    def _kinds(self, text: str) -> list[str]:
        key = _digest(text)
        if key in self.known or key in self.clean:
            self.clean.add(key)
            return []
        self.scanned += len(text)
        found = find_secrets(text)
        if not found:
            self.clean.add(key)
        return found

    def text(self, text: str) -> str:
        """`text`, or it masked if the scanner finds a credential in it."""
        return mask_secrets(text) if self.kinds(text) else text

    def parts(self, parts: Sequence[str]) -> tuple[list[str], list[str]]:
        """`parts` as shown (each masked where it holds a credential) and the kinds found.

        Scanned as one text when none holds a key header; scanned apart once that text is
        flagged (a property test checks no part's finding is lost by scanning together)."""
        if not any(_KEY_HEADER in part for part in parts) and not self.kinds(SEPARATOR.join(parts)):
            return list(parts), []
        found = [self.kinds(part) for part in parts]
        kinds = list(dict.fromkeys(kind for each in found for kind in each))
        return [mask_secrets(p) if f else p for p, f in zip(parts, found, strict=True)], kinds

    def save(self, *, everything: bool) -> None:
        """Remember the clean digests for the next view (those of this view only when it read
        `everything`: the memory does not grow with texts no longer in the vault)."""
        keep = self.clean if everything else self.clean | self.known
        if keep == self.known or len(keep) > MAX_REMEMBERED:
            return
        with contextlib.suppress(VaultError):  # a read-only vault still gets its view
            self.vault.write_state(STATE, "\n".join([self.version, *sorted(keep)]))
