"""`memstore view`'s page in a real browser: headless chromium loads the file from disk with
no network (tests/browser.py records every request the page tries), and the tests read the DOM.

Screenshots of the timeline and the graph are saved under each test's temporary folder.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memstore.core.secrets import find_secrets
from memstore.ops.view_page import render_page
from tests.browser import Browser, find_chromium
from tests.conftest import git, invoke_memstore, wait_until
from tests.ops.view_synthetic import synthetic_view

pytestmark = pytest.mark.skipif(
    find_chromium() is None,
    reason="chromium is not installed (.ci/run installs it with apt-get where it runs as root)",
)


@pytest.fixture(scope="session")
def chromium(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    """One chromium per test process: its start (~1.5 s of CPU, more in wall time on a busy
    machine) cost more than most of these tests' own work when each started its own."""
    with Browser(tmp_path_factory.mktemp("chromium-profile")) as opened:
        yield opened


@pytest.fixture
def browser(chromium: Browser) -> Browser:
    """A fresh page in a fresh browser context of the shared chromium (nothing of the last
    test's page seen or kept)."""
    chromium.new_page()
    return chromium


def write_page(folder: Path, data: dict[str, Any]) -> Path:
    path = folder / "view.html"
    path.write_text(render_page(data), encoding="utf-8")
    return path


def go(browser: Browser, route: str) -> None:
    """Follow a link inside the page and wait until the page has drawn it."""
    browser.evaluate(f"location.hash = {json.dumps(route)}")
    wait_until(lambda: browser.evaluate("document.body.dataset.route") == route, 10, route)


def count(browser: Browser, selector: str) -> int:
    return int(browser.evaluate(f"document.querySelectorAll({json.dumps(selector)}).length"))


def texts(browser: Browser, selector: str) -> list[str]:
    return list(
        browser.evaluate(
            f"[...document.querySelectorAll({json.dumps(selector)})].map(e => e.textContent)"
        )
    )


def test_the_page_asks_for_nothing_but_its_own_file_on_any_tab(
    browser: Browser, tmp_path: Path
) -> None:
    page = write_page(tmp_path, synthetic_view(300))
    browser.load(page.as_uri())
    for route in ("#health", "#vault", "#search/deploy", "#m/m000001", "#timeline"):
        go(browser, route)
    browser.evaluate("document.querySelectorAll('details.change').forEach(d => d.open = true)")
    assert count(browser, "pre.diff") > 0  # the diffs were drawn, without a request
    assert browser.requests() == [page.as_uri()]
    assert browser.errors() == []


def test_an_image_planted_in_the_page_is_caught_asking_the_network(
    browser: Browser, tmp_path: Path
) -> None:
    planted = tmp_path / "planted.html"
    html = render_page(synthetic_view(20))
    planted.write_text(
        html.replace("<body>", '<body><img src="http://example.invalid/pixel.png">', 1),
        encoding="utf-8",
    )
    browser.load(planted.as_uri())
    assert "http://example.invalid/pixel.png" in browser.requests()  # tried (and refused)


def test_the_timeline_groups_by_session_filters_and_opens_a_diff(
    browser: Browser, tmp_path: Path
) -> None:
    data = synthetic_view(400)
    data["vault"]["sampled"]["changes"] = "the newest 500 of 526 are shown"
    browser.load(write_page(tmp_path, data).as_uri())
    assert texts(browser, ".capped") == [
        "Capped in this view: changes: the newest 500 of 526 are shown"
    ]
    assert count(browser, ".session") > 1
    commands = texts(browser, ".session code.cmd")
    assert commands[0].startswith("memstore revert --session s")
    assert count(browser, "details.change") == 200 - count(browser, ".session")  # one page
    browser.evaluate("document.querySelector('#timeline-list button.more').click()")
    second = "document.querySelector('#timeline-list .rows').children[200]"
    assert browser.evaluate(
        f"{second}.matches('.session') || !!{second}.querySelector('.continued')"
    )
    kinds = {c["kind"] for c in data["changes"]}
    assert "confirm" in kinds
    browser.evaluate(
        "(() => { const s = document.querySelector('select[data-filter=kind]');"
        " s.value = 'confirm'; s.dispatchEvent(new Event('change')); })()"
    )
    confirms = sum(c["kind"] == "confirm" for c in data["changes"])
    assert count(browser, "details.change") == min(confirms, 200 - count(browser, ".session"))
    assert set(texts(browser, "details.change .kind")) == {"confirm"}
    browser.evaluate("document.querySelector('details.change').open = true")
    wait_until(lambda: count(browser, "details.change pre.diff, details.change p") == 1, 5, "diff")
    browser.evaluate(
        "(() => { const s = document.querySelector('select[data-filter=kind]');"
        " s.value = ''; s.dispatchEvent(new Event('change'));"
        " const t = document.querySelector('input[data-filter=text]');"
        " t.value = 'S00003'; t.dispatchEvent(new Event('input')); })()"
    )
    in_session = sum(c["session"] == "s00003" for c in data["changes"])
    assert set(texts(browser, ".session strong")) == {"session s00003"}
    assert count(browser, "details.change") == min(in_session, 199)


