"""Code hits: a module that exists for tests (conftest.py, tests.py, testing.py,
testclient.py) comes after the code it tests, as a test folder's files do, unless the
question asks for tests (issue 38, thirteenth session)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memstore.catalog import code_hits
from memstore.core.model import Hit
from memstore.service.store import Store, init_vault
from tests.conftest import git, settings_at

TRUSTED_HOST = '''"""Trusted hosts."""


class TrustedHostMiddleware:
    """Answer 400 to a request whose Host header names none of the allowed hosts."""

    def __init__(self, app, allowed_hosts):
        self.app = app
        self.allowed_hosts = list(allowed_hosts)

    async def __call__(self, scope, receive, send):
        host = dict(scope["headers"]).get(b"host", b"").decode().split(":")[0]
        if host not in self.allowed_hosts:
            await send({"type": "http.response.start", "status": 400})
            return
        await self.app(scope, receive, send)
'''

# a fake transport for tests: it builds every request's Host header, so it holds the words
# of any question about requests and hosts, and says them more often
TEST_CLIENT = '''"""A client that calls the application in process, for tests."""


class _TestClientTransport:
    def handle_request(self, request):
        """Send a request to the app. Its Host header is the URL's host; requests to a
        host the app does not allow are rejected by the app, as they would be."""
        host = request.url.host
        headers = [(b"host", host.encode())]
        for key, value in request.headers.items():
            if key.lower() != "host":  # the host header was set from the URL
                headers.append((key.lower().encode(), value.encode()))
        scope = {"type": "http", "headers": headers, "server": (host, 80)}
        return self.app(scope, request.read, self.send)
'''

QUESTION = "reject requests whose Host header is not in the allowed hosts"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    vault = tmp_path / "vault"
    init_vault(vault, settings_at(vault))
    repo = tmp_path / "web"
    for name, text in {
        "middleware/trustedhost.py": TRUSTED_HOST,
        "testclient.py": TEST_CLIENT,
    }.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text, encoding="utf-8")
    git(repo, "init", "-q")
    opened = Store.open(settings_at(vault))
    opened.ingest(repo, "web")
    with opened:
        yield opened
    code_hits._is_test.cache_clear()  # a test below changes what it answers


def code(store: Store, question: str) -> list[Hit]:
    hits = store.search(question, workspace="web", k=5, catch_up=False).hits
    return [h for h in hits if h.kind == "code"]


@pytest.mark.parametrize(
    "ref",
    [
        "conftest.py:1-9",
        "app/tests.py:3-8",
        "click/testing.py:10-40",
        "starlette/testclient.py:234-293",
        "pkg/test_utils.py:1-5",
        "tests/unit/api.py:1-2",
    ],
)
def test_a_module_that_exists_for_tests_is_a_test(ref: str) -> None:
    assert code_hits._is_test(ref)


@pytest.mark.parametrize(
    "ref", ["middleware/trustedhost.py:4-16", "unittest/case.py:1-9", "attestation.py:1-3"]
)
def test_code_named_near_test_is_not_a_test(ref: str) -> None:
    assert not code_hits._is_test(ref)


def test_the_code_comes_before_the_test_client_that_says_the_words_more(store: Store) -> None:
    hits = code(store, QUESTION)
    assert hits[0].path.startswith("middleware/trustedhost.py:")
    assert any(h.path.startswith("testclient.py:") for h in hits[1:])


def test_a_question_about_tests_gets_the_test_client_first(store: Store) -> None:
    hits = code(store, f"in tests, {QUESTION}")
    assert hits[0].path.startswith("testclient.py:")


def test_without_test_modules_the_test_client_came_first(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(code_hits, "_TEST_MODULES", frozenset())
    code_hits._is_test.cache_clear()
    hits = code(store, QUESTION)
    assert hits[0].path.startswith("testclient.py:")
