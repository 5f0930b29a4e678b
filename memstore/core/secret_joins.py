"""Keys split by spaces, dashes or dots, joined up again for the secret scan to read. Pure.

`joins(text)` is one line per join a split key could hide in. Most joins of memory-like text
(prose, commands, paths) are words run together that no rule can accept: a rule reading a join
wants its value to look random (a digit and a capital), except the exact ones (an AWS key id,
a key body: an M and 40 characters or more). `joins(text, every=False)` leaves those out,
finds the groups with C loops over the words' lengths and skips those that hold none: every
rule finds in it exactly what it finds in all the joins (tests/core/test_secret_fast.py).
"""

from __future__ import annotations

import itertools
import operator
import re
from collections.abc import Iterator

# A word made of token characters: a key split by spaces is a run of these.
_PIECE = re.compile(r"[A-Za-z0-9+/=_.~-]+")
_PREFIX = re.compile(
    r"(?:AKIA|ASIA|gh[pousr]_|github_pat_|glpat-|xox[abposr]-|sk-|[rs]k_live_|AIza|npm_|hf_"
    r"|pypi-|ya29\.|gl(?:rt|dt|ptt)-|[rs]k_test_|GOCSPX-|hv[sb]\.|dckr_pat_|lin_api_|ntn_|PMAK-"
    r"|SG\.)"
)
# Every place _PREFIX matches (it reads at most 11 characters: a join of the next 12 words
# starts as the rest of the run does).
_PREFIX_AT = re.compile(f"(?={_PREFIX.pattern})")
# Found wherever _PREFIX is (each of its prefixes ends in _, - or . but AKIA, ASIA and AIza),
# and far faster: the search stops only at those three marks and at an A.
# Apart, each from one literal the engine skips to (together they cost ~3 times as much).
_PREFIX_ENDS = tuple(
    map(
        re.compile,
        (
            r"A(?:KIA|SIA|Iza)",
            r"_(?:(?<=gh[pousr]_)|(?<=github_pat_)|(?<=[rs]k_live_)|(?<=npm_)|(?<=hf_)"
            r"|(?<=[rs]k_test_)|(?<=dckr_pat_)|(?<=lin_api_)|(?<=ntn_))",
            r"-(?:(?<=glpat-)|(?<=xox[abposr]-)|(?<=sk-)|(?<=pypi-)|(?<=gl(?:rt|dt)-)|(?<=glptt-)"
            r"|(?<=GOCSPX-)|(?<=PMAK-))",
            r"\.(?:(?<=ya29\.)|(?<=hv[sb]\.)|(?<=SG\.))",
        ),
    )
)
_SPLIT_MARK = re.compile(r"[-.]")
_MAX_JOIN = 120  # characters: longer than any key a split is looked for in
# What a join must hold for a rule to accept a match in it: a digit and a capital (a value
# that looks random), an AWS key id's prefix (exact), or an M and 40 characters (a key body).
_DIGIT = re.compile(r"[0-9]")
_CAPITAL = re.compile(r"[A-Z]")
_AWS_ID = re.compile(r"A(?:KIA|SIA|BIA|CCA)")
_KEY_BODY_LENGTH = 40
# A key body's lines span joins from 60 characters on: then every join is kept, in order.
_KEY_LINE = 60
# Over the words' lengths, one byte each (0: not a word of token characters): a run of two
# words or more, and a block of two or more of one length (up to 10 characters, as a group's).
_SPAN = re.compile(rb"[^\x00]{2,}")
_BLOCK = re.compile(rb"([\x01-\x0a])\1+")
_TRIM = "\"'`()[]{}<>,;:!?"
_PIECE_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_.~-"  # _PIECE's


# Two string literals joined by an operator ('glpat-' + 'x…', "a" . "b", "a" & "b", 'a' || 'b'):
# the operator is dropped, so the literals' words stand side by side as adjacent literals do.
_CONCAT = re.compile(r"""(['"`])[ \t]*(?:\+|\.|&|\|\|)\s*(['"`])""")


def joins(text: str, *, every: bool = True) -> str:
    """The joins a split key could hide in, one a line (`every` False: only those a rule may
    accept, in no set order: each rule but a key body's multi-line one reads a line alone)."""
    if "'" in text or '"' in text or "`" in text:  # a substring test costs less than a search
        text = _CONCAT.sub(r"\1 \2", text)
    # Keys split by dashes or dots (AKIA-IOSF-…) are split by spaces once those are read as spaces.
    undashed = _SPLIT_MARK.sub(" ", text)
    if every:
        runs = [*_runs(text), *(_runs(undashed) if undashed != text else ())]
        return "\n".join(j for run in runs for j in _joins(run))
    kept: list[str] = []
    for part in (text, undashed) if undashed != text else (text,):
        for join in _joins_to_read(part):
            if len(join) >= _KEY_LINE:  # a key body's lines may span joins: read them all
                return joins(text)
            if _may_hold(join):
                kept.append(join)
    return "\n".join(kept)


