"""The recall evaluation: the shipped fixture's figures are pinned, so every ranking change
is deliberate (a change that moves any number, up or down, must update this baseline)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from memstore.cli.evaluation import DEFAULT_FIXTURE, evaluate, load_fixture
from memstore.core.errors import InvalidInputError
from tests.conftest import EXE

# Measured with `memstore eval` on memstore/fixtures/recall-eval.json (77 memories, 119 queries).
BASELINE = {
    "recall_at_1": 1.0,
    "recall_at_3": 1.0,
    "recall_at_5": 1.0,
    "mrr_at_5": 1.0,
    "confident_correct_first": 0.8427,
    "off_corpus_empty": 0.0,
    "off_corpus_no_confident": 1.0,
}


@pytest.fixture(scope="module")
def report():  # type: ignore[no-untyped-def]
    return evaluate(load_fixture(DEFAULT_FIXTURE))


def test_the_shipped_fixture_is_big_and_varied_enough() -> None:
    fixture = load_fixture(DEFAULT_FIXTURE)
    assert len(fixture["corpus"]) >= 60 and len(fixture["queries"]) >= 80
    tags = {tag for q in fixture["queries"] for tag in q.get("tags", [])}
    assert {
        "paraphrase",
        "identifier",
        "inflection",
        "diacritics",
        "supersede",
        "distractor",
        "off-corpus",
    } <= tags
    assert any(m.get("supersedes") for m in fixture["corpus"])


def test_baseline_is_pinned(report) -> None:  # type: ignore[no-untyped-def]
    measured = {name: getattr(report, name) for name in BASELINE}
    assert measured == BASELINE


def test_targets_of_the_retrieval_issue_hold(report) -> None:  # type: ignore[no-untyped-def]
    assert report.recall_at_1 >= 0.85 and report.mrr_at_5 >= 0.90
    assert report.off_corpus_no_confident >= 0.90 and report.confident_correct_first >= 0.70


def test_eval_json_lists_each_querys_ranked_hits_with_tiers() -> None:
    done = subprocess.run([str(EXE), "eval", "--json"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["recall_at_1"] == BASELINE["recall_at_1"]
    query = data["queries"][0]
    assert {"id", "text", "relevant", "rank", "hits"} <= set(query)
    assert all(hit["tier"] in ("confident", "weak") and hit["view"] for hit in query["hits"])


def test_a_malformed_fixture_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    for text, message in (
        ("{not json", "cannot read fixture"),
        ('{"corpus": []}', "needs 'corpus' and 'queries'"),
        (
            '{"corpus": [{"id": "a", "content": "x", "supersedes": ["zz"]}], "queries": []}',
            "supersedes an id",
        ),
        (
            '{"corpus": [{"id": "a", "content": "x"}], "queries": [{"id": "q", "text": "x", "relevant": ["b"]}]}',
            "relevant ids",
        ),
    ):
        bad.write_text(text, encoding="utf-8")
        with pytest.raises(InvalidInputError, match=message):
            load_fixture(bad)
    done = subprocess.run(
        [str(EXE), "eval", "--fixture", str(bad)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1 and done.stderr.startswith("Error: ")
