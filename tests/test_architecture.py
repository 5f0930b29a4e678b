"""The code's shape: only shells read the environment; index/ knows nothing of memstore."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHELLS = {
    "launcher.py",
    "__main__.py",
    "ops/lean.py",
    "ops/hooks.py",
    "ops/parameters.py",
    "mcp/server.py",
    "mcp/commands.py",
    "daemon/watcher.py",
    "daemon/commands.py",
    "agents/commands.py",
    "cli/ingest.py",
    "cli/sync.py",
    "cli/terminal.py",
    "cli/upkeep.py",
}
AMBIENT = re.compile(r"os\.environ|os\.getenv|Path\.home\(|Path\.cwd\(|os\.getcwd\(|expanduser\(")


def test_only_shells_read_the_environment_home_or_current_directory() -> None:
    offenders = []
    for path in [*(ROOT / "memstore").rglob("*.py"), *(ROOT / "index").rglob("*.py")]:
        if path.relative_to(ROOT).as_posix().removeprefix("memstore/") in SHELLS:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            if AMBIENT.search(code):
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    # config.py receives the environment as an argument; it may expand '~' in a path it was given.
    assert [o for o in offenders if not o.startswith("memstore/core/config.py")] == []


def test_index_package_imports_nothing_from_memstore() -> None:
    for path in (ROOT / "index").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                assert not (node.module or "").startswith("memstore"), path
            elif isinstance(node, ast.Import):
                assert not any(a.name.startswith("memstore") for a in node.names), path


def test_every_module_opens_with_a_one_line_docstring() -> None:
    for path in [*(ROOT / "memstore").rglob("*.py"), *(ROOT / "index").rglob("*.py")]:
        if "sample_vault" in path.parts:
            continue
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
        assert doc and doc.splitlines()[0].endswith("."), path


def test_lean_search_path_does_not_import_typer_pydantic_pygit2_or_yaml() -> None:
    import subprocess
    import sys

    code = (
        "import sys; import memstore.ops.lean, memstore.service.store;"
        "print(sorted(m for m in ('typer', 'pydantic', 'pygit2', 'yaml', 'mcp', 'watchdog') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
