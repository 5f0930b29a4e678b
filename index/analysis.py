"""How text becomes terms: identifiers split into parts, accents folded, porter2 stems."""

from __future__ import annotations

import functools
import re
import threading
import unicodedata
from collections import Counter
from collections.abc import Iterator
from itertools import chain
from typing import Any

from whoosh.analysis import STOP_WORDS as WHOOSH_STOP_WORDS
from whoosh.analysis import (
    Analyzer,
    CharsetFilter,
    Filter,
    LowercaseFilter,
    RegexTokenizer,
    StemFilter,
    StopFilter,
    Token,
)
from whoosh.lang import porter2
from whoosh.support.charset import accent_map as _whoosh_accent_map

from .inflections import base_form
from .stopwords import FUNCTION_WORDS, KEPT, LANGUAGES

# How accents are folded, at index and query time alike: Whoosh's map (a letter without its
# marks), with the letters a writer spells out in two when the key lacks them, as German
# writes "Grösse" or "Grosse" for "Größe" (Whoosh gave ß → "s": "grose" matched neither)
# and the ligatures Whoosh leaves as they are. A change here changes the index's terms:
# memory_manifest.FORMAT and code_manifest.SCHEMA are bumped with it (a rebuild).
accent_map = {
    **_whoosh_accent_map,
    **{ord(k): v for k, v in {"ß": "ss", "ẞ": "ss", "æ": "ae", "Æ": "ae", "œ": "oe",
                               "Œ": "oe", "þ": "th", "Þ": "th", "ĳ": "ij", "Ĳ": "ij",
                               "ﬀ": "ff", "ﬁ": "fi", "ﬂ": "fl", "ﬃ": "ffi", "ﬄ": "ffl",
                               "ﬅ": "st", "ﬆ": "st",
                               # the dot "İ" keeps when lowercased ("i̇zmir"): "izmir"
                               "\u0307": ""}.items()},
}  # fmt: skip

# Whoosh's English stop words plus the question words, pronouns and auxiliaries that
# people and agents put in prompts ("why does X fail?"): with them, a strict all-terms
# query would demand words that memories rarely contain.
ENGLISH_STOP_WORDS = frozenset(
    WHOOSH_STOP_WORDS
    | {
        "i",
        "me",
        "my",
        "our",
        "he",
        "she",
        "they",
        "them",
        "their",
        "its",
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "why",
        "how",
        "where",
        "do",
        "does",
        "did",
        "doing",
        "was",
        "were",
        "been",
        "being",
        "has",
        "had",
        "am",
        "would",
        "should",
        "could",
        "shall",
        "might",
        "must",
        "there",
        "here",
        "these",
        "those",
        "then",
        "than",
        "so",
        "some",
        "any",
        "just",
        "also",
        "very",
        "please",
        "about",
        "into",
        # the other pronouns (issue 38: "her" and "his" were terms, and ranked)
        "her",
        "hers",
        "his",
        "him",
        "herself",
        "himself",
        "itself",
        "myself",
        "yourself",
        "yourselves",
        "ourselves",
        "themselves",
        "yours",
        "ours",
        "theirs",
    }
)
# and the function words of Vietnamese, German, French, Spanish, Portuguese and Polish
# (index/stopwords.py), checked as written, before accents are folded
STOP_WORDS = ENGLISH_STOP_WORDS | FUNCTION_WORDS
# A prompt holding a function word of a language (one English does not share) reads that
# language's kept words as function words too: "wo liegen die Übersetzungen?" does not ask
# for "die", "jaki jest format dat?" not for "jest"; "why does the worker die" still does.
_MARKS = {
    word: frozenset(code for code, words in LANGUAGES.items() if word in words)
    for word in FUNCTION_WORDS - ENGLISH_STOP_WORDS
}
_KEPT_IN = {
    word: frozenset(code for code, words in LANGUAGES.items() if word in words) for word in KEPT
}
# A hyphenated run of these alone is not kept whole either: French "est-elle", "peut-être"
# ("to-do", "how-to" are English stop words, and kept)
_FOREIGN_ONLY = FUNCTION_WORDS - ENGLISH_STOP_WORDS

