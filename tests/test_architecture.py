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
    "cli/teams.py",
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


# The house's budgets (issue 37): a module, a class or a function past these is split.
MODULE_LINES = 600
CLASS_LINES = 400
FUNCTION_LINES = 80


def _product_files() -> list[Path]:
    """Every product module once: memstore/ (without its link to index/) and index/."""
    mine = [p for p in (ROOT / "memstore").rglob("*.py") if "index" not in p.parts[-2:-1]]
    return sorted([*mine, *(ROOT / "index").glob("*.py")])


def test_product_modules_stay_within_the_budgets() -> None:
    over = []
    for path in _product_files():
        text = path.read_text(encoding="utf-8")
        name = path.relative_to(ROOT).as_posix()
        if (lines := len(text.splitlines())) > MODULE_LINES:
            over.append(f"{name}: {lines} lines (module budget {MODULE_LINES})")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                size = (node.end_lineno or node.lineno) - node.lineno + 1
                budget = CLASS_LINES if isinstance(node, ast.ClassDef) else FUNCTION_LINES
                if size > budget:
                    over.append(f"{name}:{node.lineno} {node.name}: {size} lines (budget {budget})")
    assert over == []


def test_the_store_is_small_and_no_code_leaves_the_lock_to_its_caller() -> None:
    """A lock a write needs is a transaction (`with store.transaction() as tx:`), never a
    docstring saying "the caller holds the lock"."""
    store = ROOT / "memstore" / "service" / "store.py"
    assert len(store.read_text(encoding="utf-8").splitlines()) <= 250
    said = [
        path.relative_to(ROOT).as_posix()
        for path in _product_files()
        if re.search(r"caller\s+holds|lock\s+held\s+by", path.read_text(encoding="utf-8"))
    ]
    assert said == []


def test_memstore_top_level_holds_only_the_launcher_and_the_packages() -> None:
    loose = []
    for entry in sorted((ROOT / "memstore").iterdir()):
        if entry.name in {"__init__.py", "__main__.py", "launcher.py", "__pycache__", "index"}:
            continue
        if entry.is_dir() and (entry / "__init__.py").is_file():
            continue
        if entry.name in {"fixtures", "sample_vault"}:  # data the package ships
            continue
        loose.append(entry.name)
    assert loose == []
    assert (ROOT / "memstore" / "index").resolve() == (ROOT / "index").resolve()


def test_every_package_is_a_layer_of_the_import_contract() -> None:
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    layered = next(c for c in contracts if c["type"] == "layers")
    named = {name.strip() for layer in layered["layers"] for name in re.split(r"[|:]", layer)}
    packages = {
        f"memstore.{p.name}" for p in (ROOT / "memstore").iterdir() if (p / "__init__.py").is_file()
    }
    assert packages | {"memstore.launcher"} == named
    assert not layered.get("ignore_imports"), "the layers hold without exceptions"
    shells = next(layer for layer in layered["layers"] if "memstore.cli" in layer)
    assert "|" in shells and ":" not in shells, "the shells are independent of each other"


def _documented_rows() -> dict[str, str]:
    """Module path -> its responsibility, from docs/architecture.md's tables."""
    rows = {}
    for line in (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        for number, cell in enumerate(cells[:-1]):
            found = re.fullmatch(r"`((?:memstore|index)/[\w/]+\.py)`", cell)
            if found:
                rows[found.group(1)] = cells[number + 1]
    return rows


def test_architecture_doc_names_every_module_with_its_docstring() -> None:
    rows = _documented_rows()
    wrong = []
    for path in _product_files():
        name = path.relative_to(ROOT).as_posix()
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        first = doc.splitlines()[0] if doc else ""
        if name not in rows:
            wrong.append(f"{name}: missing from docs/architecture.md")
        elif rows[name] != first:
            wrong.append(f"{name}: the doc says {rows[name]!r}, the docstring {first!r}")
    stale = sorted(set(rows) - {p.relative_to(ROOT).as_posix() for p in _product_files()})
    assert wrong == [] and stale == []


def test_the_library_api_is_named_and_lazy() -> None:
    import subprocess
    import sys

    import memstore

    assert set(memstore.__all__) == {"__version__", *memstore._API}
    for name in memstore.__all__:
        assert getattr(memstore, name) is not None, name
    code = (
        "import sys, memstore; print(sorted(m for m in sys.modules if m.startswith('memstore.')"
        " or m in ('whoosh', 'pygit2', 'yaml')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", "importing memstore imports nothing else"
    from memstore import Settings, Store

    assert Store.__module__.startswith("memstore.service") and Settings.__name__ == "Settings"
