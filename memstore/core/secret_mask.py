"""Text shown to people with each credential the scanner finds replaced by `[secret: <kind>]`. Pure.

The scanner (core/secrets.py) says what kinds of credential a text holds, not where. A text
it flags is narrowed down: line by line, the fewest words whose masking clears the line
(the most key-like words tried first, so `password: Xk29!fLq` keeps its label), widened to a
key split by spaces (`AKIA IOSF …`); lines a credential spans (a key block) are masked
whole. Whatever is left flagged withholds the whole text. The promise: `find_secrets` finds
nothing in what `mask_secrets` returns.
"""

from __future__ import annotations

import re

from memstore.core.secrets import find_secrets

_WORD = re.compile(r"\S+")
_PIECE = re.compile(r"[A-Za-z0-9+/=_.~-]+")  # a word a split key's pieces are made of
_TRIM = "\"'`()[]{}<>,;:!?"
# A private key's block, from its BEGIN line to its END line (or the end of the text): its
# body is the secret, though the scanner needs only the BEGIN line to find it.
_KEY_BLOCK = re.compile(
    r"-{3,}[ \t]*BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?[ \t]*-{3,}.*?(?:-{3,}[ \t]*END[^\n]*|\Z)",
    re.DOTALL,
)
KEY_BLOCK = "a private key block"
MAX_WORDS = 200  # a longer flagged line is masked whole: word by word would cost seconds


def mark(kind: str) -> str:
    """The stand-in for one credential (starts with '[': the scanner reads it as a placeholder)."""
    return f"[secret: {kind}]"


def mask_secrets(text: str) -> str:
    """Return `text` with every credential the scanner finds replaced by `[secret: <kind>]`."""
    found = find_secrets(text) if text else []
    if not found:
        return text
    text = _KEY_BLOCK.sub(mark(KEY_BLOCK), text)
    lines = text.split("\n")
    for number, line in enumerate(lines):
        kinds = find_secrets(line)
        if kinds:
            lines[number] = _mask_line(line, kinds[0])
    masked = "\n".join(lines)
    if not find_secrets(masked):
        return masked
    masked = "\n".join(_mask_blocks(masked.split("\n")))
    if not find_secrets(masked):
        return masked
    return f"{mark(found[0])} (text withheld: it holds a credential)"


def _score(word: str) -> tuple[int, int]:
    """How key-like a word is: digits, capitals inside and symbols first, then length."""
    bare = word.strip(_TRIM)
    signs = sum(1 for c in bare if c.isdigit()) + sum(1 for c in bare[1:] if c.isupper())
    signs += sum(1 for c in bare if not c.isalnum())
    return signs, len(bare)


def _mask_line(line: str, kind: str) -> str:
    """Mask the fewest words of one flagged line that clear it (the whole line if none do)."""
    words = [(m.start(), m.end()) for m in _WORD.finditer(line)]
    if len(words) > MAX_WORDS:
        return mark(kind)
    order = sorted(range(len(words)), key=lambda i: _score(line[slice(*words[i])]), reverse=True)
    chosen: set[int] = set()
    for index in order:
        chosen.add(index)
        if not find_secrets(_render(line, words, chosen, kind)):
            break
    else:
        return mark(kind)
    for index in sorted(chosen, key=lambda i: _score(line[slice(*words[i])])):
        fewer = chosen - {index}
        if fewer and not find_secrets(_render(line, words, fewer, kind)):
            chosen = fewer
    widened = set(chosen)
    for index in chosen:
        widened |= _split_key(line, words, index)
    return _render(line, words, widened, kind)


def _split_key(line: str, words: list[tuple[int, int]], index: int) -> set[int]:
    """The smallest run of token-like words around `index` that spells a credential when
    joined (a key split by spaces), or just `index`."""

    def piece(i: int) -> bool:
        return _PIECE.fullmatch(line[slice(*words[i])].strip(_TRIM)) is not None

    if not piece(index) or find_secrets(line[slice(*words[index])]):
        return {index}  # not a piece, or a whole credential on its own
    first = last = index
    while first > 0 and piece(first - 1):
        first -= 1
    while last < len(words) - 1 and piece(last + 1):
        last += 1
    for size in range(2, last - first + 2):
        for start in range(max(first, index - size + 1), min(index, last - size + 1) + 1):
            run = range(start, start + size)
            if find_secrets("".join(line[slice(*words[i])].strip(_TRIM) for i in run)):
                return set(run)
    return {index}


def _render(line: str, words: list[tuple[int, int]], masked: set[int], kind: str) -> str:
    """`line` with the words numbered in `masked` replaced, neighbours by one mark."""
    out, at, last = [], 0, -2
    for index in sorted(masked):
        start, end = words[index]
        if index == last + 1:
            at = end  # the mark before covers this word too
        else:
            out += [line[at:start], mark(kind)]
            at = end
        last = index
    return "".join([*out, line[at:]])


def _mask_blocks(lines: list[str]) -> list[str]:
    """Mask whole lines: each shortest run of lines that the scanner flags together."""
    out = list(lines)
    start = 0
    while start < len(out):
        end = start
        while end < len(out) and not find_secrets("\n".join(out[start : end + 1])):
            end += 1
        if end == len(out):
            break
        first = end
        while first > start and not find_secrets("\n".join(out[first : end + 1])):
            first -= 1
        kinds = find_secrets("\n".join(out[first : end + 1]))
        for number in range(first, end + 1):
            out[number] = mark(kinds[0] if kinds else "a credential")
        start = end + 1
    return out
