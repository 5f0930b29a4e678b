"""The daemon's commands: `memstore watch`, `daemon` and `status`.

A thin typer shell over memstore/daemon/server.py; `memstore daemon` itself usually runs
without typer (`run_from_command_line`, from the launcher), and this command serves --help.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from memstore.core.errors import NotFoundError, VaultError, no_vault_at
from memstore.ops import client, options
from memstore.ops.parameters import JsonOption, VaultOption, emit_json, option, shell_settings

if TYPE_CHECKING:
    from memstore.daemon.watcher import Watcher
    from memstore.service.store import Store

commands = typer.Typer()


def watching(store: Store) -> Watcher:
    """Start keeping the index of `store` current in the background and writing its recall
    counters every few minutes (`memstore serve` in-process runs this beside the MCP server);
    the stop's last tidy starts no merge of the index's segments (the process ends)."""
    from memstore.daemon.watcher import Watcher

    last = functools.partial(store.tidy, merge=False)
    return Watcher(store, on_tick=store.tidy, on_last_tick=last).start(wait=False)


@commands.command()
def watch(vault: VaultOption = None) -> None:
    """Keep the index in step with the files while you edit them (Ctrl-C stops).

    The same process as `memstore daemon` in the foreground, without the idle exit: it also
    answers searches and adds over the vault's socket. When a daemon already serves the
    vault it keeps the index current: watch says so (with its pid) and exits 0.

    Example:  memstore watch
    """
    from memstore.daemon.server import reporter, serve

    settings = shell_settings(vault)

    def say(line: str) -> None:
        typer.echo(line, err=True)

    running = _running_daemon(settings.vault)
    if running is not None:
        say(
            f"the memstore daemon ({running}) already keeps the index of {settings.vault} "
            "current; nothing to watch (to see each catch-up here: memstore daemon --stop, "
            "then memstore watch)"
        )
        raise typer.Exit(0)
    _require_vault(settings.vault)  # before saying it watches: one line naming the folder
    say(f"watching {settings.vault} (Ctrl-C to stop)")
    status = serve(
        settings.vault, os.environ, idle_exit=0, foreground=True, say=say, on_batch=reporter(say)
    )
    raise typer.Exit(status)


def _running_daemon(vault: Path) -> str | None:
    """Return "pid N" of the daemon serving `vault` (starting or answering), else None."""
    reply = client.status(vault)
    if reply is not None and reply.status == 0 and reply.data.get("pid"):
        return f"pid {reply.data['pid']}"
    if not client.is_running(vault):
        return None
    try:  # it holds the lock but does not answer yet: the lock file names it
        pid = (vault / client.STATE_DIR / client.LOCK_NAME).read_text(encoding="utf-8").strip()
    except OSError:
        pid = ""
    return f"pid {pid}" if pid.isdigit() else "starting"


@commands.command()
def daemon(
    vault: VaultOption = None,
    idle_exit: Annotated[
        float | None, option(options.DAEMON, "idle_exit", metavar="SECONDS", min=0)
    ] = None,
    stop: Annotated[bool, option(options.DAEMON, "stop")] = False,
    background: Annotated[bool, option(options.DAEMON, "background", hidden=True)] = False,
) -> None:
    """Run the vault's resident index in the foreground (search, add, hook and serve start one
    in the background on their own; see docs/daemon.md).

    Example:  memstore daemon --idle-exit 600
    """
    from memstore.daemon.server import run_from_command_line

    argv = [*(["--vault", str(vault)] if vault else []), *(["--stop"] if stop else [])]
    argv += ["--background"] if background else []
    argv += ["--idle-exit", str(idle_exit)] if idle_exit is not None else []
    status = run_from_command_line(argv, os.environ, os.getcwd())
    raise typer.Exit(status or 0)


@commands.command()
def status(vault: VaultOption = None, as_json: JsonOption = False) -> None:
    """Say whether the vault's daemon runs: pid, memories, uptime, memory, last catch-up.

    Exit status 0 when it runs, 3 when it does not (as `systemctl status`).

    Example:  memstore status --json
    """
    settings = shell_settings(vault)
    _require_vault(settings.vault)
    reply = client.status(settings.vault)
    data = dict(reply.data) if reply is not None and reply.status == 0 else {}
    if not data:
        data = {"running": False, "vault": str(settings.vault)}
        data["starting"] = client.is_running(settings.vault)  # locked, not answering yet
        data["allowed"] = client.daemon_allowed(os.environ)
    if as_json:
        emit_json(data)
    else:
        for line in _status_lines(data):
            typer.echo(line)
    raise typer.Exit(0 if data["running"] else 3)


def _require_vault(root: Path) -> None:
    """Refuse a folder that holds no vault (a typo in --vault or MEMSTORE_VAULT), as a search
    there would, instead of saying its daemon is not running."""
    if (root / ".git").exists():
        return
    if root.exists() and not root.is_dir():
        raise VaultError(
            f"vault path {root} is a file, not a folder; set MEMSTORE_VAULT or --vault"
        )
    raise NotFoundError(no_vault_at(root))


def _status_lines(data: dict[str, Any]) -> list[str]:
    """Return what `memstore status` prints for the daemon's figures."""
    if not data["running"]:
        # It holds the lock but does not answer: catching up after its start, finishing a
        # request on its way out, or a daemon of another memstore that this status just stopped.
        state = "starting or stopping" if data.get("starting") else "not running"
        hint = (
            "the next search, add, hook or serve starts one"
            if data.get("allowed")
            else "MEMSTORE_NO_DAEMON is set: commands run in-process"
        )
        return [f"memstore daemon: {state} for {data['vault']}", f"  {hint}"]
    idle = data["idle_exit_s"]
    exits = f"after {idle:.0f} s idle (at {data['exits_at']})" if idle else "when stopped"
    caught = data["last_catch_up"]
    return [
        f"memstore daemon: running (pid {data['pid']})",
        f"  vault          {data['vault']}",
        f"  memories       {data['memories']}",
        f"  uptime         {_duration(data['uptime_s'])} (since {data['started']})",
        f"  memory         {data['rss_mib']} MiB resident",
        f"  last catch-up  {caught} ({_duration(data['last_catch_up_ago_s'])} ago)"
        if caught
        else "  last catch-up  none yet",
        f"  requests       {data['requests']}",
        f"  exits          {exits}",
        f"  socket         {data['socket']}",
    ]


def _duration(seconds: float) -> str:
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    return f"{hours}h {rest // 60:02d}m" if hours else f"{rest // 60}m {rest % 60:02d}s"