def test_search_finds_memories_by_entity_keyword_and_id_as_you_type(
    browser: Browser, tmp_path: Path
) -> None:
    data = synthetic_view(500)
    browser.load(write_page(tmp_path, data).as_uri())
    go(browser, "#search")  # with no words: every memory, newest first
    newest = sorted(data["memories"], key=lambda m: m["created"], reverse=True)
    listed = browser.evaluate(
        "[...document.querySelectorAll('#search-results .row')].map(r => r.dataset.id)"
    )
    assert listed == [m["id"] for m in newest[:200]]
    first = data["memories"][7]
    for query, expected in (
        (
            first["entities"][0],
            [m for m in data["memories"] if first["entities"][0] in m["entities"]],
        ),
        (first["id"], [first]),
    ):
        browser.evaluate(
            "(() => { const s = document.getElementById('search');"
            f" s.value = {json.dumps(query)}; s.dispatchEvent(new Event('input')); }})()"
        )
        wait_until(
            lambda: browser.evaluate("document.body.dataset.route").startswith("#search/"), 5, query
        )
        shown = int(browser.evaluate("document.getElementById('search-count').dataset.memories"))
        assert shown >= len(expected)
        ids = browser.evaluate(
            "[...document.querySelectorAll('#search-results .row')].map(r => r.dataset.id)"
        )
        assert {m["id"] for m in expected[:200]} <= set(ids)


def test_a_memory_page_draws_its_supersede_chain_history_and_neighbours(
    browser: Browser, tmp_path: Path
) -> None:
    data = synthetic_view(300)
    middle = data["memories"][98]  # the view_synthetic chain m000097 <- m000098 <- m000099
    assert middle["supersedes"] == ["m000097"] and middle["superseded_by"] == ["m000099"]
    browser.load(write_page(tmp_path, data).as_uri() + "#m/m000098")
    wait_until(lambda: count(browser, "[data-memory]") == 1, 10, "the memory page")
    assert browser.evaluate("document.querySelector('.chain').dataset.chain") == (
        "m000097 > m000098 > m000099"
    )
    assert count(browser, "#history .version") == len(middle["history"])
    assert browser.evaluate("document.querySelector('[data-count=recalled] b').textContent") == str(
        middle["recalled"]
    )
    neighbours = browser.evaluate(
        "[...document.querySelectorAll('[data-neighbour]')].map(e => e.dataset.neighbour)"
    )
    assert neighbours == middle["neighbours"]
    go(browser, "#m/" + neighbours[0])  # a neighbour is a link to its own page
    assert (
        browser.evaluate("document.querySelector('[data-memory]').dataset.memory") == neighbours[0]
    )


def test_the_health_tab_lists_each_queue_with_its_commands(
    browser: Browser, tmp_path: Path
) -> None:
    data = synthetic_view(300)
    browser.load(write_page(tmp_path, data).as_uri() + "#health")
    wait_until(lambda: count(browser, "[data-queue]") > 0, 10, "the queues")
    shown = browser.evaluate(
        "Object.fromEntries([...document.querySelectorAll('details[data-queue]')]"
        ".map(d => [d.dataset.queue, d.querySelectorAll('.item').length]))"
    )
    assert shown == {q: len(items) for q, items in data["queues"].items()}
    commands = set(texts(browser, "details[data-queue] code.cmd"))
    assert {i["command"] for items in data["queues"].values() for i in items} == commands
    browser.evaluate("document.querySelector('details[data-queue] .command button').click()")
    wait_until(
        lambda: texts(browser, "details[data-queue] .command button")[0] == "copied", 5, "copy"
    )


