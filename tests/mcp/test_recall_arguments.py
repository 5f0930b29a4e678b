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
