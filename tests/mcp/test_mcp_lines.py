"""Bad JSON-RPC lines: each gets the reply JSON-RPC says (or none), and serve keeps serving.

The pure reader first (memstore/mcp/lines.py), then the fuzz of tests/benchmarks/
bench_jsonrpc_fuzz.py against the real `memstore serve` over stdio: every kind of bad line
interleaved with valid requests, in process and through the vault's daemon.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCNotification, JSONRPCRequest

from memstore.mcp.lines import MAX_DEPTH, MAX_LINE_BYTES, Refusal, read_line, too_long
from tests.benchmarks.bench_jsonrpc_fuzz import KINDS, fuzz
from tests.conftest import EXE
from tests.daemon.test_daemon import env as daemons_allowed  # noqa: F401 (a fixture)


def nested(depth: int) -> bytes:
    inner = "[" * depth + "]" * depth
    return f'{{"jsonrpc":"2.0","id":7,"method":"ping","params":{{"x":{inner}}}}}'.encode()


@pytest.mark.parametrize("depth", [200, 100_000, 1_000_000])
def test_deep_nesting_is_refused_without_recursion(depth: int) -> None:
    for line in (b"[" * depth + b"]" * depth, b'{"a":' * depth + b"1" + b"}" * depth):
        refusal = read_line(line)
        assert isinstance(refusal, Refusal) and refusal.code == -32600 and refusal.id is None
        assert f"deeper than {MAX_DEPTH} levels" in refusal.message


def test_nesting_up_to_the_bound_is_read_and_past_it_refused_with_the_id() -> None:
    # the message and params are two levels: x may nest MAX_DEPTH - 2 more
    assert isinstance(read_line(nested(MAX_DEPTH - 2)), SessionMessage)
    refusal = read_line(nested(MAX_DEPTH - 1))
    assert isinstance(refusal, Refusal) and (refusal.code, refusal.id) == (-32600, 7)


def test_a_line_too_long_is_refused_by_its_size() -> None:
    refusal = too_long(MAX_LINE_BYTES + 1)
    assert refusal.code == -32600 and refusal.id is None and "4,194,305 bytes" in refusal.message


@pytest.mark.parametrize(
    ("line", "code", "request_id"),
    [
        (b"hello", -32700, None),
        (b'{"jsonrpc":"2.0","id":3,"method":"ping","params":{"x":NaN}}', -32700, 3),
        (b'{"jsonrpc":"2.0","id":"a","method":"p\xffng"}', -32700, "a"),
        (b"[]", -32600, None),
        (b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]', -32600, None),
        (b'{"jsonrpc":"2.0","id":true,"method":"ping"}', -32600, None),
        (b'{"jsonrpc":"2.0","id":4}', -32600, 4),
        (b'{"jsonrpc":"2.0","id":5,"method":"ping","params":[1]}', -32600, 5),
        (b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":"x"}', -32600, None),
        (b'{"jsonrpc":"2.0","id":6,"method":"ping","params":{"x":"\\ud800"}}', -32602, 6),
    ],
)
def test_bad_lines_get_their_code_and_the_id_when_readable(
    line: bytes, code: int, request_id: object
) -> None:
    refusal = read_line(line)
    assert isinstance(refusal, Refusal) and (refusal.code, refusal.id) == (code, request_id)
    assert "\n" not in refusal.message and json.loads(refusal.reply().message.model_dump_json())


@pytest.mark.parametrize(
    "line",
    [
        b"",
        b"  \t ",
        b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"x":"\\ud800"}}',
        b'{"jsonrpc":"2.0","id":9,"result":"not an object"}',
    ],
)
def test_blank_lines_notifications_and_responses_get_no_reply(line: bytes) -> None:
    assert read_line(line) is None


def test_valid_lines_pass_unchanged_surrogate_pairs_and_nan_in_text_included() -> None:
    emoji = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"\\ud83d\\ude00 NaN"}}'
    read = read_line(emoji)
    assert isinstance(read, SessionMessage) and isinstance(read.message, JSONRPCRequest)
    assert read.message.params == {"x": "\U0001f600 NaN"}
    escaped = b'{"jsonrpc":"2.0","method":"n","params":{"x":"\\\\ud800"}}'  # a backslash, text
    note = read_line(escaped)
    assert isinstance(note, SessionMessage) and isinstance(note.message, JSONRPCNotification)
    assert note.message.params == {"x": "\\ud800"}


# --- the real `memstore serve` over stdio ------------------------------------------------


def test_fuzz_every_bad_line_gets_its_reply_and_serve_keeps_serving(
    vault: Path, tmp_path: Path
) -> None:
    import os

    env = {**os.environ, "MEMSTORE_VAULT": str(vault)}
    figures = fuzz(EXE, env, tmp_path, rounds=1, seed=36)
    assert figures.wrong == []
    assert figures.kinds == len(KINDS) >= 60
    assert figures.correct == figures.sent == len(KINDS)
    assert figures.valid_answered == figures.valid_sent == len(KINDS)
    assert figures.alive and figures.exit_status == 0


def test_requests_in_hand_at_end_of_input_are_answered(vault: Path, tmp_path: Path) -> None:
    # `printf … | memstore serve`: the SDK stopped at EOF and dropped what it still held
    import os
    import subprocess

    hello = {"protocolVersion": "2025-06-18", "capabilities": {}}
    hello["clientInfo"] = {"name": "test", "version": "1"}
    lines = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}]
    lines.append({"jsonrpc": "2.0", "method": "notifications/initialized"})
    recall = {"name": "memory_recall", "arguments": {"query": "nginx"}}
    lines += [{"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": recall} for n in (2, 3)]
    lines += [{"jsonrpc": "2.0", "id": n, "method": "ping"} for n in (4, 5, 0)]
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    env = {**os.environ, "MEMSTORE_VAULT": str(vault)}
    done = subprocess.run(
        [str(EXE), "serve"], input=data, capture_output=True, env=env, cwd=tmp_path, timeout=60
    )
    assert done.returncode == 0, done.stderr
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert sorted(reply["id"] for reply in replies) == [0, 1, 2, 3, 4, 5]


def test_fuzz_through_the_daemon(
    vault: Path,
    tmp_path: Path,
    daemons_allowed: dict[str, str],  # noqa: F811
) -> None:
    env = {**daemons_allowed, "MEMSTORE_VAULT": str(vault)}
    figures = fuzz(EXE, env, tmp_path, rounds=1, seed=7)
    assert figures.wrong == []
    assert figures.correct == figures.sent == len(KINDS)
    assert figures.alive and figures.exit_status == 0