def _joins_to_read(text: str) -> Iterator[str]:
    """Yield the joins of `text` (as _joins of each of _runs) a rule may accept, and others.

    Each word's length stands as one byte (0: not a word of token characters), so the work
    per word is done by C loops (str.split, map, regex), and Python's per group or run."""
    pieces = list(map(str.strip, text.split(), itertools.repeat(_TRIM)))
    # A piece is a word of token characters when stripping those leaves nothing (an empty
    # one is not, and its length is 0 anyway): str.strip costs less than _PIECE.fullmatch.
    valid = map(operator.not_, map(str.strip, pieces, itertools.repeat(_PIECE_CHARS)))
    try:  # a word's piece times False is "": its length 0
        sizes = bytes(map(len, map(operator.mul, pieces, valid)))
    except ValueError:  # a word of 256 characters or more
        valid = map(operator.not_, map(str.strip, pieces, itertools.repeat(_PIECE_CHARS)))
        sizes = bytes(map(min, map(operator.mul, map(len, pieces), valid), itertools.repeat(255)))
    # A group is a whole block of words of one length (up to 10), and one shorter word after
    # it (within the run), three words or more: _groups starts one at each block.
    for block in _BLOCK.finditer(sizes):
        start, end = block.span()
        if end < len(sizes) and 0 < sizes[end] < sizes[start]:
            end += 1
        if end - start >= 3:
            group = pieces[start:end]
            whole = "".join(group)  # every join of the group lies in it
            if len(whole) >= _KEY_LINE or _may_hold(whole):
                yield from _windows(group)
    joined = "".join(pieces)  # every run's words joined lie in it
    if not any(map(re.Pattern.search, _PREFIX_ENDS, itertools.repeat(joined))):
        return
    for span in _SPAN.finditer(sizes):
        run = pieces[span.start() : span.end()]
        whole = "".join(run)
        starts = {m.start() for m in _PREFIX_AT.finditer(whole)}
        if starts:
            at = [0, *itertools.accumulate(map(len, run))]
            yield from _prefixed(run, [i for i in range(len(run)) if at[i] in starts])


def _may_hold(join: str) -> bool:
    """Whether a rule may accept a match in `join`: one that looks random (a digit and a
    capital), an AWS key id (its prefix) or a key body (40 characters from an M on)."""
    return (
        (_DIGIT.search(join) is not None and _CAPITAL.search(join) is not None)
        or _AWS_ID.search(join) is not None
        or _PREFIX.match(join) is not None  # a provider's token of the shape it issues
        or (len(join) >= _KEY_BODY_LENGTH and "M" in join)
    )


def _runs(text: str) -> Iterator[list[str]]:
    """Yield each run of whitespace-separated words made of token characters."""
    run: list[str] = []
    for word in [*text.split(), "\n"]:
        piece = word.strip(_TRIM)
        if _PIECE.fullmatch(piece):
            run.append(piece)
            continue
        if len(run) > 1:
            yield run
        run = []


def _joins(run: list[str]) -> Iterator[str]:
    """Yield the joins a split key could hide in: from a known prefix on, and equal groups."""
    yield from _prefixed(
        run, [i for i in range(len(run)) if _PREFIX.match("".join(run[i : i + 12]))]
    )
    start = 0
    while start < len(run) - 1:
        size, end = len(run[start]), start + 1
        while end < len(run) and len(run[end]) == size:
            end += 1
        if end < len(run) and len(run[end]) < size:
            end += 1  # the last group of a split key may be shorter
        if end - start >= 3 and size <= 10:
            yield from _windows(run[start:end])
        start = max(end - 1, start + 1)


def _prefixed(run: list[str], starts: list[int]) -> Iterator[str]:
    """Yield the joins from each word of `starts` on (the prefix itself may be split)."""
    for i in starts:
        joined = run[i]
        for word in run[i + 1 :]:
            joined += word
            if len(joined) > _MAX_JOIN:
                break
            yield joined


def _windows(group: list[str]) -> Iterator[str]:
    """Yield the whole group joined, and each part of it joining to exactly 40 characters."""
    yield "".join(group)
    for i in range(len(group)):
        total = 0
        for j in range(i, len(group)):
            total += len(group[j])
            if total == 40:
                yield "".join(group[i : j + 1])
            if total >= 40:
                break
