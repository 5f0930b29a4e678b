"""The page of `memstore view`: one self-contained HTML file around the view's data (stand-in).

A minimal stand-in until the page (its template, styles and script) lands: the data as JSON
in a `<script type="application/json" id="memstore-data">`, and a `<pre>` of it.
"""

from __future__ import annotations

import html
import json
from typing import Any


def render_page(data: dict[str, Any]) -> str:
    """Return the HTML page embedding `data` (no network request, works from file://)."""
    text = json.dumps(data, ensure_ascii=False).replace("</", "<\\/")
    shown = html.escape(json.dumps(data, ensure_ascii=False, indent=1)[:200_000])
    return (
        '<!doctype html>\n<html><head><meta charset="utf-8">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'\">"
        "<title>memstore view</title></head><body>\n"
        f'<script type="application/json" id="memstore-data">{text}</script>\n'
        f"<pre>{shown}</pre>\n</body></html>\n"
    )
