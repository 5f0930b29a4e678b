"""The op registry and the MCP tool table: one table each, and every name in it answered."""

from __future__ import annotations

import ast
from pathlib import Path

from memstore.ops import hooks, registry, tools
from memstore.ops.registry import IN_PROCESS, RUNNERS, Op, runner

ROOT = Path(__file__).resolve().parents[2]


def test_every_op_but_the_daemons_own_has_a_runner() -> None:
    assert set(RUNNERS) == set(Op) - {Op.STATUS, Op.STOP}
    assert set(RUNNERS) >= IN_PROCESS


def test_runner_finds_an_op_by_its_wire_value_and_nothing_for_another() -> None:
    assert runner("search") is RUNNERS[Op.SEARCH]
    assert runner("status") is None  # the daemon answers it itself
    assert runner("reindex") is None  # another memstore's op: the caller runs it


def test_every_op_a_shell_sends_is_in_the_registry() -> None:
    """The lean client names ops by their string value (it imports no enum): each string
    literal that becomes a Request's op is an Op."""
    sent = set()
    for path in (ROOT / "memstore").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "attr", getattr(node.func, "id", "")) == "Request"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                sent.add(node.args[0].value)
    assert sent and sent <= {op.value for op in Op}


def test_every_tool_has_one_handler() -> None:
    assert set(tools.HANDLERS) == set(tools.Tool) == set(tools.TOOLS)


def test_every_hook_event_has_a_budget() -> None:
    assert set(hooks.EVENTS) == set(hooks.BUDGET_S)
    assert hooks.is_event("prompt") and not hooks.is_event("stop")


def test_registry_is_what_the_daemon_and_launcher_read() -> None:
    """One table: the daemon and the launcher look runners up in it, not in tables of their own."""
    for module in ("memstore/daemon/server.py", "memstore/launcher.py"):
        text = (ROOT / module).read_text(encoding="utf-8")
        assert "registry" in text and "HANDLERS" not in text, module
    assert not hasattr(registry.lean, "RUNNERS")
