"""`memstore eval` honours MEMSTORE_SEMANTIC: recall runs with the views the setting names, and
the report says which ran (the model tests need the `semantic` extra; make test installs it)."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from memstore.catalog import semantic
from memstore.cli.evaluation import DEFAULT_FIXTURE, evaluate, load_fixture, views_run
from memstore.core.config import SEMANTIC_ON
from tests.conftest import EXE

needs_model = pytest.mark.skipif(not semantic.is_installed(), reason="the semantic extra")


def test_the_report_names_the_views_the_setting_runs() -> None:
    assert views_run("") == ["lexical", "any-word", "entity"]
    assert views_run(SEMANTIC_ON) == ["lexical", "any-word", "entity", "semantic"]
    assert views_run("/models/potion")[-1] == "semantic (/models/potion)"


def test_eval_without_the_setting_runs_no_vector_and_says_so() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTORE_SEMANTIC")}
    done = subprocess.run([str(EXE), "eval"], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "views: lexical, any-word, entity (semantic off)"
    assert "semantic" not in done.stdout.split("first hit found by:")[1]


@needs_model
def test_eval_with_the_setting_on_ranks_with_the_vectors_too() -> None:
    done = subprocess.run(
        [str(EXE), "eval", "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "MEMSTORE_SEMANTIC": "on"},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["views_run"] == ["lexical", "any-word", "entity", "semantic"]
    # the vectors found hits the lexical views found too: recall really ran them
    assert any("semantic" in view for view in data["first_hit_views"])


def test_an_unknown_setting_is_refused_in_one_line() -> None:
    done = subprocess.run(
        [str(EXE), "eval"],
        capture_output=True,
        text=True,
        env={**os.environ, "MEMSTORE_SEMANTIC": "maybe"},
        timeout=300,
    )
    assert done.returncode != 0
    assert "MEMSTORE_SEMANTIC is 'maybe'; set it to on or off" in done.stderr


def test_evaluate_keeps_lexical_figures_when_off() -> None:
    report = evaluate(load_fixture(DEFAULT_FIXTURE), semantic="")
    assert report.views_run == ["lexical", "any-word", "entity"]
    assert all("semantic" not in view for view in report.first_hit_views)
