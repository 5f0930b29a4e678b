"""The warm-up before the daemon answers (memstore/daemon/warm.py `first`, issue 39: steady
recall from the first call): its steps run before the socket listens, up to a budget; what
they read is frozen out of the cycle collector's walks; steps left run behind requests."""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memstore.daemon import warm
from memstore.daemon.warm import Turns
from memstore.service.store import Store
from tests.conftest import settings_at
from tests.daemon.test_daemon import env, make_vault, start_daemon, status  # noqa: F401


class _Ticks:
    """A clock that moves one second each time it is read."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def _counted(ran: list[int], count: int):
    def steps(_store: object) -> Iterator[None]:
        for n in range(count):
            ran.append(n)
            yield

    return steps


@pytest.fixture
def thawed() -> Iterator[None]:
    yield
    gc.unfreeze()  # this test process's heap, frozen by `first`, as before the test


def test_first_runs_every_step_within_its_budget_and_freezes_the_heap(
    monkeypatch: Any, thawed: None
):
    ran: list[int] = []
    monkeypatch.setattr(warm, "steps", _counted(ran, 5))
    gc.unfreeze()
    left = warm.first(object(), threading.Event(), budget=60.0)  # type: ignore[arg-type]
    assert left is None and ran == [0, 1, 2, 3, 4]
    assert gc.get_freeze_count() > 0


def test_steps_past_the_budget_are_left_for_the_warm_up_behind_requests(
    monkeypatch: Any, thawed: None
):
    ran: list[int] = []
    monkeypatch.setattr(warm, "steps", _counted(ran, 6))
    left = warm.first(object(), threading.Event(), budget=2.5, clock=_Ticks())  # type: ignore[arg-type]
    assert left is not None and ran == [0, 1]  # deadline 3.5: the clock reads 2 and 3, then 4
    assert warm.warm(object(), Turns(threading.Lock(), time.monotonic), threading.Event(), left)  # type: ignore[arg-type]
    assert ran == [0, 1, 2, 3, 4, 5]  # each step once


def test_a_stop_before_it_answers_ends_the_warm_up(monkeypatch: Any, thawed: None):
    ran: list[int] = []
    monkeypatch.setattr(warm, "steps", _counted(ran, 3))
    stop = threading.Event()
    stop.set()
    left = warm.first(object(), stop)  # type: ignore[arg-type]
    assert left is not None and ran == []


def test_first_reads_the_searchers_core_block_and_typo_lexicon(vault: Path, thawed: None):
    with Store.open(settings_at(vault)) as store:
        store.add("the upload limit is 10 MB behind nginx", workspace="global", kind="core")
        store.add("deploys to staging need an approval in the release channel", workspace="infra")
        assert warm.first(store, threading.Event()) is None
        assert store.shared.core_cache  # the core block was read ahead
        assert store.indexer.search.reader.lexicon._runs  # each segment's terms for typo walks


def test_the_daemons_first_answer_comes_warmed(tmp_path: Path, env: dict[str, str]) -> None:  # noqa: F811
    vault = make_vault(tmp_path / "vault")
    start_daemon(env, vault)
    first = status(vault)
    assert first is not None and first["warmed"] is True  # warmed before it listened
