"""How commands present results to people: text lines and JSON (no typer, no I/O)."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from memstore.model import Hit, SearchResult


def render_json(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, indent=2, default=str)


def hit_json(hit: Hit) -> dict[str, Any]:
    data = asdict(hit)
    data["keywords"] = list(hit.keywords)
    return data


def search_json(result: SearchResult, query: str, scope: str | None) -> dict[str, Any]:
    return {
        "query": query,
        "workspace": scope or "all",
        "weak": result.weak,
        "results": [hit_json(h) for h in result.hits],
    }


def search_lines(result: SearchResult, query: str, scope: str | None) -> list[str]:
    """Return what `memstore search` prints for a result."""
    if not result.hits:
        where = f" in {scope} or global." if scope else "."
        return [f"No memory matches {query!r}{where}"]
    lines = ["No memory has every word; these might be related:"] if result.weak else []
    for hit in result.hits:
        mark = "  (weak)" if hit.weak else ""
        lines.append(f"{hit.id}  {hit.workspace} · {hit.kind} · {hit.score:.2f}{mark}")
        lines.extend(f"    {line}" for line in hit.content.strip().splitlines()[:6])
    return lines
