"""The secret scan's rules: each kind of credential's pattern and what a match must pass. Pure."""

from __future__ import annotations

import base64
import binascii
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass

from memstore.core.secret_gates import ScanText, compiled
from memstore.core.secret_keys import KEY_BODY, private_key_body
from memstore.core.secret_providers import ANCHORS, AUTH, ISSUED, NEEDLES, PROVIDERS
from memstore.core.secret_values import (
    are_recovery_codes,
    is_passphrase,
    is_placeholder,
    is_stand_in_token,
    is_wordy,
    looks_generated,
    looks_like_password,
    looks_random,
    names_no_value_here,
)

__all__ = ["RULES", "Rule"]


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


_PUBLIC_BLOCK = re.compile(r"-{5}BEGIN (?:CERTIFICATE|PUBLIC KEY|[A-Z ]*PUBLIC KEY BLOCK)-{5}")


def _in_public_block(match: re.Match[str]) -> bool:
    """Whether a match is a line of a certificate's or a public key's PEM body (base64 that is
    published: a 40-character line of it is no AWS secret)."""
    text, start = match.string, match.start()
    begin = text.rfind("-----BEGIN ", 0, start)
    if begin < 0 or _PUBLIC_BLOCK.match(text, begin) is None:
        return False
    return "-----END " not in text[begin:start]


def _basic_auth(value: str) -> bool:
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4)).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return False
    user, colon, password = decoded.partition(":")
    return bool(colon and user and password) and not is_placeholder(password)


def _url_password(match: re.Match[str]) -> bool:
    # A DSN whose password is its user name (postgres:postgres@localhost) is a public default.
    # A password may hold a # or ? pasted unescaped; a port before one (host:8080?to=a@b) is
    # no password.
    password = match["v"]
    before = re.split(r"[?#]", password, maxsplit=1)[0]
    return (
        password != match["u"]
        and not is_placeholder(password)
        and (before == password or not before.isdigit())
    )