# A token keeps dotted, slashed and hyphenated runs whole ("nginx.conf", "v2.3.1"). A French
# elided article or pronoun is not one ("l'erreur", "c'est", "qu'il" give "erreur", "est",
# "il"): a lone "c" or "l" is a word in code (the C language), the elision never is.
WORD_CACHE = 200_000  # distinct words remembered per analyzer (then it starts over)
TOKEN_PATTERN = r"(?!(?i:[cdjlmnst]|qu)['’]\w)\w+(?:[./\-]\w+)*"
_SEPARATORS = re.compile(r"[./_\-]+")
_PLAIN_WORD = re.compile(r"[a-z0-9]+")  # what the chain only stops or stems
# what the chain only lowercases, then stops or stems: a capitalised word ("Deploy": camelCase
# finds one part) or one in capitals and digits ("API", "HTTP2": not split at all)
_CASED_WORD = re.compile(r"[A-Z][a-z]+|[A-Z0-9]+")
_FOREIGN_WORD_CHAR = re.compile(r"(?=\w)[^\x00-\x7f]")  # what any non-ASCII word holds
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


# Chinese, Japanese and Korean scripts: text with no spaces between words, so a token is a
# whole phrase ("部署需要审批"). Such a run becomes its overlapping character pairs (部署 署需
# 需要 要审 审批), at indexing and in queries alike, so any word of two or more characters
# inside it is found (the CJK bigrams of Lucene's CJKAnalyzer); a one-character run stays.
_CJK = re.compile(
    "[\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf"
    "\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f]+"
)


def identifier_parts(token: str) -> list[str]:
    """Return the token plus its parts: path segments, dotted/snake/kebab pieces, camelCase.

    A token holding CJK text is not kept whole: its CJK runs become character pairs and
    what lies between them is split as any other token.
    """
    if _CJK.search(token):
        return _cjk_parts(token)
    parts = [token]
    for segment in token.split("/"):
        parts.append(segment)
        for piece in _SEPARATORS.split(segment):
            parts.append(piece)
            if piece.islower() or piece.isupper():
                continue
            if piece.isascii():
                parts.extend(_CAMEL.findall(piece))
                continue
            # split as folded ("straßeNummer" as "strasseNummer", "ﬁleName" as "fileName"),
            # and only into two or more: "Straße" whole again would count its term twice
            latin = _latin(piece)
            found = _CAMEL.findall(latin) if latin.isascii() else []
            parts.extend(found if len(found) > 1 else ())
    unique: dict[str, None] = {}
    for part in parts:
        if part:
            unique.setdefault(part, None)
    if "-" in token and all(p in _FOREIGN_ONLY for p in token.lower().split("-")):
        del unique[token]
    return list(unique)


def _latin(piece: str) -> str:
    """`piece` with its letters folded as accent_map folds them, each keeping its case (the
    map lowercases some capitals, which would hide where a camelCase part starts): a capital
    spelled in two is "Ae" before a small letter ("ÆgirClient"), "SS" before a capital."""
    out = []
    for n, c in enumerate(piece):
        folded = c if c.isascii() else c.translate(accent_map)
        if c.isupper() and not c.isascii():
            title = n + 1 < len(piece) and piece[n + 1].islower()
            folded = folded[:1].upper() + folded[1:] if title else folded.upper()
        out.append(folded)
    return "".join(out)


def _cjk_parts(token: str) -> list[str]:
    parts: list[str] = []
    at = 0
    for run in _CJK.finditer(token):
        if run.start() > at:
            parts += _outside_cjk(token[at : run.start()])
        text = run.group()
        parts += [text] if len(text) == 1 else [text[i : i + 2] for i in range(len(text) - 1)]
        at = run.end()
    parts += _outside_cjk(token[at:])
    return list(dict.fromkeys(parts))


def _outside_cjk(text: str) -> list[str]:
    """The parts of a piece of a token between CJK runs ("v2" of "v2配置"; "_" alone: none)."""
    text = text.strip("./_-")
    return identifier_parts(text) if text else []


@functools.lru_cache(maxsize=1 << 16)
def _cached_parts(token: str) -> tuple[str, ...]:
    return tuple(identifier_parts(token))  # the same few thousand words, over and over


class _StatelessFilter(Filter):
    """A filter without settings: any two of one class are equal (Whoosh compares schemas)."""

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self))