def _interactive(browser: Browser, page: Path) -> tuple[float, float]:
    """Load `page`; return the script's own clock at its end (ms from the navigation) and
    the CPU seconds the page's renderer spent meanwhile (Chromium's ProcessTime metric)."""
    browser.call("Performance.enable", page=True, timeDomain="threadTicks")
    before = _renderer_cpu_s(browser)
    browser.load(page.as_uri())
    ms = float(browser.evaluate("document.documentElement.dataset.interactiveMs"))
    return ms, _renderer_cpu_s(browser) - before


def _renderer_cpu_s(browser: Browser) -> float:
    metrics = browser.call("Performance.getMetrics", page=True)["metrics"]
    return float(next(m["value"] for m in metrics if m["name"] == "ProcessTime"))


@pytest.mark.parametrize(
    "memories",
    [1_000, pytest.param(10_000, marks=pytest.mark.long)],
)
def test_the_page_answers_within_two_seconds(
    browser: Browser, tmp_path: Path, memories: int
) -> None:
    """Parsing the file and the data and drawing the timeline take under 2 s of the
    renderer's CPU. CPU, not the script's clock: at load 20 that clock read 11.3 s for a
    page whose work is 0.3 s of CPU (the clock's version, for a machine with a core free,
    is the long test below). A slower page spends more CPU here, at any load."""
    page = write_page(tmp_path, synthetic_view(memories))
    ms, cpu_s = _interactive(browser, page)
    print(
        f"{memories} memories, {page.stat().st_size / 1e6:.1f} MB: {cpu_s:.2f} s CPU, {ms:.0f} ms"
    )
    assert cpu_s < 2.0


@pytest.mark.long
@pytest.mark.parametrize("memories", [1_000, 10_000])
def test_the_page_answers_within_two_seconds_of_its_own_clock(
    browser: Browser, tmp_path: Path, memories: int
) -> None:
    """The script's own clock at its end, as a person waits for it (wall time: run it on a
    machine with a core free)."""
    page = write_page(tmp_path, synthetic_view(memories))
    ms, cpu_s = _interactive(browser, page)
    print(
        f"{memories} memories, {page.stat().st_size / 1e6:.1f} MB: {ms:.0f} ms, {cpu_s:.2f} s CPU"
    )
    assert ms < 2000


@pytest.mark.parametrize(
    "memories",
    # 2,000 keeps every check able to fail (all rows drawn would be 12,000 elements at the
    # 6 a row has; the graph samples past 1,500 nodes) for 1.8 s of CPU instead of 4.5 s
    [
        2_000,
        pytest.param(10_000, marks=pytest.mark.long),
        pytest.param(100_000, marks=pytest.mark.long),
    ],
)
def test_a_big_vault_never_puts_its_rows_in_the_dom(
    browser: Browser, tmp_path: Path, memories: int
) -> None:
    page = write_page(tmp_path, synthetic_view(memories))
    browser.load(page.as_uri())
    for route in ("#timeline", "#search", "#search/deploy", "#vault", "#health", "#m/m000003"):
        go(browser, route)
        elements = count(browser, "*")
        assert elements < 8000, (route, elements)  # 200 rows a page, not one per memory
    go(browser, "#search")
    assert count(browser, "#search-results .row") == 200
    browser.evaluate("document.querySelector('#search-results button.more').click()")
    assert count(browser, "#search-results .row") == 400
    note = browser.evaluate("document.getElementById('graph-note') && 1")
    assert note is None  # the graph is drawn on the vault tab only
    go(browser, "#vault")
    assert "Sampled" in browser.evaluate("document.getElementById('graph-note').textContent")
    data = json.loads(browser.evaluate("document.getElementById('memstore-data').textContent"))
    linked = {v for edge in data["graph"]["edges"] for v in edge}
    assert browser.evaluate("document.getElementById('graph').dataset.nodes") == str(len(linked))
    browser.screenshot(tmp_path / "graph.png", selector="#graph")


# ---- A real vault, built with the real CLI, viewed with `memstore view` ----------------

TOKEN = "ghp_" + "Zq7Rk2Lm9Xv4Tb8Nc1Wd6Yh3Pf5Js0Ga2Ue7Q"  # shaped like a GitHub token
SLACK = "xoxb-" + "4821930475-7719302846-Hq8ZtWm3Rk5Lp2Nv7Xc9Bd4F"  # and a Slack bot token


