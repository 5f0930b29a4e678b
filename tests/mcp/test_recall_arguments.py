"""memory_recall's arguments an agent gets wrong are named, not answered as if asked: an
empty query and a k below 1 are errors with the fix; a long query that matches nothing is
echoed shortened, not whole, in the message."""

from __future__ import annotations

from typing import Any

import pytest

from tests.mcp.test_mcp import call, server, text_of  # noqa: F401 (fixture)


@pytest.mark.parametrize("query", ["", "   ", "\n\t"])
def test_an_empty_query_is_an_error_that_says_what_to_pass(server: Any, query: str) -> None:  # noqa: F811
    done = call(server, "memory_recall", {"query": query})
    assert done.is_error and "query is empty; pass the key words" in text_of(done)


@pytest.mark.parametrize("k", [0, -1])
def test_a_k_below_one_is_an_error(server: Any, k: int) -> None:  # noqa: F811
    call(server, "memory_add", {"content": "pnpm only, never npm", "keywords": ["pnpm"]})
    done = call(server, "memory_recall", {"query": "pnpm", "k": k})
    assert done.is_error and f"k is {k}; ask for 1 to 50" in text_of(done)


def test_a_long_unmatched_query_is_echoed_shortened(server: Any) -> None:  # noqa: F811
    call(server, "memory_add", {"content": "pnpm only, never npm", "keywords": ["pnpm"]})
    done = call(server, "memory_recall", {"query": "zebra " * 5000})
    message = done.structured_content["message"]
    assert not done.is_error and "No memory matches 'zebra zebra" in message
    assert len(message) < 300, len(message)


@pytest.mark.parametrize(
    ("tool", "workspace", "said"),
    [
        ("memory_recall", "../x", "invalid workspace name '../x'"),
        ("memory_recall", "My Project", "invalid workspace name 'My Project'"),
        ("memory_add", "../x", "invalid workspace name '../x'"),
        ("memory_add", "all", "workspace 'all' is reserved"),
        ("memory_add", "readme.md", "is the name of a file at the vault's top"),
    ],
)
def test_a_bad_workspace_is_named_in_the_agents_terms(
    server: Any,  # noqa: F811
    tool: str,
    workspace: str,
    said: str,
) -> None:
    # The store's message told the agent "e.g. -w my-project": an option of the command
    # line, which a tool call cannot pass.
    arguments = {"query": "pnpm"} if tool == "memory_recall" else {"content": "pnpm only"}
    done = call(server, tool, {**arguments, "keywords": ["pnpm"], "workspace": workspace})
    message = text_of(done)
    assert done.is_error and said in message, message
    assert "-w" not in message and '"workspace": "' in message, message
