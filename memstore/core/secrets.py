"""Spotting credentials in what a memory writes: keys, tokens, passwords, key blocks. Pure."""

from __future__ import annotations

import base64
import binascii
import functools
import itertools
import re
import unicodedata
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from memstore.core.secret_gates import ScanText, compiled, may_hold_run, triggers
from memstore.core.secret_joins import joins as split_joins
from memstore.core.secret_keys import KEY_BODY, is_printable, private_key_body
from memstore.core.secret_providers import ANCHORS, AUTH, ISSUED, NEEDLES, PROVIDERS, UNTRIGGERED
from memstore.core.secret_values import (
    are_recovery_codes,
    is_dummy,
    is_passphrase,
    is_placeholder,
    is_stand_in_token,
    labelled_credential,
    looks_generated,
    looks_like_password,
    looks_random,
    names_no_value_here,
)

__all__ = [
    "LABELLED",
    "find_added_secret",
    "find_secret_in_fields",
    "find_secrets",
    "is_dummy",
    "is_placeholder",
    "looks_generated",
    "looks_random",
    "normalize",
    "withhold_secret",
]

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
_LOOKALIKE = re.compile(
    "[АВЕКМНОРСТХаеорсхуіІјЈѕЅΑΒΕΖΗΙΚΜΝΟΡΤΥΧο]"
)  # translated: ~10 times the cost


def normalize(text: str) -> str:
    """Return `text` as the scan reads it: NFKC, invisible characters dropped, lookalikes Latin."""
    if text.isascii():
        return text
    text = _INVISIBLE.sub("", unicodedata.normalize("NFKC", text))
    return text.translate(_LOOKALIKES) if _LOOKALIKE.search(text) else text


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
    """One kind of credential the scan looks for: its pattern and what a match must pass."""

    kind: str
    # Compiled on the rule's first use (`pattern`): a process that never looks for
    # credentials, a search, does not compile the ~70 patterns (issue 39).
    source: str | re.Pattern[str]
    accept: Callable[[re.Match[str]], bool] = lambda match: True
    # Words joined up can spell a token by chance; a match in a join must look random,
    # unless the pattern is exact enough on its own (AKIA and 16 capitals, then a boundary).
    exact: bool = False
    # Lowercase substrings one of which every match holds: the pattern runs only on a text
    # holding one (a substring test costs far less than a regex pass). Empty: always runs.
    needles: tuple[str, ...] = ()
    # A cheap search that finds something in every text the pattern matches, in the text as
    # read (`folded` False) or lowercased (True, for a case-blind pattern). Empty: none.
    anchor: str = ""
    folded: bool = False
    # The pattern needs 40 base64 characters in a row (or, with an anchor, that or the anchor).
    base64_run: bool = False

    @functools.cached_property
    def pattern(self) -> re.Pattern[str]:
        return re.compile(self.source)

    def may_match(self, text: ScanText) -> bool:
        """False only where the pattern cannot match: no anchor (the needles of a rule that
        needs a run of base64, and no such run)."""
        if not self.base64_run:  # every other rule has an anchor: its needles add nothing,
            # but for a case-blind one (a word: no literal the engine can skip to) they cost less
            if self.folded and not any(map(text.lowered.__contains__, self.needles)):
                return False
            return (
                compiled(self.anchor).search(text.lowered if self.folded else text.text) is not None
            )
        if self.needles and not any(map(text.lowered.__contains__, self.needles)):
            return False
        return text.base64_run() or (
            bool(self.anchor) and compiled(self.anchor).search(text.text) is not None
        )

    def matches(self, text: str, *, joined: bool) -> bool:
        for match in self.pattern.finditer(text):
            value = _value_of(match)
            if self.accept(match) and (not joined or self.exact or looks_random(value)):
                return True
        return False


def _value_of(match: re.Match[str]) -> str:
    """The credential a match holds: its first `v…` group that took part, else all of it."""
    for name in match.re.groupindex:
        if name[0] == "v" and match[name] is not None:
            return str(match[name])
    return match[0]


