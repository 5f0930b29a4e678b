"""Irregular verb forms read as their base verb (index/inflections.py): "when did the build
break?" finds "the build broke", in memories and in an index of the format before; and
every pronoun is a stop word."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import pytest
from whoosh.lang.porter2 import stem

from memstore.catalog.memory_manifest import FORMAT
from memstore.index import analysis, query
from memstore.index.analysis import make_analyzer, make_chain, query_terms
from memstore.index.inflections import IRREGULAR, base_form
from memstore.service.store import Store
from tests.conftest import settings_at


def terms(text: str) -> list[str]:
    return query_terms(make_analyzer(), text)


@pytest.mark.parametrize(
    ("form", "verb"),
    [
        ("took", "take"),
        ("taken", "take"),
        ("broke", "break"),
        ("broken", "break"),
        ("built", "build"),
        ("wrote", "write"),
        ("written", "write"),
        ("went", "go"),
        ("ran", "run"),
        ("bought", "buy"),
        ("rebuilt", "rebuild"),
        ("overridden", "override"),
    ],
)
def test_an_irregular_form_is_the_term_of_its_verb(form: str, verb: str) -> None:
    assert base_form(form) == verb
    assert terms(form) == terms(verb)
    # the cached analyzer and the chain it stands for agree (a word through either)
    chained = [t.text for t in make_chain()(form.capitalize(), mode="index")]
    assert chained == terms(form)


@pytest.mark.parametrize(
    "word", ["bit", "bound", "left", "made", "shot", "ground", "stuck", "found"]
)
def test_forms_that_are_common_words_of_their_own_are_kept(word: str) -> None:
    # 64-bit, upper bound, the left panel, `make`, a screenshot: the verb would cost more
    assert word not in IRREGULAR
    assert base_form(word) == word


def test_stop_words_are_dropped_before_forms_are_read() -> None:
    assert terms("was were been had did") == []
    assert terms("It went down") == terms("go down")


def test_no_form_is_a_base_verb_of_another_group() -> None:
    # a form that is itself a base verb would join two verbs ("lay" → lie would swallow the
    # verb "lay"): each form reads as one verb
    assert not set(IRREGULAR) & set(IRREGULAR.values())


def test_a_question_in_the_base_form_finds_a_memory_in_the_past(tmp_path: Path) -> None:
    with Store.open(settings_at(tmp_path / "vault"), create=True) as store:
        store.add("The nightly build broke after we bumped webpack to 5.90", workspace="w")
        store.add("Nightly build: cache node_modules between jobs", workspace="w")
        store.add("We wrote the rollback steps down in RUNBOOK.md", workspace="w")
        found = store.search("when did the nightly build break?", workspace="w", k=5).hits
        assert found[0].content.startswith("The nightly build broke")
        assert found[0].view == "lexical"  # every word held: the all-words view found it
        found = store.search("where did we write the rollback steps", workspace="w", k=5).hits
        assert found[0].content.startswith("We wrote the rollback")


def test_an_index_of_the_format_before_is_rebuilt_with_base_verbs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault = tmp_path / "vault"
    with monkeypatch.context() as before:  # the analysis of format 9: porter2 alone
        before.setattr(analysis, "lemma_stem", stem)
        with Store.open(settings_at(vault), create=True) as store:
            store.add("Deploy froze for 20 minutes while terraform held the lock", workspace="w")
            assert store.search("deploy freeze", workspace="w", k=5).hits[0].view == "any-word"
    query._analyzer.cache_clear()  # words the patched analysis read are not kept
    query._parse.cache_clear()
    manifest = vault / ".memstore" / "index" / "manifest.sqlite"
    with contextlib.closing(sqlite3.connect(manifest)) as db, db:
        db.execute("UPDATE meta SET value = '9' WHERE name = 'format'")  # before inflections
    assert FORMAT != "9"
    with Store.open(settings_at(vault)) as store:
        found = store.search("why does the deploy freeze", workspace="w", k=5).hits
        assert [h.view for h in found] == ["lexical"]
    with contextlib.closing(sqlite3.connect(manifest)) as db:
        assert db.execute("SELECT value FROM meta WHERE name = 'format'").fetchone() == (FORMAT,)


def test_every_pronoun_is_a_stop_word() -> None:
    # "her" and "his" were terms: "what did Melanie and her family do" ranked every "her"
    assert terms("her family, his car, ask him, by herself, yours or theirs") == [
        "famili",
        "car",
        "ask",
    ]
