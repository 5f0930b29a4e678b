"""Code hits, issue 38: the module nearer the tree's root first when a deeper one holds a copy
of it, and the first hit's lead judged by what the question explains of its name."""

from __future__ import annotations

from pathlib import Path

import pytest

from memstore.catalog import code_hits, code_rerank
from memstore.catalog.code_evidence import Evidence
from memstore.catalog.code_hits import Lead, _is_confident
from memstore.core.model import Hit
from memstore.service.store import Store, init_vault
from tests.conftest import git, settings_at

ARCHIVE = '''"""Archives of a folder."""

import tarfile
import zipfile


def make_archive(base_name, format, root_dir):
    """Create a zip or tar archive of the directory root_dir; return its name."""
    if format == "zip":
        with zipfile.ZipFile(base_name + ".zip", "w") as archive:
            archive.write(root_dir)
        return base_name + ".zip"
    with tarfile.open(base_name + ".tar", "w") as archive:
        archive.add(root_dir)
    return base_name + ".tar"
'''

# the same function copied into a legacy package, its docstring saying "archive" and "directory" again
LEGACY = ARCHIVE.replace("return its name", "the archive of a directory")

SHELL = '''"""Shell words."""


def split_words(line):
    """Split a shell command line into words, respecting quotes."""
    return line.split()


def quote_word(word):
    """Quote one word for a shell command line."""
    return "'" + word + "'"
'''


@pytest.fixture
def store(tmp_path: Path) -> Store:
    vault = tmp_path / "vault"
    init_vault(vault, settings_at(vault))
    repo = tmp_path / "tools"
    files = {
        "archive.py": ARCHIVE,
        "legacy/packaging/archive_util.py": LEGACY,
        "shell.py": SHELL,
    }
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text, encoding="utf-8")
    git(repo, "init", "-q")
    opened = Store.open(settings_at(vault))
    opened.ingest(repo, "tools")
    return opened


def code(store: Store, question: str) -> list[Hit]:
    hits = store.search(question, workspace="tools", k=5, catch_up=False).hits
    return [h for h in hits if h.kind == "code"]


QUESTION = "where do we create a zip or tar archive of a directory"


def test_the_module_nearer_the_root_comes_before_a_deeper_copy(store: Store) -> None:
    with store:
        hits = code(store, QUESTION)
    assert hits[0].path.startswith("archive.py:")