def _add(vault: Path, text: str, *args: str, session: str, source: str, host: str) -> str:
    done = invoke_memstore(
        "add",
        text,
        "--json",
        *args,
        vault=vault,
        env={"MEMSTORE_SESSION": session, "MEMSTORE_SOURCE": source, "MEMSTORE_HOST": host},
    )
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["id"])


def build_vault(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """Two agents on two machines, a supersede chain, a confirm, an archive, a forget, a hand
    edit by a person and a credential in a hand-written file."""
    vault = tmp_path / "vault"
    assert invoke_memstore("init", str(vault)).returncode == 0
    laptop = {"session": "sess-laptop", "source": "claude-code", "host": "laptop"}
    desk = {"session": "sess-desk", "source": "codex", "host": "desk"}
    ids = {
        "approval": _add(
            vault,
            "Staging deploys need approval from @maria",
            "-w",
            "webshop",
            "-K",
            "deploy",
            **laptop,
        ),
        "nginx": _add(
            vault,
            "Upload 413 is nginx client_max_body_size, not the app; raise it in the server block",
            "-w",
            "webshop",
            "-K",
            "nginx",
            **laptop,
        ),
        "port": _add(
            vault, "The api service listens on port 3000 in development", "-w", "api", **laptop
        ),
        "old": _add(vault, "The nightly backup runs from cron on db-1", "-w", "api", **laptop),
    }
    ids["port2"] = _add(
        vault, "The api service listens on port 8080 in development", "-w", "api", **desk
    )
    ids["approval2"] = _add(
        vault,
        "Staging deploys need approval from @maria and @jon",
        "-w",
        "webshop",
        "--supersedes",
        ids["approval"],
        **desk,
    )
    ids["approval3"] = _add(
        vault,
        "Staging deploys need approval in the release channel",
        "-w",
        "webshop",
        "--supersedes",
        ids["approval2"],
        **desk,
    )
    ids["slack"] = _add(
        vault,
        f"The deploy bot posts with {SLACK} to #releases",
        "-w",
        "webshop",
        "--allow-secret",
        **desk,
    )
    ids["gone"] = _add(
        vault, "Temporary note about a flaky test in checkout", "-w", "webshop", **desk
    )
    for args in (
        ("confirm", ids["nginx"]),
        ("archive", ids["old"]),
        ("forget", ids["gone"], "--yes"),
    ):
        done = invoke_memstore(
            *args,
            vault=vault,
            env={
                "MEMSTORE_SESSION": "sess-desk",
                "MEMSTORE_SOURCE": "codex",
                "MEMSTORE_HOST": "desk",
            },
        )
        assert done.returncode == 0, done.stderr
    nginx = next(vault.rglob(f"*-{ids['nginx']}.md"))
    nginx.write_text(
        nginx.read_text(encoding="utf-8") + "Also check the proxy in front of it.\n",
        encoding="utf-8",
    )
    (vault / "webshop" / "ci-notes.md").write_text(
        f"CI pushes with token {TOKEN}\n", encoding="utf-8"
    )
    git(vault, "add", "-A")
    git(
        vault,
        "-c",
        "user.name=Maria",
        "-c",
        "user.email=maria@example.org",
        "commit",
        "-qm",
        "hand edits",
    )
    return vault, ids


def test_a_real_vault_viewed_shows_its_sessions_chain_history_and_queues(
    browser: Browser, tmp_path: Path
) -> None:
    vault, ids = build_vault(tmp_path)
    page = tmp_path / "view.html"
    done = invoke_memstore("view", "-o", str(page), vault=vault)
    assert done.returncode == 0, done.stderr
    html = page.read_text(encoding="utf-8")
    for secret in (TOKEN, SLACK):
        assert secret not in html and secret[10:30] not in html
    assert find_secrets(html) == []  # nothing in the file the scanner would flag
    browser.load(page.as_uri())
    # the timeline: both sessions, who and where, the command that undoes each
    sessions = browser.evaluate(
        "Object.fromEntries([...document.querySelectorAll('.session[data-session]')]"
        ".map(s => [s.dataset.session, s.textContent]))"
    )
    assert "claude-code on laptop" in sessions["sess-laptop"]
    assert "codex on desk" in sessions["sess-desk"]
    assert "memstore revert --session sess-desk" in sessions["sess-desk"]
    browser.screenshot(tmp_path / "timeline.png")
    # every memory but the forgotten one
    go(browser, "#search")
    shown = set(
        browser.evaluate(
            "[...document.querySelectorAll('#search-results .row')].map(r => r.dataset.id)"
        )
    )
    (handwritten,) = shown - set(ids.values())  # a file with no front matter is a memory too
    header = browser.evaluate("document.getElementById('vault-line').textContent")
    assert f"{len(shown)} memories" in header and str(vault) in header
    assert shown - {handwritten} == set(ids.values()) - {ids["gone"]}
    go(browser, "#m/" + handwritten)
    text = browser.evaluate("document.querySelector('pre.text').textContent")
    assert text.startswith("CI pushes with token ") and TOKEN not in text  # masked
    go(browser, "#m/" + ids["slack"])
    text = browser.evaluate("document.querySelector('pre.text').textContent")
    assert text.startswith("The deploy bot posts with ") and "[secret" in text and SLACK not in text
    # the chain from either end of it, older to newer
    chain = f"{ids['approval']} > {ids['approval2']} > {ids['approval3']}"
    for end in ("approval", "approval2", "approval3"):
        go(browser, "#m/" + ids[end])
        assert browser.evaluate("document.querySelector('.chain').dataset.chain") == chain
    # a memory's history: added by one agent, confirmed by another, edited by a person
    go(browser, "#m/" + ids["nginx"])
    history = texts(browser, "#history .version summary")
    assert any("add" in h and "session sess-laptop" in h and "on laptop" in h for h in history), (
        history
    )
    assert any("confirm" in h and "session sess-desk" in h and "on desk" in h for h in history), (
        history
    )
    assert any("Maria" in h for h in history), history
    browser.evaluate("document.querySelector('#history a[href=\"#timeline/sess-desk\"]').click()")
    wait_until(
        lambda: browser.evaluate("document.body.dataset.route") == "#timeline/sess-desk", 10, "link"
    )
    assert set(texts(browser, ".session strong")) == {"session sess-desk"}
    go(browser, "#m/" + ids["nginx"])
    browser.screenshot(tmp_path / "memory.png", full_page=True)
    assert "Also check the proxy" in browser.evaluate(
        "document.querySelector('pre.text').textContent"
    )
    # health: the contradiction and the credential, each with its command
    go(browser, "#health")
    queues = browser.evaluate(
        "Object.fromEntries([...document.querySelectorAll('details[data-queue]')]"
        ".map(d => [d.dataset.queue, d.textContent]))"
    )
    assert ids["port"] in queues["contradictions"] and ids["port2"] in queues["contradictions"]
    assert "memstore" in queues["contradictions"]
    assert "ci-notes.md" in queues["secrets"] and TOKEN not in queues["secrets"]
    browser.screenshot(tmp_path / "health.png", full_page=True)
    go(browser, "#vault")
    browser.screenshot(tmp_path / "graph.png", selector="#graph")
    assert browser.requests() == [page.as_uri()]
    assert browser.errors() == []


def test_an_empty_vault_draws_every_tab_without_an_error(browser: Browser, tmp_path: Path) -> None:
    page = write_page(tmp_path, {"schema": 1, "vault": {"path": "/v"}, "memories": []})
    browser.load(page.as_uri())
    for route in ("#health", "#vault", "#search/x", "#m/nope", "#timeline"):
        go(browser, route)
        assert browser.evaluate("document.getElementById('main').textContent").strip()
    assert browser.errors() == []


def test_each_page_of_the_shared_chromium_knows_nothing_of_the_one_before(
    chromium: Browser, tmp_path: Path
) -> None:
    """The tests share one chromium (`chromium`): `new_page` must leave nothing of the last
    page behind, not its events, its address or what it stored."""
    page = tmp_path / "first.html"
    page.write_text("<script>localStorage.setItem('left', 'behind')</script>", encoding="utf-8")
    chromium.new_page()
    chromium.load(page.as_uri())
    assert chromium.evaluate("localStorage.getItem('left')") == "behind"
    assert page.as_uri() in chromium.requests()
    chromium.new_page()
    assert chromium.requests() == [] and chromium.errors() == []
    assert chromium.evaluate("location.href") == "about:blank"
    second = tmp_path / "second.html"
    second.write_text("<p>the same origin (file://), another page</p>", encoding="utf-8")
    chromium.load(second.as_uri())
    assert chromium.evaluate("localStorage.getItem('left')") is None
