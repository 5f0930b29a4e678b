"""The view page as text: the data inside round-trips, cannot break out, and the page asks
for nothing outside itself (the browser tests in tests/cli/test_view_browser.py run it)."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from importlib import resources

from memstore.core.secrets import find_secrets
from memstore.ops.view_page import pack, render_page, unpack
from tests.ops.view_synthetic import synthetic_view

HOSTILE = (
    "</script><script>alert(1)</script><!-- {{JS}} {{DATA}} & <img src=http://x.invalid/a.png>"
)


def _data_of(page: str) -> object:
    found = re.search(
        r'<script type="application/json" id="memstore-data">(.*?)</script>', page, re.S
    )
    assert found
    return unpack(json.loads(found.group(1)))  # memories and changes are tables in the page


def test_the_data_round_trips_and_a_hostile_text_stays_inside_its_script_element() -> None:
    data = synthetic_view(30)
    data["memories"][0]["text"] = HOSTILE
    data["changes"][0]["diff"] = HOSTILE
    page = render_page(data)
    assert _data_of(page) == data
    # the page's own two scripts close, nothing of the data does
    assert page.count("</script>") == 2
    assert "<img" not in page and "alert(1)" in page  # escaped inside the JSON, never markup
    # the slots in the hostile text (two copies, two slots each) stay text: one pass fills slots
    assert page.count("{{") == 4


def _sha(text: str) -> str:
    return (
        "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"
    )


def test_the_policy_refuses_everything_but_the_pages_own_script_and_style() -> None:
    page = render_page(synthetic_view(5))
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert policy
    rules = dict(r.strip().split(" ", 1) for r in policy.group(1).split(";"))
    assert rules["default-src"] == "'none'" and rules["img-src"] == "data:"
    script = re.search(r"<script>(.*?)</script>", page, re.S)
    style = re.search(r"<style>(.*?)</style>", page, re.S)
    assert script and style
    assert rules["script-src"] == _sha(script.group(1))  # only this script, by its hash
    assert rules["style-src"] == _sha(style.group(1))
    assert "unsafe" not in policy.group(1)


def test_the_shipped_assets_name_no_address_to_fetch() -> None:
    for name in ("view_page.html", "view_page.css", "view_page.js"):
        text = resources.files("memstore.ops").joinpath(name).read_text(encoding="utf-8")
        urls = set(re.findall(r"(?:https?:|wss?:|ftp:)?//[\w.-]+\.\w+[^\s\"'`)]*", text))
        assert urls <= {"http://www.w3.org/2000/svg"}, (name, urls)  # an XML namespace, not a fetch
        assert not re.search(
            r"\b(fetch|XMLHttpRequest|WebSocket|EventSource|sendBeacon|import\()", text
        )


def test_an_empty_vault_renders() -> None:
    page = render_page({"schema": 1, "vault": {"path": "/v"}, "memories": []})
    assert "memstore view of /v" in page and _data_of(page)["memories"] == []


def test_a_credential_left_in_the_data_is_still_found_by_the_scanner_in_the_page() -> None:
    """The browser test scans the written page for secrets: the page's escaping must not hide
    one from the scanner, or that test could not fail."""
    data = synthetic_view(5)
    assert find_secrets(render_page(data)) == []  # the page itself (hashes, script) is clean
    data["memories"][0]["text"] = "push with ghp_Zq7Rk2Lm9Xv4Tb8Nc1Wd6Yh3Pf5Js0Ga2Ue7Q <now>"
    assert find_secrets(render_page(data)) != []


def test_memories_and_changes_are_tables_in_the_page_and_unpack_as_they_were() -> None:
    data = synthetic_view(50)
    data["changes"][3]["added"] = data["memories"][0]["id"]  # a key only some records have
    data["memories"][1]["last_recalled"] = None
    packed = pack(data)
    for name in ("memories", "changes"):
        table = packed[name]
        assert isinstance(table, dict) and len(table["rows"]) == len(data[name])
    assert "added" not in packed["changes"]["columns"]
    assert packed["changes"]["rows"][3][-1] == {"added": data["memories"][0]["id"]}
    assert unpack(packed) == data
    assert len(json.dumps(packed)) < 0.8 * len(json.dumps(data))  # every key named once
    empty = {"schema": 1, "memories": [], "changes": []}
    assert unpack(pack(empty)) == empty
