"""The vault's git modules speak only git (the budgets are tests/test_architecture.py's)."""

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
