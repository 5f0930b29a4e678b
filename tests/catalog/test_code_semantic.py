"""The semantic view's second opinion on weak code hits (code_semantic.py): a chunk's summary,
the order of weak hits, a confident hit never moved, nothing changed with the view off. The
model tests need the `semantic` extra (make test installs it)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from memstore.catalog import code_hits, semantic
from memstore.catalog.code_semantic import CodeSimilarity, similarity, summary
from memstore.core.config import SEMANTIC_ON, Settings
from memstore.core.model import Hit
from memstore.service.store import Store, init_vault
from tests.conftest import git

needs_model = pytest.mark.skipif(not semantic.is_installed(), reason="the semantic extra")

TALLY = '''"""Counting."""

import collections


def tally(items):
    """Count each duplicate entry of the list."""
    return collections.Counter(items)
'''

UNIQUE = '''"""Keeping entries once."""


def unique(items):
    """Drop each duplicate entry of the list."""
    return list(dict.fromkeys(items))
'''


def _settings(vault: Path, view: str = "") -> Settings:
    return Settings(vault=vault, source="test", session="test", host="test", semantic=view)


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    """A vault with a repository of two functions a question's words match alike (a count
    and a removal of duplicates), ingested as `shop`."""
    vault = tmp_path / "vault"
    init_vault(vault, _settings(vault))
    repo = tmp_path / "shop"
    for name, text in {"lists/a.py": TALLY, "lists/b.py": UNIQUE}.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text, encoding="utf-8")
    git(repo, "init", "-q")
    with Store.open(_settings(vault)) as store:
        store.ingest(repo, "shop")
    return vault


def _names(store: Store, question: str) -> list[tuple[str, bool]]:
    hits = store.search(question, workspace="shop", k=5, catch_up=False).hits
    return [(_name(h), h.weak) for h in hits if h.kind == "code"]


def _name(hit: Hit) -> str:
    return hit.content.partition("\n")[0].rpartition(" ")[2]


def _find(vault: Path, question: str, opinion: Any) -> list[tuple[str, bool]]:
    with Store.open(_settings(vault)) as store:
        code = store.sources.code_index()
        assert code is not None
        return [(_name(h), h.weak) for h in code.find(question, {"shop"}, 5, opinion)]


def _favouring(name: str) -> Any:
    """An opinion that holds only the chunks named `name` similar to any question."""

    def opinion(question: str, contents: Sequence[str]) -> list[float]:
        return [1.0 if f" {name}\n" in content else 0.0 for content in contents]

    return opinion


def test_a_summary_is_the_name_and_the_docstrings_first_sentence() -> None:
    content = (
        "net/hosts.py:70-80 function _parse_host_port\n"
        "def _parse_host_port(value):\n"
        '    """Parse a forwarded host value into host and port. Bare IPs too.\n\n'
        '    More here."""\n'
        "    return value, 0\n"
    )
    assert summary(content) == "parse host port: Parse a forwarded host value into host and port."


def test_a_summary_without_a_docstring_is_leading_comments_or_the_names_and_path() -> None:
    commented = "web/app.js:1-4 function sendMail\nfunction sendMail(to) {\n  // Queue a mail.\n}\n"
    bare = "mail/smtp_client.py:9-12 method SmtpClient.quit\ndef quit(self):\n    self.close()\n"
    assert summary(commented) == "send mail: Queue a mail."
    assert summary(bare) == "quit smtp client mail smtp client"


def test_an_opinion_reorders_weak_hits_and_they_stay_weak(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    question = "where do we remove the duplicate entries of a list"
    # the reranking of weak hits (code_rerank.py) reads "drop" in unique's docstring; an
    # opinion weighed enough puts the other first
    assert _find(vault, question, None)[:2] == [("unique", True), ("tally", True)]
    monkeypatch.setattr(code_hits, "SEMANTIC_WEIGHT", 1.0)
    assert _find(vault, question, _favouring("tally"))[:2] == [("tally", True), ("unique", True)]


def test_an_opinion_never_moves_a_confident_first_hit(vault: Path) -> None:
    question = "where do we count the duplicate entries of a list"
    without = _find(vault, question, None)
    assert without[0] == ("tally", False)
    assert _find(vault, question, _favouring("unique")) == without


@needs_model
def test_the_semantic_view_puts_the_function_that_does_what_is_asked_first(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    question = "where do we remove the duplicate entries of a list"
    with Store.open(_settings(vault, SEMANTIC_ON)) as store:
        assert _names(store, question)[:2] == [("unique", True), ("tally", True)]
    # without the reranking of weak hits, the words alone put a count first, and the view
    # alone puts the removal first
    monkeypatch.setattr(code_hits, "_reranked", lambda rows, *_: rows)
    with Store.open(_settings(vault)) as store:
        off = _names(store, question)
    with Store.open(_settings(vault, SEMANTIC_ON)) as store:
        on = _names(store, question)
    assert off[:2] == [("tally", True), ("unique", True)]
    assert on[:2] == [("unique", True), ("tally", True)]
    with Store.open(_settings(vault, SEMANTIC_ON)) as store:  # a confident hit: as without
        assert _names(store, "where do we count the duplicate entries of a list")[0] == (
            "tally",
            False,
        )


class _Counting:
    """The extra's model, counting the texts it embeds."""

    def __init__(self, model: semantic.Embedder) -> None:
        self.model = model
        self.name = f"counting-{model.name}"
        self.dim = model.dim
        self.embedded: list[str] = []

    def embed(self, texts: Sequence[str]) -> Any:
        self.embedded.extend(texts)
        return self.model.embed(texts)


@pytest.fixture
def counting() -> Iterator[_Counting]:
    yield _Counting(semantic.load_embedder())


@needs_model
def test_summaries_are_embedded_once_per_process(counting: _Counting) -> None:
    opinion = CodeSimilarity(counting)
    contents = [
        "lists/unique.py:4-7 function unique\ndef unique(items):\n"
        '    """Drop each duplicate entry of the list."""\n',
        "net/tcp.py:1-3 function connect\ndef connect(host):\n"
        '    """Open a TCP connection to a host."""\n',
    ]
    first = opinion("where do we remove duplicates from a list", contents)
    assert first[0] > first[1]  # the removal is nearer the question than a connection
    opinion("how do we open a connection", contents)
    assert counting.embedded[3:] == ["how do we open a connection"]  # the summaries kept
    assert similarity(counting) is similarity(counting)  # one per model in a process
