"""Code hits: distinct chunks from a code search, ranked beside memories' hits."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import PurePosixPath

from memstore.catalog import code_rerank
from memstore.catalog.code_evidence import (
    Evidence,
    Question,
    holding,
    identifiers,
    name_parts,
    names_identifier,
    spelled_for_sure,
    weigh,
)
from memstore.catalog.code_semantic import SEMANTIC_WEIGHT
from memstore.core.model import Hit
from memstore.index import IndexHit

# The cosine of a question and each of some chunks' texts (code_semantic.CodeSimilarity).
Similarity = Callable[[str, Sequence[str]], list[float]]

KIND = "code"
SAME_TEXT = 0.85  # word-shingle Jaccard at which two chunks count as the same code
RRF_K = 60  # reciprocal rank fusion's usual constant: rank 1 and rank 2 stay close


def distinct(hits: Iterable[Hit], limit: int = 0) -> list[Hit]:
    """Keep each hit unless one ranked above it is the same code: byte-identical text, an
    overlapping line range of the same file, or near-identical text (word 3-shingles with
    Jaccard ≥ SAME_TEXT): a budget spent on one function twice tells the agent nothing.

    Stops once `limit` (0: no limit) are kept: comparing the hits no one will see was a
    fifth of a first-time code recall.
    """
    kept: list[Hit] = []
    seen: list[tuple[str, int, int, str, frozenset[str]]] = []
    for hit in hits:
        if limit and len(kept) >= limit:
            break
        path, start, end = _span(hit.path)
        body = hit.content.partition("\n")[2]
        shingles = _shingles(body)
        if any(
            body == other_body
            or (path == other and start <= other_end and other_start <= end)
            or _near_identical(shingles, other_shingles)
            for other, other_start, other_end, other_body, other_shingles in seen
        ):
            continue
        kept.append(hit)
        seen.append((path, start, end, body, shingles))
    return kept


_TEST_FOLDERS = frozenset({"test", "tests", "testing", "__tests__", "spec", "specs"})
_TEST_WORDS = frozenset({"test", "tests", "testing", "spec", "specs", "fixture", "fixtures"})
# Modules that exist for tests, whatever folder they sit in: pytest's fixtures (conftest.py),
# a test module named for the tests alone (Django's tests.py), a package's support for its
# users' tests (click's testing.py, starlette's testclient.py: a client that fakes requests
# holds the words of every request question).
_TEST_MODULES = frozenset(
    {"conftest", "test", "tests", "testing", "testclient", "testutils", "testutil", "testlib"}
)


@functools.lru_cache(maxsize=4096)
def _is_test(ref: str) -> bool:
    """Say whether a chunk is in a test file: a test folder, a name as test runners
    find them (test_x.py, x_test.go, x.test.ts, x.spec.js, XTest.java), or a module that
    exists for tests (conftest.py, tests.py, testing.py, testclient.py)."""
    path = PurePosixPath(ref.rpartition(":")[0] or ref)
    if _TEST_FOLDERS & {part.lower() for part in path.parts[:-1]}:
        return True
    stem = path.name.split(".", 1)[0]
    return (
        stem.lower() in _TEST_MODULES
        or stem.startswith("test_")
        or stem.endswith(("_test", "Test", "Tests"))
        or ".test." in path.name
        or ".spec." in path.name
    )


def _asks_for_tests(text: str) -> bool:
    return bool(_TEST_WORDS & {word.lower().strip("?.,!") for word in text.split()})


# A class's initializer (Python's `__init__`, JavaScript's `constructor`) stores what it is
# given, and its docstring or parameters name every option of the class, so it holds the words
# of any question about the class; it is the answer only when a question asks for it.
CONSTRUCTORS = frozenset({"__init__", "constructor"})
_CONSTRUCTOR_WORDS = frozenset(
    {"__init__", "init", "constructor", "constructors", "initializer", "initialiser"}
)


def _is_constructor(name: str) -> bool:
    return name.rpartition(".")[2] in CONSTRUCTORS


def _asks_for_constructor(text: str) -> bool:
    words = {word.lower().strip("?.,!`'\"()") for word in text.split()}
    return bool(_CONSTRUCTOR_WORDS & {word.rpartition(".")[2] or word for word in words})


def _span(ref: str) -> tuple[str, int, int]:
    path, _, lines = ref.rpartition(":")
    first, _, last = lines.partition("-")
    try:
        return path, int(first), int(last)
    except ValueError:
        return ref, 0, -1


@functools.lru_cache(maxsize=4096)  # a resident index meets the same chunks again and again
def _shingles(text: str) -> frozenset[str]:
    words = text.split()
    return frozenset(" ".join(words[i : i + 3]) for i in range(max(len(words) - 2, 1)))


def _near_identical(a: frozenset[str], b: frozenset[str]) -> bool:
    """Say whether the Jaccard index of `a` and `b` is at least SAME_TEXT, without building
    their union: it is at most the smaller size over the larger, so most pairs of chunks
    are told apart by their sizes alone."""
    small, large = sorted((len(a), len(b)))
    if not small or small < SAME_TEXT * large:
        return False
    shared = len(a & b)
    return shared >= SAME_TEXT * (small + large - shared)


def fuse(memories: Sequence[Hit], code: Sequence[Hit], k: int) -> list[Hit]:
    """Rank memory and code hits together: confident hits of both first, then weak ones,
    each group by reciprocal rank, 1 / (RRF_K + rank) in its own list (the two lists' BM25
    scores come from different indexes and do not compare), a memory before a chunk on a
    tie. So a weak memory never comes above a confident chunk, nor a weak chunk above a
    confident memory; each list keeps its own order."""
    rows = [
        (hit.weak, -1 / (RRF_K + rank), side, rank, hit)
        for side, hits in enumerate((memories, code))
        for rank, hit in enumerate(hits, 1)
    ]
    rows.sort(key=lambda row: row[:4])
    return [row[4] for row in rows[:k]]


# How a code hit ranks (code_evidence.py says what each share is): its BM25 score over the
# best one's, plus half the share of the question's terms it holds, plus a tenth of each of
# its name's exactness (when its name matches at all) and its class and path's matches.
# Measured on two question sets (docs/code.md, "Confidence"): R@1 0.554 → 0.607 on
# tests/data/code-questions.json, 0.617 → 0.633 on bench_code.py's, R@5 not lower.
RANK_HELD = 0.5
RANK_EXACT = 0.1
RANK_CONTEXT = 0.1
# Less this much per folder between a chunk's file and the tree's root: the module nearer the
# root is the one a question means when a deeper one holds a near-copy or a wrapper of it (a
# legacy or vendored package's copy, a handler built on the library it wraps). Measured on
# both sets (docs/code.md, "Confidence"): 0.05-0.15 fixed five first hits and broke none.
RANK_DEPTH = 0.1
# A class, module chunk or window goes below a function or method of the same file whose
# name matches the question and, with its class and path, matches it at least as well as
# the container's own name, scoring up to this much less; a class's header (the first lines
# of a class chunked member by member) goes below such a member of it whatever they score.
CONTAINER_SLACK = 0.2
# A definition whose name is the first's less parts the question does not explain comes
# first when it scores at most SHORTER_SLACK less, and one whose name is the first's and
# more parts the question does explain (`read_chunked` beside `read` for "read a chunked
# body") when it scores at most LONGER_SLACK less, among the first SHORTER_REACH (ninth
# session, replayed on both sets: own set R@1 0.625 → 0.643, bench_code's 0.667 → 0.683,
# the held-out sets unchanged; a longer slack of 0.3 lost one of pip's first hits).
SHORTER_SLACK = 0.2
LONGER_SLACK = 0.2
SHORTER_REACH = 10
CONTAINERS = frozenset({"class", "module", "window", "interface", "struct", "impl", "trait"})
# The first hit is confident when its own name matches this share of the question's weight,
# the question explains more than this share of its name's parts, and its text holds this
# share of the question's weight; and when it leads: its rank score is this margin above the
# next hit's, or (the next being its siblings, in its own file) its name matches the question
# by this share more than theirs and it scores this margin above the best of another file.
# Chosen on both sets for a precision of at least 0.9 on each (docs/code.md, "Confidence";
# 0.4 for the held share, tried in the ninth session, made two wrong first hits of the
# markdown-it held-out set confident: kept at 0.5).
CONFIDENT_NAMED = 0.15
CONFIDENT_EXACT = 0.7
CONFIDENT_HELD = 0.5
CONFIDENT_MARGIN = 0.2
CONFIDENT_SIBLING_LEAD = 0.05
CONFIDENT_ELSEWHERE_MARGIN = 0.1
# A name the question explains whole (every informative part: `make_archive` for "create a zip
# or tar archive", not `custom_version_option` for "the --version option") needs a smaller
# lead; a first hit whose text holds half the question and leads by far is confident
# whatever its name (`copytree`
# for "copy a directory tree recursively" beside a sibling, `launch` for "open a URL in the
# default application"). Chosen on both sets for a precision of at least 0.9 on each
# (docs/code.md, "Confidence"; the far lead widened from held 0.8 and margin 0.5 in the
# eighth session, the whole name's margin lowered from 0.15 in the ninth).
CONFIDENT_WHOLE_MARGIN = 0.1
CONFIDENT_FAR_MARGIN = 0.35
# Whatever else, a first hit's text holds two of the question's informative words or more:
# one word alone is no evidence ("thanks, that worked!" holds all a code index knows of it).
CONFIDENT_WORDS = 2
# The name's lead over every other candidate: its name's match (its share of the question
# times the share of its parts the question explains) over the best of the candidates of
# another name, wherever they are. A first hit whose name no other candidate's matches
# better, that holds half the question and scores this much above every other file's best,
# is confident (`Context.lookup_default` for "look up a default in the context's default
# map"); a class, module chunk or window is never confident when a candidate of another
# name matches the question by more than CONFIDENT_CONTAINER_NAME_LEAD better (a class
# first while the function that does what is asked is named so: `Emoji` before
# `_emoji_replace`, `_Chunk` before `Wave_read._read_fmt_chunk`). Eighth session, chosen on
# both sets (docs/code.md, "Confidence").
CONFIDENT_NAME_LEAD = 0.0
CONFIDENT_NAME_ELSEWHERE = 0.05
CONFIDENT_CONTAINER_NAME_LEAD = -0.05
# A first hit is not confident while another definition of its name (not a window of
# itself) scores within this of it and its class and path match the question as well:
# near-copies the question does not tell apart (`Windows.user_cache_dir` and
# `Android.user_cache_dir` for "the user's cache folder on linux", `time.fromisoformat` and
# `datetime.fromisoformat`). Ninth session, chosen on both sets (docs/retrieval.md, "Code").
CONFIDENT_TWIN_MARGIN = 0.2


@dataclass(frozen=True, slots=True)
class _Ranked:
    """A candidate: its index hit, where it is, its kind, its evidence and rank score."""

    found: IndexHit
    ref: str
    kind: str
    name: str
    evidence: Evidence
    score: float
    spelled: bool = False  # the question spells its name as code (`inspect.getsourcelines`)

    @property
    def file(self) -> str:
        return self.ref.rpartition(":")[0]


def _hit(found: IndexHit, ref: str, name: str) -> Hit:
    document = found.document
    coverage = 1.0 if found.coverage is None else found.coverage
    return Hit(
        id=document.id,
        workspace=document.workspace,
        kind=KIND,
        path=ref,
        content=document.content,
        keywords=tuple(k for k in (ref.rpartition(":")[0], name) if k),
        source=document.source.partition("\n")[2],
        created="",
        seen=1,
        score=found.score,
        weak=True,
        coverage=coverage,
        view="lexical" if coverage >= 1.0 else "any-word",
    )


def _label(content: str, ref: str) -> tuple[str, str]:
    """The kind and name of a chunk, from its label "<ref> <kind>[ <name>]" (a hit shows the
    path and name, not the prose)."""
    kind, _, name = content.partition("\n")[0].removeprefix(f"{ref} ").partition(" ")
    return kind, name


def ranked(
    found: Sequence[IndexHit],
    text: str,
    limit: int,
    question: Question,
    named: Sequence[IndexHit] = (),
    similar: Similarity | None = None,
) -> list[Hit]:
    """Return a code search's hits for `text`, best first, at most `limit`: by BM25 and the
    evidence of each (code_evidence.py), the definitions it names as code first (of `found`
    and of `named`, a search for those names), a function before its class or module chunk
    when its name matches as well, tests after code (unless it asks for tests),
    near-duplicates dropped; the first hit confident (not weak) when its evidence is strong
    and leads. When the first is weak, the candidates are ordered again by code_rerank.py's
    score (their heads' words, who calls whom, their names weighed more), with SEMANTIC_WEIGHT
    of `similar`'s opinion added when given (the semantic view: the cosine of the question
    and each candidate, code_semantic.py); all stay weak."""
    wanted = identifiers(text)
    # BM25 over the question's best, not over the names' search (a query of its own)
    best = max((hit.score for hit in found or named), default=0.0) or 1.0
    found = [*found, *_named_only(named, found, wanted)]
    if not found:
        return []
    rows = []
    for index_hit in found:
        document = index_hit.document
        ref = document.source.partition("\n")[0]
        kind, name = _label(document.content, ref)
        evidence = weigh(question, name, ref.rpartition(":")[0])
        score = _rank_score(index_hit, best, evidence, ref, question)
        spelled = names_identifier(wanted, name, ref.rpartition(":")[0])
        rows.append(_Ranked(index_hit, ref, kind, name, evidence, score, spelled))
    tests_asked = _asks_for_tests(text)
    order = _ordered(rows, bool(wanted), tests_asked)
    kept = distinct((_hit(row.found, row.ref, row.name) for row in order), limit)
    if not kept:
        return kept
    first = order[0]
    # a test when the question is about the code, another definition than the one it names
    # as code ("does textwrap.dedent keep tabs" → `enum._dedent`), or a class's initializer
    # when the question does not ask for one, is never the answer
    constructors_asked = _asks_for_constructor(text)
    off_target = (
        (_is_test(first.ref) and not tests_asked)
        or (spelled_for_sure(wanted) and not first.spelled)
        or (_is_constructor(first.name) and not constructors_asked and not first.spelled)
    )
    lead = _lead(order, kept[1].id if len(kept) > 1 else None, question)
    if not off_target and _is_confident(lead):
        kept[0] = replace(kept[0], weak=False)
        return kept
    rows = _reranked(rows, best, question, constructors_asked)  # weak: more evidence
    if similar is not None:  # a second opinion on the order of weak hits
        cosines = similar(text, [row.found.document.content for row in rows])
        rows = [
            replace(row, score=row.score + SEMANTIC_WEIGHT * cosine)
            for row, cosine in zip(rows, cosines, strict=True)
        ]
    order = _ordered(rows, bool(wanted), tests_asked)
    return distinct((_hit(row.found, row.ref, row.name) for row in order), limit)


def _reranked(
    rows: list[_Ranked], best: float, question: Question, constructors_asked: bool = False
) -> list[_Ranked]:
    """The candidates with code_rerank.py's score in place of their rank score (a class's
    initializer demoted unless `constructors_asked`)."""
    contents = [row.found.document.content for row in rows]
    leaves = ["" if row.kind in CONTAINERS else row.name.rpartition(".")[2] for row in rows]
    is_called = code_rerank.called(leaves, contents)
    return [
        replace(
            row,
            score=code_rerank.score(
                row.found.score / best,
                1.0 if row.found.coverage is None else row.found.coverage,
                row.evidence,
                row.ref.count("/", 0, max(row.ref.rfind(":"), 0)),
                code_rerank.head_share(question, content),
                called_,
                _is_constructor(row.name) and not constructors_asked,
            ),
        )
        for row, content, called_ in zip(rows, contents, is_called, strict=True)
    ]


def _ordered(rows: list[_Ranked], spelled: bool, tests_asked: bool) -> list[_Ranked]:
    """Order candidates by rank score, a function before its container, a shorter or fuller
    name first (`_shorter_first`), the definitions a question spells as code first, tests
    last unless it asks for them."""
    rows = sorted(rows, key=lambda row: -row.score)  # stable: ties keep the index's order
    order = _shorter_first(_functions_first(rows))
    if spelled:  # the definitions it names as code first: "what does json.dumps return"
        order.sort(key=lambda row: not row.spelled)  # stable: ranks kept
    if not tests_asked:  # "where do we …" wants the code, not its tests
        order.sort(key=lambda row: _is_test(row.ref))  # stable: ranks kept
    return order


def _rank_score(
    index_hit: IndexHit, best: float, evidence: Evidence, ref: str, question: Question
) -> float:
    """A candidate's rank score: BM25 over the best, its share of the question's terms, its
    name's exactness, its class and path's matches, less its depth."""
    coverage = 1.0 if index_hit.coverage is None else index_hit.coverage
    return (
        index_hit.score / best
        + RANK_HELD * coverage
        + RANK_EXACT * evidence.exact * (evidence.named > 0)
        + RANK_CONTEXT * evidence.context
        - RANK_DEPTH * ref.count("/", 0, max(ref.rfind(":"), 0))
    )


def _named_only(
    named: Sequence[IndexHit], found: Sequence[IndexHit], wanted: frozenset[str]
) -> list[IndexHit]:
    """The hits of a search for the names a question spells as code that are those
    definitions and not already found (a name called everywhere leaves its definition out of
    the question's own candidates: `urlsplit`)."""
    if not named or not wanted:
        return []
    seen = {hit.document.id for hit in found}
    out = []
    for hit in named:
        ref = hit.document.source.partition("\n")[0]
        name = _label(hit.document.content, ref)[1]
        if hit.document.id not in seen and names_identifier(wanted, name, ref.rpartition(":")[0]):
            out.append(hit)
            seen.add(hit.document.id)
    return out


def _functions_first(rows: list[_Ranked]) -> list[_Ranked]:
    """Put a function or method above a class, module chunk or window of its file ranked
    above it, when its name matches the question and, with its class and path, at least as
    well as the container's own name (and it scores at most CONTAINER_SLACK less, or is a
    member of the class whose header that is): the question asks for the function, not
    what holds it."""
    waiting = list(rows)
    order: list[_Ranked] = []
    while waiting:
        row = waiting[0]
        if row.kind in CONTAINERS:
            better = next(
                (
                    other
                    for other in waiting[1:]
                    if other.kind not in CONTAINERS
                    and other.file == row.file
                    and other.evidence.named > 0
                    and other.evidence.named + other.evidence.context >= row.evidence.named
                    and (
                        other.score >= row.score - CONTAINER_SLACK
                        or other.name.startswith(f"{row.name}.")  # a member below its header
                    )
                ),
                None,
            )
            if better is not None:
                waiting.remove(better)
                order.append(better)
                continue
        order.append(row)
        waiting.pop(0)
    return order


def _shorter_first(order: list[_Ranked]) -> list[_Ranked]:
    """Put first a definition the question explains whole whose name is the first's without
    the parts the question does not explain (`format_exception` before
    `format_exception_only`: the extra part names a variant not asked for), or the first's
    with more parts the question does explain (`read_chunked` before `read` for "read a
    chunked body"), when it scores at most SHORTER_SLACK or LONGER_SLACK less."""
    if len(order) < 2 or not order[0].evidence.named:
        return order
    first = order[0]
    parts = set(name_parts(first.name.rpartition(".")[2]))
    for at, row in enumerate(order[1:SHORTER_REACH], 1):
        own = set(name_parts(row.name.rpartition(".")[2]))
        if row.kind in CONTAINERS or row.evidence.exact < 1.0 or not own:
            continue
        shorter = (
            first.evidence.exact < 1.0
            and own < parts
            and row.evidence.named >= first.evidence.named
            and row.score >= first.score - SHORTER_SLACK
        )
        longer = (
            own > parts
            and row.evidence.named > first.evidence.named
            and row.score >= first.score - LONGER_SLACK
        )
        if shorter or longer:
            return [row, *order[:at], *order[at + 1 :]]
    return order


@dataclass(frozen=True, slots=True)
class Lead:
    """What the first hit has of a question and how far it leads (code_evidence.py)."""

    evidence: Evidence
    held: float  # the share of the question's weight its text holds
    margin: float  # its rank score over the next hit shown's (inf: none shown)
    sibling_lead: float  # its name's match over the best of its siblings' (same file)
    elsewhere: float  # its rank score over the best hit of another file's
    words: int = 0  # how many of the question's informative words its text holds
    name_lead: float = 0.0  # its name's match over the best candidate's of another name
    container: bool = False  # a class, module chunk or window, not a function
    spelled_alone: bool = False  # the one candidate the question names as code
    twin: bool = False  # another candidate of its name that its class and path do not beat


def _lead(order: list[_Ranked], second_id: str | None, question: Question) -> Lead:
    """Read the evidence `_is_confident` judges: the first of `order` against the hit shown
    after it (`second_id`), its siblings and every other file."""
    first = order[0]
    second = next((row for row in order if row.found.document.id == second_id), None)
    siblings = [row.evidence.named for row in order[1:] if row.file == first.file]
    elsewhere = next((row.score for row in order if row.file != first.file), 0.0)
    leaf = first.name.rpartition(".")[2]
    others = [_name_match(row.evidence) for row in order[1:] if row.name.rpartition(".")[2] != leaf]
    share, words = holding(question, first.found.document.content)
    return Lead(
        evidence=first.evidence,
        held=share,
        margin=math.inf if second is None else first.score - second.score,
        sibling_lead=first.evidence.named - max(siblings, default=0.0),
        elsewhere=first.score - elsewhere,
        words=words,
        name_lead=_name_match(first.evidence) - max(others, default=0.0),
        container=first.kind in CONTAINERS,
        spelled_alone=first.spelled and sum(row.spelled for row in order) == 1,
        twin=any(
            row.name.rpartition(".")[2] == leaf
            and (row.name, row.file) != (first.name, first.file)  # not a window of itself
            and row.evidence.context >= first.evidence.context
            and row.score >= first.score - CONFIDENT_TWIN_MARGIN
            for row in order[1:]
            if row.kind not in CONTAINERS and leaf
        ),
    )


def _name_match(evidence: Evidence) -> float:
    """How well a name matches a question: its share of the question's weight times the
    share of its own parts the question explains (a sibling sharing one word scores less)."""
    return evidence.named * evidence.exact


def _is_confident(lead: Lead) -> bool:
    """Say whether the first hit is the answer beyond doubt: its name is the question's
    (CONFIDENT_NAMED, CONFIDENT_EXACT), its text holds the question (CONFIDENT_HELD), and it
    leads the hit shown after it, or its siblings and every other file (by less when the
    question explains its whole name); or no other candidate's name matches the question
    better and it leads every other file (CONFIDENT_NAME_LEAD); or its text holds half the
    question and it leads the next hit by far (CONFIDENT_FAR_*; a lone candidate, the one chunk
    holding any of the question's words, has no next hit to lead). Never a class, module
    chunk or window when another candidate's name matches the question clearly better, nor
    one with a near-copy the question does not tell apart (CONFIDENT_TWIN_MARGIN). The one
    definition the question names as code (`inspect.getsourcelines`) is confident."""
    if lead.spelled_alone:
        return True
    if lead.container and lead.name_lead < CONFIDENT_CONTAINER_NAME_LEAD:
        return False
    if lead.twin:
        return False
    if lead.held < CONFIDENT_HELD or lead.words < CONFIDENT_WORDS:
        return False  # its text (label, code, docstrings) must hold the question
    if math.isfinite(lead.margin) and lead.margin >= CONFIDENT_FAR_MARGIN:
        return True  # a lead over the next hit; with none (a lone candidate) it leads nothing
    evidence = lead.evidence
    if (
        evidence.named > 0
        and lead.name_lead >= CONFIDENT_NAME_LEAD
        and lead.elsewhere >= CONFIDENT_NAME_ELSEWHERE
    ):
        return True
    if evidence.named < CONFIDENT_NAMED or evidence.exact < CONFIDENT_EXACT:
        return False
    if evidence.exact >= 1.0 and lead.margin >= CONFIDENT_WHOLE_MARGIN:
        return True
    return lead.margin >= CONFIDENT_MARGIN or (
        lead.sibling_lead >= CONFIDENT_SIBLING_LEAD and lead.elsewhere >= CONFIDENT_ELSEWHERE_MARGIN
    )
