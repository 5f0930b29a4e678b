"""Questions that ask when: a memory that places what it tells in time ranks higher.

"When did Nate win his first tournament?", "when did the build break?": the answer is a
memory that dates an event, and the words that date it ("yesterday", "last week", "two days
ago") are not the question's. Dates and times the question knows are its own words, matched
as any word; what it asks for is the memory that tells when (docs/retrieval.md, "Questions
that ask when").
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace

from memstore.core.ranking import Candidate
from memstore.index import Document, Query

# A question asking when ("When did Nate win his first tournament?", "when did the build
# break?") is answered by a memory that tells when: its BM25 score is raised by this share
# when its text places what it tells in time relative to its writing ("yesterday", "last
# week", "two days ago"). Dates and times are words the question names when it knows them;
# what it asks is the memory that dates an event. (docs/retrieval.md, "Questions that ask when")
WHEN_BOOST = 0.6
_ASKS_WHEN = re.compile(
    r"\W*(?:so|and|but|ok|okay|hey)?\W*"
    r"(?:when\b|since when\b|what (?:time|date|day|year|month)\b|how long ago\b)",
    re.IGNORECASE,
)
_DAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_SPAN = r"(?:week|weekend|month|year|night|time|summer|winter|spring|fall|autumn|" + _DAY + ")"
_TELLS_WHEN = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow|ago|recently|the other day|earlier today"
    rf"|(?:last|next) {_SPAN}|this (?:morning|afternoon|evening|week|weekend|month|year))\b",
    re.IGNORECASE,
)


def tells_when(
    query: Query, candidates: list[Candidate], documents: Mapping[str, Document]
) -> list[Candidate]:
    """Return `candidates` with the BM25 score of each that places what it tells in time
    (`_TELLS_WHEN`) raised by WHEN_BOOST, when the query asks when; else unchanged."""
    if WHEN_BOOST <= 0 or not _ASKS_WHEN.match(query.text):
        return candidates
    return [
        replace(c, lexical=c.lexical * (1 + WHEN_BOOST))
        if c.lexical > 0 and _TELLS_WHEN.search(documents[c.key].content)
        else c
        for c in candidates
    ]