class IdentifierFilter(_StatelessFilter):
    """Yield each token whole and then each of its identifier parts."""

    def __call__(self, tokens: Iterator[Any]) -> Iterator[Any]:
        for token in tokens:
            text = token.text
            parts = _cached_parts(text)
            if parts == (text,):
                yield token
                continue
            # "e-e": a run of foreign function words is not kept whole, and its one part is
            # what it gives (the token itself was yielded here, where the fast path gave none)
            for part in parts:
                token.text = part
                yield token


class AccentedFilter(_StatelessFilter):
    """Yield only the tokens that folding accents changes (as they are)."""

    def __call__(self, tokens: Iterator[Any]) -> Iterator[Any]:
        for token in tokens:
            if not token.text.isascii() and token.text.translate(accent_map) != token.text:
                yield token


def lemma_stem(word: str) -> str:
    """Return the porter2 stem of `word`, an irregular verb form read as its base verb
    first (index/inflections.py: "took" and "taken" stem as "take")."""
    return stem(base_form(word))


# The suffixes a step of porter2 looks for: a word ending in none of them leaves that step
# as it came (each step tries its suffixes one `endswith` at a time, ~90 calls a word).
_STEP_1B = ("eedly", "eed", *porter2.s1b_suffixes)
_STEP_2 = tuple(end for end, _, _ in porter2.s2_triples)
_STEP_3 = tuple(end for end, _, _ in porter2.s3_triples)
_STEP_4 = (*porter2.s4_delete_list, "sion", "tion")


def stem(word: str) -> str:
    """Return whoosh.lang.porter2's stem of `word` (its steps, in its order), skipping the
    steps none of whose suffixes the word ends in: the same stems in under half the time
    (tests/index/test_stem.py compares them)."""
    if len(word) <= 2:
        return word
    if word.startswith("'"):
        word = word[1:]
    if word in porter2.exceptional_forms:
        return porter2.exceptional_forms[word]
    word = porter2.capitalize_consonant_ys(word)
    r1, r2 = porter2.get_r1(word), porter2.get_r2(word)
    word = porter2.step_1a(porter2.step_0(word))
    if word in porter2.exceptional_early_exit_post_1a:
        return word
    if word.endswith(_STEP_1B):
        word = porter2.step_1b(word, r1)
    word = porter2.step_1c(word)
    if word.endswith(_STEP_2):
        word = porter2.step_2(word, r1)
    if word.endswith(_STEP_3):
        word = porter2.step_3(word, r1, r2)
    if word.endswith(_STEP_4):
        word = porter2.step_4(word, r2)
    return porter2.step_5(word, r1, r2).replace("Y", "y")


def make_chain() -> Any:
    """Return the analysis chain itself: tokenizer, identifier parts, stop, folding, stem.

    Stop words are dropped before accents are folded: Vietnamese "đâu" (where) is a stop
    word, "dấu" (a diacritic mark) is not, and both fold to "dau". Irregular verb forms
    are read as their base verb as they are stemmed (`lemma_stem`).
    """
    return (
        RegexTokenizer(TOKEN_PATTERN)
        | IdentifierFilter()
        | LowercaseFilter()
        | StopFilter(stoplist=STOP_WORDS, minsize=1)
        | CharsetFilter(accent_map)
        | StemFilter(stemfn=lemma_stem, cachesize=-1)
    )


def make_exact_chain() -> Any:
    """Return the chain of the words as written: tokenizer, identifier parts, stop, and only
    the words with accents (lowercase, not folded, not stemmed)."""
    return (
        RegexTokenizer(TOKEN_PATTERN)
        | IdentifierFilter()
        | LowercaseFilter()
        | StopFilter(stoplist=STOP_WORDS, minsize=1)
        | AccentedFilter()
    )


def composed(text: str) -> str:
    """Return `text` with its accents composed (NFC): "ế" typed as e + two combining marks
    is one character, as the stop lists and other writers have it."""
    return text if text.isascii() else unicodedata.normalize("NFC", text)


def make_analyzer() -> Any:
    """Return the analyzer used for both indexing and queries."""
    return WordCachedAnalyzer()


# Per thread and analyzer class, the first one unpickled (its word cache shared). Per thread:
# `term_counts` reads back words it just filled, which a cache started over by another
# thread would have lost; one thread's analyzers never run at once.
_UNPICKLED = threading.local()


