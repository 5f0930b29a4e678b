"""The scan's fast path finds exactly what its full one does (`find_secrets(text, full=True)`).

The fast path runs a rule only where its anchor is and reads only the joins a rule could
accept (core/secret_joins.py); the full one reads every join and runs a rule wherever one of
its needles is. Held to the same findings on every secret corpus of the tests, on texts of
the generated vaults' kind, and on random mixtures of credentials, split keys, prose, code,
paths, URLs and unicode.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstore.core.secret_joins import joins
from memstore.core.secrets import find_secrets
from tests.core.secrets_corpus import benign, forms

CORPORA = Path(__file__).parents[1] / "data" / "secrets"


def _same(text: str) -> list[str]:
    fast, full = find_secrets(text), find_secrets(text, full=True)
    assert fast == full, text
    return fast


def _corpus_texts() -> list[str]:
    texts: list[str] = []
    for path in sorted(CORPORA.glob("*.json")):
        for item in json.loads(path.read_text(encoding="utf-8")):
            value = item.get("value") if isinstance(item, dict) else item
            if isinstance(value, str):
                texts.append(value)
            elif isinstance(value, list):
                texts.append(" ".join(map(str, value)).replace(",", " "))
    return texts


def test_every_secret_corpus_of_the_tests_is_found_alike() -> None:
    texts = _corpus_texts()
    assert len(texts) >= 50
    found = [_same(text) for text in texts]
    assert any(found) and not all(found)  # the corpora hold credentials and look-alikes


@pytest.mark.parametrize("seed", [36, 1, 2, 3, 4])
def test_the_generated_forms_and_look_alikes_are_found_alike(seed: int) -> None:
    secret, plain = forms(seed), benign(seed)
    assert sum(bool(_same(s.text)) for s in secret) >= 0.9 * len(secret)
    for sample in plain:
        _same(sample.text)


# Pieces a memory is made of; credentials built from parts of the generated corpus.
_PROSE = [
    "the",
    "cat",
    "sat",
    "on",
    "a",
    "mat",
    "run",
    "tests",
    "before",
    "merging",
    "to",
    "main",
    "Deploy",
    "fails",
    "when",
    "the",
    "cache",
    "is",
    "cold",
    "Key",
    "token",
    "password",
    "login",
    "as",
    "admin",
    "with",
    "is:",
    "=",
    "secret:",
    "api_key=",
    "Bearer",
    "Basic",
    "curl",
    "-u",
    "docker",
    "-p",
    "mysql",
    "sshpass",
    "redis-cli",
    "-a",
    "ldapsearch",
    "-w",
]
_CODE = [
    "export",
    "DB_PASSWORD=Xk29fLq7Zp",
    "os.environ['TOKEN']",
    "def f(x):",
    "return x + 1",
    "src/components/App.tsx",
    "~/.ssh/id_ed25519",
    "https://user:Pw9xQ2mZ@db.example.net/x",
    "postgres://postgres:postgres@localhost:5432/db",
    "kafka:9092",
    "v1.2.3",
    "#9719",
    "2026-07-22T08:22:44Z",
    "a1b2c3d4e5f6a7b8c9d0",
    "550e8400-e29b-41d4-a716-446655440000",
    "localhost:5432:app:me:Xk29!fLq8",
    "-----BEGIN RSA PRIVATE KEY-----",
    "-----END",
    "?X-Amz-Signature=0123456789abcdef0123456789",
    '"auth": "dXNlcjpwYXNzd29yZA=="',
]
_UNICODE = ["é", "—", "ß", "İ", "ı", "ﬁ", "Ａ", "\u200b", "日本語", "Ωmega", "𝚤", "ǅ", "К"]


def _secrets() -> list[str]:
    values = [s.text for s in forms(7)]
    values += [word for s in forms(8) for word in s.text.split() if len(word) >= 16]
    return values


_SECRETS = _secrets()


@st.composite
def _split(draw: st.DrawFn) -> str:
    """A credential split into pieces by spaces, dashes, dots or line breaks."""
    value = draw(st.sampled_from(_SECRETS)).split()[-1]
    size = draw(st.integers(min_value=2, max_value=10))
    gap = draw(st.sampled_from([" ", "-", ".", "\n", "  ", " \n "]))
    return gap.join(value[i : i + size] for i in range(0, len(value), size))


_PIECES = st.one_of(
    st.sampled_from(_PROSE),
    st.sampled_from(_CODE),
    st.sampled_from(_UNICODE),
    st.sampled_from(_SECRETS),
    _split(),
    st.text(
        alphabet="ABCDEFGHJKMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz0123456789+/=_-.", max_size=80
    ),
    st.text(max_size=12),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_PIECES, max_size=40), st.lists(st.sampled_from([" ", "\n", "\t", ", ", ""])))
def test_random_mixtures_are_found_alike(pieces: list[str], gaps: list[str]) -> None:
    text = "".join(p + (gaps[i % len(gaps)] if gaps else " ") for i, p in enumerate(pieces))
    _same(text)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=12), min_size=3, max_size=30), st.data())
def test_groups_of_equal_words_are_found_alike(sizes: list[int], data: st.DataObject) -> None:
    """Runs of words of one length (how a key split evenly looks), digits and capitals or not."""
    alphabet = data.draw(st.sampled_from(["abcdefgh", "ABCDMNOP", "aB3dM9+/", "AKIA0123", "M"]))
    words = [data.draw(st.text(alphabet=alphabet, min_size=n, max_size=n)) for n in sizes]
    gap = data.draw(st.sampled_from([" ", "\n", " - ", "."]))
    _same(gap.join(words))


def test_a_key_body_spread_over_joins_of_sixty_characters_reads_every_join() -> None:
    # Words of one length joined to 60 characters and more: a key body's lines may span them.
    line = " ".join(["abcdefghij"] * 7)
    text = "\n".join([line, line, "abcdefghijklmnop qrstuvwxyz"])
    assert len(joins(text, every=False)) > 0
    _same(text)


def test_a_long_text_of_memories_is_found_alike() -> None:
    texts = [s.text for s in benign(5)] + [s.text for s in forms(5)][:5]
    text = "\n\n".join(texts * 20)
    assert len(text) > 200_000
    assert _same(text)


@pytest.mark.parametrize(
    "text",
    [
        "AKIA IOSF ODNN 7EXA MPLQ",
        "AKIA-IOSF-ODNN-7EXA-MPLQ",
        "gh p_ 1a2B 3c4D 5e6F 7g8H 9i0J kLmN oPqR sTuV",
        "log ın with admin / Xk29!fLq",  # a dotless i: the slow path reads it
        "PASSWORD İS: Xk29!fLq7",
        "token = \n wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ2LKM4V9Z",
    ],
)
def test_split_keys_and_unicode_cases_are_found_alike(text: str) -> None:
    _same(text)


def test_the_pruned_joins_are_a_part_of_every_join() -> None:
    text = "deploy AKIA IOSF ODNN 7EXA MPLQ to prod and run the old cat sat on a big mat"
    pruned = set(joins(text, every=False).split("\n"))
    assert pruned and pruned <= set(joins(text).split("\n"))