# Families whose shape alone is loose: their value must also mix digits and both cases.
_LOOSE = frozenset(
    {
        "a Discord bot token",
        "a Notion token",
        "a Beamer API key",
        "a Telegram bot token",
        "a crates.io token",
    }
)


_PROVIDER_KINDS = {pattern: kind for kind, pattern in PROVIDERS}
_ISSUED = {kind: re.compile(pattern) for kind, pattern in ISSUED.items()}


def _token(match: re.Match[str]) -> bool:
    value = _value_of(match)
    kind = _PROVIDER_KINDS.get(match.re.pattern, "")
    issued = kind in _ISSUED and _ISSUED[kind].fullmatch(value) is not None
    if is_stand_in_token(value, issued=issued):
        return False
    return kind not in _LOOSE or (looks_random(value) and any(c.islower() for c in value))


def _cli_user_password(match: re.Match[str]) -> bool:
    user, password = match["u"] or match["u2"], match["v"] or match["v2"]
    return password != user and not is_placeholder(password)


_PORT = re.compile(r"\d{1,5}(?:[/?#].*)?")


def _login_pair(match: re.Match[str]) -> bool:
    """A user and password given to a login (log in with admin / Xk29!fLq, as root:hunter2!)."""
    user, password = match["u"], match["v"].rstrip(".,;:)'\"`")
    return (
        password != user
        and not is_placeholder(password)
        and _PORT.fullmatch(password) is None  # host:8080/path
        and (is_passphrase(password) or (looks_like_password(password) and not _named(password)))
    )


def _named(value: str) -> bool:
    """An identifier of words and numbers (as the ci/cd-runner-01 account), not a password."""
    parts = re.split(r"[-_.]", value)
    return len(parts) > 1 and all(p.isalpha() or p.isdigit() for p in parts)


def _cli_password(match: re.Match[str]) -> bool:
    return not is_placeholder(_value_of(match))


def _flag_password(match: re.Match[str]) -> bool:
    """A flag's value that is a password: not a stand-in, not a file (--password-file ~/.pw)."""
    value = _value_of(match)
    return (
        not is_placeholder(value)
        and _PATH.fullmatch(value) is None
        and (looks_like_password(value) or looks_generated(value))
    )


def _is_documented_jwt(payload: str) -> bool:
    """jwt.io's example token (John Doe, sub 1234567890): documentation, like AWS's EXAMPLE keys."""
    try:
        decoded = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
    except (binascii.Error, ValueError):
        return False
    return b'"name":"John Doe"' in decoded and b'"sub":"1234567890"' in decoded


def _value(match: re.Match[str]) -> bool:
    return not is_placeholder(match["v"])


_PATH = re.compile(r"[~.]?/[\w./-]*")


def _password_value(match: re.Match[str]) -> bool:
    # `pwd: /home/me/project` is the shell's working directory, not a password
    return (
        _value(match)
        and _PATH.fullmatch(match["v"]) is None
        and not names_no_value_here(match.string, match.span())
    )


def _random_value(match: re.Match[str]) -> bool:
    value = match["v"]
    return (
        not is_placeholder(value)
        and (looks_random(value) or looks_generated(value))
        and not names_no_value_here(match.string, match.span())
    )


