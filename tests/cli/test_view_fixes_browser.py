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
chromium, browser = base.chromium, base.browser
NO_UNDO = "sync merges are not undone by revert"


def page_text(browser: base.Browser) -> str:
    """The text of every element the page drew (its script left out), hidden ones too."""
    return str(
        browser.evaluate(
            "[...document.body.children].filter(e => e.tagName !== 'SCRIPT')"
            ".map(e => e.textContent).join(' ')"
        )
    )


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


def test_no_more_button_is_left_once_every_row_is_shown(
    browser: base.Browser, tmp_path: base.Path
) -> None:
    browser.load(base.write_page(tmp_path, synthetic_view(400)).as_uri())
    for route in ("#health", "#search/deploy", "#timeline"):
        base.go(browser, route)
        assert "Show 0 more" not in page_text(browser), route
        buttons = base.texts(browser, "button.more")
        assert all(" 0 more" not in b and "(0 left)" not in b for b in buttons), route
    clicks = 0
    while base.count(browser, "#timeline-list button.more"):
        browser.evaluate("document.querySelector('#timeline-list button.more').click()")
        clicks += 1
    assert clicks >= 1  # the timeline had more than a page: its button went with the last one
    assert "0 left" not in page_text(browser)
