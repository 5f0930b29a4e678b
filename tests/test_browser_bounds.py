"""The browser tests' driver (tests/browser.py) waits for chromium within a bound: a chromium
that starts but never answers on its pipe fails the test with "did not answer in time", where
a bare read of the pipe waited for ever (a first start on a fresh machine, a child of it
holding the pipe open)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.browser import Browser, BrowserError


def test_a_chromium_that_never_answers_fails_in_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tools = tmp_path / "bin"
    tools.mkdir()
    silent = tools / "chromium"
    silent.write_text("#!/bin/sh\necho starting >&2\nexec sleep 300\n", encoding="utf-8")
    silent.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
    started = time.monotonic()
    with pytest.raises(BrowserError, match="did not answer in time") as raised:
        Browser(tmp_path / "profile", answer_s=1)
    assert time.monotonic() - started < 60
    assert "starting" in str(raised.value)  # its log's end, to tell why
