"""The ops memstore runs for a Request, in one table the daemon and the lean path both read.

A Request names its op by the op's string value (the lean client imports no enum); `runner`
turns that value into the op's runner, or None for an op no store answers. `status` and
`stop` are about the daemon itself: it answers them without a runner. The runners of hook
and tool import their modules when called, so the in-process lean path imports neither.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum

from memstore.ops import lean
from memstore.ops.client import Reply, Request

Runner = Callable[[Request, lean.OpenStore], Reply]


class Op(StrEnum):
    """What a Request asks for (its `op` field carries the value)."""

    SEARCH = "search"
    ADD = "add"
    INGEST = "ingest"
    HOOK = "hook"
    TOOL = "tool"
    STATUS = "status"  # the daemon's figures (memstore status)
    STOP = "stop"  # the daemon stops


def _hook(request: Request, open_store: lean.OpenStore) -> Reply:
    from memstore.ops.hooks import answer

    return answer(request, open_store)


def _tool(request: Request, open_store: lean.OpenStore) -> Reply:
    from memstore.ops.tools import answer

    return answer(request, open_store)


RUNNERS: dict[Op, Runner] = {
    Op.SEARCH: lean.run_search,
    Op.ADD: lean.run_add,
    Op.INGEST: lean.run_ingest,
    Op.HOOK: _hook,
    Op.TOOL: _tool,
}
# What the launcher runs in its own process when no daemon answers (a re-ingest without a
# daemon runs as the typer command, with its progress bar; hooks and tools have shells of
# their own).
IN_PROCESS = frozenset({Op.SEARCH, Op.ADD})


def runner(op: str) -> Runner | None:
    """Return the runner of the op named `op`, or None when no store answers it."""
    try:
        return RUNNERS.get(Op(op))
    except ValueError:  # another memstore's op: the caller runs it itself
        return None