class WordCachedAnalyzer(Analyzer):
    """`make_chain()`, run once per distinct word and remembered.

    Every filter of the chain works on one token at a time, so a word always becomes the
    same terms: looking them up replaces six generator stages per word (indexing 100,000
    memories spent most of its analysis there). Calls asking for positions or character
    offsets (not made by our fields) run the chain itself.
    """

    def __init__(self) -> None:
        self._chain = make_chain()
        self._pattern = re.compile(TOKEN_PATTERN)
        self._terms: dict[str, tuple[str, ...]] = {}
        self._stems: dict[str, str] = {}  # the stems of identifier parts (`_analysis`)

    def __getstate__(self) -> dict[str, Any]:
        return {}  # pickled into the index's schema: the cache is rebuilt, not stored

    def __setstate__(self, state: dict[str, Any]) -> None:
        # Unpickled with the schema at every read of the index's table of contents (a new
        # searcher, a writer: twice an add). Each analyzer of a class analyses alike, so they
        # share the first one's chain and word cache instead of starting empty each time.
        kept: dict[type, Any] = _UNPICKLED.__dict__.setdefault("analyzers", {})
        first = kept.get(type(self))
        if first is None:
            self.__init__()  # type: ignore[misc]
            first = kept[type(self)] = self
        if first is not self:
            self.__dict__.update(first.__dict__)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self))

    def has_morph(self) -> bool:
        return True

    def __call__(self, value: str, **kwargs: Any) -> Iterator[Any]:
        if any(kwargs.get(k) for k in ("positions", "chars", "keeporiginal")) or not kwargs.get(
            "removestops", True
        ):
            # as given: the offsets asked for refer to the caller's text
            yield from self._chain(value, **kwargs)
            return
        token = Token(removestops=True, mode=kwargs.get("mode", ""))
        for term in self.terms(value):
            token.text = term
            token.boost = 1.0
            token.stopped = False
            yield token

    def terms(self, value: str) -> list[str]:
        """Return the terms of `value` in order, as the tokens indexing yields."""
        known = self._terms
        found: list[str] = []
        for match in self._pattern.finditer(composed(value)):
            word = match.group(0)
            terms = known.get(word)
            if terms is None:
                terms = known[word] = self._analyze_word(word)
            found += terms
        return found

    def term_counts(self, value: str) -> Counter[str]:
        """Return how many times each term of `value` occurs (`Counter(terms(value))`): the
        words looked up at once, every new one analysed first, counted in C."""
        return self._count(self._pattern.findall(composed(value)))

    def _count(self, words: list[str]) -> Counter[str]:
        known = self._terms
        new = set(words).difference(known)  # in C: the words' set, each looked up once
        if new:
            if len(known) + len(new) > WORD_CACHE:
                known.clear()
                new = set(words)
            for word in new:
                known[word] = self._analysis(word)
        return Counter(chain.from_iterable(map(known.__getitem__, words)))

    def _analyze_word(self, word: str) -> tuple[str, ...]:
        if len(self._terms) > WORD_CACHE:
            self._terms.clear()
        return self._analysis(word)

    def _analysis(self, word: str) -> tuple[str, ...]:
        if _CASED_WORD.fullmatch(word):
            word = word.lower()
        if _PLAIN_WORD.fullmatch(word):
            # Lowercase ASCII letters and digits: one part, nothing to fold, so the chain
            # can only stop or stem it, and porter2 leaves digits alone (a test compares
            # with the chain). Most distinct words of a vault are such: ids, numbers.
            if word in STOP_WORDS:
                return ()
            return (word,) if word.isdigit() else (lemma_stem(word),)
        if word.isascii():
            # The chain on an ASCII word: its identifier parts, each lowercased (the accent
            # map folds no lowercase ASCII letter), stop words dropped, stemmed. A rebuild
            # analyses ~50,000 such words at 100k (snake_case, paths, versions); the chain's
            # six generator stages were most of their cost (a test compares the two).
            stems = self._stems
            if len(stems) > WORD_CACHE:
                stems.clear()
            found = []
            for part in identifier_parts(word):
                lower = part.lower()
                if lower not in STOP_WORDS:
                    stemmed = stems.get(lower)
                    if stemmed is None:
                        stemmed = stems[lower] = lemma_stem(lower)
                    found.append(stemmed)
            return tuple(found)
        return tuple(token.text for token in self._chain(word, mode="index"))


