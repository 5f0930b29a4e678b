"""Spotting credentials in what a memory writes: keys, tokens, passwords, key blocks. Pure."""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

# Invisible characters NFKC keeps: the format characters (Unicode category Cf: zero-width
# space and joiners, word joiner, BOM, soft hyphen, bidi controls, tags) plus fillers,
# the combining grapheme joiner and variation selectors.
_INVISIBLE = re.compile(
    "[\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160"
    "\u180b-\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\u3164"
    "\ufe00-\ufe0f\ufeff\ufff9-\ufffb\uffa0\U000110bd\U000110cd\U00013430-\U0001343f"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]"
)
# Cyrillic and Greek letters drawn like Latin ones: a key typed with them is still a key.
_LOOKALIKES = str.maketrans(
    "АВЕКМНОРСТХаеорсхуіІјЈѕЅΑΒΕΖΗΙΚΜΝΟΡΤΥΧο", "ABEKMHOPCTXaeopcxyiIjJsSABEZHIKMNOPTYXo"
)
# A word made of token characters: a key split by spaces is a run of these.
_PIECE = re.compile(r"[A-Za-z0-9+/=_.~-]+")
_PREFIX = re.compile(
    r"(?:AKIA|ASIA|gh[pousr]_|github_pat_|glpat-|xox[abposr]-|sk-|[rs]k_live_|AIza|npm_|hf_"
    r"|pypi-|ya29\.)"
)
_SPLIT_MARK = re.compile(r"[-.]")
_MAX_JOIN = 120  # characters: longer than any key a split is looked for in
_STAND_INS = (
    "password passwd pwd secret token apikey changeme changeit example yourpassword mypassword "
    "redacted removed hidden none null nil undefined empty required optional unset notset "
    "placeholder dummy vault"
)
_PLACEHOLDER_WORDS = frozenset(_STAND_INS.split())
_CODE_REFERENCE = re.compile(r"[A-Za-z_]\w*(?:\.\w+)+$|[A-Za-z_][\w.]*[(\[]")


def normalize(text: str) -> str:
    """Return `text` as the scan reads it: NFKC, invisible characters dropped, lookalikes Latin."""
    if text.isascii():
        return text
    text = _INVISIBLE.sub("", unicodedata.normalize("NFKC", text))
    return text.translate(_LOOKALIKES)


def is_placeholder(value: str) -> bool:
    """Tell whether a credential value is a stand-in (<pass>, ${PASS}, changeme, an environment lookup)."""
    value = value.strip("'\"`.,;)")
    lowered = re.sub(r"[-_ ]", "", value.lower())
    return (
        not value
        or value[0] in "<${[(%*…"
        or value.startswith("#{")
        or len(set(value)) == 1
        or lowered.lstrip("!") in _PLACEHOLDER_WORDS
        or lowered.startswith("your")
        or lowered.endswith("here")
        or _CODE_REFERENCE.match(value) is not None
    )


def looks_random(value: str) -> bool:
    """Tell whether `value` reads like generated key material rather than words joined up.

    Words run together lack digits or capitals; a key has both (lowercase hex is let go)."""
    return any(c.isdigit() for c in value) and any(c.isupper() for c in value)


def _is_random_base64(value: str) -> bool:
    """A 40-character AWS-style secret: mixed case with digits or +/, not text, not words."""
    if not (
        any(c.isupper() for c in value)
        and any(c.islower() for c in value)
        and any(c.isdigit() or c in "+/" for c in value)
    ):
        return False
    if sum(len(w) for w in re.findall(r"[a-z]{4,}", value)) >= len(value) / 2:
        return False  # an identifier or a path: CamelCaseWords, src/components/…
    try:
        decoded = base64.b64decode(value, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return True
    return not all(c.isprintable() or c in "\t\r\n" for c in decoded)


def _basic_auth(value: str) -> bool:
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4)).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return False
    user, colon, password = decoded.partition(":")
    return bool(colon and user and password) and not is_placeholder(password)


