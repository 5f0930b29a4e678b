"""Whether two memories about the same thing disagree: negation, numbers, values, antonyms.

Pure and LLM-free. Two texts are compared through their content terms (the index's terms,
minus function words, negation words and quantities), and disagree when one of four
explainable differences holds:

- **negation**: one side negates words ("never rebase feature …") that the other states
  plainly, and the texts are close (content containment ≥ CLOSE). A negation both sides
  make, or one about words the other lacks ("main, not master"), is no disagreement;
- **number**: the same key carries different numbers, versions, ports, sizes, durations or
  times ("port 8080 vs 8443"). The same quantity written differently (30s and 30 seconds,
  2 h and 120 min, 10M and 10 MB) and a more precise version (3.11 and 3.11.4) agree;
  number words ("three") are not read;
- **value**: one key, two values: `KEY=value`, `key: value`, `key is value` where the
  value is one word ending its clause and not a description ("slow", "flaky");
- **antonym**: enabled/disabled, true/false, required/optional and their translations.

For numbers, values and antonyms everything else must agree: besides the differing value
and verbs of use or change ("uses", "moved to"), one side's content is contained in the
other's. An added detail is fine; a different subject ("Postgres port" vs "Redis port")
is not. A wrong hint teaches agents to ignore hints, so each rule prefers silence.

Negation needs the raw words (the index drops "not" and "doesn't"), so texts are read
here; terms come from `memstore.core.similar.term_sets`, the index's own analysis. The words
of each language it knows are memstore.core.contradiction_words'.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import NamedTuple

from memstore.core.contradiction_words import (
    ADJECTIVE_ENDINGS,
    ADJECTIVES,
    ANTONYMS,
    CONTRASTS,
    COPULAS,
    CUE_STARTS,
    FR_PARTNERS,
    FUNCTION_WORDS,
    NEGATIONS,
    NEUTRAL_WORDS,
    NOT_ONLY,
    PHRASES,
    PT_MARKERS,
    UNITS,
    VALUE_SKIP,
    VI_COMPOUND,
)
from memstore.core.model import DisagreementKind
from memstore.core.similar import containment, term_sets
from memstore.index.analysis import TOKEN_PATTERN

CLOSE = 0.7  # content containment for a negation to be about the same statement (as dedupe)
MIN_SHARED = 2  # content terms both sides must share before any hint
SCOPE = 2  # content words after a negation that it is taken to negate
KEY_WORDS = 2  # content words before a quantity that name what it measures


@dataclass(frozen=True)
class Disagreement:
    """How a new memory disagrees with an old one, in words a user can check."""

    kind: DisagreementKind
    detail: str  # e.g. 'port 8443 vs 8080', '"never rebase feature" on one side only'


class _Word(NamedTuple):  # a tuple: one is built for every word of every text read
    text: str  # as written, for details
    raw: str  # lowercase
    terms: frozenset[str]  # index terms, function words removed
    clause: int
    part: int  # clause, or part of one a colon divides
    before_question: bool  # the next mark is "?" (Vietnamese "… không?" asks, not negates)


@dataclass(frozen=True)
class _Cue:
    """A negation in a sentence: its words, what it negates, what else its clause says."""

    word: str  # the negation's first word
    phrase: str  # the negation and the words it negates, as written
    scope: frozenset[str]  # terms of the words it negates
    reach: frozenset[str]  # terms of the other words of its clause, up to a colon
    rival: frozenset[str]  # what "instead of", "statt" … prefer to the words they negate


@dataclass(frozen=True)
class _Quantity:
    """A number with its unit or key, as a sentence states it ("port 8080")."""

    text: str
    values: frozenset[tuple[str, object]]  # (dimension, normalized value) readings
    key: frozenset[str]
    key_text: str
    leading: bool  # its key comes before it ("port 8080", not "8080 for the port")


@dataclass(frozen=True)
class _Slot:
    """A key and the value a sentence gives it ("timeout = 30s", "owner: alice")."""

    key: frozenset[str]
    key_text: str
    value: str  # lowercase, compared
    value_text: str  # as written
    value_terms: frozenset[str]  # left out when the rest of the texts is compared
    sign: str  # "=" or ": ", as shown in the detail


@dataclass(frozen=True)
class _Reading:
    """What the contradiction check reads of one text: its terms, negations, numbers, values."""

    raw: frozenset[str]  # every word, lowercase
    content: frozenset[str]  # terms minus function words, negations and quantities
    terms: frozenset[str]  # terms minus function words
    cues: tuple[_Cue, ...]
    quantities: tuple[_Quantity, ...]
    slots: tuple[_Slot, ...]
    portuguese: bool


def disagreement(new: str, old: str) -> Disagreement | None:
    """Return how `new` disagrees with `old`, or None if they agree or are about different things.

    Pass memory bodies (no front matter). Details name `new`'s side first.
    """
    a, b = _read(new), _read(old)
    if len(a.content & b.content) < MIN_SHARED:
        return None
    return _negation(a, b) or _slot_change(a, b) or _number_change(a, b) or _antonym(a, b)


def _negation(a: _Reading, b: _Reading) -> Disagreement | None:
    if containment(a.content - _neutral_terms(), b.content - _neutral_terms()) < CLOSE:
        return None
    portuguese = a.portuguese or b.portuguese  # there "no" is "in the"
    both = {(c.word, c.scope) for c in a.cues} & {(c.word, c.scope) for c in b.cues}
    for mine, theirs in ((a, b), (b, a)):
        # A negation written the same on both sides is no difference, and no excuse for another.
        others = [c for c in theirs.cues if (c.word, c.scope) not in both]
        if portuguese:
            others = [c for c in others if c.word != "no"]
        for cue in mine.cues:
            if (cue.word, cue.scope) in both or (portuguese and cue.word == "no"):
                continue
            if cue.rival & theirs.terms:  # "uv instead of pip" and "prefer uv over pip"
                continue
            said = cue.scope <= theirs.terms and cue.reach - _neutral_terms() <= theirs.terms
            if said and not any(cue.scope & o.reach or o.scope & cue.reach for o in others):
                return Disagreement("negation", f'"{cue.phrase}" on one side only')
    return None


def _slot_change(a: _Reading, b: _Reading) -> Disagreement | None:
    # A value the other side also gives ("main, not master"; "DB_HOST=db in compose") is
    # no conflict.
    said_a = a.raw | {s.value for s in a.slots}
    said_b = b.raw | {s.value for s in b.slots}
    for mine in a.slots:
        for theirs in b.slots:
            if not mine.key & theirs.key or mine.value in said_b or theirs.value in said_a:
                continue
            if _same_rest(a, b, mine.value_terms | theirs.value_terms):
                detail = f"{mine.key_text}{mine.sign}{mine.value_text} vs {theirs.value_text}"
                return Disagreement("value", detail)
    return None


def _number_change(a: _Reading, b: _Reading) -> Disagreement | None:
    only_a = [q for q in a.quantities if not any(_agree(q, o) for o in b.quantities)]
    only_b = [q for q in b.quantities if not any(_agree(q, o) for o in a.quantities)]
    pairs = [(x, y) for x in only_a for y in only_b if x.key & y.key and _comparable(x, y)]
    if pairs and _same_rest(a, b, frozenset()):
        mine, theirs = min(pairs, key=lambda pair: not (pair[0].leading and pair[1].leading))
        key = f"{mine.key_text} " if mine.key_text else ""
        return Disagreement("number", f"{key}{mine.text} vs {theirs.text}")
    return None


def _antonym(a: _Reading, b: _Reading) -> Disagreement | None:
    for mine, theirs in ANTONYMS:
        for x, y in ((mine, theirs), (theirs, mine)):
            one_sided = x in a.raw and y in b.raw and x not in b.raw and y not in a.raw
            if one_sided and _same_rest(a, b, _word_terms(x) | _word_terms(y)):
                return Disagreement("antonym", f'"{x}" vs "{y}"')
    return None


def _same_rest(a: _Reading, b: _Reading, drop: frozenset[str]) -> bool:
    """Whether, without `drop` (and verbs of use), one side's content holds the other's."""
    mine, theirs = a.content - drop, b.content - drop
    if len(mine & theirs) < MIN_SHARED:
        return False
    mine, theirs = mine - _neutral_terms(), theirs - _neutral_terms()
    return mine <= theirs or theirs <= mine


def _comparable(q: _Quantity, other: _Quantity) -> bool:
    return bool({d for d, _ in q.values} & {d for d, _ in other.values})


def _agree(q: _Quantity, other: _Quantity) -> bool:
    return any(_same_value(x, y) for x in q.values for y in other.values)


def _same_value(x: tuple[str, object], y: tuple[str, object]) -> bool:
    if x[0] != y[0]:
        return False
    if x[0] == "number":  # a version agrees with a more precise one: 3.11 and 3.11.4
        mine, theirs = x[1], y[1]
        assert isinstance(mine, tuple) and isinstance(theirs, tuple)
        return all(p == q or "x" in (p, q) for p, q in zip(mine, theirs, strict=False))
    return x[1] == y[1]


# ---- reading a text ---------------------------------------------------------------------

_ASSIGNMENT = re.compile(
    r"(?<![\w.-])([A-Za-z_][\w.-]*)\s*=\s*(\"[^\"]*\"|'[^']*'|[^\s,;\"']+?)(?=[\s,;)]|\.(?:\s|$)|$)"
)
_PIECES = re.compile(
    rf"(?P<time>\b\d{{1,2}}:\d{{2}}\b)|(?P<word>{TOKEN_PATTERN})|(?P<colon>:)"
    r"|(?P<mark>[,;!?()\[\]]|\.(?=\s|$)|\s[-–—]\s)"
)
# "8080", "3.11", "2.x", "v1.2.3", "30s", "10M", and "3.11-slim" (an image tag's version)
_NUMBER = re.compile(r"v?(\d+(?:\.(?:\d+|x))*)(?:([^\W\d_]*)|-[^\W\d_][\w.]*)", re.IGNORECASE)
# "ubuntu-22.04", "node@18", "python3.11"; not "flake8", "log4j" or "utf8"
_NAMED_VERSION = re.compile(r"([^\W\d_]{2,}?)(?:[-@]v?(\d+(?:\.\d+)*)|v?(\d+(?:\.\d+)+))")
_TIME = re.compile(r"\d{1,2}:\d{2}")
_CONTRACTION = re.compile(r"(?i)\b(ca|wo|sha)n't\b|n't\b")
_ELISION = re.compile(r"(?i)\b(n|qu|[ldjmtsc])'(?=\w)")
_EXPANDED = {"ca": "can", "wo": "will", "sha": "shall"}


@lru_cache(maxsize=4096)
def _read(text: str) -> _Reading:
    text = unicodedata.normalize("NFC", text).replace("’", "'")
    slots: list[_Slot] = []
    if "=" in text:
        for match in _ASSIGNMENT.finditer(text):
            key, value = match[1], match[2].strip("\"'")
            terms = frozenset({value.lower()})
            slots.append(_Slot(_word_terms(key.lower()), key, value.lower(), value, terms, "="))
        text = _ASSIGNMENT.sub(lambda m: f" {m[1]} ; ", text)
    if "'" in text:
        text = _CONTRACTION.sub(lambda m: f" {_EXPANDED.get((m[1] or '').lower(), '')} not", text)
        text = _ELISION.sub(lambda m: "ne " if m[1].lower() == "n" else "", text)
    words = _words(text)
    portuguese = _looks_portuguese(text, words)
    used: set[int] = set()
    cues = _cues(words, used, portuguese)
    quantities, names = _quantities(words, used)
    slots += _phrase_slots(words, used)
    content = names.union(*(w.terms for i, w in enumerate(words) if i not in used))
    terms = frozenset().union(*(w.terms for w in words))
    raw = frozenset(w.raw for w in words)
    return _Reading(raw, content, terms, cues, quantities, tuple(slots), portuguese)


def _words(text: str) -> list[_Word]:
    found: list[tuple[str, int, int]] = []  # (as written, clause, part)
    clause, part, question = 0, 0, set()
    for piece in _PIECES.finditer(text):
        if piece["mark"]:
            if piece["mark"] == "?" and found:
                question.add(len(found) - 1)
            clause, part = clause + 1, part + 1
        elif not piece["colon"]:
            found.append((piece[0], clause, part))
        elif found:
            found.append((":", clause, part))  # kept: it ends a key, not a clause
            part += 1
    return [
        _Word(text, text.lower(), _word_terms(text.lower()), c, p, i in question)
        for i, (text, c, p) in enumerate(found)
    ]


def _cues(words: list[_Word], used: set[int], portuguese: bool) -> tuple[_Cue, ...]:
    """Find the negations, each with the content words it negates and the clause around it."""
    found: list[tuple[int, int, list[int]]] = []  # (first word, words, negated words)
    after = 0
    for i in [i for i, w in enumerate(words) if w.raw in CUE_STARTS]:  # most texts: none
        width = _cue_width(words, i, portuguese) if i >= after else 0
        if width:
            used.update(range(i, i + width))
            scope, after = _scope(words, i, width, used, portuguese)
            found.append((i, width, scope))
    neutral, cues = _neutral_terms(), []
    for at, width, scope in found:  # now that every negation word is known, and left out
        span = words[min([at, *scope]) : max([at + width - 1, *scope]) + 1]
        terms = frozenset().union(*(words[k].terms for k in scope)) - neutral
        part = [k for k, w in enumerate(words) if w.part == words[at].part and k not in used]
        rival: frozenset[str] = frozenset()
        if tuple(w.raw for w in words[at : at + width]) in CONTRASTS:  # "uv instead of pip"
            rival = frozenset().union(*(words[k].terms for k in part if k < at)) - neutral
            part = [k for k in part if k > at]
        reach = frozenset().union(*(words[k].terms for k in part))
        if terms:
            cues.append(_Cue(words[at].raw, " ".join(w.text for w in span), terms, reach, rival))
    return tuple(cues)


def _scope(
    words: list[_Word], at: int, width: int, used: set[int], portuguese: bool
) -> tuple[list[int], int]:
    """The content words a negation negates, and where to look for the next negation."""
    clause, neutral = words[at].clause, _neutral_terms()
    scope: list[int] = []
    j = at + width
    french = words[at].raw in ("ne", "n")
    while j < len(words) and words[j].clause == clause and len(scope) < SCOPE:
        # "ne … pas" is one negation: its partner (pas, jamais … negations on their own too)
        # is part of it, not a new one.
        if french and words[j].raw in FR_PARTNERS:
            used.add(j)
        elif words[j].raw == ":" or _cue_width(words, j, portuguese):
            break  # another negation has its own scope
        elif words[j].terms - neutral:
            scope.append(j)
        j += 1
    if not scope:  # "Wir nutzen Docker nicht.", "… is forbidden": it negates what came before
        before = [k for k in range(at) if words[k].clause == clause and words[k].terms - neutral]
        scope = before[-SCOPE:]
    return scope, j


def _cue_width(words: list[_Word], i: int, portuguese: bool) -> int:
    """How many words from `i` make one negation (0 when none starts there)."""
    raw = words[i].raw
    if raw not in CUE_STARTS or (portuguese and raw == "no"):
        return 0
    after = words[i + 1].raw if i + 1 < len(words) else ""
    if after in NOT_ONLY:
        return 0
    if raw in ("không", "chưa") and (words[i].before_question or after in VI_COMPOUND):
        return 0
    if raw in ("ne", "n"):  # French: only with its partner; "ne … que" means "only"
        partners = (w.raw in FR_PARTNERS for w in words[i + 1 : i + 4])
        return 1 if any(partners) else 0
    for phrase in PHRASES.get(raw, ()):
        if tuple(w.raw for w in words[i : i + len(phrase)]) == phrase:
            return len(phrase)
    return 1 if raw in NEGATIONS else 0


def _looks_portuguese(text: str, words: list[_Word]) -> bool:
    """Whether `text` reads as Portuguese, where "no" means "in the", not "no"."""
    if "ã" in text or "õ" in text or (words and words[0].raw in ("o", "os")):
        return True
    return any(w.raw in PT_MARKERS for w in words)


def _quantities(words: list[_Word], used: set[int]) -> tuple[tuple[_Quantity, ...], frozenset[str]]:
    """Find the quantities, and the names of named versions ("ubuntu" of "ubuntu-22.04")."""
    found: list[_Quantity] = []
    names: set[str] = set()
    for i, word in enumerate(words):
        if i in used:
            continue
        named = _NAMED_VERSION.fullmatch(word.raw) if word.raw[-1].isdigit() else None
        if named:
            used.add(i)
            name = _word_terms(named[1])
            names.update(name)
            parts = tuple(int(p) for p in (named[2] or named[3]).split("."))
            found.append(_Quantity(word.text, frozenset({("number", parts)}), name, "", True))
            continue
        if not (word.raw[0].isdigit() or word.raw[0] == "v"):
            continue
        reading = _quantity(word.raw, words[i + 1].raw if i + 1 < len(words) else "")
        if reading is None:
            continue
        values, takes_unit = reading
        span = [i, i + 1] if takes_unit else [i]
        used.update(span)
        key = _key(words, i, used)
        key_terms = frozenset().union(*(words[k].terms for k in key))
        key_text = words[key[0]].text if key else ""
        text = " ".join(words[k].text for k in span)
        found.append(_Quantity(text, values, key_terms, key_text, bool(key) and key[0] < i))
    return tuple(found), frozenset(names)


def _quantity(raw: str, after: str) -> tuple[frozenset[tuple[str, object]], bool] | None:
    """Read a number, version, time, duration or size; say whether it took the next word."""
    if _TIME.fullmatch(raw):
        hours, minutes = raw.split(":")
        return frozenset({("time", (int(hours), int(minutes)))}), False
    match = _NUMBER.fullmatch(raw)
    if match is None:
        return None
    number, unit = match[1], match[2] or ""
    takes_unit = not unit and _fold(after) in UNITS
    unit = _fold(unit or after) if (unit or takes_unit) else ""
    if unit and unit not in UNITS:
        return None  # "2fa", "3x": not a quantity
    if not unit:
        parts = tuple(p if p == "x" else int(p) for p in number.split("."))
        return frozenset({("number", parts)}), False
    if "x" in number or number.count(".") > 1:
        return None
    amount = float(number)
    return frozenset((dim, amount * factor) for dim, factor in UNITS[unit]), takes_unit


def _key(words: list[_Word], i: int, used: set[int]) -> list[int]:
    """The words a quantity measures: the nearest content words before it, else after it."""
    clause, neutral = words[i].clause, _neutral_terms()
    around = [*range(i - 1, -1, -1), *range(i + 1, len(words))]
    found = [k for k in around if words[k].clause == clause and k not in used]
    named = [k for k in found if words[k].terms - neutral]
    before = [k for k in named if k < i]
    return (before or named)[:KEY_WORDS]


def _phrase_slots(words: list[_Word], used: set[int]) -> list[_Slot]:
    """Read `key is value` and `key: value`, where the value is one word ending its clause."""
    slots: list[_Slot] = []
    for i, word in enumerate(words):
        if word.raw != ":" and word.raw not in COPULAS:
            continue
        clause = [k for k, w in enumerate(words) if w.clause == word.clause and w.terms]
        key = [k for k in clause if k < i and k not in used][-3:]
        value = [k for k in clause if k > i and words[k].raw not in VALUE_SKIP]
        if not key or len(value) != 1 or value[0] in used or not _is_value(words[value[0]].raw):
            continue
        slots.append(
            _Slot(
                frozenset().union(*(words[k].terms for k in key)),
                " ".join(words[k].text for k in key),
                words[value[0]].raw,
                words[value[0]].text,
                words[value[0]].terms,
                ": ",
            )
        )
    return slots


def _is_value(raw: str) -> bool:
    """Whether a word can be a setting's value rather than a description (slow, flaky …)."""
    return not (raw in ADJECTIVES or raw.endswith(ADJECTIVE_ENDINGS) or raw.isdigit())


def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text.lower().replace("đ", "d"))
    return "".join(c for c in decomposed if not unicodedata.combining(c))


_WORD_CACHE = (
    100_000  # distinct words remembered (then it starts over), as memstore.index.analysis does
)
_TERMS: dict[str, frozenset[str]] = {}


def _word_terms(raw: str) -> frozenset[str]:
    """The index terms of one word, function words removed (remembered: words repeat)."""
    terms = _TERMS.get(raw)
    if terms is None:
        if len(_TERMS) > _WORD_CACHE:
            _TERMS.clear()
        found = frozenset() if raw == ":" else term_sets([raw])[0] - _function_terms()
        terms = _TERMS[raw] = found
    return terms


@cache
def _function_terms() -> frozenset[str]:
    return frozenset().union(*term_sets(sorted(FUNCTION_WORDS)))


@cache
def _neutral_terms() -> frozenset[str]:
    return frozenset().union(*term_sets(sorted(NEUTRAL_WORDS))) - _function_terms()
