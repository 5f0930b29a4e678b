"""The page's side of fixes from a new user's trial of `memstore view` (issue 41), in a real
browser: no undo offered beside a sync merge, no "Show 0 more" button."""

from __future__ import annotations

import pytest

from tests.browser import find_chromium
from tests.cli import test_view_browser as base
from tests.ops.view_synthetic import synthetic_view

pytestmark = pytest.mark.skipif(
    find_chromium() is None,
    reason="chromium is not installed (.ci/run installs it with apt-get where it runs as root)",
)
browser = base.browser
NO_UNDO = "sync merges are not undone by revert"


def test_a_session_holding_a_merge_shows_why_no_undo_is_offered(
    browser: base.Browser, tmp_path: base.Path
) -> None:
    data = synthetic_view(200)
    merged = data["sessions"][0]
    merged["undo"], merged["no_undo"] = "", NO_UNDO
    browser.load(base.write_page(tmp_path, data).as_uri())
    name = merged["session"]
    head = browser.evaluate(
        f"document.querySelector('.session[data-session=\"{name}\"]').textContent"
    )
    assert NO_UNDO in head and "memstore revert" not in head
    others = base.texts(browser, ".session[data-session] code.cmd")
    assert others and all(c.startswith("memstore revert --session s") for c in others)
    assert not any(name == c.rsplit(" ", 1)[-1] for c in others)