def _url_password(match: re.Match[str]) -> bool:
    # A DSN whose password is its user name (postgres:postgres@localhost) is a public default.
    return match["v"] != match["u"] and not is_placeholder(match["v"])


@dataclass(frozen=True)
class _Rule:
    kind: str
    pattern: re.Pattern[str]
    accept: Callable[[re.Match[str]], bool] = lambda match: True
    # Words joined up can spell a token by chance; a match in a join must look random,
    # unless the pattern is exact enough on its own (AKIA and 16 capitals, then a boundary).
    exact: bool = False

    def matches(self, text: str, *, joined: bool) -> bool:
        for match in self.pattern.finditer(text):
            value = match["v"] if "v" in self.pattern.groupindex else match[0]
            if self.accept(match) and (not joined or self.exact or looks_random(value)):
                return True
        return False


def _value(match: re.Match[str]) -> bool:
    return not is_placeholder(match["v"])


def _random_value(match: re.Match[str]) -> bool:
    return not is_placeholder(match["v"]) and looks_random(match["v"])


_ASSIGN = r"['\"]?[ \t]*(?::=|=>|[:=])[ \t]*['\"]?"
_SUFFIXES = r"(?:[_.-](?:access|key|token|secret|value|base|pass))*"
_RULES: tuple[_Rule, ...] = (
    _Rule(
        "a private key block",
        re.compile(r"-{3,}[ \t]*BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?[ \t]*-{3,}|Private-Lines:"),
    ),
    _Rule("an AWS access key id", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), exact=True),
    _Rule(
        "an AWS secret access key",
        re.compile(
            r"(?i)\baws[\w.-]{0,20}?secret[\w.-]{0,20}?" + _ASSIGN + r"(?P<v>[A-Za-z0-9/+]{40})\b"
        ),
    ),
    _Rule(
        "an AWS-style 40-character secret",
        re.compile(r"(?<![A-Za-z0-9/+_-])(?P<v>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=_-])"),
        lambda match: _is_random_base64(match["v"]),
    ),
    _Rule(
        "a GitHub token",
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})\b"),
    ),
    _Rule("a GitLab token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}\b")),
    _Rule("a Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b")),
    _Rule(
        "a Slack or Discord webhook",
        re.compile(
            r"hooks\.slack\.com/(?:services|workflows|triggers)/T[A-Z0-9]+/[A-Z0-9]+/[A-Za-z0-9]{8,}"
            r"|discord(?:app)?\.com/api/webhooks/\d{5,}/[A-Za-z0-9_-]{20,}"
        ),
    ),
    _Rule(
        "an OpenAI or Anthropic API key", re.compile(r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}\b")
    ),
    _Rule("a Stripe secret key", re.compile(r"\b[rs]k_live_[A-Za-z0-9]{16,}\b")),
    _Rule("a Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    _Rule("a Google OAuth token", re.compile(r"\bya29\.[0-9A-Za-z_-]{20,}")),
    _Rule(
        "a package registry token",
        re.compile(r"\bnpm_[A-Za-z0-9]{36}\b|\bpypi-AgE[A-Za-z0-9_-]{50,}"),
    ),
    _Rule(
        "a cloud service token",
        re.compile(
            r"\bhf_[A-Za-z0-9]{30,}\b|\bSG\.[\w-]{16,}\.[\w-]{16,}|\bshp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}"
            r"|\bdo[por]_v1_[a-f0-9]{64}|AGE-SECRET-KEY-1[0-9A-Z]{50,}|(?i:AccountKey)=[A-Za-z0-9+/]{40,}"
        ),
    ),
    _Rule(
        "a JSON web token",
        re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"),
    ),
    _Rule(
        "a signed URL",
        re.compile(r"[?&](?:sig|X-Amz-Signature|Signature)=[A-Za-z0-9%+/_-]{20,}"),
    ),
    _Rule(
        "a password in a URL",
        re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://(?P<u>[^\s:/?#@]*):(?P<v>[^\s/?#@]+)@[^\s/?#@]"),
        _url_password,
    ),
    _Rule(
        "an Authorization header",
        re.compile(r"(?i)\bbearer[ \t]+(?P<v>[A-Za-z0-9._~+/-]{20,}=*)"),
        _random_value,
    ),
    _Rule(
        "an Authorization header",
        re.compile(r"(?i)\bbasic[ \t]+(?P<v>[A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])"),
        lambda match: _basic_auth(match["v"]),
    ),
    _Rule(
        "a password assignment",
        re.compile(
            r"(?i)(?:\bmachine[ \t]+\S+[ \t]+login[ \t]+\S+[ \t]+password[ \t]+|--password[ \t]+"
            r"|\bmysql\w*\b[^\n]*?[ \t]-p)(?P<v>[^\s\-]\S{3,})"
        ),
        _value,
    ),
    _Rule(
        "a password assignment",
        re.compile(
            r"(?i)(?:password|passwd|passphrase|(?<![a-z0-9])(?:pwd|pass|pw))"
            + _SUFFIXES
            + _ASSIGN
            + r"(?P<v>[^\s'\"<>`]{6,})"
        ),
        _value,
    ),
    _Rule(
        "a secret or token assignment",
        re.compile(
            r"(?i)(?:secret|(?<![a-z0-9])(?:token|api[_-]?key|apikey|access[_-]?key|private[_-]?key"
            r"|auth[_-]?key|credentials?))" + _SUFFIXES + _ASSIGN + r"(?P<v>[^\s'\"<>`,;]{8,})"
        ),
        _random_value,
    ),
)


