"""Telling a credential's value from a stand-in, an identifier or words. Pure.

Also the labelled rule of the secret scan: a credential word and the value it names.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import math
import re
import sys
import unicodedata
from collections import Counter

_STAND_INS = (
    "password passwd pwd secret token apikey changeme changeit example yourpassword mypassword "
    "redacted removed hidden none null nil undefined empty required optional unset notset "
    "placeholder dummy vault postgres mysql guest default secret test testing"
    # where a password is kept, named in its place (the password is in 1Password)
    " 1password lastpass keepass keepassxc bitwarden dashlane keychain"
)
_PLACEHOLDER_WORDS = frozenset(_STAND_INS.split())
# Inside a longer value these mark it as written to be replaced (sk-your-key-here, ghp_xxxx…).
_STAND_IN_MARKS = (
    "xxxx",
    "your",
    "placeholder",
    "redacted",
    "changeme",
    "replaceme",
    "insert",
    "aqoexample",  # AWS's documented session token
)
# Words that say "a secret goes here": my-secret-pw, supersecret, db_password (lowercase only).
_WORDS_FOR_A_SECRET = re.compile(r"(?=[a-z_-]*(?:secret|password|passwd|pw))[a-z]+(?:[-_][a-z]+)*")
_CODE_REFERENCE = re.compile(r"[A-Za-z_]\w*(?:\.\w+)+$|[A-Za-z_][\w.]*[(\[]")


def is_placeholder(value: str) -> bool:
    """Tell whether a credential value is a stand-in (<pass>, ${PASS}, changeme, an environment lookup)."""
    value = value.strip("'\"`.,;)").rstrip(":)")  # a parameter's default: password=None):
    lowered = re.sub(r"[-_ ]", "", value.lower())
    return (
        not value
        or value[0] in "<${[(%*…"
        or value.startswith("#{")
        or len(set(value)) == 1
        or lowered.lstrip("!") in _PLACEHOLDER_WORDS
        or lowered.startswith("your")
        or lowered.endswith(("here", "example", "examplekey"))
        or any(marker in lowered for marker in _STAND_IN_MARKS)
        or is_dummy(value)
        or _CODE_REFERENCE.match(value) is not None
        # db_password, or a constant naming one (DEFAULT_PASSWORD, STRIPE_SECRET)
        or _WORDS_FOR_A_SECRET.fullmatch(value.lower() if value.isupper() else value) is not None
    )


def is_dummy(value: str, *, runs: bool = True) -> bool:
    """Tell whether a key-shaped value was typed to be replaced: xxxx…, 0000…, 1234…abcd…
    (`runs` False: a run of characters in order is not a sign, only one repeated)."""
    tail = re.split(r"[-_.]", value)[-1]  # after a provider's prefix (sk_test_1234…)
    chars = [c for c in (tail if len(tail) >= 8 else value) if c.isalnum()]
    if len(chars) < 8:
        return False
    if max(Counter(c.lower() for c in chars).values()) >= 0.4 * len(chars):
        return True
    if not runs:
        return False
    steps = sum(0 <= ord(b) - ord(a) <= 1 for a, b in itertools.pairwise(chars))
    return steps >= 0.7 * (len(chars) - 1)


def looks_random(value: str) -> bool:
    """Tell whether `value` reads like generated key material rather than words joined up.

    Words run together lack digits or capitals; a key has both (lowercase hex is let go)."""
    return any(c.isdigit() for c in value) and any(c.isupper() for c in value)


def is_stand_in_token(value: str, *, issued: bool = False) -> bool:
    """Tell whether a provider-shaped token is a stand-in. `issued`: it has the exact length
    and characters the provider issues (ghp_ and 36), so letters in order (abcd…0123…) do not
    make it one; a repeated character (ghp_xxxx…) or a word saying so (your, example) still do."""
    # Not is_placeholder: a token's dots (hvs.…, SG.….…) would read as a code reference.
    lowered = value.lower()
    return (
        value[0] in "<${"
        or lowered.endswith(("example", "examplekey"))
        or any(marker in lowered for marker in _STAND_IN_MARKS)
        or is_dummy(value, runs=not issued)
    )


# "Password" in more languages, as normalize() reads them (NFKC; Cyrillic а, о, р, е drawn
# like Latin read Latin), each a label as it stands: Hungarian, Vietnamese, Indonesian, Malay,
# Hindi and Marathi, Arabic, Hebrew, Thai, Persian, Urdu, Bengali, Serbo-Croatian, Catalan,
# Galician, Basque, Swahili, Lithuanian, Estonian, Slovenian, Icelandic, Welsh, Albanian,
# Azerbaijani, Tamil, Khmer, Lao, Georgian, Armenian.
_WORLD_PASSWORD_WORDS = tuple(
    unicodedata.normalize("NFKC", word)
    for word in (
        *("jelszó", "jelszava", "jelszót", "mật khẩu", "kata sandi", "kata laluan"),
        *("पासवर्ड", "كلمة المرور", "كلمة السر", "كلمة مرور", "סיסמה", "סיסמא", "סיסמת"),
        *("รหัสผ่าน", "رمز عبور", "گذرواژه", "پاس ورڈ", "পাসওয়ার্ড", "lozinka", "lozinku"),
        *("лoзинкa", "лoзинку", "contrasenya", "contrasinal", "pasahitza", "nenosiri"),
        *("slaptažodis", "slaptažodį", "parool", "salasõna", "geslo", "lykilorð", "cyfrinair"),
        *("fjalëkalim", "şifrə", "கடவுச்சொல்", "ពាក្យសម្ងាត់", "ລະຫັດຜ່ານ", "პაროლი"),
        "գաղտնաբառ",
    )
)
# "Password" in Portuguese, Dutch, Polish, Turkish, Swedish, Danish, Czech, Finnish, Russian,
# Ukrainian, Bulgarian, Greek, Korean, Japanese and Chinese (with the endings a label takes
# before its value), then the words above.
_PASSWORD_WORDS = (
    r"senha|wachtwoord|has(?:ło|ła|lo)|şifre(?:si)?|parola(?:sı)?|lösenord(?:et)?|passord(?:et)?"
    r"|adgangskode(?:n)?|heslo|salasana|п[аa][рp][оo]л(?:ь|я|[еe]м|[аa](?:т[аa])?)?|κωδικός"
    r"|비밀번호|パスワード|密[码碼]|口令|" + "|".join(map(re.escape, _WORLD_PASSWORD_WORDS))
)
_WORD_START = r"(?i)(?:(?<![a-z0-9])(?:[a-z0-9]+[_.-]){0,4}?|(?-i:(?<=[a-z])(?=[A-Z])))"
_WORD_END = r"(?:[_.-][a-z0-9]+){0,3}(?![a-z0-9])"
# A credential word, with the words joined to it (DD_API_KEY, db.password, STRIPE_KEY).
_LABEL = re.compile(
    # At a word's start, or where camelCase starts one (accessToken, dbPassword).
    _WORD_START + r"(?:pass(?:word|wd|phrase)|pwd|pass(?:wort|wörter)|kennwort|contrase(?:ñ|n)as?"
    r"|clave|mot[ _-]de[ _-]passe|secret|token|credentials?|api[_ -]?key|apikey|bearer|pat"
    r"|(?:access|secret|private|client|license|signing|encryption|master|app|account|auth|admin"
    r"|service|webhook)[_ -]?key|[a-z0-9]+[_.-]key|client[_ -]?secret|key)" + _WORD_END
)
_CREDENTIAL_WORD = re.compile(
    r"(?i)pass|pwd|secret|token|credential|key|bearer|pat|kennwort|contrase|clave"
)
# Labels read in a second pass, only by a text that holds one (each word costs _LABEL's every
# search a little): the password of other languages, a token word glued to another (authtoken).
_GLUED = r"(?:auth|api|access|refresh|bot|session)token|authkey"
_MORE_LABELS = re.compile(_WORD_START + "(?:" + _PASSWORD_WORDS + "|" + _GLUED + ")" + _WORD_END)
_MORE_WORDS = re.compile("(?i)" + _PASSWORD_WORDS + "|" + _GLUED)
_WORD_BEFORE = re.compile(r"([A-Za-z0-9]+)[ \t]*$")
_ENV_BEFORE = re.compile(r"(?i)\benv(?:ironment)?[ \t]*$")
# English, German (Passwort, Kennwort), Spanish (contraseña, clave), French (mot de passe).
_PASSWORD_LABEL = re.compile(
    r"(?i)pass(?:word|wd|phrase|wort)|pwd|kennwort|contrase(?:ñ|n)a|clave|mot[ _-]de[ _-]passe|"
    + _PASSWORD_WORDS
)
# A word in or after the label that says the value is not the credential itself.
_NOT_THE_VALUE = frozenset(
    [
        "publishable",
        "idempotency",
        "cache",
        "primary",
        "foreign",
        "partition",
        "sort",
        "routing",
        "dedupe",
        "dedup",
        "object",
        "row",
        "lookup",
        "map",
        "index",
        "unique",
        "composite",
        "shard",
        "group",
        "message",
        "ordering",
        "id",
        "ids",
        "name",
        "names",
        "hash",
        "hashed",
        "hashes",
        "sha",
        "sha1",
        "sha256",
        "sha512",
        "md5",
        "digest",
        "checksum",
        "fingerprint",
        "commit",
        "version",
        "uuid",
        "path",
        "file",
        "url",
        "uri",
        "endpoint",
        "type",
        "length",
        "size",
        "count",
        "format",
        "field",
        "header",
        "prefix",
        "expiry",
        "expires",
        "expired",
        "ttl",
        "env",
        "variable",
        "var",
        "ref",
        "arn",
        "kid",
        "public",
        "pub",
        "example",
        "e.g.",
        "sample",
        "like",
        "placeholder",
        "rotation",
        "scope",
        "scopes",
        "limit",
        "regex",
        "pattern",
        "usage",
        "policy",
        "manager",
        "store",
        "reset",
        "hint",
        "prompt",
        "field",
        "label",
    ]
)
_PASSWORD_CHARS = re.compile(r"[A-Za-z0-9!@#$%^&*+=?~|_.-]+")
_ON_THE_WAY = frozenset(["changed", "set", "reset", "updated", "now", "still", "also", "just"])
_SAYS_VALUE = frozenset(
    [
        *("is", "was", "are", "=", ":", ":=", "=>", "->", "-", "—", "to", "as"),
        *("ist", "lautet", "war", "es", "era", "est", "était"),  # German, Spanish, French
        # Portuguese, Italian, Polish, Swedish, Danish and Norwegian, Czech, Japanese, Chinese
        *("é", "è", "jest", "är", "er", "blev", "je", "は", "が", "是", "为", "為"),
        # Romanian, Bulgarian, Catalan, Greek, Vietnamese, Indonesian, Malay, Arabic, Hebrew,
        # Swahili, Bengali
        *("este", "e", "és", "είναι", "là", "adalah", "ialah", "هي", "هو", "היא", "הוא", "ni"),
        "হল",
    ]
)
# A copula of Japanese or Chinese written against the value (密码是Xk29…).
_GLUED_COPULA = ("は", "が", "是", "为", "為")
# A copula that ends the word before the value (Thai writes no spaces: รหัสผ่านของเซิร์ฟเวอร์คือ X).
_GLUED_END_COPULA = ("คือ", "เป็น")
# A copula that follows the value (Hindi, Persian, Urdu, Korean: पासवर्ड X है, رمز عبور X است).
_SAYS_VALUE_AFTER = frozenset(["है", "हैं", "था", "است", "ہے", "입니다", "이다", "です", "だ"])
# Written around a value in code, not words: a call (`[]byte(`, `Buffer.from(`), `new`, or a
# string prefix (b"…", r'…', @"…").
_CODE_AROUND = frozenset(["new", "b", "r", "f", "u", "rb", "br", "@", "l", "u8"])
# A passphrase: three or more words of letters joined by hyphens (correct-horse-battery-staple);
# words of one or two letters (is-a-known-issue, end-to-end) read as a phrase in a sentence.
_PASSPHRASE = re.compile(r"[A-Za-z]{3,}(?:-[A-Za-z]{3,}){2,}")
_PUNCTUATION = "'\"`.,;:()[]{}<>"
_TOKEN_WORD = re.compile(r"[^\s'\"`]+")
# Folders, then a file name with an extension: base64 key material holds no "." at all.
_FILE_PATH = re.compile(r"[\w.-]*(?:/[\w.-]+)+\.[A-Za-z][A-Za-z0-9]{0,4}")
# A path, an environment or template lookup: what names a secret kept elsewhere.
_REFERENCE = re.compile(r"[/~.<]|[$%]\{|\$\(|\{\{|#\{|[$%][A-Za-z_]\w*%?$")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_DIGEST = re.compile(r"(?i)(?:sha\d*|md5|blake2[bs]?|h1)[:-]")  # a digest names its algorithm
_TIMESTAMP = re.compile(r"[\d:T.Z+-]+")
_RESOURCE_NAME = re.compile(r"(?i)(?:arn|urn):[a-z0-9-]+:")
_ENCRYPTED = ("ENC[AES256_GCM,", "ENC[", "$ANSIBLE_VAULT;", "!vault")


def _entropy(value: str) -> float:
    counts = {c: value.count(c) for c in set(value)}
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def is_wordy(value: str) -> bool:
    """Tell whether half of `value` or more is words a person could say (joined up: a
    sentence's words read as one, not key material)."""
    return _is_wordy(value)


def _is_wordy(value: str) -> bool:
    words = re.findall(r"[a-z]{4,}|[A-Z][a-z]{3,}|[A-Z]{4,}", value)
    return sum(len(w) for w in words if _is_word(w.lower())) >= len(value) / 2


def _is_word(run: str) -> bool:
    """A run of letters a person could say: vowels among its consonants (random letters lack them)."""
    vowels = sum(c in "aeiouy" for c in run)
    return vowels * 5 >= len(run) and not re.search(r"[^aeiouy]{5}", run)


def looks_generated(value: str) -> bool:
    """Tell whether a value beside a credential word is key material: long, varied, not words."""
    value = value.strip(_PUNCTUATION)
    value = value.removeprefix("base64:")
    if not value.isascii():  # key material is ASCII: a word of a script with marks is not
        return False
    if len(value) < 16 or _REFERENCE.match(value) or "://" in value or _EMAIL.fullmatch(value):
        return False
    if is_stand_in_token(value) or _TIMESTAMP.fullmatch(value) or _DIGEST.match(value):
        return False
    if _RESOURCE_NAME.match(value):  # arn:aws:iam::123456789012:role/deploy names, holds nothing
        return False
    if value.startswith(_ENCRYPTED):  # ciphertext made to be committed (sops, ansible-vault)
        return False
    if _FILE_PATH.fullmatch(value):  # an S3 object key, a file: exports/2026/12/<hash>.csv
        return False
    if re.fullmatch(r"[0-9a-fA-F-]+", value):  # hex, a UUID: a labelled one is a key
        digits = value.replace("-", "")
        return len(digits) >= 20 and not digits.isdigit() and not digits.isalpha()
    parts = re.split(r"[-_.]", value)
    if len(parts) > 1 and all(p.isalpha() or p.isdigit() or len(p) <= 4 for p in parts):
        return False  # an identifier: my-k8s-secret-20240101, api_v2_prod
    symbols = sum(not c.isalnum() and c not in "_-." for c in value)
    if not any(c.isdigit() for c in value) and symbols < 2:
        return False
    return not _is_wordy(value) and _entropy(value) >= 3.3


# A code of a list of recovery codes: letters and digits, in one group or two (4f7k-2m9x).
_CODE = re.compile(r"(?<![\w-])(?=[\w-]*\d)[A-Za-z0-9]{4,12}(?:-[A-Za-z0-9]{4,12})?(?![\w-])")


def are_recovery_codes(text: str) -> bool:
    """Tell whether `text` (after the words "recovery codes") lists three codes or more of one
    shape (a service issues them alike), none a stand-in."""
    codes = [code for code in _CODE.findall(text) if not is_dummy(code)]
    shapes = Counter(tuple(map(len, code.split("-"))) for code in codes)
    return bool(shapes) and max(shapes.values()) >= 3


def is_passphrase(value: str) -> bool:
    """Tell whether a value said to be a password is words joined by hyphens (3 or more),
    not a stand-in for one (<your-password-here>)."""
    value = value.strip(_PUNCTUATION)
    return _PASSPHRASE.fullmatch(value) is not None and not is_placeholder(value)


def looks_like_password(value: str) -> bool:
    """Tell whether the word said to be a password is one: not a word, a reference or a stand-in."""
    value = value.strip(_PUNCTUATION)
    if len(value) < 6 or is_placeholder(value) or "://" in value or value[0] in "/~":
        return False
    has_letter = any(c.isalpha() for c in value)
    has_digit = any(c.isdigit() for c in value)
    has_symbol = any(c in "!@#$%^&*+=?~|" for c in value)
    return (has_letter and (has_digit or has_symbol)) or (has_digit and len(value) >= 8)


def _varied_password(value: str) -> bool:
    """A password named without 'is' or ':' (ssh in with password Xk9mP2q): three kinds of character."""
    value = value.strip(_PUNCTUATION)
    kinds = (str.islower, str.isupper, str.isdigit, lambda c: c in "!@#$%^&*+=?~|")
    return (
        _PASSWORD_CHARS.fullmatch(value) is not None
        and _EMAIL.fullmatch(value) is None
        and looks_like_password(value)
        and sum(any(kind(c) for c in value) for kind in kinds) >= 3
        and not _is_wordy(value)
    )


# Each word a label ends in, then no letter or digit (as _LABEL ends): one literal search each
# over the lowercased text, far cheaper than _LABEL's search or one alternation of them all.
_LABEL_WORDS = (
    "password",
    "passwd",
    "passphrase",
    "passwort",
    "passwörter",
    "passe",
    "pwd",
    "kennwort",
    "contraseña",
    "contraseñas",
    "contrasena",
    "contrasenas",
    "clave",
    "secret",
    "token",
    "credential",
    "credentials",
    "key",
    "bearer",
    "pat",
)
# What every label _MORE_LABELS reads holds, lowercased (as normalize() reads a text: the
# Cyrillic а, р, о and е drawn like Latin are Latin); a substring test costs less than a search.
_MORE_STEMS = (
    *("authtoken", "apitoken", "accesstoken", "refreshtoken", "bottoken", "sessiontoken"),
    *("authkey", "senha", "wachtwoord", "haslo", "parola", "passord", "adgangskode", "heslo"),
    *("salasana", "hasło", "hasła", "şifre", "lösenord", "пapoл", "κωδικός", "비밀번호"),
    *("パスワード", "密码", "密碼", "口令", "пapoлa"),
    *(word.lower() for word in _WORLD_PASSWORD_WORDS),
)
_MORE_ASCII_STEMS = tuple(stem for stem in _MORE_STEMS if stem.isascii())


@functools.cache
def _label_ends(ascii_only: bool) -> tuple[re.Pattern[str], ...]:
    """Compiled on first use (a search process never looks for credentials); `ascii_only`:
    the words an ASCII text can hold."""
    return tuple(
        re.compile(word + "(?![a-z0-9])")
        for word in _LABEL_WORDS
        if word.isascii() or not ascii_only
    )


def _holds(lowered: str, *, more: bool) -> bool:
    if more:
        stems = _MORE_ASCII_STEMS if lowered.isascii() else _MORE_STEMS
        return any(map(lowered.__contains__, stems))
    ends = _label_ends(lowered.isascii())
    return any(map(re.Pattern.search, ends, itertools.repeat(lowered)))


def labelled_credential(text: str, *, lowered: str | None = None) -> bool:
    """Find a credential word followed, within a few words, by what it names.

    `lowered`: `text` lowercased, one character for one: a text with no label is told at once."""
    if lowered is not None:
        more = _holds(lowered, more=True)
        if not more and not _holds(lowered, more=False):
            return False
    else:
        more = _MORE_WORDS.search(text) is not None
        if not more and _CREDENTIAL_WORD.search(text) is None:
            return False
    runs: list[tuple[int, int]] | None = None
    labels = _LABEL.finditer(text)
    for label in itertools.chain(labels, _MORE_LABELS.finditer(text)) if more else labels:
        if runs is None:
            runs = [m.span() for m in _LONG_BASE64.finditer(text)] if len(text) > 256 else []
        if runs and _inside(runs, label.start()):
            continue  # letters in an image's or archive's base64, not a word: "…Gpat+x…"
        words = label[0].lower().replace("-", "_").replace(".", "_").split("_")
        before = _WORD_BEFORE.search(text, max(0, label.start() - 40), label.start())
        if before is not None and (
            before[1].lower() != "var" or _ENV_BEFORE.search(text, 0, before.start())
        ):  # (`var stripeKey = …` declares a variable, `env var STRIPE_KEY` names one)
            words.append(before[1].lower())  # cache key, idempotency key, publishable key
        if any(w in _NOT_THE_VALUE for w in words) or names_no_value_here(text, label.span()):
            continue
        is_password = _PASSWORD_LABEL.search(label[0]) is not None
        line = text[label.end() : label.end() + 120].split("\n", 1)[0]
        # A password's label may stand a clause away (la contraseña de la base de datos … es X).
        words = _TOKEN_WORD.findall(line)[: 12 if is_password else 8]
        if _names_a_value(words, is_password=is_password):
            return True
    return False


def names_no_value_here(text: str, span: tuple[int, int]) -> bool:
    """Whether a credential word at `span` of `text` is part of a name, not a label: a URL's
    user (user:password@host), a resource name (arn:…:secret:prod/db-Ab12Cd), or a key under
    a sealed secret's encryptedData (its values are ciphertext, made to be committed)."""
    start, end = span
    if text.startswith("@", end):
        return True
    begin = max(text.rfind(" ", 0, start), text.rfind("\n", 0, start), text.rfind("\t", 0, start))
    if _RESOURCE_NAME.match(text[begin + 1 : start].lstrip("'\"`([{")):
        return True
    sealed = text.rfind("encryptedData:", 0, start)
    return sealed >= 0 and "\n" in text[sealed:start] and "\n\n" not in text[sealed:start]


# A run of base64 longer than any credential a label names (a data URI's image, a wrapped blob).
_LONG_BASE64 = re.compile(r"[A-Za-z0-9+/]{256,}={0,2}|(?:[A-Za-z0-9+/]{60,76}\r?\n){4,}")


def _inside(runs: list[tuple[int, int]], at: int) -> bool:
    """Return whether `at` falls within one of `runs` (sorted, apart)."""
    place = bisect.bisect_right(runs, (at, sys.maxsize)) - 1
    return place >= 0 and runs[place][0] <= at < runs[place][1]


def _names_a_value(words: list[str], *, is_password: bool) -> bool:
    said = False
    for number, word in enumerate(words):
        bare = word.strip("()[]{}<>,;")
        lowered = bare.lower().rstrip(":=")
        if lowered in _NOT_THE_VALUE:
            return False
        if bare in _SAYS_VALUE or lowered in _SAYS_VALUE or not bare.strip(":=-"):
            said = True
            continue
        if said and (word.endswith("(") or lowered in _CODE_AROUND):
            continue  # = []byte("…"), = new Secret("…"), = b"…"
        if bare[0] in ":=" or (bare[0] in _GLUED_COPULA and len(bare) > 1):
            said, bare = True, bare.lstrip(":=>" + "".join(_GLUED_COPULA))
        if bare.endswith(_GLUED_END_COPULA):
            said = True
            continue
        after = words[number + 1].strip(_PUNCTUATION + "।") if number + 1 < len(words) else ""
        if (
            looks_generated(bare)
            or (
                is_password
                and (said or after in _SAYS_VALUE_AFTER)
                and (looks_like_password(bare) or is_passphrase(bare))
            )
            or (is_password and _varied_password(bare))
        ):
            return True
        if said and lowered not in _ON_THE_WAY:
            return False  # the word it is said to be is not a credential
        said = said or bare[-1] in ":="
    return False
