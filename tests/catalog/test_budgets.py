"""The catalog's size budgets: no module over ~600 lines, no class over ~400, no function over ~80."""

from __future__ import annotations

import ast
from pathlib import Path

CATALOG = Path(__file__).resolve().parents[2] / "memstore" / "catalog"
POOL = Path(__file__).resolve().parents[2] / "index" / "parts.py"
MODULE_LINES, CLASS_LINES, FUNCTION_LINES = 600, 400, 80


def over_budget(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    found = []
    if len(text.splitlines()) > MODULE_LINES:
        found.append(f"{path.name}: {len(text.splitlines())} lines")
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            limit = CLASS_LINES if isinstance(node, ast.ClassDef) else FUNCTION_LINES
            size = (node.end_lineno or node.lineno) - node.lineno + 1
            if size > limit:
                found.append(f"{path.name}: {node.name} {size} lines")
    return found


def test_catalog_modules_classes_and_functions_keep_to_their_budgets() -> None:
    # retrieval.py is recall's pipeline, budgeted with the search engine's split
    paths = [p for p in sorted(CATALOG.glob("*.py")) if p.name != "retrieval.py"] + [POOL]
    assert [problem for path in paths for problem in over_budget(path)] == []
