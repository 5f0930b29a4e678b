"""Typo tolerance: a query term no document holds is stood in for by the nearest known term.

Only terms with document frequency 0 get a stand-in, so a term the index knows is never
corrected. The stand-in is a vocabulary term within edit distance 1 (terms of 4 to 7
characters) or 2 (8 or more), a swap of two neighbouring letters counting as one edit
(optimal string alignment), with the first letter kept; the nearest wins, then the one most
documents hold, if a form of it memories write is as near to the word typed. Terms with
digits are left alone (versions, error codes and sizes are values, not misspelled words),
and so are terms over 40 characters (pasted, not typed). When the term's neighbours give no
stand-in and the stemmer turned the word's y to i ("depoly" → depoli, two edits from deploy,
which keeps its y), the word as typed (accents folded) is tried too.

No vocabulary is searched term by term: a Levenshtein automaton of the term walks the
segments' sorted terms (each segment's held in memory by the lexicon, index/lexicon.py
`TermRun`), asking only for the first term at or after a string it could still accept
(`whoosh.automata.fsa.find_all_matches`), a few dozen look-ups per segment; the
automaton's states are made as the walk reaches them (`LazyDFA`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from whoosh.automata.fsa import ANY, DFA, EPSILON, NFA, find_all_matches

from .analysis import accent_map

ONE_EDIT_MIN = 4  # terms this long may stand in at one edit …
TWO_EDITS_MIN = 8  # … and this long at two
LONGEST = 40  # longer terms are pasted, not typed (and their automaton costs more)


@dataclass(frozen=True)
class StandIn:
    """A query term no document holds, and the known term searched in its place."""

    word: str  # the query's word, as typed (lowercase)
    term: str  # its term (analyzed: folded, stemmed)
    stand_in: str  # the stand-in as memories write it (the form nearest to `word`)
    distance: int  # edits between `term` (or the word typed, if it was near) and `stand_in_term`
    stand_in_term: str  # the known term searched instead of `term`

    def label(self) -> str:
        """Return how the substitution reads in output: 'teraform → terraform'."""
        return f"{self.word} → {self.stand_in}"


def searched_forms(term: str, word: str) -> list[str]:
    """Return the forms whose near terms may stand in for unknown `term` (typed as `word`),
    in the order tried: the term, then, when the stemmer turned the word's y to i, the word
    as typed (accents folded).

    That rewrite can take a typo further from the word meant than the typo is: "depoly"
    stems to depoli (its y after a consonant becomes i), two edits from deploy, while the
    word typed is one swap from it. Only then: a stem is shorter than its word, so walking
    every word typed reaches stems its own stem does not ("serve" → server, "folded" →
    folder: real words the vault lacks, corrected). A stand-in found from the word is held
    to the same test as one from the term (its written form within reach of the word).
    """
    folded = word.translate(accent_map)
    cut = len(term) - 1
    if term.endswith("i") and folded[cut : cut + 1] == "y" and folded.startswith(term[:cut]):
        return [term, folded]
    return [term]


def max_distance(term: str) -> int:
    """Return how many edits a stand-in for `term` may be away (0: none is looked for)."""
    if not ONE_EDIT_MIN <= len(term) <= LONGEST or any(c.isdigit() for c in term):
        return 0
    return 2 if len(term) >= TWO_EDITS_MIN else 1


# ~37 KB each, built in ~0.3 ms: a stand-in found is kept by the Lexicon, so only an unknown
# word asked again after the index changed builds its automaton again (128 held 4.7 MB).
@functools.lru_cache(maxsize=16)
def automaton(term: str, edits: int) -> Any:
    """Return a DFA accepting the strings within `edits` of `term` (a swap is one edit)
    that begin with its first letter (which also keeps the walk to one stretch of the table)."""
    nfa = NFA((0, 0))
    size = len(term)
    nfa.add_transition((0, 0), term[0], (1, 0))
    for i, char in enumerate(term):
        for e in range(edits + 1):
            if i == 0:
                continue
            nfa.add_transition((i, e), char, (i + 1, e))
            if e == edits:
                continue
            nfa.add_transition((i, e), ANY, (i, e + 1))  # a letter inserted
            nfa.add_transition((i, e), EPSILON, (i + 1, e + 1))  # a letter left out
            nfa.add_transition((i, e), ANY, (i + 1, e + 1))  # a letter replaced
            if i + 1 < size and term[i + 1] != char:  # two letters swapped
                nfa.add_transition((i, e), term[i + 1], ("swap", i, e))
                nfa.add_transition(("swap", i, e), char, (i + 2, e + 1))
    for e in range(edits + 1):
        if e < edits:
            nfa.add_transition((size, e), ANY, (size, e + 1))
        nfa.add_final_state((size, e))
    return LazyDFA(nfa)


class LazyDFA(DFA):
    """The DFA `nfa.to_dfa()` builds, each state's transitions made when first reached.

    A walk of a term table visits a few dozen states; building all of them first cost
    ~10 ms for an 8-letter term at two edits (most of a code recall's p95 at 20k chunks).
    """

    def __init__(self, nfa: Any) -> None:
        super().__init__(nfa.start())
        self._nfa = nfa
        self._built: set[Any] = set()

    def _build(self, state: Any) -> None:
        if state in self._built:
            return
        self._built.add(state)
        nfa = self._nfa
        for label in nfa.get_labels(state):
            if label is EPSILON:
                continue
            reached = nfa.next_state(state, label)
            if label is ANY:
                self.set_default_transition(state, reached)
            else:
                self.add_transition(state, label, reached)

    def is_final(self, state: Any) -> bool:
        return bool(state) and bool(self._nfa.is_final(state))

    def next_state(self, src: Any, label: Any) -> Any:
        self._build(src)
        return super().next_state(src, label)

    def find_next_edge(self, s: Any, label: Any, asbytes: bool) -> Any:
        self._build(s)
        return super().find_next_edge(s, label, asbytes)


def distance(a: str, b: str) -> int:
    """Return the optimal-string-alignment distance between `a` and `b`."""
    before: list[int] = []
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i]
        for j, y in enumerate(b, 1):
            cost = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y))
            if i > 1 and j > 1 and x == b[j - 2] and a[i - 2] == y:
                cost = min(cost, before[j - 2] + 1)
            current.append(cost)
        before, previous = previous, current
    return previous[-1]


def near_terms(term: str, edits: int, lookups: Iterable[Callable[[str], str | None]]) -> set[str]:
    """Return the terms within `edits` of `term` in sorted term tables.

    Each lookup returns a table's first term at or after its argument (None past the end).
    """
    return set(find_all_matches(automaton(term, edits), merged(list(lookups))))


def merged(lookups: list[Callable[[str], str | None]]) -> Callable[[str], str | None]:
    """Return a look-up of the first term at or after a word in the union of the tables
    `lookups` search: one walk of the automaton over every segment's table at once.

    A walk (find_all_matches) asks for rising words, and a table whose last answer is at or
    after the word asked has the same answer again: only the tables the walk went past
    are asked. Walking each table on its own made the automaton's steps once per segment
    and field (86 tables in a million-memory index built in chunks: a typed path's walk
    cost ~10× 100k's); the terms found are the same, those of the union.
    """
    answers: list[str | None] = [None] * len(lookups)
    state: dict[str, str | None] = {"asked": None}  # the last word asked (None: none yet)

    def lookup(word: str) -> str | None:
        previous = state["asked"]
        again = previous is None or word < previous  # not rising: ask every table
        state["asked"] = word
        best: str | None = None
        for i, find in enumerate(lookups):
            answer = answers[i]
            if again or (answer is not None and answer < word):
                answer = answers[i] = find(word)
            if answer is not None and (best is None or answer < best):
                best = answer
        return best

    return lookup


def ranked(term: str, frequencies: dict[str, int]) -> list[tuple[int, str]]:
    """Return the possible stand-ins for `term` among known terms (with their document
    frequencies) and their distances, best first: the nearest, then the most frequent.

    The first letter must be kept: few typos change it, and a real word the vault lacks is
    often one letter from a word it has but another first letter (mock, lock; jest, test)
    or a longer form of one (upstream, stream).
    """
    edits = max_distance(term)
    found = []
    for candidate, df in frequencies.items():
        if df <= 0 or candidate == term or any(c.isdigit() for c in candidate):
            continue
        apart = distance(term, candidate)
        if apart <= edits and candidate[:1] == term[:1]:
            found.append((apart, -df, candidate))
    return [(apart, candidate) for apart, _, candidate in sorted(found)]


def nearest_surface(word: str, surfaces: Iterable[str]) -> str | None:
    """Return the form of a stand-in, as memories write it, nearest to the query's `word`,
    if it is within the edits `word`'s own length allows (None otherwise).

    Stems hide how far apart two words are ("refuses" → refus, one edit from reus, which is
    "reuse"): comparing the written forms keeps a real word the vault lacks from standing
    in for another.
    """
    best = min(sorted(surfaces), key=lambda s: distance(word, s), default=None)
    if best is None or distance(word, best) > max(max_distance(word), 0):
        return None
    return best
