"""A memory's leading label names its subject: a query naming it ranks that memory higher.

"Nate: I'm playing Xenoblade Chronicles", "Postgres: runs on 5433 locally", "Deploy: only
through atlantis": a short label before a colon at the start of a memory says who or what
the memory is about (its speaker, in a chat log). A question naming that subject ("what is
Nate's favourite game?") is answered by the memories labelled with it more often than by
those that only mention it (docs/retrieval.md, "A memory's subject").
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import replace

from memstore.core.ranking import Candidate
from memstore.index import Document, Query, terms

# The BM25 score of a memory whose leading label holds one of the query's terms is raised
# by this share (0: off). It reorders hits, it never makes one confident.
SUBJECT_BOOST = 0.3
SUBJECT_MAX_WORDS = 3  # a label of more words is a sentence with a colon, not a subject
# The label: up to 40 characters of the first line before ": " (a URL's "https://" is not).
_LABEL = re.compile(r"[ \t]*#*[ \t]*([^\n:]{1,40}):[ \t]")


def label_terms(text: str) -> frozenset[str]:
    """Return the index terms of `text`'s leading label ("Nate: …" → {"nate"}), or none."""
    match = _LABEL.match(text)
    if not match or len(match.group(1).split()) > SUBJECT_MAX_WORDS:
        return frozenset()
    return _label_terms(match.group(1))


@functools.lru_cache(maxsize=1024)
def _label_terms(label: str) -> frozenset[str]:
    return frozenset(terms(label))


def subject_first(
    query: Query, candidates: list[Candidate], documents: Mapping[str, Document]
) -> list[Candidate]:
    """Return `candidates` with the BM25 score of each whose leading label holds a query
    term raised by SUBJECT_BOOST; unchanged when the boost is off or no label matches."""
    if SUBJECT_BOOST <= 0:
        return candidates
    wanted = frozenset(query.terms)
    return [
        replace(c, lexical=c.lexical * (1 + SUBJECT_BOOST))
        if c.lexical > 0 and label_terms(documents[c.key].content) & wanted
        else c
        for c in candidates
    ]
