"""A change that only added a memory's file carries no diff of its own in the view's data
(`added`: the memory's id): the page draws it from the memory's front matter and text,
which were scanned and masked already. In a real browser, that drawn diff must read exactly
as git's diff of the commit would (as the view shows diffs it reads), and hold no credential.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memstore.core.secrets import find_secrets
from memstore.ops.view_page import page_data
from memstore.service.view_history import DIFF_LINES, _body
from memstore.vault.git_walk import read_diffs
from tests.browser import Browser, find_chromium
from tests.cli import test_view_browser as base
from tests.conftest import git, invoke_memstore

pytestmark = pytest.mark.skipif(
    find_chromium() is None,
    reason="chromium is not installed (.ci/run installs it with apt-get where it runs as root)",
)
chromium, browser = base.chromium, base.browser
LONG = "\n".join(
    f"step {n}: run the migration for shard {n} and check its row count" for n in range(50)
)


def _hand_commit(vault: Path, name: str, data: bytes) -> None:
    (vault / "webshop" / name).write_bytes(data)
    git(vault, "add", "-A")
    git(vault, "-c", "user.name=Maria", "-c", "user.email=m@example.org", "commit", "-qm", name)


def build(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    vault = tmp_path / "vault"
    assert invoke_memstore("init", str(vault)).returncode == 0
    agent = {"session": "s1", "source": "codex", "host": "desk"}
    ids = {
        "short": base._add(vault, "Run make check before every push", "-w", "webshop", **agent),
        "long": base._add(vault, LONG, "-w", "webshop", "-K", "migration", **agent),
        "secret": base._add(
            vault, f"The bot posts with {base.SLACK}", "-w", "webshop", "--allow-secret", **agent
        ),
        "changed": base._add(vault, "The cache lives for ten minutes", "-w", "api", **agent),
    }
    done = invoke_memstore("confirm", ids["changed"], vault=vault)
    assert done.returncode == 0, done.stderr
    _hand_commit(vault, "no-newline.md", b"A note a person wrote, with no newline at its end")
    _hand_commit(vault, "crlf.md", b"Lines a person wrote on Windows\r\nthe second one\r\n")
    return vault, ids


def git_diff(vault: Path, commit: str) -> str:
    """The change's diff as the view shows one it reads from git."""
    full = git(vault, "rev-parse", commit).strip()
    return _body(read_diffs(vault, [full], max_lines=DIFF_LINES)[full])


def drawn_diffs(browser: Browser, changes: list[dict[str, Any]]) -> dict[int, str]:
    """Open every change of the timeline and return the diff the page drew for each."""
    browser.evaluate("document.querySelectorAll('details.change').forEach(d => d.open = true)")
    shown = browser.evaluate(
        "Object.fromEntries([...document.querySelectorAll('details.change')].map(d =>"
        " [d.dataset.change, d.querySelector('pre.diff')?.textContent ?? null]))"
    )
    assert len(shown) == len(changes)
    return {int(k): v for k, v in shown.items()}


def test_a_change_that_added_a_file_is_drawn_as_gits_diff_of_it(
    browser: Browser, tmp_path: Path
) -> None:
    vault, ids = build(tmp_path)
    page = tmp_path / "view.html"
    done = invoke_memstore("view", "-o", str(page), vault=vault)
    assert done.returncode == 0, done.stderr
    html = page.read_text(encoding="utf-8")
    assert base.SLACK not in html and find_secrets(html) == []
    data = page_data(html)
    changes = data["changes"]
    by_id = {m["id"]: m for m in data["memories"]}
    drawn = {c["added"]: c for c in changes if c.get("added")}
    paths = {by_id[i]["path"] for i in drawn}
    # drawn: the unchanged adds and the hand-written file without a final newline
    assert {ids["short"], ids["long"], ids["secret"]} <= set(drawn)
    assert "webshop/no-newline.md" in paths
    # read from git: the add of a file changed since, and a file git holds with CRLF
    assert ids["changed"] not in drawn and "webshop/crlf.md" not in paths
    assert all(c["diff"] == "" for c in drawn.values())
    browser.load(page.as_uri())
    shown = drawn_diffs(browser, changes)
    for number, change in enumerate(changes):
        text = shown[number]
        assert text is not None, change
        if change.get("added") == ids["secret"]:
            assert base.SLACK not in text and "[secret: " in text and find_secrets(text) == []
            continue
        expected = git_diff(vault, change["commit"]) if change.get("added") else change["diff"]
        assert text == expected + "\n", (change, text, expected)
    long_diff = shown[changes.index(drawn[ids["long"]])]
    assert long_diff.rstrip("\n").endswith("more lines")  # cut as git's diffs are
    assert (
        "\\ No newline at end of file"
        in shown[
            next(
                n for n, c in enumerate(changes) if c.get("added") and "no-newline" in c["subject"]
            )
        ]
    )
    assert browser.errors() == []
