"""The secret scan: the kinds of credential a text, a memory's fields or a commit's new lines hold. Pure."""

from __future__ import annotations

import base64
import binascii
import itertools
import re
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from memstore.core.secret_gates import ScanText, may_hold_run, triggers
from memstore.core.secret_joins import joins as split_joins
from memstore.core.secret_keys import is_printable
from memstore.core.secret_providers import UNTRIGGERED
from memstore.core.secret_rules import RULES as _RULES
from memstore.core.secret_values import (
    is_dummy,
    is_placeholder,
    labelled_credential,
    looks_generated,
    looks_random,
)

__all__ = [
    "LABELLED",
    "FieldScan",
    "find_added_secret",
    "find_secret_in_fields",
    "find_secrets",
    "is_dummy",
    "is_placeholder",
    "looks_generated",
    "looks_random",
    "normalize",
    "scan_fields",
    "withhold_secret",
]

# Invisible characters NFKC keeps: the format characters (Unicode category Cf: zero-width
# space and joiners, word joiner, BOM, soft hyphen, bidi controls, tags) plus fillers,
# the combining grapheme joiner and variation selectors.
_INVISIBLE = re.compile(
    "[\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160"
    "\u180b-\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\u3164"
    "\ufe00-\ufe0f\ufeff\ufff9-\ufffb\uffa0\U000110bd\U000110cd\U00013430-\U0001343f"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]"
)
# Cyrillic and Greek letters drawn like Latin ones: a key typed with them is still a key.
_LOOKALIKES = str.maketrans(
    "АВЕКМНОРСТХаеорсхуіІјЈѕЅΑΒΕΖΗΙΚΜΝΟΡΤΥΧο", "ABEKMHOPCTXaeopcxyiIjJsSABEZHIKMNOPTYXo"
)
_LOOKALIKE = re.compile(
    "[АВЕКМНОРСТХаеорсхуіІјЈѕЅΑΒΕΖΗΙΚΜΝΟΡΤΥΧο]"
)  # translated: ~10 times the cost


def normalize(text: str) -> str:
    """Return `text` as the scan reads it: NFKC, invisible characters dropped, lookalikes Latin."""
    if text.isascii():
        return text
    text = _INVISIBLE.sub("", unicodedata.normalize("NFKC", text))
    return text.translate(_LOOKALIKES) if _LOOKALIKE.search(text) else text


_BASE64_RUN = re.compile(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/_-]{24,}={0,2}(?![A-Za-z0-9+/=_-])")