def test_without_the_depth_term_the_deeper_copy_came_first(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The case above is decided by the depth terms (RANK_DEPTH, and code_rerank's
    RERANK_DEPTH for a weak first hit): the legacy copy's docstring repeats the words."""
    monkeypatch.setattr(code_hits, "RANK_DEPTH", 0.0)
    monkeypatch.setattr(code_rerank, "RERANK_DEPTH", 0.0)
    with store:
        hits = code(store, QUESTION)
    assert hits[0].path.startswith("legacy/packaging/archive_util.py:")


def lead(
    named: float,
    exact: float,
    held: float,
    margin: float,
    *,
    words: int = 3,
    name_lead: float = -0.1,
    container: bool = False,
) -> Lead:
    """A first hit's lead; by default another candidate's name matches the question better
    (`name_lead` < 0), so only the margin clauses can make it confident."""
    return Lead(
        evidence=Evidence(named=named, exact=exact, context=0.0),
        held=held,
        margin=margin,
        sibling_lead=0.0,
        elsewhere=margin,
        words=words,
        name_lead=name_lead,
        container=container,
    )


def test_a_name_the_question_explains_whole_needs_a_smaller_lead() -> None:
    between = (code_hits.CONFIDENT_WHOLE_MARGIN + code_hits.CONFIDENT_MARGIN) / 2
    assert _is_confident(lead(named=0.3, exact=1.0, held=0.9, margin=between))
    # a part of its name the question does not explain ("custom_", "_only"): a sibling
    assert not _is_confident(lead(named=0.3, exact=0.75, held=0.9, margin=between))
    # and a whole name still has to lead
    assert not _is_confident(lead(named=0.3, exact=1.0, held=0.9, margin=0.05))


def test_a_hit_holding_half_the_question_far_ahead_is_confident_whatever_its_name() -> None:
    far = code_hits.CONFIDENT_FAR_MARGIN
    assert _is_confident(lead(named=0.0, exact=0.0, held=0.6, margin=far))
    assert not _is_confident(lead(named=0.0, exact=0.0, held=0.6, margin=far - 0.1))
    short = code_hits.CONFIDENT_HELD - 0.05  # holding less of the question than it must
    assert not _is_confident(lead(named=0.0, exact=0.0, held=short, margin=far + 0.5))


def test_one_word_held_is_no_evidence() -> None:
    """Issue 38's false confidence: a question of which the code knows one word ("thanks,
    that worked!") holds all of its known weight in any chunk holding that word."""
    far = code_hits.CONFIDENT_FAR_MARGIN + 0.5
    assert not _is_confident(lead(named=0.0, exact=0.0, held=1.0, margin=far, words=1))
    assert _is_confident(lead(named=0.0, exact=0.0, held=1.0, margin=far, words=2))
    named = {"named": 0.6, "exact": 1.0, "held": 1.0, "margin": far, "name_lead": 0.3}
    assert not _is_confident(lead(**named, words=1))
    assert _is_confident(lead(**named, words=2))


def test_a_name_no_other_candidate_matches_better_is_confident_when_its_file_leads() -> None:
    elsewhere = code_hits.CONFIDENT_NAME_ELSEWHERE
    # a small lead, a name matching a small share: confident only as the best name there is
    assert _is_confident(lead(named=0.2, exact=0.5, held=0.7, margin=elsewhere, name_lead=0.0))
    assert not _is_confident(
        lead(named=0.2, exact=0.5, held=0.7, margin=elsewhere, name_lead=-0.01)
    )
    assert not _is_confident(lead(named=0.2, exact=0.5, held=0.7, margin=0.0, name_lead=0.1))
    assert not _is_confident(lead(named=0.0, exact=0.0, held=0.7, margin=elsewhere, name_lead=0.0))
    short = code_hits.CONFIDENT_HELD - 0.05
    assert not _is_confident(
        lead(named=0.2, exact=0.5, held=short, margin=elsewhere, name_lead=0.1)
    )


def test_a_class_is_not_confident_when_a_function_of_another_name_matches_clearly_better() -> None:
    """`Emoji` first for "replace :smile: style emoji codes" while `_emoji_replace` is named
    so: the class holds the words, the function does what is asked."""
    strong = {"named": 0.3, "exact": 1.0, "held": 1.0, "margin": 0.6}
    worse = code_hits.CONFIDENT_CONTAINER_NAME_LEAD - 0.05
    assert not _is_confident(lead(**strong, name_lead=worse, container=True))
    assert _is_confident(lead(**strong, name_lead=worse, container=False))
    assert _is_confident(lead(**strong, name_lead=0.0, container=True))


def test_the_function_whose_name_the_question_explains_is_confident(store: Store) -> None:
    with store:
        hits = code(store, "where do we split a shell command line into words")
    assert hits[0].content.split("\n", 1)[0].endswith("function split_words")
    assert not hits[0].weak
    assert all(h.weak for h in hits[1:])


@pytest.mark.parametrize(
    "question",
    ["where do we resize uploaded images into thumbnails", "make me a sandwich"],
)
def test_off_corpus_questions_stay_silent(store: Store, question: str) -> None:
    with store:
        assert all(h.weak for h in code(store, question))


EXCEPTIONS = '''"""Exceptions as text."""


def format_exception_only(exc):
    """Format an exception: the exception type and the exception message."""
    return [f"{type(exc).__name__}: {exc}\\n"]


def format_exception(exc, tb):
    """The traceback's lines, then the last line."""
    return format_tb(tb) + format_exception_only(exc)


def format_tb(tb):
    """The traceback's frames as strings."""
    return [str(frame) for frame in tb]
'''


def _first_name(
    tmp_path: Path, question: str, source: str = EXCEPTIONS, file: str = "exceptions.py"
) -> str:
    vault = tmp_path / "vault"
    init_vault(vault, settings_at(vault))
    repo = tmp_path / "tools"
    repo.mkdir()
    (repo / file).write_text(source, encoding="utf-8")
    git(repo, "init", "-q")
    with Store.open(settings_at(vault)) as opened:
        opened.ingest(repo, "tools")
        return code(opened, question)[0].content.partition("\n")[0].rpartition(" ")[2]


def test_the_name_without_a_part_the_question_does_not_explain_comes_first(
    tmp_path: Path,
) -> None:
    """`format_exception` before `format_exception_only` for "format an exception": "only"
    names a variant the question does not ask for."""
    assert _first_name(tmp_path, "where do we format an exception") == "format_exception"


def test_without_the_shorter_name_rule_the_variant_came_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(code_hits, "SHORTER_SLACK", -1.0)
    # (the reranking of weak hits, code_rerank.py, puts format_exception first as well)
    monkeypatch.setattr(code_hits, "_reranked", lambda rows, *_: rows)
    assert _first_name(tmp_path, "where do we format an exception") == "format_exception_only"


BODIES = '''"""Response bodies."""


def read(response, amount=None):
    """Read the response body, or amount bytes of it."""
    if response.chunked:
        return read_chunked(response, amount)
    return response.fp.read(amount)


def read_chunked(response, amount=None):
    """Bytes sent in pieces, each after its length."""
    parts = []
    while (size := int(response.fp.readline(), 16)) > 0:
        parts.append(response.fp.read(size))
    return b"".join(parts)


def close(response):
    """Close the response."""
    response.fp.close()
'''
CHUNKED = "how do we read a chunked response body"


def test_the_name_with_the_question_s_further_word_comes_first(tmp_path: Path) -> None:
    """`read_chunked` before `read` for "read a chunked body": the first's name and a part
    the question explains."""
    assert _first_name(tmp_path, CHUNKED, BODIES, "body.py") == "read_chunked"


def test_without_the_longer_name_rule_the_plain_name_came_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(code_hits, "LONGER_SLACK", -1.0)
    assert _first_name(tmp_path, CHUNKED, BODIES, "body.py") == "read"
