"""Code hits, issue 38: a question that spells a definition's name as code
(`inspect.getsourcelines`, `HTTPResponse._read_chunked`) gets that definition first, and
confident when no other candidate is named so."""

from __future__ import annotations

from pathlib import Path

import pytest

from memstore.catalog import code_hits
from memstore.catalog.code_evidence import identifiers, names_identifier
from memstore.core.model import Hit
from memstore.service.store import Store, init_vault
from tests.conftest import git, settings_at

INSPECT = '''"""Get information about live objects."""


def getsourcelines(obj):
    """Return a list of source lines and the starting line number for an object."""
    obj = unwrap(obj)
    lines, lnum = findsource(obj)
    if istraceback(obj):
        obj = obj.tb_frame
    if ismodule(obj) or (isframe(obj) and obj.f_code.co_name == "<module>"):
        return lines, 0
    return getblock(lines[lnum:]), lnum + 1


def findsource(obj):
    """Return the entire source file of an object."""
    return [], 0
'''

# a debugger's helper of the same name that calls it: its text says "inspect.getsourcelines"
# and "return" again
DEBUGGER = '''"""The debugger's listing of source."""

import inspect


def _getsourcelines(obj):
    """Return the source lines of obj as inspect.getsourcelines returns them, the lines
    the listing shows."""
    lines, lineno = inspect.getsourcelines(obj)
    return lines, lineno
'''

QUESTION = "what does inspect.getsourcelines return"


@pytest.fixture
def store(tmp_path: Path) -> Store:
    vault = tmp_path / "vault"
    init_vault(vault, settings_at(vault))
    repo = tmp_path / "lib"
    repo.mkdir()
    (repo / "inspect.py").write_text(INSPECT, encoding="utf-8")
    (repo / "debugger.py").write_text(DEBUGGER, encoding="utf-8")
    git(repo, "init", "-q")
    opened = Store.open(settings_at(vault))
    opened.ingest(repo, "lib")
    return opened


def code(store: Store, question: str) -> list[Hit]:
    hits = store.search(question, workspace="lib", k=5, catch_up=False).hits
    return [h for h in hits if h.kind == "code"]


def test_the_definition_a_question_names_as_code_comes_first_and_is_confident(
    store: Store,
) -> None:
    with store:
        hits = code(store, QUESTION)
    assert hits[0].content.split("\n", 1)[0].endswith("function getsourcelines")
    assert hits[0].path.startswith("inspect.py:")
    assert not hits[0].weak
    assert all(h.weak for h in hits[1:])


