"""The view's one self-contained HTML page: the template, its CSS and JS, the data inside. Pure."""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import re
from importlib import resources
from typing import Any

__all__ = ["pack", "page_data", "render_page", "unpack"]

_SLOT = re.compile(r"\{\{(CSP|TITLE|CSS|JS|DATA)\}\}")


@functools.cache
def _asset(name: str) -> str:
    """Read a file shipped next to this module (view_page.html, .css, .js)."""
    return resources.files("memstore.ops").joinpath(name).read_text(encoding="utf-8")


def _sha256(text: str) -> str:
    return (
        "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"
    )


def _policy(css: str, js: str) -> str:
    """A Content-Security-Policy that lets only this page's own style and script run.

    default-src 'none' refuses every fetch, frame, font, media and connection; images only
    as data: URLs. The inline script and style are allowed by their hashes, so nothing
    injected into the page (a memory's text is never HTML, but still) could run.
    """
    return (
        "default-src 'none'; "
        f"script-src {_sha256(js)}; "
        f"style-src {_sha256(css)}; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )


# The lists of one record per memory and per change: in the page, a table (the keys once,
# then a row of values per record) instead of a list of objects that names every key again.
# At 100,000 memories the names were ~30% of the file; the page's script rebuilds the objects.
_TABLES = ("memories", "changes")


def pack(data: dict[str, Any]) -> dict[str, Any]:
    """`data` with each list of _TABLES as {"columns": the keys every record has, "rows":
    a list of values per record, then a dict of its other keys if it has any}."""
    out = dict(data)
    for name in _TABLES:
        records = data.get(name)
        if not isinstance(records, list) or not records:
            continue
        columns = [key for key in records[0] if all(key in r for r in records)]
        common = set(columns)
        rows = []
        for record in records:
            row = [record[key] for key in columns]
            extra = {k: v for k, v in record.items() if k not in common}
            rows.append([*row, extra] if extra else row)
        out[name] = {"columns": columns, "rows": rows}
    return out


def unpack(data: dict[str, Any]) -> dict[str, Any]:
    """The data `pack` packed, as it was (the page's script does the same)."""
    out = dict(data)
    for name in _TABLES:
        table = data.get(name)
        if isinstance(table, dict):
            columns = table["columns"]
            out[name] = [
                {
                    **dict(zip(columns, row, strict=False)),
                    **(row[len(columns)] if len(row) > len(columns) else {}),
                }
                for row in table["rows"]
            ]
    return out


def page_data(page: str) -> dict[str, Any]:
    """The data a page holds, as collect_view gave it (for tests and tools)."""
    start = page.index('id="memstore-data">') + len('id="memstore-data">')
    text = page[start : page.index("</script>", start)]
    return unpack(json.loads(text))


def _embed(data: dict[str, Any]) -> str:
    """The data as JSON that cannot end its <script> element early.

    In JSON a '<' only occurs inside a string, where \\u003c reads the same: no '</script>'
    nor '<!--' can reach the HTML parser.
    """
    text = json.dumps(pack(data), ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c")


def _text(value: object) -> str:
    return str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def render_page(data: dict[str, Any]) -> str:
    """Return the whole page for a view dict (service/view_data.collect_view's shape)."""
    css, js = _asset("view_page.css"), _asset("view_page.js")
    vault = data.get("vault") or {}
    slots = {
        "CSP": _policy(css, js),
        "TITLE": _text(f"memstore view of {vault.get('path', 'a vault')}"),
        "CSS": css,
        "JS": js,
        "DATA": _embed(data),
    }
    # One pass: text put into a slot is never searched for slots again.
    return _SLOT.sub(lambda m: slots[m.group(1)], _asset("view_page.html"))
