"""Code evidence: how much of a question a chunk answers, by its words and by its name.

A question about code ("where do we parse an email address into the display name") is
answered by one function, and the strongest sign that a chunk is that function is its name:
`parseaddr` is "parse" and "addr…" of the question, `isleap` is "is" and "leap". A chunk's
evidence is read from three things, each weighted by how rare the question's words are in
the code (idf, so "address" counts more than "list"):

- `held`: the share of the question's informative words the chunk holds (text, path, name,
  docstrings). Stop words and generic words of code questions ("where", "function", "code",
  "handle", "get" …) are not informative; a word no chunk holds counts against, as
  much as one a single chunk holds (a question naming what this code never mentions is about
  other code);
- `named`: the share the chunk's own name matches (its last part: `send_invoice` of
  `InvoiceMailer.send_invoice`), a part matching a word when one is a prefix of the other
  (abbreviations: `addr`, `dir`, `chksum`), or when it is made of such pieces
  (`parseaddr`, `mkdtemp` is not: `mk` is too short to tell);
- `exact`: the share of the name's own parts the question explains (a name the question
  explains whole is the function asked about, not a sibling that shares one word);
- `context`: the share its class name and file path match beyond its own name.

The constants were measured on two question sets (tests/data/code-questions.json and
bench_code.py's standard-library questions, docs/code.md), each set's figures reported.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

from memstore.catalog.code_words import alternatives
from memstore.index import terms
from memstore.index.analysis import expand_contractions, identifier_parts

# Words of a question about code that say it is about code, not which code: they never count
# as evidence (the index's stop words are dropped before these).
GENERIC_WORDS = frozenset(
    """where code codes function functions method methods class classes implement implemented
    implementation implements handle handled handles handling logic define defined definition
    happen happens done thing things place part way work works use used uses using call called
    calls get gets make makes made go goes put live lives locate located location responsible
    somewhere routine helper helpers module modules want need let know tell show""".split()  # noqa: SIM905
)
# Pieces of a name that say nothing of what it does ("is" of isleap, "get" of getsourcelines):
# a name made of them and of the question's words is still explained whole.
FILLERS = frozenset(
    """is get set to do make has py new from as of on in by for and or at it self cls init main
    run impl inner fn func handle handler""".split()  # noqa: SIM905
)
_FILLER_STARTS = frozenset(filler[:2] for filler in FILLERS)
_LONGEST_FILLER = max(map(len, FILLERS))
MAX_PIECE = 40  # a name's piece is no longer: longer words' starts are not looked up
MIN_PIECE = 3  # a shorter piece of a name ("mk", "re") matches too many words to tell
_WORD = re.compile(r"[^\W\d_]+|\d+")
_TOKEN = re.compile(r"\w+(?:[./\-]\w+)*")  # as the index reads a text
# A name spelled as code in a question: `parse_qsl`, `HTTPResponse._read_chunked`,
# `inspect.getsourcelines`, `TextWrapper` (not "Context" or "e.g.", which prose spells too).
_IDENTIFIER = re.compile(r"(?<![\w.])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
_CAMEL = re.compile(r"[a-z][A-Z]|[A-Z]{2}[a-z]")
_MODULE_FILES = frozenset({"__init__", "index", "mod", "lib"})  # a package's own module
# A dotted name ending so is a file's name (`checkout.spec.ts`, `router.py`): its chunks
_FILE_ENDINGS = frozenset(
    """py pyi js jsx ts tsx mjs cjs go rs java kt c h cc cpp hpp cs rb php swift scala sh
    md rst txt json yaml yml toml ini cfg sql html css""".split()  # noqa: SIM905
)


@dataclass(frozen=True)
class Question:
    """A question's informative terms: each with the word it came from, the start a text's
    word must have to hold it, and its weight (idf in the code index)."""

    terms: tuple[tuple[str, str], ...]  # (index term, the lowercase word or part it came from)
    prefixes: tuple[str, ...]  # per term: what a word holding it starts with
    weights: tuple[float, ...]  # per term
    total: float
    # per term: what a word standing for it starts with (code_words.py: "unlock" for released)
    others: tuple[tuple[str, ...], ...] = ()
    # the terms and their words, then each term with each word code uses for it: what a
    # name's parts are matched against
    named_as: tuple[tuple[str, str], ...] = ()

    def share(self, terms: frozenset[str]) -> float:
        """Return the weighted share of the question that `terms` match."""
        if not terms or not self.total:
            return 0.0
        weights = self.weight_of
        return sum(weights[t] for t in terms) / self.total

    @functools.cached_property
    def weight_of(self) -> dict[str, float]:
        return {t: w for (t, _), w in zip(self.terms, self.weights, strict=True)}


@dataclass(frozen=True, slots=True)
class Evidence:
    """What a chunk's name and place have of a question (shares of its weight, 0..1)."""

    named: float
    exact: float
    context: float


