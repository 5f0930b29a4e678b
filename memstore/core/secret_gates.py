"""Where the secret scan's rules may match: the text as they read it, anchors, triggers. Pure.

A rule (core/secrets.py) runs on a text only where its anchor is found; the anchors of most
rules run only where one of the triggers here is (one search or a few for a whole text:
most memories hold none). Each is found in every text its rules match, so the findings are
those of running every rule everywhere (tests/core/test_secret_fast.py).
"""

from __future__ import annotations

import functools
import re

from memstore.core.secret_providers import TRIGGERS

_B64_TABLE = bytes(
    ord("a") if chr(i).isascii() and (chr(i).isalnum() or chr(i) in "+/") else ord(" ")
    for i in range(256)
)
_B64_RUN = re.compile(r"[A-Za-z0-9+/]{40}")
_URLSAFE_TABLE = bytes(
    ord("a") if chr(i).isascii() and (chr(i).isalnum() or chr(i) in "+/_-") else ord(" ")
    for i in range(256)
)


def may_hold_run(text: str, length: int) -> bool:
    """False only if `text` has no `length` characters of base64 (either alphabet) in a row."""
    if not text.isascii():
        return True
    return b"a" * length in text.encode("ascii").translate(_URLSAFE_TABLE)


class ScanText:
    """A text the rules read (normalized, or the joins), with what the anchors need once."""

    __slots__ = ("_run", "lowered", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.lowered = text.lower()
        self._run: bool | None = None

    def base64_run(self) -> bool:
        """Whether 40 base64 characters (A-Z, a-z, 0-9, + and /) stand in a row."""
        if self._run is None:
            if self.text.isascii():  # a byte table: ~10 times faster than the regex
                self._run = b"a" * 40 in self.text.encode("ascii").translate(_B64_TABLE)
            else:
                self._run = _B64_RUN.search(self.text) is not None
        return self._run


@functools.cache
def compiled(source: str) -> re.Pattern[str]:
    """`source` compiled, once (an anchor is compiled at its rule's first use)."""
    return re.compile(source)


# The families' triggers, and those of secrets.py's other rules read as written (a key
# block, an AWS key id, a JWT, a registry login; a signed URL, a password in a URL; a
# password on a command line, a .pgpass line). A text where none is found needs none of
# those rules' anchors searched (most memories: one search of each).
_TRIGGERS = (
    *TRIGGERS,
    r"BEGIN|Private-Lines:|PuTTY-|A(?:KIA|SIA|BIA|CCA)|J(?<=eyJ)|\"auth\"",
    r"\?(?:sig|X-Amz-Signature|Signature)=",
    r"&(?:sig|X-Amz-Signature|Signature)=",
    r"://[^\s:/?#@]*:[^\s/@]+@",
    r"-(?<=[ \t]-)(?:[pwa]|\w*b)",
    r":(?:\d{2,5}|\*):[^\s:]+:[^\s:]+:",
)


@functools.cache
def triggers() -> tuple[re.Pattern[str], ...]:
    # Apart: each starts with one literal (or a few capitals) the engine skips to; one
    # alternation of them all stops at every character of any, and costs ~1.5 times as much.
    return tuple(map(re.compile, _TRIGGERS))
