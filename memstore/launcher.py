"""The `memstore` executable: search, add and hook take the lean path, everything else typer."""

from __future__ import annotations

import signal
import sys


def main() -> None:
    """Dispatch the command line."""
    argv = sys.argv[1:]
    _set_up_process()
    if argv[:1] not in (["serve"], ["watch"], ["hook"]):
        # `memstore log | head`: end quietly when the reader leaves, as cat and git do. Not
        # for the long-running shells (they flush counters on the way out) or agent hooks.
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    if argv[:1] == ["hook"] and not {"-h", "--help"} & set(argv):
        from memstore.agent_hooks import main as hook_main

        sys.exit(hook_main(argv[1:]))
    if argv[:1] in (["search"], ["add"]):
        from memstore import lean

        status = (lean.run_search if argv[0] == "search" else lean.run_add)(argv[1:])
        if status is not None:
            sys.exit(status)
    from memstore.cli import main as cli_main

    cli_main()


def _set_up_process() -> None:
    """Warnings print as one line on stderr; git's merge driver entry and the reliability
    suite's crash points learn how this process was started."""
    import logging
    import os

    logging.basicConfig(format="memstore: %(message)s", level=logging.WARNING)
    os.umask(0o077)  # memories are private: files this process (and git under it) writes are too
    program = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if os.path.basename(program) == "memstore" and os.access(program, os.X_OK):
        os.environ.setdefault("MEMSTORE_EXECUTABLE", program)
    crash_at = os.environ.get("MEMSTORE_CRASH_AT", "")
    if crash_at:
        from memstore.faults import arm

        arm(crash_at)
