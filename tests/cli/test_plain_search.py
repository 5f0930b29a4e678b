"""A search without a daemon (the launcher's one-shot path, scored without numpy) prints what
the numpy-scored path prints: the same ids, order and scores, text and --json, over a
generated vault and queries with common, rare, missing and misspelled words, in every
workspace and in one."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from memstore.core.config import Settings
from memstore.index import scoring
from memstore.ops import lean
from memstore.ops.client import Request
from memstore.service.store import Store
from tests.service.test_curation_scale import large_vault

QUERIES = [
    "postgres connection pool timeout",  # common words, all held
    "deploy pipeline rollback",
    "redis cache eviction",
    "why does the checkout fail?",  # a question
    "kafka consumer lag",
    "terraform state lock",
    "nginx upload limit 413",
    "auth token refresh",
    "postgress conection",  # misspelled: stand-ins
    "kafak",
    "zzqxv unheardof",  # held by nobody
    "billing invoice retry webshop",
    "pgbouncer transaction mode",  # rarer words
    "café naïve",  # accents
    "the",  # a function word only
    "src/cart/parse_user.py",  # a path: entities
]


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A vault of 1,500 generated memories, indexed, and its workspaces."""
    root = large_vault(tmp_path_factory.mktemp("plain") / "vault", 1500)
    with Store.open(Settings(vault=root, source="t", session="t", host="t")) as store:
        workspaces = store.workspaces()
    return root, workspaces


def _search(opener: lean.OpenStore, vault: Path, argv: list[str]) -> tuple[int | None, str]:
    env = {**os.environ, "MEMSTORE_NO_DAEMON": "1", "HOME": str(vault.parent)}
    request = Request("search", [*argv, "--vault", str(vault)], str(vault.parent), env)
    reply = lean.run_search(request, opener)
    return reply.status, reply.stdout


@pytest.mark.parametrize("query", QUERIES)
def test_a_one_shot_search_prints_what_the_numpy_scored_search_prints(
    generated: tuple[Path, list[str]], query: str
) -> None:
    vault, workspaces = generated
    assert len(workspaces) > 2
    plain_readers: list[bool] = []

    @contextmanager
    def one_shot(settings: Settings, create: bool) -> Iterator[Store]:
        with lean.open_one_shot(settings, create) as store:
            yield store
            plain_readers.append(store.indexer.search.reader._postings.plain)

    for options in (["-k", "10"], ["--json", "-k", "20"], ["--json", "-w", workspaces[1]]):
        arrays = _search(lean.open_in_process, vault, [query, *options])
        plain = _search(one_shot, vault, [query, *options])
        assert plain_readers.pop()  # scored without numpy
        assert not scoring.PLAIN  # only that store's reader: the process goes on as before
        assert plain == arrays


def test_plain_and_numpy_stores_return_the_same_hits_and_scores(
    generated: tuple[Path, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    vault, workspaces = generated
    settings = Settings(vault=vault, source="t", session="t", host="t")
    results = []
    for plain in (False, True):
        monkeypatch.setattr(scoring, "PLAIN", plain)
        with Store.open(settings) as store:
            assert store.indexer.search.reader._postings.plain is plain
            results.append(
                [
                    store.search(query, workspace=workspace, k=25)
                    for query in QUERIES
                    for workspace in (None, *workspaces[:3])
                ]
            )
    assert results[0] == results[1]
    assert sum(len(result.hits) for result in results[0]) > 100  # it did find things