_ASSIGN = r"['\"]?[ \t]*(?::=|=>|[:=])[ \t]*['\"]?"
_SUFFIXES = r"(?:[_.-](?:access|key|token|secret|value|base|pass))*"
_RULES: tuple[_Rule, ...] = (
    _Rule(
        "a private key block",
        (
            r"-{3,}[ \t]*BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?[ \t]*-{3,}|Private-Lines:"
            r"|PuTTY-User-Key-File-\d:"
        ),
        needles=("begin", "private-lines", "putty"),
        anchor=r"BEGIN|Private-Lines:|PuTTY-User-Key-File-",
    ),
    _Rule(
        "an AWS access key id",
        (r"\b(?P<v>(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16})\b"),
        lambda match: not is_stand_in_token(match["v"], issued=True),  # the issued shape
        needles=("akia", "asia", "abia", "acca"),
        exact=True,
        anchor=r"A(?:KIA|SIA|BIA|CCA)",
    ),
    _Rule(
        "an AWS secret access key",
        (r"(?i)\baws[\w.-]{0,20}?secret[\w.-]{0,20}?" + _ASSIGN + r"(?P<v>[A-Za-z0-9/+]{40})\b"),
        _value,
        needles=("aws",),
        base64_run=True,
    ),
    _Rule(
        "an AWS-style 40-character secret",
        (r"(?<![A-Za-z0-9/+_.$-])(?P<v>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=_.$-])"),
        lambda match: _is_random_base64(match["v"]) and not is_placeholder(match["v"]),
        base64_run=True,
    ),
    *(
        _Rule(kind, pattern, _token, needles=NEEDLES[kind], anchor=ANCHORS[kind])
        for kind, pattern in PROVIDERS
    ),
    _Rule(
        "a JSON web token",
        (r"\beyJ[A-Za-z0-9_-]{10,}\.(?P<p>eyJ[A-Za-z0-9_-]{10,})\.[A-Za-z0-9_-]{10,}"),
        lambda match: not _is_documented_jwt(match["p"]),
        needles=("eyj",),
        anchor="eyJ",
    ),
    _Rule(
        "a signed URL",
        (r"[?&](?:sig|X-Amz-Signature|Signature)=[A-Za-z0-9%+/_-]{20,}"),
        needles=("sig",),
        anchor=r"[?&](?:sig|X-Amz-Signature|Signature)=",
    ),
    _Rule(
        "a password in a URL",
        (r"\b[A-Za-z][A-Za-z0-9+.-]*://(?P<u>[^\s:/?#@]*):(?P<v>[^\s/?#@]+)@[^\s/?#@]"),
        _url_password,
        needles=("://",),
        anchor=r"://[^\s:/?#@]*:[^\s/?#@]+@",
    ),
    _Rule(
        "an Authorization header",
        AUTH,
        _random_value,
        needles=("bearer", "authorization"),
        anchor=r"bearer[ \t]|authorization",
        folded=True,
    ),
    _Rule(
        "an Authorization header",
        (r"(?i)\bbasic[ \t]+(?P<v>[A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])"),
        lambda match: _basic_auth(match["v"]),
        needles=("basic",),
        anchor=r"basic[ \t]",
        folded=True,
    ),
    _Rule(
        "a password assignment",
        (
            r"(?i)(?:\bmachine[ \t]+\S+[ \t]+login[ \t]+\S+[ \t]+password[ \t]+|--password[ \t]+"
            r"|\bmysql\w*\b[^\n]*?[ \t]-p)(?P<v>[^\s\-]\S{3,})"
        ),
        _value,
        needles=("machine", "--password", "mysql"),
        anchor=r"machine[ \t]|--password[ \t]|mysql",
        folded=True,
    ),
    _Rule(
        "a password on a command line",
        (
            r"(?i)\bcurl\b[^\n]*?[ \t](?:-u|--user)[ \t=]*['\"]?(?P<u>[^\s:'\"]+):(?P<v>[^\s'\"]+)"
            r"|\bsmbclient\b[^\n]*?[ \t]-U[ \t]*['\"]?(?P<u2>[^\s%'\"]+)%(?P<v2>[^\s'\"]+)"
        ),
        _cli_user_password,
        needles=("curl", "smbclient"),
        anchor=r"(?:curl|smbclient)[^\n]*?[ \t]-",
        folded=True,
    ),
    _Rule(
        "a password on a command line",
        (
            r"\bsshpass[ \t]+-p[ \t]*['\"]?(?P<v>[^\s'\"]+)"
            r"|\b(?:docker|podman|helm|oras)\b[^\n]*?\blogin\b[^\n]*?[ \t]-p[ \t]+['\"]?(?P<v2>[^\s'\"]+)"
            r"|\bredis-cli\b[^\n]*?[ \t]-a[ \t]+['\"]?(?P<v3>[^\s'\"]+)"
            r"|\bldap\w+\b[^\n]*?[ \t]-w[ \t]+['\"]?(?P<v4>[^\s'\"]+)"
            r"|\bhtpasswd\b[^\n]*?[ \t]-\w*b\w*[ \t]+\S+[ \t]+\S+[ \t]+['\"]?(?P<v5>[^\s'\"]+)"
        ),
        _cli_password,
        needles=("sshpass", "login", "redis-cli", "ldap", "htpasswd"),
        anchor=r"sshpass|login[^\n]*?[ \t]-p|redis-cli|ldap|htpasswd",
    ),
    _Rule(
        "a password on a command line",
        (  # a flag naming a password (keytool -storepass, --db-pass), and CLIs' own -p/-P/-N
            r"(?<=[ \t])--?(?:[a-z]+[-_])*(?:src|dest|new|old|store|key|trust|db|admin|root|user)*"
            r"(?:pass(?:word|wd|phrase)?|pwd)[ \t=]+['\"]?(?:pass:)?(?P<v>[^\s'\"]{6,})"
            r"|\b(?:mongo(?:sh)?|az)\b[^\n]*?[ \t]-p[ \t]+['\"]?(?P<v2>[^\s'\"-][^\s'\"]*)"
            r"|\bsqlcmd\b[^\n]*?[ \t]-P[ \t]+['\"]?(?P<v3>[^\s'\"-][^\s'\"]*)"
            r"|\bssh-keygen\b[^\n]*?[ \t]-N[ \t]+['\"]?(?P<v4>[^\s'\"-][^\s'\"]*)"
        ),
        _flag_password,
        needles=("pass", "pwd", "-p", "-n"),
        anchor=r"[ \t]-(?:-?[\w-]*p(?:ass|wd)|[pn][ \t])",
        folded=True,
    ),
    _Rule(
        "a password assignment",
        (  # SQL's CREATE/ALTER USER … IDENTIFIED BY, and a Wi-Fi QR code's WIFI:…;P:…;
            r"(?i)\bidentified[ \t]+(?:with[ \t]+\w+[ \t]+)?by[ \t]+(?:password[ \t]+)?['\"]"
            r"(?P<v>[^'\"\n]{4,})['\"]|\bwifi:(?:[^\n]*?;)?p:(?P<v2>(?:[^;\\\n]|\\.){6,});"
        ),
        _cli_password,
        needles=("identified", "wifi:"),
        anchor=r"identified[ \t]|wifi:",
        folded=True,
    ),
    _Rule(
        "a password assignment",
        (
            # not 1Password's name (see 1Password: harbor db), a password manager's
            r"(?i)(?:(?<!(?<!\w)1)password|passwd|passphrase|(?<![a-z0-9])(?:pwd|pass|pw))"
            + _SUFFIXES
            + _ASSIGN
            + r"(?P<v>[^\s'\"<>`]{6,})"
        ),
        _password_value,
        needles=("pass", "pw"),
        anchor=r"(?:pass(?:word|wd|phrase)?|pwd?)(?:[_.-][a-z]+)*['\"]?[ \t]*[:=]",
        folded=True,
    ),
    _Rule(
        "a secret or token assignment",
        (
            r"(?i)(?:secret|(?<![a-z0-9])(?:token|api[_-]?key|apikey|access[_-]?key|private[_-]?key"
            r"|auth[_-]?key|credentials?))" + _SUFFIXES + _ASSIGN + r"(?P<v>[^\s'\"<>`,;]{8,})"
        ),
        _random_value,
        needles=("secret", "token", "api", "key", "access", "private", "auth", "credential"),
        anchor=r"(?:secret|token|key|credentials?)(?:[_.-][a-z]+)*['\"]?[ \t]*[:=]",
        folded=True,
    ),
    _Rule(
        "a login and its password",
        (
            r"(?i)\b(?:log[ \t-]?(?:in|on)|sign[ \t-]?in|anmelden|connexion|iniciar[ \t]sesi[oó]n)\b"
            r"(?:[^\n]{0,60}?[ \t](?:with|as|using|mit|als|avec|con|como|is|are|ist|est|es)"
            r"|[ \t]*[:=])[ \t]+['\"]?"
            r"(?P<u>[\w.@+-]{1,64})(?:[ \t]*/[ \t]*|:)(?P<v>[^\s'\"`]{6,})"
        ),
        _login_pair,
        needles=("log", "sign", "anmelden", "connexion", "sesi"),
        anchor=(
            r"(?:log[ \t-]?(?:in|on)|sign[ \t-]?in|anmelden|connexion|iniciar[ \t]sesi)"
            r"(?:[^\n]*?[ \t](?:with|as|using|mit|als|avec|con|como|is|are|ist|est|es)[ \t]"
            r"|[ \t]*[:=])"
        ),
        folded=True,
    ),
    _Rule(
        "recovery codes",
        r"(?i)\b(?:recovery|backup|scratch|emergency|one-time)[ \t-]+codes?\b(?P<v>[\s\S]{0,400})",
        lambda match: are_recovery_codes(match["v"]),
        needles=("recovery", "backup", "scratch", "emergency", "one-time"),
        anchor=r"(?:recovery|backup|scratch|emergency|one-time)[ \t-]+code",
        folded=True,
    ),
    _Rule(
        "a session cookie",
        (
            # a session's name, not a CSRF token's (sent to the page, no login in it)
            r"(?i)\bcookie\b[^\n]{0,200}?(?<![\w.-])(?![\w.-]*[cx]srf)"
            r"[\w.-]*(?:sess|sid|auth|token|jwt|remember)"
            r"[\w.-]*=(?P<v>[^\s;'\",]{16,})"
        ),
        _random_value,
        needles=("cookie",),
        anchor="cookie",
        folded=True,
    ),
    _Rule(
        "a password in a .pgpass line",
        (
            r"(?<![^\s`'\"])(?:\*|[\w.-]*[A-Za-z][\w.-]*):(?:\d{2,5}|\*):[^\s:]+:[^\s:]+"
            r":(?P<v>[^\s:`'\"]{6,})(?![^\s`'\"])"
        ),
        lambda match: looks_like_password(match["v"]) or looks_generated(match["v"]),
        needles=(":",),
        anchor=r":(?:\d{2,5}|\*):[^\s:]+:[^\s:]+:",
    ),
    _Rule(
        "a registry login",
        (r"\"auth\"[ \t]*:[ \t]*\"(?P<v>[A-Za-z0-9+/]{8,}={0,2})\""),
        lambda match: _basic_auth(match["v"]),
        needles=('"auth"',),
        anchor='"auth"',
    ),
    _Rule(
        "a private key body",
        KEY_BODY,
        private_key_body,
        exact=True,
        anchor="b3BlbnNzaC1rZXktdjE",
        base64_run=True,
    ),
)


