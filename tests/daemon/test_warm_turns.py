"""Requests before the warm-up (memstore/daemon/warm.py, issue 39): a warm-up step starts only
while no request wants the store and none did for a moment; a request never waits for more
than the one step under way."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from memstore.daemon import warm
from memstore.daemon.server import Daemon
from memstore.daemon.warm import Turns
from memstore.service.store import Store
from tests.conftest import settings_at, wait_until


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _stepper(turns: Turns, stop: threading.Event, ran: list[bool]) -> threading.Thread:
    def step() -> None:
        with turns.step(stop) as turn:
            ran.append(turn and turns.serving.locked())

    thread = threading.Thread(target=step, daemon=True)
    thread.start()
    return thread


def _waiting(turns: Turns) -> bool:
    return bool(turns._changed._waiters)  # type: ignore[attr-defined]


def test_a_step_waits_while_a_request_wants_the_store():
    clock = _Clock()
    turns, stop, ran = Turns(threading.Lock(), clock), threading.Event(), []
    with turns.request():  # waiting for the store, or holding it: the same to the warm-up
        thread = _stepper(turns, stop, ran)
        wait_until(lambda: _waiting(turns), 30, "the warm-up waiting")
        assert ran == [] and not turns.serving.locked()
        clock.now += 1.0  # long after: still a request's turn while it wants the store
        with turns._changed:
            turns._changed.notify_all()
        wait_until(lambda: _waiting(turns), 30, "the warm-up waiting")
        assert ran == []
    clock.now += warm.QUIET_S
    thread.join(timeout=30)
    assert ran == [True]  # after the request, holding the request lock
    assert not turns.serving.locked()


def test_a_step_waits_for_a_quiet_moment_after_a_request():
    clock = _Clock()
    turns, stop, ran = Turns(threading.Lock(), clock), threading.Event(), []
    with turns.request():
        pass  # a request just ended: the next of a burst may come at once
    thread = _stepper(turns, stop, ran)
    wait_until(lambda: _waiting(turns), 30, "the warm-up waiting")
    assert ran == []
    clock.now += warm.QUIET_S
    thread.join(timeout=30)
    assert ran == [True]


def test_a_request_holding_the_lock_uncounted_delays_the_step_and_stop_ends_it():
    lock = threading.Lock()
    turns, stop, ran = Turns(lock, _Clock()), threading.Event(), []
    lock.acquire()  # the heap's settle, or the daemon stopping
    thread = _stepper(turns, stop, ran)
    stop.set()
    thread.join(timeout=30)
    assert ran == [False]
    lock.release()


def test_warm_runs_each_step_in_a_turn_and_stops_when_asked(monkeypatch: Any):
    lock = threading.Lock()
    turns, stop = Turns(lock, _Clock()), threading.Event()
    held: list[bool] = []

    def steps(_store: object):
        for n in range(5):
            held.append(lock.locked())
            if n == 2:
                stop.set()
            yield

    monkeypatch.setattr(warm, "steps", steps)
    warm.warm(object(), turns, stop)  # type: ignore[arg-type]
    assert held == [True, True, True]  # the stop is seen before the fourth step
    assert not lock.locked()


def test_the_status_says_when_the_warm_up_is_done(vault: Path) -> None:
    with Store.open(settings_at(vault)) as store:
        store.add("the upload limit is 10 MB behind nginx", workspace="global", kind="core")
        daemon = Daemon(store, idle_exit=0)
        assert daemon.status()["warmed"] is False
        daemon._warm()  # no request: every step runs at once
        assert daemon.status()["warmed"] is True
        assert store.shared.core_cache  # the core block was read ahead