def read_question(text: str, frequencies: Mapping[str, int], documents: int) -> Question:
    """Return the informative terms of `text`, weighted by how few of `documents` chunks hold
    each (`frequencies`: term → chunks holding it; 0 or missing: none, weighed as one)."""
    words: dict[str, str] = {}
    for token in _TOKEN.findall(expand_contractions(text)):
        for part in _parts(token):
            if part not in GENERIC_WORDS:
                for term in terms(part):  # none for a stop word
                    words.setdefault(term, part)
    terms_ = tuple(words.items())
    weights = tuple(_idf(frequencies.get(t, 0), documents) for t, _ in terms_)
    prefixes = tuple(_prefix(term, word) for term, word in terms_)
    others = tuple(tuple(_prefix(min(terms(o)), o) for o in alternatives(t)) for t, _ in terms_)
    named_as = terms_ + tuple((t, o) for t, _ in terms_ for o in alternatives(t))
    return Question(terms_, prefixes, weights, sum(weights), others, named_as)


def identifiers(text: str) -> frozenset[str]:
    """Return the names `text` spells as code (lowercase): dotted (`json.dumps`, each part
    two characters or more), snake_case (`_read_chunked`; a dunder alone is every class's)
    or camelCase of four characters or more (`TextWrapper`; not `kB`), or a file's name
    (`router.py`). A question naming one asks about that definition."""
    found = set()
    for token in _IDENTIFIER.findall(text):
        parts = token.split(".")
        if len(parts) > 1:
            code_like = all(len(part) >= 2 for part in parts) or parts[-1] in _FILE_ENDINGS
        else:
            code_like = "_" in token.strip("_") or (len(token) >= 4 and bool(_CAMEL.search(token)))
        if code_like:
            found.add(token.lower())
    return frozenset(found)


def definition_names(names: frozenset[str]) -> list[str]:
    """The last parts of `names` (from `identifiers`) that name definitions, not files:
    what a search for those definitions asks for (`urlsplit` of `urllib.parse.urlsplit`)."""
    leaves = {name.rpartition(".")[2] for name in names}
    return sorted(leaf for leaf in leaves if leaf not in _FILE_ENDINGS)


def spelled_for_sure(names: frozenset[str]) -> bool:
    """Say whether `names` (from `identifiers`) hold one no prose spells: dotted or
    snake_case (a camelCase word may be a product's name: "GitHub", "WebSocket")."""
    return any("." in name or "_" in name.strip("_") for name in names)


def names_identifier(names: frozenset[str], name: str, path: str) -> bool:
    """Say whether a chunk named `name` (qualified) in `path` is a definition `names` (from
    `identifiers`) spells: its name, its qualified name, or either after its module's dotted
    path or any end of it (`json.dumps` of `json/__init__.py`, `client.HTTPResponse.read`)."""
    if not names:
        return False
    lower_path = path.lower()
    if any(
        wanted.rpartition(".")[2] in _FILE_ENDINGS
        and (lower_path == wanted or lower_path.endswith(f"/{wanted}"))
        for wanted in names
    ):
        return True  # a chunk of the file it names
    if not name:
        return False
    module = path.rpartition(".")[0] or path
    folder, _, stem = module.rpartition("/")
    if stem in _MODULE_FILES and folder:
        module = folder
    full = f"{module.replace('/', '.')}.{name}".lower()
    return any(full == wanted or full.endswith(f".{wanted}") for wanted in names)


def _idf(held_by: int, documents: int) -> float:
    """BM25's idf, positive however many chunks hold the term (a count over the index's
    fields may pass the number of chunks); a term none holds weighs as one a single chunk
    holds."""
    held_by = min(max(held_by, 1), documents)
    return math.log(1 + (documents - held_by + 0.5) / (held_by + 0.5))


def _prefix(term: str, word: str) -> str:
    """What a word of a text holding `term` starts with: the start `word` and its term share
    ("directory", "directori": "director"), or the word when that is too short."""
    differs = next((n for n, (a, b) in enumerate(zip(term, word, strict=False)) if a != b), None)
    prefix = word[: min(len(term), len(word)) if differs is None else differs]
    return prefix if len(prefix) >= MIN_PIECE else word


def weigh(question: Question, name: str, path: str) -> Evidence:
    """Return the evidence of the name of a chunk named `name` (qualified: "Class.method",
    "" for the code between definitions) in `path`."""
    if not question.total:
        return Evidence(0.0, 0.0, 0.0)
    container, _, leaf_name = name.rpartition(".")
    named_as = question.named_as or question.terms
    leaf, explained, informative = _name_match(leaf_name, named_as)
    around = _around(f"{container}/{path.rpartition('.')[0] or path}", named_as) - leaf
    return Evidence(
        named=question.share(leaf),
        exact=explained / informative if informative else 0.0,
        context=question.share(around),
    )


def held(question: Question, text: str) -> float:
    """Return the weighted share of the question whose words `text` holds."""
    return holding(question, text)[0]


