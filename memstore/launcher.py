"""The `memstore` executable: search, add and hook take the lean path, everything else typer.

search and add ask the vault's daemon first (memstore/ops/client.py); when none answers they
run in this process through the same function (memstore/ops/lean.py), so both print the same.
A re-ingest asks a running daemon too; without one, the typer command runs it here.
Until then this process imports only the client: no logging, no store, no Whoosh.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # not typing's: the lean path imports no more than it needs
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any, TypeVar

    import typer

    from memstore.core.generated_code import GeneratedCode
    from memstore.core.pattern_cache import PatternCache
    from memstore.ops.client import Reply

    T = TypeVar("T")

LONG_RUNNING = (["serve"], ["watch"], ["hook"], ["daemon"])


def main() -> None:
    """Dispatch the command line."""
    argv = _vault_after_the_command(_take_no_daemon(sys.argv[1:]))
    if argv[:1] in (["search"], ["add"], ["ingest"], ["hook"]):
        _defer_unused_modules()  # before anything imports them (pathlib: ipaddress)
    _set_up_process()
    if argv[:1] == ["merge-file"]:
        _run_merge_driver(argv[1:])  # exits unless the typer command should answer
    if argv[:1] in (["search"], ["add"], ["ingest"]):
        _run_lean(argv[0], argv[1:])  # exits unless the typer command should answer
    _set_up_logging()
    if argv[:1] not in LONG_RUNNING:
        _end_quietly_on_a_closed_pipe()
    if argv[:1] == ["hook"] and not {"-h", "--help"} & set(argv):
        sys.exit(_run_hook(argv[1:]))
    if argv[:1] == ["serve"] and not {"-h", "--help"} & set(argv):  # help: no mcp (~1.5 s)
        from memstore.mcp.server import main as serve_main  # through the daemon; None: typer

        served = serve_main(argv[1:])
        if served is not None:
            sys.exit(served)
    if argv[:1] == ["daemon"] and "--stop" in argv:
        from memstore.daemon.stopping import stop_from_command_line

        status = stop_from_command_line(argv[1:], os.environ, _cwd())
        if status is not None:
            sys.exit(status)
    if argv[:1] == ["daemon"]:
        from memstore.daemon.server import run_from_command_line

        status = run_from_command_line(argv[1:], os.environ, _cwd())
        if status is not None:
            sys.exit(status)
    app = _paused_collector(typer_app)
    from memstore.cli.app import run  # imported by typer_app

    sys.argv[1:] = argv
    run(app)


# The order `memstore --help` lists the commands in (hidden ones, such as `ls`, come last).
HELP_ORDER = (
    *("init", "add", "search", "show", "reindex", "doctor", "watch", "daemon", "status"),
    *("serve", "benchmark", "hook", "sync", "confirm", "eval", "demo", "audit", "dedupe"),
    *("promote", "archive", "revive", "forget", "log", "revert", "view", "import", "export"),
    *("restore", "gc", "edit", "list", "stats", "ingest", "agents", "share", "review", "check"),
)
_app: typer.Typer | None = None


def typer_app() -> typer.Typer:
    """Return the one typer app: every shell's commands under the CLI's root (built once).

    The shells (cli, agents, daemon, mcp) never import each other; this is where they meet.
    """
    global _app
    if _app is not None:
        return _app
    from memstore.agents import commands as agents
    from memstore.cli import app as cli
    from memstore.cli import (
        conflicts,
        demo,
        evaluation,
        history,
        ingest,
        listing,
        memories,
        sync,
        teams,
        transfer,
        upkeep,
        vault,
        view,
    )
    from memstore.daemon import commands as daemon
    from memstore.mcp import commands as mcp

    groups = [vault, memories, upkeep, sync, history, transfer, evaluation, demo, listing, ingest]
    from memstore.cli import teamwork  # share, review, check (issue 40)

    groups += [teamwork, view]
    parts = [*(m.commands for m in groups), daemon.commands, agents.commands]
    parts.append(mcp.commands(daemon.watching))  # in-process serve runs the daemon's watcher
    app = cli.new_app()
    found = [info for part in parts for info in part.registered_commands]
    app.registered_commands = sorted(found, key=_place_in_help)
    app.add_typer(sync.remote, name="remote", cls=cli.CommandList)
    app.add_typer(conflicts.commands, name="conflicts", cls=cli.CommandList)
    app.add_typer(teams.commands, name="team", cls=cli.CommandList)
    _app = app
    return app


def _place_in_help(info: Any) -> int:
    """Where `memstore --help` lists a command (a typer CommandInfo)."""
    from typer.main import get_command_name

    name = info.name or get_command_name(info.callback.__name__)
    return HELP_ORDER.index(name) if name in HELP_ORDER else len(HELP_ORDER)


def _run_lean(op: str, argv: list[str]) -> None:
    """Run search, add or a re-ingest through the daemon, else here; return only to defer
    to typer.

    A search answered by the daemon imports the client and nothing else of memstore.
    """
    patterns = _cache_patterns()
    try:
        reply = _answer_lean(op, argv)
    finally:  # this process (or a test calling main) compiles on through re's own compiler
        if patterns is not None:
            patterns.save()  # what this process compiled first, for the next
            from memstore.core.pattern_cache import uninstall

            uninstall()
    if reply is None or reply.status is None:
        return
    try:
        sys.stdout.write(reply.stdout)
        sys.stdout.flush()
    except BrokenPipeError:  # `memstore search … | head -1`: the reader left, as with SIGPIPE
        os._exit(141)
    sys.stderr.write(reply.stderr)
    sys.exit(reply.status)


def _run_hook(argv: list[str]) -> int:
    """Run an agent's hook (ops/hooks.py): through the daemon, else as a one-shot command
    (the hook's work runs in a child process, which keeps what it compiled)."""
    patterns = _cache_patterns()

    def here(answer: Callable[[], Reply]) -> Reply:
        generated = _cache_generated_code()
        try:
            _paused_collector(_import_the_store)
            return answer()
        finally:
            generated.save()
            if patterns is not None:
                patterns.save()  # the child's: it ends without the launcher's finally

    try:
        from memstore.ops.hooks import main as hook_main

        return hook_main(argv, here)
    finally:
        if patterns is not None:
            patterns.save()
            from memstore.core.pattern_cache import uninstall

            uninstall()


def _answer_lean(op: str, argv: list[str]) -> Reply | None:
    """Return the daemon's reply, else this process's (None, or a None status: typer's)."""
    from memstore.ops import client

    stdin = b""
    if op == "add":
        from memstore.ops.options import wants_stdin

        stdin = _read_stdin() if wants_stdin(op, argv) else b""
    cwd = _cwd()
    request = client.Request(op, argv, cwd, dict(os.environ), stdin)
    reply = None
    allowed = client.daemon_allowed(request.env, argv)
    vault = client.vault_of(argv, request.env, cwd)
    if allowed:
        reply = client.ask(vault, request, start=False)
    if (reply is None or reply.status is None) and op == "ingest":
        return None  # the typer command ingests here, with its progress bar
    if reply is None or reply.status is None:
        generated = _cache_generated_code()  # not before: a daemon's answer needs no dataclass
        try:
            _paused_collector(_import_the_store)
            from memstore.ops import lean, registry

            _set_up_logging()
            _end_quietly_on_a_closed_pipe()
            # a daemon started afterwards compares every file (docs/search.md, rule 1)
            opener = lean.opener_for(vault if allowed else None, lean.open_one_shot)
            reply = registry.RUNNERS[registry.Op(op)](request, opener)
        finally:
            generated.save()  # what this process compiled first, for the next
            from memstore.core.generated_code import uninstall

            uninstall()
        if allowed and reply.status is not None:
            # Only now: a daemon starting meanwhile would hold the vault lock for its first
            # catch-up, and this command's own catch-up (a reader's: it never waits) would
            # be skipped.
            client.start_daemon(vault, request.env)
    return reply


def _defer_unused_modules() -> None:
    """Run the standard library modules a one-shot command imports but never calls only on
    their first use (core/deferred_modules.py): 12-18 ms of a no-daemon search's CPU."""
    from memstore.core.deferred_modules import defer

    defer()


def _cache_patterns() -> PatternCache | None:
    """Compile regular expressions through the machine's pattern cache (core/pattern_cache.py):
    a search or add without a daemon compiles hundreds while importing."""
    from memstore import __version__
    from memstore.core.pattern_cache import install

    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    # "-v2": the form with each pattern's generation (as generated-<python>-v2.marshal)
    return install(_cache_home() / f"patterns-{version}-v2.marshal", __version__)


def _cache_generated_code() -> GeneratedCode:
    """Run the methods dataclasses generate from the machine's cache of their code
    (core/generated_code.py): a search or add without a daemon defines ~45 classes."""
    from memstore import __version__
    from memstore.core.generated_code import install

    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    # "-v2": the form with each text's generation; a memstore before it reads the old name,
    # so both on one machine (an A/B benchmark) do not rewrite one file in turn
    return install(_cache_home() / f"generated-{version}-v2.marshal", __version__)


def _cache_home() -> Path:
    from pathlib import Path

    home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(home) / "memstore"


def _paused_collector(load: Callable[[], T]) -> T:
    """Return `load()` (imports: the store, its index and Whoosh, or the typer app's
    commands: 300-500 modules) run with the cycle collector paused, then freeze what exists.

    Importing allocates hundreds of thousands of long-lived objects and no cyclic garbage
    worth collecting; the collector would walk them dozens of times meanwhile and again at
    each full collection while the command runs: 50-70 ms of a no-daemon search's or add's
    CPU on a busy machine (docs/benchmarks.md section 7). Reference counting frees as before.
    """
    import gc

    gc.disable()
    try:
        return load()
    finally:
        gc.enable()
        gc.freeze()  # what the imports made lives as long as the process


def _import_the_store() -> None:
    import memstore.service.store  # noqa: F401  (what the lean runners open in this process)


def _run_merge_driver(argv: list[str]) -> None:
    """git's merge driver: merge and exit, importing only the merge rules (git starts it once
    per memory file a pull merges); return only to let typer answer other arguments."""
    from memstore.cli import merge_driver

    arguments = merge_driver.plain_arguments(argv)
    if arguments is None:
        return
    merge_driver.merge_files(*arguments)
    sys.exit(0)


def _end_quietly_on_a_closed_pipe() -> None:
    """`memstore log | head`: end quietly when the reader leaves, as cat and git do. Not
    for the long-running shells (they flush counters on the way out) or agent hooks."""
    import signal

    signal.signal(signal.SIGPIPE, signal.SIG_DFL)


def _read_stdin() -> bytes:
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:  # a text-only stream (an embedding program's): already decoded
        return sys.stdin.read().encode("utf-8", "surrogateescape") if sys.stdin else b""
    return bytes(stream.read())


def _cwd() -> str:
    try:
        return os.getcwd()
    except OSError:  # the current folder was removed: no repository to detect
        return ""


def _vault_after_the_command(argv: list[str]) -> list[str]:
    """Read `memstore --vault PATH COMMAND …` as `memstore COMMAND --vault PATH …` (as `git -C`
    comes first): the command's own --vault takes it, on the lean paths as in typer. Two
    --vault naming different folders, before the command or after it, are refused (typer
    would take the last one without a word), as a group's and its command's are."""
    leading, rest = _leading_vaults(argv)
    if leading and rest[:1] in (["-h"], ["--help"], ["--version"]):
        return rest
    if leading and (not all(leading) or not rest or rest[0].startswith("-")):
        _usage_error("--vault PATH comes with a command, e.g. memstore --vault PATH search QUERY")
    end = rest.index("--") if "--" in rest else len(rest)
    later = [rest[at + 1] for at in range(end - 1) if rest[at] == "--vault"]
    later += [word.partition("=")[2] for word in rest[:end] if word.startswith("--vault=")]
    if rest[:1] == ["hook"]:
        later = []  # a hook reads its own --vault and never fails the agent (exit 0)
    given = [*leading, *later]
    if len({os.path.realpath(os.path.expanduser(path)) for path in given}) > 1:
        shown = " and ".join(given)
        _usage_error(f"Invalid value for '--vault': names two folders ({shown}); give it once")
    return [rest[0], "--vault", leading[0], *rest[1:]] if leading else argv


def _leading_vaults(argv: list[str]) -> tuple[list[str], list[str]]:
    """Return the values of the --vault options before the command, and what follows them."""
    leading: list[str] = []
    while argv[:1] == ["--vault"] or (argv[:1] and argv[0].startswith("--vault=")):
        if argv[0] == "--vault":
            leading.append(argv[1] if len(argv) > 1 else "")
            argv = argv[2:]
        else:
            leading.append(argv[0].partition("=")[2])
            argv = argv[1:]
    return leading, argv


def _usage_error(message: str) -> None:
    """End with a usage error, as typer ends one: the usage line, then the message; exit 2."""
    sys.stderr.write(
        f"Usage: memstore [OPTIONS] COMMAND [ARGS]...\nTry 'memstore -h' for help.\n\nError: {message}\n"
    )
    sys.exit(2)


def _take_no_daemon(argv: list[str]) -> list[str]:
    """Remove a `--no-daemon` flag (before any `--`); it sets MEMSTORE_NO_DAEMON=1 for this run."""
    end = argv.index("--") if "--" in argv else len(argv)
    if "--no-daemon" not in argv[:end]:
        return argv
    os.environ["MEMSTORE_NO_DAEMON"] = "1"  # for the rest of this process and what it starts
    return [a for a in argv[:end] if a != "--no-daemon"] + argv[end:]


def _set_up_process() -> None:
    """Git's merge driver entry and the reliability suite's crash points learn how this
    process was started; files it writes are private."""
    os.umask(0o077)  # memories are private: files this process (and git under it) writes are too
    # numpy's OpenBLAS starts a thread per core when numpy is imported (~30 ms of CPU, a third
    # of numpy's import); memstore's arrays are scored element by element, and its one matrix
    # product (the semantic view's) is a matrix by a vector: one thread does it.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    program = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if os.path.basename(program) == "memstore" and os.access(program, os.X_OK):
        os.environ.setdefault("MEMSTORE_EXECUTABLE", program)
    crash_at = os.environ.get("MEMSTORE_CRASH_AT", "")
    if crash_at:
        from memstore.core.faults import arm

        arm(crash_at)


def _set_up_logging() -> None:
    """Warnings print as one line on stderr (not needed while the daemon answers)."""
    import logging

    logging.basicConfig(format="memstore: %(message)s", level=logging.WARNING)