_BASE64_RUN = re.compile(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/_-]{24,}={0,2}(?![A-Za-z0-9+/=_-])")


def _decoded(text: str) -> Iterator[str]:
    """Yield the text that base64 runs of `text` hold (a token encoded to hide it)."""
    if not may_hold_run(text, 24):  # the regex below costs ~10 times as much
        return
    for match in _BASE64_RUN.finditer(text):
        run = match[0].rstrip("=")
        if run.isalnum() and (run.islower() or run.isupper()):
            continue  # one case: hex, base32, a word; base64 of text mixes cases
        padded = run[: len(run) // 4 * 4 + (4 if len(run) % 4 > 1 else 0)]
        padded += "=" * (-len(padded) % 4)
        try:
            data = base64.b64decode(padded.replace("-", "+").replace("_", "/"))
        except (binascii.Error, ValueError):
            continue
        text = data.decode("utf-8", errors="replace")
        printable = next((i for i, c in enumerate(text) if not is_printable(c)), len(text))
        if printable >= 12:  # the text a token or key block starts with; padding may follow
            yield text[:printable]


LABELLED = "a credential next to its label"
_ALL_NEEDLES = frozenset(needle for rule in _RULES for needle in rule.needles)


# The numbers of the rules no trigger stands for: their anchors are searched in every text.
_UNTRIGGERED = tuple(
    number
    for number, rule in enumerate(_RULES)
    if rule.base64_run or rule.folded or rule.kind in UNTRIGGERED
)


def _gate(read: ScanText) -> set[int]:
    """The numbers of the rules that may match `read` (the others cannot)."""
    triggered = any(map(re.Pattern.search, triggers(), itertools.repeat(read.text)))
    numbers = range(len(_RULES)) if triggered else _UNTRIGGERED
    return {number for number in numbers if _RULES[number].may_match(read)}


def find_secrets(text: str, *, full: bool = False, _inner: bool = False) -> list[str]:
    """Return what kinds of credential `text` seems to contain (empty: none found).

    `full`: the slow reference the tests hold the fast path to: every join read, a rule run
    wherever one of its needles is. By default a rule runs only where its anchor is and only
    on the joins a rule could accept (secret_joins.py); the findings are the same."""
    normalized = normalize(text)
    # A case-blind pattern's letters are found lowercased, except where lowering is not one
    # character for one (the dotless i matches i, İ lowers to two): those take the slow way.
    if not full and not normalized.isascii():
        full = "ı" in normalized or len(normalized.lower()) != len(normalized)
    # Each join on a line of its own: a line break ends a token for every rule.
    joins = split_joins(normalized, every=full)
    texts = [ScanText(normalized), *([ScanText(joins)] if joins else [])]
    if full:  # a pattern runs only where one of its needles is: most memories hold none
        lowered = f"{normalized}\n{joins}".lower()
        present = {needle for needle in _ALL_NEEDLES if needle in lowered}
    gated = [set(range(len(_RULES))) if full else _gate(read) for read in texts]
    found: list[str] = []
    for number in sorted(set().union(*gated)):  # in _RULES' order
        rule = _RULES[number]
        if rule.kind in found:
            continue
        if full and rule.needles and present.isdisjoint(rule.needles):
            continue
        for joined, read, may in zip((False, True), texts, gated, strict=False):
            if number in may and rule.matches(read.text, joined=joined):
                found.append(rule.kind)
                break
    if labelled_credential(normalized, lowered=None if full else texts[0].lowered):
        found.append(LABELLED)
    if not _inner:
        for decoded in _decoded(normalized):
            kinds = find_secrets(decoded, full=full, _inner=True)
            found.extend(f"{kind}, base64-encoded" for kind in kinds)
    return list(dict.fromkeys(found))


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


def find_added_secret(new: bytes, old: bytes | None) -> str | None:
    """Return the kind of credential in the lines `new` adds to `old` (a file's committed bytes).

    Lines already committed are not looked at again: a memory a person stored with
    --allow-secret can still have its counters written.
    """
    text = new.decode("utf-8", errors="replace")
    if old:
        kept = set(old.decode("utf-8", errors="replace").splitlines())
        text = "\n".join(line for line in text.splitlines() if line not in kept)
        if not text.strip():
            return None  # nothing new: a counter or a line moved
    found = find_secrets(text)
    return found[0] if found else None


def withhold_secret(message: str, paths: Sequence[str]) -> str:
    """Return `message`, or if it shows a credential, its verb and the files' names instead."""
    if not find_secrets(message):
        return message
    subject = message.split("\n", 1)[0]
    verb = subject.split(": ", 1)[0] if ": " in subject[:60] else "commit"
    names = [p.rsplit("/", 1)[-1] for p in paths]
    shown = ", ".join(names[:3]) + (" …" if len(names) > 3 else "")
    return f"{verb}: {shown or 'files'} (text withheld: it looks like a credential)"
