"""`memstore search` and `memstore add` without typer: the paths agents and hooks run often.

typer imports pydantic (~90 ms) before it parses a single option. These parsers handle
exactly the options the typer commands define; anything else (help, a typo, a missing
value) returns None so the typer command answers it, with its usual messages and exit
codes. A test checks both paths print the same thing.
"""

from __future__ import annotations

import os
import sys
from dataclasses import asdict
from pathlib import Path

from memstore.config import Settings
from memstore.errors import InvalidInputError, MemstoreError
from memstore.git import detect_workspace
from memstore.model import GLOBAL, AddResult, SearchResult, to_workspace_name
from memstore.output import (
    add_line,
    context_lines,
    printable,
    render_json,
    search_json,
    search_lines,
)
from memstore.store import Store

Options = dict[str, list[str]]

SEARCH_FLAGS = {"--all": "all", "--json": "json", "--context": "context"}
SEARCH_VALUES = {"-w": "workspace", "--workspace": "workspace", "-k": "k", "--vault": "vault"}
ADD_FLAGS = {"--json": "json", "--allow-secret": "allow_secret"}
ADD_VALUES = {
    "-w": "workspace",
    "--workspace": "workspace",
    "--kind": "kind",
    "-K": "keyword",
    "--keyword": "keyword",
    "--source": "source",
    "--supersedes": "supersedes",
    "--vault": "vault",
}


def parse(
    argv: list[str], flags: dict[str, str], values: dict[str, str], positional: str
) -> Options | None:
    """Return the options in `argv` (values listed in order), or None to defer to typer."""
    options: Options = {}
    rest = list(argv)
    while rest:
        arg = rest.pop(0)
        if arg == "--":
            if len(rest) != 1 or positional in options:
                return None
            options[positional] = [rest.pop(0)]
        elif arg in flags:
            options[flags[arg]] = ["1"]
        elif arg in values and rest:
            options.setdefault(values[arg], []).append(rest.pop(0))
        elif arg.startswith("--") and "=" in arg and arg.split("=", 1)[0] in values:
            name, value = arg.split("=", 1)
            options.setdefault(values[name], []).append(value)
        elif positional not in options and arg[:2] in ("- ", "-\t"):
            options[positional] = [
                arg
            ]  # "- staging deploys need …": a pasted bullet, not an option
        elif (arg.startswith("-") and arg != "-") or positional in options:
            return None
        else:
            options[positional] = [arg]
    if positional not in options:
        return None
    return options


def last(options: Options, name: str, default: str = "") -> str:
    return options[name][-1] if name in options else default


def settings_from(options: Options) -> Settings:
    vault = Path(last(options, "vault")) if "vault" in options else None
    return Settings.from_env(os.environ, home=Path.home(), vault=vault)


def detected_workspace(vault: Path) -> str | None:
    """Return the workspace of the current directory's git repository, if it has one."""
    cwd = Path.cwd()
    if cwd == vault or vault in cwd.parents:
        return None
    name = detect_workspace(cwd)
    return None if name is None else to_workspace_name(name)


def run_search(argv: list[str]) -> int | None:
    """Run `memstore search`; None defers to the typer command."""
    options = parse(argv, SEARCH_FLAGS, SEARCH_VALUES, "query")
    k = last(options or {}, "k", "5")
    if options is None or not k.isdigit() or not 1 <= int(k) <= 200:
        return None
    settings = settings_from(options)
    query = last(options, "query")
    scope = (
        None
        if "all" in options
        else (last(options, "workspace") or detected_workspace(settings.vault))
    )
    try:
        with Store.open(settings) as store:
            result = store.search(query, workspace=scope, k=int(k))
    except MemstoreError as err:
        print(printable(f"Error: {err}"), file=sys.stderr)
        return 1
    print_search(result, query, scope, as_json="json" in options, context="context" in options)
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


def run_add(argv: list[str]) -> int | None:
    """Run `memstore add`; None defers to the typer command."""
    options = parse(argv, ADD_FLAGS, ADD_VALUES, "text")
    if options is None:
        return None
    settings = settings_from(options)
    text = last(options, "text")
    workspace = last(options, "workspace") or detected_workspace(settings.vault) or GLOBAL
    try:
        if text == "-":
            text = read_stdin()
        with Store.open(settings, create=True) as store:
            result = store.add(
                text,
                workspace=workspace,
                kind=last(options, "kind", "note"),
                keywords=tuple(options.get("keyword", ())),
                source=last(options, "source") or None,
                supersedes=tuple(options.get("supersedes", ())),
                allow_secret="allow_secret" in options,
            )
    except MemstoreError as err:
        print(printable(f"Error: {err}"), file=sys.stderr)
        return 1
    print_add(result, as_json="json" in options)
    return 0


def read_stdin() -> str:
    """Return standard input as text; raise InvalidInputError when it is not UTF-8."""
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:  # a text-only stream (an embedding program's): already decoded
        return sys.stdin.read()
    data = stream.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InvalidInputError(
            f"standard input is not valid UTF-8 (byte {err.start}: 0x{data[err.start]:02x}); "
            "convert it first, e.g. iconv -f latin1 -t utf-8"
        ) from err


def print_add(result: AddResult, *, as_json: bool) -> None:
    print(render_json(asdict(result)) if as_json else add_line(result))
