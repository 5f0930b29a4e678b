"""Code reranking (issue 38, twelfth session): weak code hits ordered again by their heads'
words and who calls whom; a confident first hit never moved."""

from __future__ import annotations

from pathlib import Path

import pytest

from memstore.catalog import code_hits, code_rerank
from memstore.catalog.code_evidence import read_question
from memstore.core.model import Hit
from memstore.service.store import Store, init_vault
from tests.conftest import git, settings_at

SERVER = '''"""A small development server."""

import socket


class Server:
    """Serve an application over HTTP."""

    def __init__(self, app, host="127.0.0.1", port=0):
        self.app = app
        self.host = host
        self.port = port

    def startup(self):
        """Start the server: bind its socket, log where it listens."""
        # the server binds the host and port; a port of 0 means any port the system gives
        port = self.port or choose_unused_port(self.host)
        sock = socket.socket()
        sock.bind((self.host, port))
        sock.listen()
        print(f"server listening on {self.host}:{port}; port chosen for the server")
        self.sock = sock
        return sock


def choose_unused_port(host):
    """Ask the system for a port nobody listens on."""
    with socket.socket() as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]
'''

SETTINGS = '''"""Settings read from the environment."""

import os


def read_settings():
    """Read the server's settings: host and port from the environment."""
    return {"host": os.environ.get("HOST", "127.0.0.1"), "port": int(os.environ.get("PORT", "8000"))}


def parse_duration(text):
    """Parse a duration such as 5s or 2m into seconds."""
    number, unit = int(text[:-1]), text[-1]
    return number * {"s": 1, "m": 60, "h": 3600}[unit]
'''


@pytest.fixture
def store(tmp_path: Path) -> Store:
    vault = tmp_path / "vault"
    init_vault(vault, settings_at(vault))
    repo = tmp_path / "app"
    repo.mkdir()
    (repo / "server.py").write_text(SERVER, encoding="utf-8")
    (repo / "settings.py").write_text(SETTINGS, encoding="utf-8")
    git(repo, "init", "-q")
    opened = Store.open(settings_at(vault))
    opened.ingest(repo, "app")
    return opened


def code(store: Store, question: str) -> list[Hit]:
    hits = store.search(question, workspace="app", k=5, catch_up=False).hits
    return [h for h in hits if h.kind == "code"]


def names(hits: list[Hit]) -> list[str]:
    return [h.keywords[-1] for h in hits]


def test_a_weak_first_hit_gives_way_to_the_function_the_others_call(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    question = "where do we pick a free port for the server"
    with store:
        hits = code(store, question)
        assert names(hits)[0] == "choose_unused_port"
        assert all(h.weak for h in hits)
        # without the reranking, the class whose body says "server" and "port" most is first
        monkeypatch.setattr(code_hits, "_reranked", lambda rows, *_: rows)
        assert names(code(store, question))[0] == "Server"


def test_a_confident_first_hit_is_not_reordered(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    question = "where do we parse a duration like 5s or 2m into seconds"
    with store:
        hits = code(store, question)
        assert names(hits)[0] == "parse_duration"
        assert not hits[0].weak
        moved = []
        monkeypatch.setattr(code_hits, "_reranked", lambda *args: moved.append(args) or args[0])
        assert [h.path for h in code(store, question)] == [h.path for h in hits]
        assert not moved  # the reranking is not even computed


def test_a_call_counts_after_no_word_character() -> None:
    contents = [
        "a.py:1-3 function outer\ndef outer():\n    return self.parse_it(x) + reparse_it(y)",
        "a.py:5-6 function parse_it\ndef parse_it(x):\n    return x",
        "a.py:8-9 function reparse_it\ndef reparse_it(y):\n    return parse_it(y)",
        "a.py:11-12 function run\ndef run():\n    return run()",
    ]
    # parse_it is called by outer and reparse_it; reparse_it by outer; outer by nobody; `run`
    # is too short to count, and a definition's own line is not a call by another candidate
    assert code_rerank.called(["outer", "parse_it", "reparse_it", "run"], contents) == [
        False,
        True,
        True,
        False,
    ]
    # an empty name (a class or module chunk) is never called; nobody else calls parse_it here
    assert code_rerank.called(["", "parse_it"], contents[:2]) == [False, True]
    assert code_rerank.called(["run", "parse_it"], [contents[3], contents[1]]) == [False, False]


def test_the_head_holds_what_a_definition_says_it_does() -> None:
    question = read_question("parse a duration into seconds", {}, 10)
    said = 'a.py:1-20 function f\ndef f(text):\n    """Parse a duration into seconds."""\n'
    deep = (
        "a.py:1-20 function f\ndef f(text):\n"
        + "    x = 1\n" * 12
        + "    # parse a duration into seconds\n"
    )
    assert code_rerank.head_share(question, said) == 1.0
    assert code_rerank.head_share(question, deep) == 0.0
