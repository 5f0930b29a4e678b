"""A class's initializer (issue 38, fourteenth session): its parameters and docstring name
every option of its class, so it holds the words of questions about what the class does; it
comes after the method that does it and is never confident, unless a question asks for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from memstore.catalog import code_hits, code_rerank
from memstore.core.model import Hit
from memstore.service.store import Store, init_vault
from tests.conftest import git, settings_at

DOWNLOADER = '''"""Downloads over HTTP."""

import time
import urllib.request


class Downloader:
    """Fetch files over HTTP."""

    def __init__(self, retries=3, timeout=10.0, backoff=0.5):
        """Set up a downloader.

        retries: how many more times a URL is fetched
        timeout: seconds to wait for the server
        backoff: seconds to sleep before the next try, doubled after each failed try
        """
        self.retries = retries
        self.timeout = timeout
        self.backoff = backoff

    def fetch(self, url):
        """Download one URL; after a failure, sleep and try again."""
        for attempt in range(self.retries + 1):
            try:
                return urllib.request.urlopen(url, timeout=self.timeout).read()
            except OSError:
                time.sleep(self.backoff * 2**attempt)
        raise OSError(url)
'''
# Members enough for the class to be chunked member by member (a class over 120 lines), each
# about something else.
OTHERS = [
    ("save", "Write the downloaded bytes to a path on disk.", "path.write_bytes(data)"),
    ("checksum", "Compute the sha256 digest of the downloaded bytes.", "hashlib.sha256(data)"),
    ("headers", "Parse the response headers into a dictionary.", "dict(line.split(':'))"),
    ("filename", "Guess the file name from the content disposition.", "disposition.name"),
    ("progress", "Report how many bytes arrived so far to the log.", "log.info(count)"),
    ("resume", "Ask for the remaining byte range of a partial file.", "range_header(size)"),
    ("proxy", "Choose the proxy server from the environment.", "os.environ['HTTP_PROXY']"),
    ("cookies", "Keep the cookies the server set for the next request.", "jar.update(data)"),
    ("close", "Close the connection pool and forget idle sockets.", "pool.clear()"),
    ("user_agent", "Build the user agent string with the version.", "f'dl/{VERSION}'"),
]
DOWNLOADER += "".join(
    f'''
    def {name}(self, data=None, path=None, line="", size=0, count=0):
        """{doc}"""
        first = {expression}
        second = first
        third = second
        fourth = third
        fifth = fourth
        sixth = fifth
        return sixth
'''
    for name, doc, expression in OTHERS
)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    vault = tmp_path / "vault"
    init_vault(vault, settings_at(vault))
    repo = tmp_path / "app"
    repo.mkdir()
    (repo / "downloader.py").write_text(DOWNLOADER, encoding="utf-8")
    git(repo, "init", "-q")
    opened = Store.open(settings_at(vault))
    opened.ingest(repo, "app")
    return opened


def names(store: Store, question: str) -> list[tuple[str, bool]]:
    hits: list[Hit] = store.search(question, workspace="app", k=5, catch_up=False).hits
    return [(h.keywords[-1], h.weak) for h in hits if h.kind == "code"]


def test_the_method_that_does_it_comes_before_the_initializer(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    question = "how long do we sleep before trying a failed download again"
    with store:
        found = names(store, question)
        assert found[0] == ("Downloader.fetch", True)
        assert ("Downloader.__init__", True) in found[1:]
        # without the initializer's demotion, its docstring's words put it first
        monkeypatch.setattr(code_rerank, "RERANK_CONSTRUCTOR", 0.0)
        assert names(store, question)[0][0] == "Downloader.__init__"


def test_an_initializer_is_never_confident_unless_asked_for(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    question = "seconds to wait for the server timeout"
    with store:
        assert names(store, question)[0] == ("Downloader.__init__", True)
        # asked for, it may be confident
        asked = "how long does the init sleep before trying a failed download again"
        assert names(store, asked)[0] == ("Downloader.__init__", False)
        # the same evidence is confident for another definition: the rule is what holds it back
        monkeypatch.setattr(code_hits, "CONSTRUCTORS", frozenset())
        assert names(store, question)[0] == ("Downloader.__init__", False)


def test_a_question_about_the_constructor_gets_it() -> None:
    assert code_hits._asks_for_constructor("what does the Downloader constructor take?")
    assert code_hits._asks_for_constructor("where is `Downloader.__init__`")
    assert code_hits._asks_for_constructor("what does init set up")
    assert not code_hits._asks_for_constructor("where do we initialize the retry count")
    assert code_hits._is_constructor("Downloader.__init__")
    assert code_hits._is_constructor("Widget.constructor")
    assert not code_hits._is_constructor("Downloader.init_pool")
