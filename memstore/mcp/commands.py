"""The MCP server's commands: `memstore serve` (in this process) and `memstore benchmark`.

With a daemon allowed, `memstore serve` runs without typer as a shell over the daemon
(memstore/mcp/server.py `main`); this command serves in-process otherwise. Beside it runs a
watcher that keeps the index current: the daemon's, handed over by the launcher
(`commands(watch)`), since the shells never import each other.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Protocol, cast

import typer

from memstore.core.model import GLOBAL, CoreMemory
from memstore.core.ranking import CHARS_PER_TOKEN, estimate_tokens
from memstore.core.repo_name import find_enclosing_repository
from memstore.ops import options
from memstore.ops.lean import detected_workspace
from memstore.ops.output import POINTER_SNIPPET, benchmark_lines
from memstore.ops.parameters import (
    JsonOption,
    VaultOption,
    WorkspaceOption,
    emit_json,
    option,
    shell_settings,
)
from memstore.service.store import Store, require_vault


class Watching(Protocol):
    """What keeps the index current while serve runs: ready once its first catch-up is done."""

    ready: threading.Event

    def stop(self) -> None: ...


Watch = Callable[[Store], Watching]  # start watching a store's vault in the background


def commands(watch: Watch) -> typer.Typer:
    """Return the MCP shell's commands; serve watches the vault with `watch` (the daemon's
    watcher, which the launcher hands over)."""
    app = typer.Typer()
    app.command("serve")(_serving(watch))
    app.command()(benchmark)
    return app


def _serving(watch: Watch) -> Callable[..., None]:
    """Return the `serve` command, watching the vault with `watch`."""

    def serve(
        workspace: WorkspaceOption = None,
        source: Annotated[str, option(options.SERVE, "source")] = "mcp",
        vault: VaultOption = None,
    ) -> None:
        """Run the MCP server on stdin/stdout (agents launch this; it also watches the vault).

        Example:  memstore serve --source claude-code
        """
        from memstore.mcp.server import STOP_WITHIN_S, build_server, exit_after, run_stdio
        from memstore.ops.tools import session_default

        settings = replace(shell_settings(vault), source=source)
        # None: read all, add to global
        chosen, elsewhere = session_default(settings.vault, str(Path.cwd()), workspace)
        with Store.open(settings, create=True) as store:
            # Answer initialize at once and index meanwhile; write recall counters every few
            # minutes.
            watcher = watch(store)
            stopping = _stop_on_signals(watcher, store, exit_after)
            try:
                server = build_server(
                    store,
                    workspace=chosen,
                    source=source,
                    is_live=watcher.ready.is_set,
                    cwd=str(Path.cwd()),
                    elsewhere=elsewhere,
                )
                run_stdio(server)
            finally:
                if stopping.is_set():  # a signal's shutdown is under way: it ends the process
                    threading.Event().wait(2 * STOP_WITHIN_S)
                stopping.set()
                watcher.stop()

    return serve


def _stop_on_signals(
    watcher: Watching, store: Store, exit_after: Callable[[Callable[[], object], int], None]
) -> threading.Event:
    """On Ctrl-C or SIGTERM, write recall counters and exit at once (within a bound:
    `exit_after`); return the event the normal shutdown sets (a signal after it ends the
    process without a second flush).

    The stdio transport reads stdin in a thread that nothing can interrupt: left to asyncio,
    Ctrl-C waits for the next line of input, and SIGTERM would skip the counters.
    """
    stopping = threading.Event()

    def shut() -> None:
        watcher.stop()  # runs the periodic task once more: recall counters
        store.hold()  # a tool call already writing finishes; no other starts
        store.close()

    def stop(signum: int, _frame: object) -> None:
        if stopping.is_set():  # shutting down already, or a second signal
            os._exit(128 + signum)
        stopping.set()
        exit_after(shut, 128 + signum)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    return stopping


def benchmark(vault: VaultOption = None, as_json: JsonOption = False) -> None:
    """Compare memstore's fixed per-session token cost with the instruction files found here.

    Example:  memstore benchmark --json
    """
    from memstore.mcp.server import build_server, tool_cost_tokens

    settings = shell_settings(vault)
    workspace = detected_workspace(settings.vault)
    core: tuple[CoreMemory, ...] = ()
    if not settings.may_create_vault:  # a vault named (--vault, $MEMSTORE_VAULT) must be one
        require_vault(settings)
    if (settings.vault / ".git").exists():  # a read-only command: never create a vault
        with Store.open(settings) as store:
            core = store.recall("", workspace=workspace).core
    # listing the tools never touches the store
    unused = cast(Store, None)
    tools = tool_cost_tokens(build_server(unused, workspace=workspace or GLOBAL, source="mcp"))
    core_tokens = sum(estimate_tokens(c.content) + 10 for c in core)
    snippet = estimate_tokens(POINTER_SNIPPET)
    total = tools + snippet + core_tokens
    files = instruction_files(Path.cwd(), Path.home())
    sizes = {
        str(path): estimate_tokens(path.read_text(encoding="utf-8", errors="replace"))
        for path in files
    }
    figures = {
        "mcp_tools": tools,
        "pointer_snippet": snippet,
        "core_memory": core_tokens,
        "total": total,
    }
    if as_json:
        emit_json(
            {
                "estimated_tokens": figures,
                "instruction_files": sizes,
                "chars_per_token": CHARS_PER_TOKEN,
                "error": "±25%",
            }
        )
        return
    typer.echo("\n".join(benchmark_lines(figures, len(core), sizes)))


def instruction_files(cwd: Path, home: Path) -> list[Path]:
    """Return the agent instruction files that apply to work in `cwd`."""
    root = find_enclosing_repository(cwd) or cwd
    names = [
        "CLAUDE.md",
        "CLAUDE.local.md",
        "AGENTS.md",
        ".cursorrules",
        ".github/copilot-instructions.md",
    ]
    found = [root / name for name in names]
    found += sorted((root / ".cursor" / "rules").glob("*.mdc")) + sorted(
        (root / ".kiro" / "steering").glob("*.md")
    )
    found += [home / ".claude" / "CLAUDE.md", home / ".codex" / "AGENTS.md"]
    return [path for path in found if path.is_file()]
