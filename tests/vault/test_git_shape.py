"""The vault's git modules speak only git, and the vault and sync modules keep the budgets."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "memstore"
# What understands a memory file: parsing or rendering one, the merge rules, the model.
MEMORY_NAMES = {"parse_memory", "render_memory", "merge_file", "Memory"}
MEMORY_MODULES = (
    "memstore.core.merge",
    "memstore.core.model",
    "memstore.catalog",
    "memstore.service",
)
MODULE_LINES, CLASS_LINES, FUNCTION_LINES = 600, 400, 80


def _imports(path: Path) -> list[tuple[str, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            found += [(node.module or "", alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(alias.name, "") for alias in node.names]
    return found


def test_the_git_modules_of_the_vault_know_nothing_of_memories() -> None:
    modules = sorted((ROOT / "vault").glob("git*.py"))
    assert len(modules) >= 5
    for path in modules:
        for module, name in _imports(path):
            assert name not in MEMORY_NAMES, f"{path.name} imports {name} from {module}"
            assert not module.startswith(MEMORY_MODULES), f"{path.name} imports {module}"


def test_the_vault_and_sync_modules_keep_within_the_budgets() -> None:
    paths = [
        *sorted((ROOT / "vault").glob("*.py")),
        *(ROOT / "service" / name for name in ("sync.py", "tree_merge.py", "rebase.py")),
    ]
    over = []
    for path in paths:
        text = path.read_text(encoding="utf-8")
        if len(text.splitlines()) > MODULE_LINES:
            over.append(f"{path.name}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            limit = CLASS_LINES if isinstance(node, ast.ClassDef) else FUNCTION_LINES
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > limit:
                over.append(f"{path.name}: {node.name} {length} lines")
    assert over == []