class ExactAnalyzer(WordCachedAnalyzer):
    """The words of a text that have accents, as written (`make_exact_chain`): what lets a
    word typed with its accents rank a memory that has them above one that has the word
    only folded ("dấu" above "dau")."""

    def __init__(self) -> None:
        super().__init__()
        self._chain = make_exact_chain()

    def terms(self, value: str) -> list[str]:
        """Return the accented words of `value` in order (none for ASCII text, at once)."""
        return [] if value.isascii() else super().terms(value)

    def term_counts(self, value: str) -> Counter[str]:
        """Return how many times each accented word of `value` occurs (none for ASCII text,
        nor for its ASCII words: most texts with a dash or a quote mark are such)."""
        if value.isascii():
            return Counter()
        value = composed(value)
        if _FOREIGN_WORD_CHAR.search(value) is None:
            # Every word is ASCII (a word's characters are \w or ASCII [./-]): the text's
            # other characters are dashes, quote marks, symbols (most such texts).
            return Counter()
        words = self._pattern.findall(value)
        return self._count([word for word in words if not word.isascii()])

    def _analysis(self, word: str) -> tuple[str, ...]:
        if word.isascii():
            return ()  # its parts are ASCII too: the accented filter keeps none of them
        return tuple(token.text for token in self._chain(word, mode="index"))


# English contractions: the tokenizer splits "doesn't" into "doesn" and "t", "what's" into
# "what" and "s": fragments no memory is about, that made a prompt look like it asked for
# words the vault has never seen. A query reads them as the words they shorten.
_CONTRACTION = re.compile(r"(?i)\b(can|won|shan)['’]t\b|n['’]t\b|['’](?:s|re|ve|ll|d|m)\b")
_EXPANDED = {"can": "can", "won": "will", "shan": "shall"}


def expand_contractions(text: str) -> str:
    """Return `text` with contractions read as their words ("doesn't" → "does", "it's" → "it")."""
    if "'" not in text and "’" not in text:
        return text
    return _CONTRACTION.sub(lambda m: _EXPANDED[m[1].lower()] if m[1] else "", text)


def query_terms(analyzer: Any, text: str) -> list[str]:
    """Return the distinct terms of a query, in order (contractions read as their words)."""
    terms: dict[str, None] = {}
    for token in analyzer(expand_contractions(text), mode="query"):
        terms.setdefault(token.text, None)
    return list(terms)


def prompt_terms(analyzer: Any, text: str) -> list[str]:
    """Return the distinct terms of a query (`query_terms`), less those only its kept words
    give when it also holds a function word of a language that lists them (`_MARKS`).

    Documents keep these words (a German memory indexes "die"): a query that leaves one
    out asks for less, never for a term a memory lacks.
    """
    found = query_terms(analyzer, text)
    words = {m.group(0).lower() for m in re.finditer(TOKEN_PATTERN, composed(text))}
    if not words & _KEPT_IN.keys():
        return found
    languages = frozenset().union(*(_MARKS.get(w, frozenset()) for w in words))
    dropped = {w for w in words if _KEPT_IN.get(w, frozenset()) & languages}
    if not dropped:
        return found
    theirs = {t for w in dropped for t in analyzer.terms(w)}
    others = {t for w in words - dropped for t in analyzer.terms(w)}  # "dies" gives "die" too
    return [t for t in found if t not in theirs or t in others]


def exact_terms(analyzer: ExactAnalyzer, text: str) -> list[str]:
    """Return the distinct accented words of a query, as written (lowercase), in order."""
    return list(dict.fromkeys(analyzer.terms(expand_contractions(text))))


def term_sources(analyzer: Any, text: str) -> dict[str, str]:
    """Return each term of `text` with the word or identifier part it came from (lowercase),
    the first one when several give the same term."""
    sources: dict[str, str] = {}
    for match in re.finditer(TOKEN_PATTERN, composed(text)):
        for part in _cached_parts(match.group(0)):
            own = next(iter(analyzer(part, mode="query")), None)
            if own is not None:
                sources.setdefault(own.text, part.lower())
    return sources