def _decoded(text: str) -> Iterator[str]:
    """Yield the text that base64 runs of `text` hold (a token encoded to hide it)."""
    if not may_hold_run(text, 24):  # the regex below costs ~10 times as much
        return
    for match in _BASE64_RUN.finditer(text):
        run = match[0].rstrip("=")
        if run.isalnum() and (run.islower() or run.isupper()):
            continue  # one case: hex, base32, a word; base64 of text mixes cases
        padded = run[: len(run) // 4 * 4 + (4 if len(run) % 4 > 1 else 0)]
        padded += "=" * (-len(padded) % 4)
        try:
            data = base64.b64decode(padded.replace("-", "+").replace("_", "/"))
        except (binascii.Error, ValueError):
            continue
        text = data.decode("utf-8", errors="replace")
        printable = next((i for i, c in enumerate(text) if not is_printable(c)), len(text))
        if printable >= 12:  # the text a token or key block starts with; padding may follow
            yield text[:printable]


LABELLED = "a credential next to its label"
_ALL_NEEDLES = frozenset(needle for rule in _RULES for needle in rule.needles)


# The numbers of the rules no trigger stands for: their anchors are searched in every text.
_UNTRIGGERED = tuple(
    number
    for number, rule in enumerate(_RULES)
    if rule.base64_run or rule.folded or rule.kind in UNTRIGGERED
)


def _gate(read: ScanText) -> set[int]:
    """The numbers of the rules that may match `read` (the others cannot)."""
    triggered = any(map(re.Pattern.search, triggers(), itertools.repeat(read.text)))
    numbers = range(len(_RULES)) if triggered else _UNTRIGGERED
    return {number for number in numbers if _RULES[number].may_match(read)}


def find_secrets(text: str, *, full: bool = False, _inner: bool = False) -> list[str]:
    """Return what kinds of credential `text` seems to contain (empty: none found).

    `full`: the slow reference the tests hold the fast path to: every join read, a rule run
    wherever one of its needles is. By default a rule runs only where its anchor is and only
    on the joins a rule could accept (secret_joins.py); the findings are the same."""
    normalized = normalize(text)
    # A case-blind pattern's letters are found lowercased, except where lowering is not one
    # character for one (the dotless i matches i, İ lowers to two): those take the slow way.
    if not full and not normalized.isascii():
        full = "ı" in normalized or len(normalized.lower()) != len(normalized)
    # Each join on a line of its own: a line break ends a token for every rule.
    joins = split_joins(normalized, every=full)
    texts = [ScanText(normalized), *([ScanText(joins)] if joins else [])]
    if full:  # a pattern runs only where one of its needles is: most memories hold none
        lowered = f"{normalized}\n{joins}".lower()
        present = {needle for needle in _ALL_NEEDLES if needle in lowered}
    gated = [set(range(len(_RULES))) if full else _gate(read) for read in texts]
    found: list[str] = []
    for number in sorted(set().union(*gated)):  # in _RULES' order
        rule = _RULES[number]
        if rule.kind in found:
            continue
        if full and rule.needles and present.isdisjoint(rule.needles):
            continue
        for joined, read, may in zip((False, True), texts, gated, strict=False):
            if number in may and rule.matches(read.text, joined=joined):
                found.append(rule.kind)
                break
    if labelled_credential(normalized, lowered=None if full else texts[0].lowered):
        found.append(LABELLED)
    if not _inner:
        for decoded in _decoded(normalized):
            kinds = find_secrets(decoded, full=full, _inner=True)
            found.extend(f"{kind}, base64-encoded" for kind in kinds)
    return list(dict.fromkeys(found))


def find_secret_in_fields(fields: Mapping[str, str | Sequence[str]]) -> tuple[str, str] | None:
    """Return (field, kind) for the first field that holds a credential, or None.

    A list field (keywords, as given: before they are lowercased) is scanned joined by spaces,
    commas read as spaces, so a key split across items is seen."""
    return scan_fields(fields).found


@dataclass(frozen=True)
class FieldScan:
    """A memory's fields scanned once: what was found, and the lines read and found clean.

    A writer passes `clean` on to its commit's guard (`find_added_secret`), which then reads
    only the lines of the file the fields did not hold (the front matter memstore wrote):
    a 96 KB text is scanned once per add, not once by the add and again by its commit."""

    found: tuple[str, str] | None
    clean: frozenset[str] = frozenset()


def scan_fields(fields: Mapping[str, str | Sequence[str]]) -> FieldScan:
    """Scan `fields` (see find_secret_in_fields); clean: every line of every text field."""
    for name, value in fields.items():
        text = value if isinstance(value, str) else " ".join(value).replace(",", " ")
        found = find_secrets(text)
        if found:
            return FieldScan((name, found[0]))
    lines = (v.splitlines() for v in fields.values() if isinstance(v, str))
    return FieldScan(None, frozenset(itertools.chain.from_iterable(lines)))


def find_added_secret(
    new: bytes, old: bytes | None, *, clean: frozenset[str] = frozenset()
) -> str | None:
    """Return the kind of credential in the lines `new` adds to `old` (a file's committed bytes).

    Lines already committed are not looked at again: a memory a person stored with
    --allow-secret can still have its counters written. Nor are the lines in `clean`, a
    scan's of the same text as a whole (FieldScan.clean).
    """
    text = new.decode("utf-8", errors="replace")
    if old or clean:
        kept = clean.union(old.decode("utf-8", errors="replace").splitlines()) if old else clean
        text = "\n".join(line for line in text.splitlines() if line not in kept)
        if not text.strip():
            return None  # nothing new: a counter or a line moved
    found = find_secrets(text)
    return found[0] if found else None


def withhold_secret(message: str, paths: Sequence[str]) -> str:
    """Return `message`, or if it shows a credential, its verb and the files' names instead."""
    if not find_secrets(message):
        return message
    subject = message.split("\n", 1)[0]
    verb = subject.split(": ", 1)[0] if ": " in subject[:60] else "commit"
    names = [p.rsplit("/", 1)[-1] for p in paths]
    shown = ", ".join(names[:3]) + (" …" if len(names) > 3 else "")
    return f"{verb}: {shown or 'files'} (text withheld: it looks like a credential)"
