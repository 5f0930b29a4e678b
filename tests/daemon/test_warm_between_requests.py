"""The daemon's background warm-up steps run between requests, never beside one (issue 39:
first recalls as fast as later ones)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memstore.daemon.server import Daemon
from memstore.daemon.warm import Turns
from memstore.index import SearchIndex
from memstore.service.store import Store
from tests.conftest import settings_at


class _OwnedLock:
    """A lock that knows which thread holds it (the daemon's request lock, observed)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.owner: int | None = None

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        taken = self._lock.acquire(blocking, timeout)
        if taken:
            self.owner = threading.get_ident()
        return taken

    def release(self) -> None:
        self.owner = None
        self._lock.release()

    def locked(self) -> bool:
        return self._lock.locked()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def test_each_warm_step_holds_the_request_lock(vault: Path, monkeypatch: pytest.MonkeyPatch):
    held_by_the_step: list[bool] = []

    def steps(index: Any) -> Iterator[None]:  # SearchIndex.warm_steps, observed
        for _ in range(3):
            held_by_the_step.append(daemon._serving.owner == threading.get_ident())
            yield

    monkeypatch.setattr(SearchIndex, "warm_steps", steps)
    with Store.open(settings_at(vault)) as store:
        store.add("the upload limit is 10 MB behind nginx", workspace="global")
        daemon = Daemon(store, idle_exit=0)
        daemon._serving = _OwnedLock()  # type: ignore[assignment]
        daemon._turns = Turns(daemon._serving, time.monotonic)  # type: ignore[arg-type]
        daemon._warm()
        assert held_by_the_step == [True, True, True]  # a request waits for one step at most
        assert not daemon._serving.locked()
