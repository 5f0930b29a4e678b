"""Private keys are held back in every form people paste them (with or without the BEGIN
line, one line or wrapped, a piece from the middle); a big base64 blob that is no key (an
image's data URI, a wrapped archive) is not held back as one."""

from __future__ import annotations

import base64
import random
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from memstore.core.secrets import find_secrets

rng = random.Random(7)


def _length(n: int) -> bytes:
    if n < 0x80:
        return bytes([n])
    size = (n.bit_length() + 7) // 8
    return bytes([0x80 | size]) + n.to_bytes(size, "big")


def der(tag: int, content: bytes) -> bytes:
    return bytes([tag]) + _length(len(content)) + content


def integer(value: int) -> bytes:
    data = value.to_bytes(value.bit_length() // 8 + 1, "big")
    return der(0x02, data)


def seq(*parts: bytes) -> bytes:
    return der(0x30, b"".join(parts))


def big(bits: int) -> int:
    return rng.getrandbits(bits) | (1 << (bits - 1)) | 1


def rsa_pkcs1(bits: int = 2048) -> bytes:
    """An RSAPrivateKey (PKCS#1) shaped as a real one: version 0 and eight integers."""
    half = bits // 2
    values = [big(bits), 65537, big(bits), big(half), big(half), big(half), big(half), big(half)]
    return seq(integer(0), *map(integer, values))


def pkcs8(inner: bytes) -> bytes:
    rsa_oid = der(0x06, bytes.fromhex("2a864886f70d010101"))
    return seq(integer(0), seq(rsa_oid, b"\x05\x00"), der(0x04, inner))


def ec_sec1() -> bytes:
    curve = der(0xA0, der(0x06, bytes.fromhex("2a8648ce3d030107")))
    point = der(0xA1, der(0x03, b"\x00\x04" + rng.randbytes(64)))
    return seq(integer(1), der(0x04, rng.randbytes(32)), curve, point)


def openssh() -> bytes:
    return b"openssh-key-v1\x00" + b"\x00\x00\x00\x04none" * 2 + rng.randbytes(380)


def pgp_secret_key() -> bytes:
    """An old-format secret-key packet (tag 5): version 4, a time, RSA, then its numbers."""
    body = b"\x04" + rng.randbytes(4) + b"\x01" + rng.randbytes(1100)
    return bytes([0x95]) + len(body).to_bytes(2, "big") + body


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def wrapped(data: bytes, width: int = 64) -> str:
    return "\n".join(textwrap.wrap(b64(data), width))


def pem(label: str, data: bytes) -> str:
    return f"-----BEGIN {label}-----\n{wrapped(data)}\n-----END {label}-----\n"


KEYS = {
    "RSA PRIVATE KEY": rsa_pkcs1(),
    "PRIVATE KEY": pkcs8(rsa_pkcs1(4096)),
    "EC PRIVATE KEY": ec_sec1(),
    "OPENSSH PRIVATE KEY": openssh(),
    "PGP PRIVATE KEY BLOCK": pgp_secret_key(),
}


def forms(label: str, data: bytes) -> dict[str, str]:
    body = wrapped(data)
    lines = body.splitlines()
    found = {
        "with its header": f"the deploy key:\n{pem(label, data)}",
        "with CRLF line ends": pem(label, data).replace("\n", "\r\n"),
        "without its header": f"the key (header lost):\n{body}",
        "wrapped at 76": wrapped(data, 76),
    }
    if len(lines) > 12:  # an EC key is 3 lines: it has no middle
        found["a piece from its middle"] = "\n".join(lines[3:12])
    return found


@pytest.mark.parametrize("label", list(KEYS))
def test_every_form_of_a_private_key_is_found(label: str) -> None:
    for form, text in forms(label, KEYS[label]).items():
        assert find_secrets(text), (label, form)
        assert find_secrets(text, full=True), (label, form)


@pytest.mark.parametrize("label", ["RSA PRIVATE KEY", "EC PRIVATE KEY", "PRIVATE KEY"])
def test_a_der_key_on_one_line_is_found(label: str) -> None:
    assert find_secrets(f"key={b64(KEYS[label])} (staging)")


@pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs ssh-keygen")
@pytest.mark.parametrize(
    ("kind", "extra"),
    [("ed25519", []), ("ecdsa", []), ("rsa", ["-b", "2048"]), ("rsa", ["-m", "PEM"])],
)
def test_keys_ssh_keygen_made_are_found_with_and_without_headers(
    tmp_path: Path, kind: str, extra: list[str]
) -> None:
    key = tmp_path / "id"
    made = ["ssh-keygen", "-q", "-t", kind, *extra, "-N", "", "-C", "", "-f", str(key)]
    subprocess.run(made, check=True, capture_output=True, timeout=60)
    text = key.read_text(encoding="utf-8")
    body = "\n".join(line for line in text.splitlines() if not line.startswith("-----"))
    assert find_secrets(text) and find_secrets(body), text


def test_the_public_half_and_a_certificate_are_not_private_keys(tmp_path: Path) -> None:
    public = seq(seq(der(0x06, bytes.fromhex("2a864886f70d010101")), b"\x05\x00"), der(0x03, b"\0"))
    assert "a private key body" not in find_secrets(pem("PUBLIC KEY", public + rng.randbytes(256)))


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("a PNG", b"\x89PNG\r\n\x1a\n" + rng.randbytes(200_000)),
        ("a small JPEG", b"\xff\xd8\xff\xe0" + rng.randbytes(3_000)),
        ("a gzip archive", b"\x1f\x8b\x08\x00" + rng.randbytes(6_000)),
        ("bytes far bigger than any key", rng.randbytes(20_000)),
    ],
)
def test_innocent_base64_blobs_are_not_keys(name: str, data: bytes) -> None:
    for text in (
        f"the logo, base64:\n{wrapped(data, 76)}\n",
        f"![logo](data:image/png;base64,{b64(data)})",
        f'inline:\n<img src="data:image/png;base64,\n{wrapped(data)}">',
    ):
        assert find_secrets(text) == [], name
    assert find_secrets(f"![logo](data:image/png;base64,{b64(data)})", full=True) == [], name
