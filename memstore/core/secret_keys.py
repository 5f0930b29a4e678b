"""Private keys pasted without their BEGIN line: a DER opening, a body told from files. Pure.

A key's base64 body (cut off, or pasted alone) is a key when its DER opens as one, or, with
no DER to read, when it is bytes rather than text and no file type's opening (an image, an
archive, a data URI's payload). The secret scan's rule "a private key body" (core/secrets.py)
matches `KEY_BODY` and keeps what `private_key_body` says is a key.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import re

KEY_BODY = re.compile(
    r"(?P<h>-{5}BEGIN [A-Z0-9 ]+-{5}[ \t]*\r?\n)?(?P<b>(?:[A-Za-z0-9+/]{60,76}\r?\n){2,}"
    r"[A-Za-z0-9+/]{16,76}={0,2})"
    r"|(?<![A-Za-z0-9+/=])(?P<d>M[A-Za-z0-9+/]{39,})"
    r"|b3BlbnNzaC1rZXktdjE[A-Za-z0-9+/=]{40,}"  # base64 of "openssh-key-v1": only private files
)


def der_kind(b64: str) -> str:
    """'private', 'public' (a certificate or public key) or '' for the DER that `b64` opens."""
    try:
        der = base64.b64decode(b64[:24])
    except (binascii.Error, ValueError):
        return ""
    if len(der) < 8 or der[0] != 0x30:
        return ""
    at = 2 + (der[1] & 0x7F if der[1] & 0x80 else 0)
    if at >= len(der):  # a length of more bytes than there are: no DER (it raised before)
        return ""
    if der[at] == 0x30:
        return "public"
    # A private key opens with its version: INTEGER 0 (PKCS#1, PKCS#8) or 1 (SEC1 EC).
    version = der[at : at + 3]
    return "private" if version in (b"\x02\x01\x00", b"\x02\x01\x01") else ""


# The most base64 a private key's body holds: an RSA key of 16,384 bits is ~12,600 characters
# (PKCS#8), a PGP secret key with a 4,096-bit subkey ~7,000. A longer run without a header and
# without a key's own structure is something else: an image, an archive, a data URI.
KEY_BODY_MAX = 16_384
# What a file that is no key opens with (PNG, JPEG, GIF, WebP/RIFF, PDF, zip, gzip, ELF, wasm,
# bzip2, xz, 7z, zstd, ICO): base64 of one of those is not a key's middle.
FILE_MAGIC = (
    *(b"\x89PNG", b"\xff\xd8\xff", b"GIF8", b"RIFF", b"%PDF", b"PK\x03\x04", b"\x1f\x8b"),
    *(b"\x7fELF", b"\x00asm", b"BZh", b"\xfd7zXZ", b"7z\xbc\xaf", b"\x28\xb5\x2f\xfd"),
    b"\x00\x00\x01\x00",
)


def private_key_body(match: re.Match[str]) -> bool:
    """A key's base64 body without its BEGIN line (cut off, or pasted alone)."""
    if match["d"] is not None:
        return der_kind(match["d"]) == "private"
    if match["b"] is None:
        return True  # the OpenSSH magic
    if match["h"] is not None:
        return "PRIVATE" in match["h"]
    before = match.string[: match.start()]
    header = before.rfind("-----BEGIN ")
    if header >= 0 and "-----END " not in before[header:]:
        return "PRIVATE" in before[header : header + 60]  # a certificate's or public key's lines
    body = match["b"]
    lines = body.split()
    if any(b.startswith(a) for a, b in itertools.pairwise(lines)):
        return False  # each line the one before and more: the joins of words, not a key's lines
    kind = der_kind(body)
    if kind:
        return kind == "private"
    if len(body) > KEY_BODY_MAX or before.endswith(("base64,", "base64,\n")):
        return False  # far bigger than a key, or a data URI's payload
    try:
        decoded = base64.b64decode("".join(body.split())[:400] + "==")
    except (binascii.Error, ValueError):
        return False
    if decoded.startswith(FILE_MAGIC):
        return False
    return not is_text(decoded)  # a middle piece of a key is bytes, not text


def is_printable(char: str) -> bool:
    return char.isprintable() or char in "\t\r\n"


def is_text(data: bytes) -> bool:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return sum(map(is_printable, text)) >= 0.95 * len(text)