def _runs(text: str) -> Iterator[list[str]]:
    """Yield each run of whitespace-separated words made of token characters."""
    run: list[str] = []
    for word in [*text.split(), "\n"]:
        piece = word.strip("\"'`()[]{}<>,;:!?")
        if _PIECE.fullmatch(piece):
            run.append(piece)
            continue
        if len(run) > 1:
            yield run
        run = []


def _joins(run: list[str]) -> Iterator[str]:
    """Yield the joins a split key could hide in: from a known prefix on, and equal groups."""
    for i in range(len(run)):
        if _PREFIX.match("".join(run[i : i + 12])):  # the prefix itself may be split
            joined = run[i]
            for word in run[i + 1 :]:
                joined += word
                if len(joined) > _MAX_JOIN:
                    break
                yield joined
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


def find_secrets(text: str) -> list[str]:
    """Return what kinds of credential `text` seems to contain (empty: none found)."""
    normalized = normalize(text)
    # Each join on a line of its own: a line break ends a token for every rule.
    # Keys split by dashes or dots (AKIA-IOSF-…) are split by spaces once those are read as spaces.
    undashed = _SPLIT_MARK.sub(" ", normalized)
    runs = [*_runs(normalized), *(_runs(undashed) if undashed != normalized else ())]
    joins = "\n".join(j for run in runs for j in _joins(run))
    found: list[str] = []
    for rule in _RULES:
        if rule.kind not in found and (
            rule.matches(normalized, joined=False) or (joins and rule.matches(joins, joined=True))
        ):
            found.append(rule.kind)
    return found


def find_secret_in_fields(fields: Mapping[str, str | Sequence[str]]) -> tuple[str, str] | None:
    """Return (field, kind) for the first field that holds a credential, or None.

    A list field (keywords, as given: before they are lowercased) is scanned joined by spaces,
    commas read as spaces, so a key split across items is seen."""
    for name, value in fields.items():
        text = value if isinstance(value, str) else " ".join(value).replace(",", " ")
        found = find_secrets(text)
        if found:
            return name, found[0]
    return None