def test_without_reading_names_spelled_as_code_the_namesake_came_first(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The case above is decided by the name: by words alone the debugger's helper wins."""
    monkeypatch.setattr(code_hits, "identifiers", lambda text: frozenset())
    with store:
        hits = code(store, QUESTION)
    assert hits[0].content.split("\n", 1)[0].endswith("function _getsourcelines")


def test_every_definition_a_question_names_comes_before_the_rest(store: Store) -> None:
    with store:
        hits = code(store, "does inspect.getsourcelines call inspect.findsource")
    assert {h.content.split("\n", 1)[0].rpartition(" ")[2] for h in hits[:2]} == {
        "getsourcelines",
        "findsource",
    }


def test_a_question_naming_a_definition_the_code_lacks_stays_weak(store: Store) -> None:
    """No `_getsourcelines` is defined in inspect: the debugger's, named and worded as the
    question is, is not what it asks about."""
    with store:
        hits = code(store, "what does inspect._getsourcelines return")
    assert hits
    assert all(h.weak for h in hits)


def test_a_name_called_everywhere_is_still_found_where_it_is_defined(
    tmp_path: Path,
) -> None:
    """Twenty callers of `urlsplit` hold the question's words more often than its definition
    does: the search for the name it spells brings the definition in."""
    vault = tmp_path / "vault"
    init_vault(vault, settings_at(vault))
    repo = tmp_path / "web"
    repo.mkdir()
    (repo / "parse.py").write_text(
        'def urlsplit(url):\n    """Split a URL into five parts."""\n    return url.split("/")\n',
        encoding="utf-8",
    )
    for n in range(20):
        (repo / f"caller{n}.py").write_text(
            f"def strip_{n}(url):\n"
            f'    """Strip whitespace from the URL, then urlsplit it and strip again."""\n'
            f"    return urlsplit(url.strip())\n",
            encoding="utf-8",
        )
    git(repo, "init", "-q")
    with Store.open(settings_at(vault)) as opened:
        opened.ingest(repo, "web")
        hits = [
            h
            for h in opened.search(
                "where does parse.urlsplit strip whitespace", workspace="web", k=5, catch_up=False
            ).hits
            if h.kind == "code"
        ]
    assert hits[0].path.startswith("parse.py:")
    assert not hits[0].weak


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("what does inspect.getsourcelines return", {"inspect.getsourcelines"}),
        ("why does HTTPResponse._read_chunked fail", {"httpresponse._read_chunked"}),
        ("where is parse_qsl used", {"parse_qsl"}),
        ("the TextWrapper drops words", {"textwrapper"}),
        # prose: a capital at a sentence's start, an abbreviation, a dunder every class has
        ("Context is lost, e.g. after a fork", set()),
        ("a file size like 1.2 kB", set()),
        ("why does checkout.spec.ts fail", {"checkout.spec.ts"}),
        ("where is the __init__ method of a dataclass made", set()),
    ],
)
def test_names_spelled_as_code(text: str, expected: set[str]) -> None:
    assert identifiers(text) == expected


@pytest.mark.parametrize(
    ("wanted", "name", "path", "named"),
    [
        ("json.dumps", "dumps", "json/__init__.py", True),
        ("inspect.getsourcelines", "getsourcelines", "inspect.py", True),
        ("inspect.getsourcelines", "Debugger._getsourcelines", "pdb.py", False),
        ("httpresponse._read_chunked", "HTTPResponse._read_chunked", "http/client.py", True),
        ("client.httpresponse", "HTTPResponse", "http/client.py", True),
        ("_read_chunked", "HTTPResponse._read_chunked", "http/client.py", True),
        ("read_chunked", "HTTPResponse._read_chunked", "http/client.py", False),
        ("parse_qsl", "", "urllib/parse.py", False),
        ("checkout.spec.ts", "describe", "web/tests/checkout.spec.ts", True),
        ("router.py", "", "app/router.py", True),
        ("router.py", "route", "app/other.py", False),
    ],
)
def test_a_chunk_named_as_the_question_spells_it(
    wanted: str, name: str, path: str, named: bool
) -> None:
    assert names_identifier(frozenset({wanted}), name, path) is named


def test_a_test_is_never_the_confident_answer_to_a_question_about_the_code(
    tmp_path: Path,
) -> None:
    """When only a test holds the question's words (the code it tests is not ingested), it
    comes first, weak: a question that does not ask for tests asks for the code."""
    vault = tmp_path / "vault"
    init_vault(vault, settings_at(vault))
    repo = tmp_path / "shell"
    (repo / "tests").mkdir(parents=True)
    (repo / "tests" / "test_words.py").write_text(
        "def test_split_words():\n"
        '    """Split a shell command line into words, respecting quotes."""\n'
        '    assert split_words("a \'b c\'") == ["a", "b c"]\n',
        encoding="utf-8",
    )
    git(repo, "init", "-q")
    question = "where do we split a shell command line into words"
    with Store.open(settings_at(vault)) as opened:
        opened.ingest(repo, "shell")
        hits = [
            h
            for h in opened.search(question, workspace="shell", k=5, catch_up=False).hits
            if h.kind == "code"
        ]
    assert hits[0].path.startswith("tests/test_words.py:")
    assert hits[0].weak
