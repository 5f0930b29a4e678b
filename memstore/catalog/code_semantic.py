"""Code similarity: the semantic view's second opinion on weak code hits (optional extra).

With the semantic view on (MEMSTORE_SEMANTIC, the `semantic` extra: catalog/semantic.py),
a code search whose first hit is weak reorders its candidates by their rank score plus
SEMANTIC_WEIGHT times the cosine of the question and each chunk's summary: its own name's
words and its docstring's first sentence (`parse_host_port: Parse a forwarded host value
into host and optional port.`), or its name, class and path's words without one. Vectors of
summaries are kept per process (SUMMARY_CACHE of them), so a resident daemon embeds a
chunk once.

What it never does: make a hit confident, or move a confident first hit (code_hits.py
decides confidence from the lexical evidence alone). Measured on the eight code question
sets (docs/code.md, "Confidence", tenth session): the cosine neither separates right
first hits from wrong ones (precision of first hits both views agree on, among the weak:
about one half) nor vetoes wrong confident ones without losing as many right, so it is
evidence for order only. Nothing here imports numpy or loads a model: the caller passes
the embedder the semantic view already loaded.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memstore.catalog.code_evidence import name_parts

if TYPE_CHECKING:
    from memstore.catalog.semantic import Embedder

# Rank score added per unit of cosine, chosen on the two tuning sets (own questions and
# bench_code's; 0.1-0.5 tried): R@1 0.643 → 0.652 and 0.683 → 0.700 (docs/code.md).
SEMANTIC_WEIGHT = 0.2
SUMMARY_CACHE = 4096  # summaries' vectors kept per process (2 KB each at 512 dimensions)
_DOCSTRING = re.compile(r"(?:\"\"\"|''')\s*(.*?)(?:\"\"\"|'''|\n\s*\n)", re.S)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
_HEAD_LINES = 12  # a docstring starts within a definition's first lines
_COMMENT_LINES = 8
_SUMMARY_CHARS = 200


def summary(content: str) -> str:
    """What a chunk says it does, from its text ("<ref> <kind> <name>" then the code): its own
    name's words and its docstring's (or leading comments') first sentence."""
    label, _, body = content.partition("\n")
    ref, _, rest = label.partition(" ")
    name = rest.partition(" ")[2]
    *outer, leaf = name.split(".") if name else [""]
    words = " ".join(name_parts(leaf)) or leaf
    said = _first_sentence(body)
    if said:
        return f"{words}: {said}"
    around = " ".join(" ".join(name_parts(part)) for part in outer)
    path = ref.rpartition(":")[0].rpartition(".")[0].replace("/", " ").replace("_", " ")
    return " ".join(part for part in (words, around, path) if part)


def _first_sentence(body: str) -> str:
    lines = body.split("\n")
    found = _DOCSTRING.search("\n".join(lines[:_HEAD_LINES]))
    if found:
        text = " ".join(found.group(1).split())
        return _SENTENCE_END.split(text, maxsplit=1)[0][:_SUMMARY_CHARS]
    comments = [
        line.strip().lstrip("#/* ").strip()
        for line in lines[:_COMMENT_LINES]
        if line.strip().startswith(("#", "//", "/*", "*"))
    ]
    return " ".join(comments)[:_SUMMARY_CHARS]


class CodeSimilarity:
    """The cosine of a question and chunks' summaries under one embedder, summaries' vectors
    cached (thread-safe: a daemon serves requests on several threads)."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._vectors: OrderedDict[str, Any] = OrderedDict()
        self._mutex = threading.Lock()

    def __call__(self, question: str, contents: Sequence[str]) -> list[float]:
        """Return the cosine of `question` and each of `contents`' summaries."""
        from memstore.catalog.semantic import _one_blas_thread

        summaries = [summary(content) for content in contents]
        with self._mutex:  # what another thread drops meanwhile stays in `known`
            known = {s: self._vectors[s] for s in summaries if s in self._vectors}
        missing = [s for s in dict.fromkeys(summaries) if s not in known]
        with _one_blas_thread():
            rows = self.embedder.embed([question, *missing])
            asked = rows[0]
            known.update(zip(missing, rows[1:], strict=True))
            with self._mutex:
                for text in summaries:
                    self._vectors[text] = known[text]
                    self._vectors.move_to_end(text)
                while len(self._vectors) > SUMMARY_CACHE:
                    self._vectors.popitem(last=False)
            return [float(known[text] @ asked) for text in summaries]


_BY_MODEL: dict[str, CodeSimilarity] = {}  # one per model a process loads (Settings.semantic)


def similarity(embedder: Embedder) -> CodeSimilarity:
    """Return the code similarity of `embedder`'s model, its cache shared by every search."""
    found = _BY_MODEL.get(embedder.name)
    if found is None:
        found = _BY_MODEL.setdefault(embedder.name, CodeSimilarity(embedder))
    return found
