"""Code words, issue 38: a question's word matches the word code uses for it (discard →
`delete`, released → `unlock`), and a first hit with a near-copy of its name the question
does not tell apart is not confident."""

from __future__ import annotations

from pathlib import Path

import pytest

from memstore.catalog import code_evidence, code_hits, code_words
from memstore.catalog.code_evidence import read_question, weigh
from memstore.core.model import Hit
from memstore.service.store import Store, init_vault
from tests.conftest import git, settings_at

CACHE = '''"""A cache of entries on disk."""

import json
import os


def load_cache(path):
    """Read the cache entries from the file at path."""
    with open(path) as f:
        return json.load(f)


def cache_size(entries):
    """Count the cache entries and their bytes."""
    return len(entries), sum(len(str(e)) for e in entries)


def delete_cache(path):
    """Empty the cache: its file is gone afterwards."""
    os.remove(path)
'''

# Where a user's cache folder is, once per platform: near-copies of one name in two files.
WINDOWS = '''"""Folders on Windows."""

import os


def user_cache_dir():
    """Return the user's cache folder."""
    return os.path.join(os.environ["LOCALAPPDATA"], "cache")
'''
UNIX = WINDOWS.replace("Windows", "Unix").replace("the user's cache", "the cache")
DIRS = {"windows.py": WINDOWS, "unix.py": UNIX}


def _store(tmp_path: Path, files: dict[str, str]) -> Store:
    vault = tmp_path / "vault"
    init_vault(vault, settings_at(vault))
    repo = tmp_path / "tools"
    repo.mkdir()
    for name, text in files.items():
        (repo / name).write_text(text, encoding="utf-8")
    git(repo, "init", "-q")
    opened = Store.open(settings_at(vault))
    opened.ingest(repo, "tools")
    return opened


def code(store: Store, question: str) -> list[Hit]:
    hits = store.search(question, workspace="tools", k=5, catch_up=False).hits
    return [h for h in hits if h.kind == "code"]


def name_of(hit: Hit) -> str:
    return hit.content.partition("\n")[0].rpartition(" ")[2]


@pytest.fixture
def no_code_words(monkeypatch: pytest.MonkeyPatch) -> None:
    """The thesaurus emptied (every cache that read it forgotten): the old behaviour."""
    monkeypatch.setattr(code_words, "_GROUPS", [])
    for cached in (code_words._by_term, code_evidence._name_match, code_evidence._around):
        cached.cache_clear()
    yield
    for cached in (code_words._by_term, code_evidence._name_match, code_evidence._around):
        cached.cache_clear()


DISCARDED = "where do we discard the cache file"


def test_alternatives_are_read_from_the_question_s_terms() -> None:
    question = read_question("the lock is released", {}, 100)
    others = dict(zip((t for t, _ in question.terms), question.others, strict=True))
    assert "unlock" in others["releas"]
    assert others["lock"] == ()  # a word of no group has none
    assert "unlock" in code_words.alternatives("releas")
    assert "releas" not in code_words.alternatives("zebra")


def test_a_stop_word_in_a_group_stands_for_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(code_words, "_GROUPS", ["release unlock the"])
    code_words._by_term.cache_clear()
    try:
        assert code_words.alternatives("releas") == ("unlock",)
        read_question("the lock is released", {}, 100)  # no word without a term to read
    finally:
        code_words._by_term.cache_clear()


def test_a_name_made_of_a_word_code_uses_for_the_question_s_matches_it() -> None:
    question = read_question("how is a lock file released", {}, 100)
    unlock = weigh(question, "unlock_file", "locks.py")
    assert unlock.named == weigh(question, "lock_file", "locks.py").named > 0
    assert unlock.exact == 1.0
    assert weigh(question, "delete_file", "locks.py").exact == 0.5


def test_the_function_that_deletes_is_confident_for_discard(tmp_path: Path) -> None:
    with _store(tmp_path, {"cache.py": CACHE}) as store:
        hits = code(store, DISCARDED)
    assert name_of(hits[0]) == "delete_cache"
    assert not hits[0].weak


def test_without_the_code_words_it_was_first_but_weak(tmp_path: Path, no_code_words: None) -> None:
    with _store(tmp_path, {"cache.py": CACHE}) as store:
        hits = code(store, DISCARDED)
    assert name_of(hits[0]) == "delete_cache"
    assert hits[0].weak


TWINS = "where is the user's cache folder"


def test_a_near_copy_the_question_does_not_tell_apart_is_not_confident(tmp_path: Path) -> None:
    with _store(tmp_path, DIRS) as store:
        hits = code(store, TWINS)
    assert name_of(hits[0]) == "user_cache_dir"
    assert all(h.weak for h in hits)


def test_without_the_twin_rule_one_of_the_copies_was_confident(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(code_hits, "CONFIDENT_TWIN_MARGIN", -1e9)  # no candidate is a twin
    with _store(tmp_path, DIRS) as store:
        hits = code(store, TWINS)
    assert not hits[0].weak


def test_the_question_naming_the_copy_s_file_puts_it_first(tmp_path: Path) -> None:
    with _store(tmp_path, DIRS) as store:
        hits = code(store, "where is the user's cache folder chosen on unix")
    assert hits[0].path.startswith("unix.py:")
