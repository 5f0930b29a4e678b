"""A helper process (index/parts.py) that answered but does not exit is waited for within a
bound, then killed and counted as failed (its share is the caller's to do): a build or a
segment merge never waits for it for ever."""

from __future__ import annotations

import time

import pytest

from memstore.index import parts

# Answers its work, then lingers (a helper stuck in its exit, or in anything after its answer).
LINGERS = (
    "import pickle, sys, time; pickle.load(sys.stdin.buffer); "
    "sys.stdout.buffer.write(pickle.dumps('segment')); sys.stdout.flush(); time.sleep(300)"
)


def test_a_helper_that_answers_and_lingers_is_killed_and_failed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(parts, "EXIT_WAIT_S", 0.5)
    helper = parts.Helper.start(LINGERS, [("job",)])
    assert helper is not None
    try:
        assert helper.receive() == "segment"
        started = time.monotonic()
        assert not helper.succeeded()
        assert time.monotonic() - started < 30
        assert helper._process.poll() is not None  # killed and reaped
    finally:
        helper.stop()


def test_a_helper_that_answers_and_exits_succeeded() -> None:
    helper = parts.Helper.start(LINGERS.replace("time.sleep(300)", "pass"), [("job",)])
    assert helper is not None
    try:
        assert helper.receive() == "segment" and helper.succeeded()
    finally:
        helper.stop()
