"""Budgets of the modules issue 37 split by meaning: ≤ 600 lines, no function over 80.

The whole package meets these budgets once every part is regrouped; until then this
checks the modules already split (codec, contradictions, the daemon and the ops shells).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "memstore"
SPLIT = (
    "core/codec.py",
    "core/yaml_values.py",
    "core/contradictions.py",
    "core/contradiction_words.py",
    "core/model.py",
    "daemon/server.py",
    "ops/client.py",
    "ops/lean.py",
    "ops/registry.py",
    "ops/tools.py",
    "mcp/server.py",
)
MODULE_LINES = 600
FUNCTION_LINES = 80


@pytest.mark.parametrize("module", SPLIT)
def test_split_module_stays_within_its_budgets(module: str) -> None:
    text = (PACKAGE / module).read_text(encoding="utf-8")
    assert text.count("\n") <= MODULE_LINES, module
    long = [
        (node.name, node.end_lineno - node.lineno + 1)
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > FUNCTION_LINES
    ]
    assert not long, f"{module}: functions over {FUNCTION_LINES} lines: {long}"
