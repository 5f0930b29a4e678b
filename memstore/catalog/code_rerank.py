"""Code reranking: weak code hits ordered again by a weighing of their evidence fitted on questions.

When a code search's first hit is not confident (code_hits.py), its candidates are ordered
again by one score that weighs what the rank score weighs and two things it does not:

- the share of the question the chunk's *head* holds: its label (path, kind, name), its
  signature and its docstring's first lines (HEAD_LINES): what a definition says it does,
  above the words its body happens to use;
- whether another candidate *calls* it (`leaf(` in another candidate's code): among the
  functions a question's words find, the one the others call is the one that does the work
  (`choose_unused_port` beside the server's start-up that calls it, for "pick a free port");

less for a class's initializer (`__init__`) the question does not ask for (fourteenth
session), and which weighs the name's match (its share of the question times the share of its own
parts the question explains), the class and path's match and the folder depth far more than
the rank score does. The weights were fitted (pairwise logistic regression: the answer
against every other candidate of its question) on the two tuning sets only
(tests/data/code-questions.json and bench_code.py's), then rounded; each held-out set's first
hits were measured after (docs/code.md, "Confidence", twelfth session). A confident first
hit is never moved, so confidence and its precision are what the lexical rules say.
"""

from __future__ import annotations

from collections.abc import Sequence

from memstore.catalog.code_evidence import Evidence, Question, holding

# The score's weights, over a candidate's BM25 score / the best candidate's (weight 1):
RERANK_COVERAGE = 0.9  # the share of the question's terms the index found in it
RERANK_NAME = 1.2  # its name's match: share of the question × share of its parts explained
RERANK_CONTEXT = 0.75  # its class and path's match beyond its name
RERANK_DEPTH = 0.45  # less, per folder between its file and the tree's root
RERANK_HEAD = 0.6  # the share of the question its first HEAD_LINES hold
RERANK_CALLED = 0.25  # another candidate calls it
# Less, for a class's initializer (`__init__`) when the question does not ask for one: among
# the weak first hits of the ten code question sets (fourteenth session, docs/code.md), an
# initializer first was never the answer (own and bench_code 5 of 5 wrong, held-out 7 of 7);
# its parameters and docstring name every option of its class. Weights 0.3-1.0 give the same
# first hits on the tuning sets; the smallest was kept.
RERANK_CONSTRUCTOR = 0.3
HEAD_LINES = 12  # label, signature and a docstring's first lines
MIN_CALLED_NAME = 4  # a shorter name ("get", "run") is called everywhere: no evidence


def head_share(question: Question, content: str) -> float:
    """The weighted share of the question a chunk's first HEAD_LINES lines hold."""
    head = content.split("\n", HEAD_LINES)[:HEAD_LINES]
    return holding(question, "\n".join(head))[0]


def called(names: Sequence[str], contents: Sequence[str]) -> list[bool]:
    """Per candidate: whether another candidate's code calls its name (`name(` after no
    word character: `self.name(` and `mod.name(` count). Names shorter than
    MIN_CALLED_NAME, and empty ones (a class or module chunk passes ""), are never called."""
    bodies = [content.partition("\n")[2] for content in contents]
    out = []
    for at, name in enumerate(names):
        out.append(
            len(name) >= MIN_CALLED_NAME
            and any(_calls(body, name) for other, body in enumerate(bodies) if other != at)
        )
    return out


def _calls(body: str, name: str) -> bool:
    needle = f"{name}("
    at = body.find(needle)
    while at >= 0:
        if at == 0 or not (body[at - 1].isalnum() or body[at - 1] == "_"):
            return True
        at = body.find(needle, at + 1)
    return False


def score(
    bm25_share: float,
    coverage: float,
    evidence: Evidence,
    depth: int,
    head: float,
    is_called: bool,
    is_constructor: bool = False,
) -> float:
    """A candidate's reranking score (the module docstring says what each part is)."""
    return (
        bm25_share
        + RERANK_COVERAGE * coverage
        + RERANK_NAME * evidence.named * evidence.exact
        + RERANK_CONTEXT * evidence.context
        - RERANK_DEPTH * depth
        + RERANK_HEAD * head
        + RERANK_CALLED * is_called
        - RERANK_CONSTRUCTOR * is_constructor
    )