def holding(question: Question, text: str) -> tuple[float, int]:
    """Return the weighted share of the question whose words `text` holds, and how many of
    its informative words that is (one word alone is no evidence of a match)."""
    if not question.total:
        return 0.0, 0
    lower = _lower(text)
    found = 0.0
    words = 0
    others = question.others or ((),) * len(question.prefixes)
    for prefix, weight, also in zip(question.prefixes, question.weights, others, strict=True):
        if _holds(text, lower, prefix) or any(_holds(text, lower, other) for other in also):
            found += weight
            words += 1
    return found / question.total, words


@functools.lru_cache(maxsize=4096)
def _around(where: str, terms: tuple[tuple[str, str], ...]) -> frozenset[str]:
    """The terms a chunk's class names and file path ("Outer.Inner/pkg/mod") match."""
    found: set[str] = set()
    for segment in where.replace(".", "/").split("/"):
        if segment:
            found |= _name_match(segment, terms)[0]
    return frozenset(found)


@functools.lru_cache(maxsize=1024)  # a resident process meets the same chunks again and again
def _lower(text: str) -> str:
    return text.lower()


def _holds(text: str, lower: str, prefix: str) -> bool:
    """Say whether `text` has a word, or an identifier part (`parse` of `parseHeader` and of
    `parse_header`), starting with `prefix`. A search of the text, not of its analysed
    terms: analysing the thirty candidates of a question tripled a code search's time."""
    aligned = len(lower) == len(text)  # else a character's lowercase changed the offsets
    at = lower.find(prefix)
    while at >= 0:
        if at == 0 or not lower[at - 1].isalpha():
            return True
        if aligned and text[at].isupper() and text[at - 1].islower():
            return True  # a camelCase part
        at = lower.find(prefix, at + 1)
    return False


@functools.lru_cache(maxsize=8192)
def _name_match(
    segment: str, terms: tuple[tuple[str, str], ...]
) -> tuple[frozenset[str], int, int]:
    """Return the question's terms a name segment matches, how many of its informative parts
    the question explains, and how many informative parts it has."""
    matched: set[str] = set()
    explained = informative = 0
    for part in _parts(segment):
        if part in FILLERS:
            continue
        informative += 1
        found = _pieces(part, terms)
        if found:
            matched |= found
            explained += 1
    return frozenset(matched), explained, informative


def name_parts(segment: str) -> tuple[str, ...]:
    """The lowercase word parts of a name (`format_exception_only` → format, exception, only)."""
    return _parts(segment)


@functools.lru_cache(maxsize=4096)
def _parts(segment: str) -> tuple[str, ...]:
    """The lowercase word parts of an identifier (`_read_chunked` → read, chunked)."""
    parts = identifier_parts(segment)
    pieces = parts[1:] if len(parts) > 1 else parts
    out = [p.lower().strip("_") for p in pieces if _WORD.fullmatch(p.strip("_"))]
    return tuple(dict.fromkeys(p for p in out if p))


@functools.lru_cache(maxsize=16384)
def _pieces(part: str, terms: tuple[tuple[str, str], ...]) -> frozenset[str]:
    """Return the terms a name part is made of: the part split into pieces, each a filler or
    matching a question word (one a prefix of the other, or of its term), matching the most
    terms; none when it cannot be split so."""
    starts, wholes = _lookup(terms)
    longest = max(map(len, starts), default=0)
    best: list[frozenset[str] | None] = [None] * (len(part) + 1)
    best[0] = frozenset()
    for start in range(len(part)):
        before = best[start]
        if before is None or (
            part[start : start + MIN_PIECE] not in starts
            and part[start : start + 2] not in _FILLER_STARTS
        ):
            continue  # no piece can start here
        whole = ""  # the least term whose word (or term) the piece so far starts with
        for end in range(start + 2, len(part) + 1):
            if end - start > max(longest, _LONGEST_FILLER) and not whole:
                break  # longer pieces match nothing
            piece = part[start:end]
            if piece in wholes:
                whole = min(whole or wholes[piece], wholes[piece])
            if piece in FILLERS:
                found = before
            elif len(piece) >= MIN_PIECE and (piece in starts or whole):
                found = before | {min(t for t in (starts.get(piece, ""), whole) if t)}
            else:
                continue
            current = best[end]
            if current is None or len(found) > len(current):
                best[end] = found
    return best[-1] or frozenset()


@functools.lru_cache(maxsize=256)
def _lookup(terms: tuple[tuple[str, str], ...]) -> tuple[dict[str, str], dict[str, str]]:
    """The question's words as a name's pieces are matched: each start of a word (three
    letters or more) with the least term whose word starts so, and each word and term (as
    long) with the least term it stands for."""
    starts: dict[str, str] = {}
    wholes: dict[str, str] = {}
    for term, word in terms:
        for end in range(MIN_PIECE, min(len(word), MAX_PIECE) + 1):  # a pasted blob: bounded
            starts[word[:end]] = min(starts.get(word[:end], term), term)
        for whole in (word, term):
            if len(whole) >= MIN_PIECE:
                wholes[whole] = min(wholes.get(whole, term), term)
    return starts, wholes
