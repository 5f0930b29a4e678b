"""`memstore search` without typer: the per-prompt path must not import pydantic (~90 ms).

Handles exactly the options the typer command defines; anything else (help, a typo) returns
None so the typer command answers it, with its usual messages and exit codes.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from memstore.config import Settings
from memstore.errors import MemstoreError
from memstore.git import detect_workspace
from memstore.model import SearchResult, to_workspace_name
from memstore.output import context_lines, render_json, search_json, search_lines
from memstore.store import Store

_FLAGS = {"--all": "all", "--json": "json", "--context": "context"}
_VALUES = {"-w": "workspace", "--workspace": "workspace", "-k": "k", "--vault": "vault"}


def parse(argv: list[str]) -> dict[str, str] | None:
    """Return the options in `argv`, or None when typer should handle the command line."""
    options: dict[str, str] = {}
    rest = list(argv)
    while rest:
        arg = rest.pop(0)
        if arg == "--":
            if len(rest) != 1 or "query" in options:
                return None
            options["query"] = rest.pop(0)
        elif arg in _FLAGS:
            options[_FLAGS[arg]] = "1"
        elif arg in _VALUES and rest:
            options[_VALUES[arg]] = rest.pop(0)
        elif "=" in arg and arg.split("=", 1)[0] in _VALUES:
            name, value = arg.split("=", 1)
            options[_VALUES[name]] = value
        elif (arg.startswith("-") and arg != "-") or "query" in options:
            return None
        else:
            options["query"] = arg
    k = options.get("k", "5")
    if "query" not in options or not k.isdigit() or not 1 <= int(k) <= 200:
        return None
    return options


def run(argv: list[str]) -> int | None:
    """Run a search and return the exit status, or None to defer to the typer command."""
    options = parse(argv)
    if options is None:
        return None
    vault = Path(options["vault"]) if "vault" in options else None
    settings = Settings.from_env(os.environ, home=Path.home(), vault=vault)
    scope = None
    if "all" not in options:
        scope = options.get("workspace") or detected_workspace(settings.vault)
    try:
        with Store.open(settings) as store:
            result = store.search(options["query"], workspace=scope, k=int(options.get("k", 5)))
    except MemstoreError as err:
        print(f"Error: {err}", file=sys.stderr)
        return 1
    print_search(
        result, options["query"], scope, as_json="json" in options, context="context" in options
    )
    return 0


def print_search(
    result: SearchResult, query: str, scope: str | None, *, as_json: bool, context: bool
) -> None:
    """Print a search result as JSON, as agent context (silent when nothing), or as text."""
    if as_json:
        print(render_json(search_json(result, query, scope)))
    elif context:
        lines = context_lines(result)
        if lines:
            print("\n".join(lines))
    else:
        print("\n".join(search_lines(result, query, scope)))


def detected_workspace(vault: Path) -> str | None:
    """Return the workspace of the current directory's git repository, if it has one."""
    cwd = Path.cwd()
    if cwd == vault or vault in cwd.parents:
        return None
    name = detect_workspace(cwd)
    return None if name is None else to_workspace_name(name)
