"""The view's one self-contained HTML page: the template, its CSS and JS, the data inside. Pure."""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import re
from importlib import resources
from typing import Any

__all__ = ["render_page"]

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


def _embed(data: dict[str, Any]) -> str:
    """The data as JSON that cannot end its <script> element early.

    In JSON a '<' only occurs inside a string, where \\u003c reads the same: no '</script>'
    nor '<!--' can reach the HTML parser.
    """
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")


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