@dataclass(frozen=True)
class Rule:
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
    # The exact shape its provider issues (secret_providers.ISSUED): a match in a join of that
    # shape is a token split up, though it lacks a digit or a capital (hf_ and 34 letters, an
    # xoxp- token's lowercase hex), unless it reads as words run together.
    issued: re.Pattern[str] | None = None

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
            if self.accept(match) and (
                not joined or self.exact or looks_random(value) or self._split_issued(value)
            ):
                return True
        return False

    def _split_issued(self, value: str) -> bool:
        return (
            self.issued is not None
            and self.issued.fullmatch(value) is not None
            and not is_wordy(value)
        )


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
        "an Ably API key",
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
RULES: tuple[Rule, ...] = (
    Rule(
        "a private key block",
        (
            r"-{3,}[ \t]*BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?[ \t]*-{3,}|Private-Lines:"
            r"|PuTTY-User-Key-File-\d:"
        ),
        needles=("begin", "private-lines", "putty"),
        anchor=r"BEGIN|Private-Lines:|PuTTY-User-Key-File-",
    ),
    Rule(
        "an AWS access key id",
        (r"\b(?P<v>(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16})\b"),
        lambda match: not is_stand_in_token(match["v"], issued=True),  # the issued shape
        needles=("akia", "asia", "abia", "acca"),
        exact=True,
        anchor=r"A(?:KIA|SIA|BIA|CCA)",
    ),
    Rule(
        "an AWS secret access key",
        (r"(?i)\baws[\w.-]{0,20}?secret[\w.-]{0,20}?" + _ASSIGN + r"(?P<v>[A-Za-z0-9/+]{40})\b"),
        _value,
        needles=("aws",),
        base64_run=True,
    ),
    Rule(
        "an AWS-style 40-character secret",
        (r"(?<![A-Za-z0-9/+_.$-])(?P<v>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=_.$-])"),
        lambda match: (
            _is_random_base64(match["v"])
            and not is_placeholder(match["v"])
            and not _in_public_block(match)
        ),
        base64_run=True,
    ),
    *(
        Rule(
            kind,
            pattern,
            _token,
            needles=NEEDLES[kind],
            anchor=ANCHORS[kind],
            issued=_ISSUED.get(kind),
        )
        for kind, pattern in PROVIDERS
    ),
    Rule(
        "a JSON web token",
        (r"\beyJ[A-Za-z0-9_-]{10,}\.(?P<p>eyJ[A-Za-z0-9_-]{10,})\.[A-Za-z0-9_-]{10,}"),
        lambda match: not _is_documented_jwt(match["p"]),
        needles=("eyj",),
        anchor="eyJ",
    ),
    Rule(
        "a signed URL",
        (r"[?&](?:sig|X-Amz-Signature|Signature)=[A-Za-z0-9%+/_-]{20,}"),
        needles=("sig",),
        anchor=r"[?&](?:sig|X-Amz-Signature|Signature)=",
    ),
    Rule(
        "a password in a URL",
        (
            r"\b[A-Za-z][A-Za-z0-9+.-]*://(?P<u>[^\s:/?#@]*)"
            r":(?P<v>[^\s/?#@]+(?:[?#][^\s/?#@]*)*)@[^\s/?#@]"
        ),
        _url_password,
        needles=("://",),
        anchor=r"://[^\s:/?#@]*:[^\s/@]+@",
    ),
    Rule(
        "an Authorization header",
        AUTH,
        _random_value,
        needles=("bearer", "authorization"),
        anchor=r"bearer[ \t]|authorization",
        folded=True,
    ),
    Rule(
        "an Authorization header",
        (r"(?i)\bbasic[ \t]+(?P<v>[A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])"),
        lambda match: _basic_auth(match["v"]),
        needles=("basic",),
        anchor=r"basic[ \t]",
        folded=True,
    ),
    Rule(
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
    Rule(
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
    Rule(
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
    Rule(
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
    Rule(
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
    Rule(
        "a password assignment",
        (
            # not 1Password's name (see 1Password: harbor db), a password manager's
            # psk: a Wi-Fi network's or a VPN's pre-shared key (wpa_supplicant's psk="…")
            r"(?i)(?:(?<!(?<!\w)1)password|passwd|passphrase|(?<![a-z0-9])(?:pwd|pass|pw|psk))"
            + _SUFFIXES
            + _ASSIGN
            + r"(?P<v>[^\s'\"<>`]{6,})"
        ),
        _password_value,
        needles=("pass", "pw", "psk"),
        anchor=r"(?:pass(?:word|wd|phrase)?|pwd?|psk)(?:[_.-][a-z]+)*['\"]?[ \t]*[:=]",
        folded=True,
    ),
    Rule(
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
    Rule(
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
    Rule(
        "recovery codes",
        r"(?i)\b(?:recovery|backup|scratch|emergency|one-time)[ \t-]+codes?\b(?P<v>[\s\S]{0,400})",
        lambda match: are_recovery_codes(match["v"]),
        needles=("recovery", "backup", "scratch", "emergency", "one-time"),
        anchor=r"(?:recovery|backup|scratch|emergency|one-time)[ \t-]+code",
        folded=True,
    ),
    Rule(
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
    Rule(
        "a password in a .pgpass line",
        (
            r"(?<![^\s`'\"])(?:\*|[\w.-]*[A-Za-z][\w.-]*):(?:\d{2,5}|\*):[^\s:]+:[^\s:]+"
            r":(?P<v>[^\s:`'\"]{6,})(?![^\s`'\"])"
        ),
        lambda match: looks_like_password(match["v"]) or looks_generated(match["v"]),
        needles=(":",),
        anchor=r":(?:\d{2,5}|\*):[^\s:]+:[^\s:]+:",
    ),
    Rule(
        "a registry login",
        (r"\"auth\"[ \t]*:[ \t]*\"(?P<v>[A-Za-z0-9+/]{8,}={0,2})\""),
        lambda match: _basic_auth(match["v"]),
        needles=('"auth"',),
        anchor='"auth"',
    ),
    Rule(
        "a private key body",
        KEY_BODY,
        private_key_body,
        exact=True,
        anchor="b3BlbnNzaC1rZXktdjE",
        base64_run=True,
    ),
)
