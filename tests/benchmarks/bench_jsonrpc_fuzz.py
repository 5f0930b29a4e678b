#!/usr/bin/env python
"""JSON-RPC fuzz of `memstore serve`: bad lines over real stdio, each checked against the
reply JSON-RPC and MCP call for, with valid requests between them.

A standalone script (tests/mcp/test_mcp_lines.py runs the same `fuzz` in CI, shorter):

    python tests/benchmarks/bench_jsonrpc_fuzz.py [--rounds 5] [--seed 36] [--no-daemon]
        [--skip NAME-PART ...]

It makes a vault in a temporary HOME, starts `memstore serve` (through the vault's daemon
unless --no-daemon), initializes, and then, round after round in a seeded random order,
sends every kind of bad line in KINDS, each followed by a valid request (ping, tools/list,
memory_recall, now and then memory_add). A bad line passes when exactly the replies it
should get arrive (an error with the expected code and id, a tool error with the expected
text, or nothing for a notification or a stray response) and the valid request after it is
answered correctly. At the end the server must still answer, and exit 0 when stdin closes.
It prints: kinds of bad line, lines sent, replies correct, valid requests answered, server
alive, and the seconds it took.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import select
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

EXE = Path(sys.executable).with_name("memstore")
BOUND_S = 30.0  # seconds a reply may take before the server counts as hung
GRACE_S = 5.0  # seconds a bad line's reply may come after the valid request's
PARSE, INVALID, NO_METHOD, PARAMS = -32700, -32600, -32601, -32602
HUGE = 5 * 1024 * 1024  # over the 4 MiB a line may hold


@dataclass(frozen=True)
class Kind:
    """One kind of bad line: how to make it for request id `n`, and what it must get.

    `code`: the JSON-RPC error code of the one reply (None: no reply at all); `same_id`:
    the reply carries id n (else null); `tool_error`: the reply is a tool result with
    isError and this text instead of an error.
    """

    name: str
    line: Callable[[int], bytes]
    code: int | None
    same_id: bool = False
    tool_error: str = ""


def _call(n: int, method: str, params: Any = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": n, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode("ascii")


def _tool(n: int, name: str, arguments: Any) -> bytes:
    return _call(n, "tools/call", {"name": name, "arguments": arguments})


def _raw(text: str) -> Callable[[int], bytes]:
    """A line whose text holds {n} for the request id."""
    return lambda n: text.replace("{n}", str(n)).encode("utf-8")


def _const(data: bytes) -> Callable[[int], bytes]:
    return lambda n: data


KINDS = [
    # not JSON text: -32700, the id when the line still shows one
    Kind("not JSON", _const(b"hello there"), PARSE),
    Kind("truncated object", _raw('{"jsonrpc":"2.0","id":{n},'), PARSE),
    Kind("trailing garbage", lambda n: _call(n, "ping") + b" x", PARSE),
    Kind("two objects on a line", lambda n: _call(n, "ping") + _call(n + 1, "ping"), PARSE),
    Kind("single quotes", _raw("{'jsonrpc':'2.0','id':{n},'method':'ping'}"), PARSE),
    Kind("NUL bytes", _const(b"\x00\x00\x00"), PARSE),
    Kind("byte order mark", lambda n: b"\xef\xbb\xbf" + _call(n, "ping"), PARSE),
    Kind(
        "invalid UTF-8 in a request",
        lambda n: _tool(n, "memory_recall", {"query": "x"}).replace(b'"x"', b'"caf\xff"'),
        PARSE,
        same_id=True,
    ),
    Kind("invalid UTF-8, no JSON", _const(b"\xff\xfe\xfd"), PARSE),
    Kind(
        "overlong UTF-8",
        lambda n: _call(n, "ping").replace(b"ping", b"p\xc0\xafng"),
        PARSE,
        same_id=True,
    ),
    Kind(
        "NaN in params",
        _raw('{"jsonrpc":"2.0","id":{n},"method":"ping","params":{"x":NaN}}'),
        PARSE,
        same_id=True,
    ),
    Kind(
        "Infinity as a tool argument",
        _raw(
            '{"jsonrpc":"2.0","id":{n},"method":"tools/call","params":{"name":"memory_recall","arguments":{"query":"x","k":-Infinity}}}'
        ),
        PARSE,
        same_id=True,
    ),
    Kind("bare NaN", _const(b"NaN"), PARSE),
    # too deep, too long: -32600
    Kind("100,000 nested arrays", _const(b"[" * 100_000 + b"]" * 100_000), INVALID),
    Kind("50,000 nested objects", _const(b'{"a":' * 50_000 + b"1" + b"}" * 50_000), INVALID),
    Kind("100,000 unclosed brackets", _const(b"[" * 100_000), INVALID),
    Kind(
        "100 levels in a tool argument",
        lambda n: _tool(
            n, "memory_add", {"content": "x", "keywords": json.loads("[" * 100 + "]" * 100)}
        ),
        INVALID,
        same_id=True,
    ),
    Kind("5 MiB line", lambda n: _tool(n, "memory_add", {"content": "a" * HUGE}), INVALID),
    Kind("5 MiB of garbage", _const(b"x" * HUGE), INVALID),
    # JSON, but not one JSON-RPC message: -32600
    Kind("a number", _const(b"42"), INVALID),
    Kind("a string", _const(b'"ping"'), INVALID),
    Kind("null", _const(b"null"), INVALID),
    Kind("true", _const(b"true"), INVALID),
    Kind("empty object", _const(b"{}"), INVALID),
    Kind("empty batch", _const(b"[]"), INVALID),
    Kind(
        "batch of requests",
        lambda n: b"[" + _call(n, "ping") + b"," + _call(n + 1, "ping") + b"]",
        INVALID,
    ),
    Kind(
        "batch of one notification",
        _const(b'[{"jsonrpc":"2.0","method":"notifications/initialized"}]'),
        INVALID,
    ),
    Kind("no jsonrpc", _raw('{"id":{n},"method":"ping"}'), INVALID, same_id=True),
    Kind("jsonrpc 1.0", _raw('{"jsonrpc":"1.0","id":{n},"method":"ping"}'), INVALID, same_id=True),
    Kind(
        "jsonrpc as a number",
        _raw('{"jsonrpc":2.0,"id":{n},"method":"ping"}'),
        INVALID,
        same_id=True,
    ),
    Kind("no method", _raw('{"jsonrpc":"2.0","id":{n}}'), INVALID, same_id=True),
    Kind("method a number", _raw('{"jsonrpc":"2.0","id":{n},"method":5}'), INVALID, same_id=True),
    Kind("method null", _raw('{"jsonrpc":"2.0","id":{n},"method":null}'), INVALID, same_id=True),
    Kind("id an object", _const(b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}'), INVALID),
    Kind("id a list", _const(b'{"jsonrpc":"2.0","id":[1],"method":"ping"}'), INVALID),
    Kind("id a fraction", _const(b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}'), INVALID),
    Kind("id a boolean", _const(b'{"jsonrpc":"2.0","id":true,"method":"ping"}'), INVALID),
    Kind("id null", _const(b'{"jsonrpc":"2.0","id":null,"method":"ping"}'), INVALID),
    Kind("params a string", lambda n: _call(n, "tools/list", "x"), INVALID, same_id=True),
    Kind(
        "params a list",
        lambda n: _call(n, "tools/call", ["memory_recall", {"query": "x"}]),
        INVALID,
        same_id=True,
    ),
    Kind("params a number", lambda n: _call(n, "ping", 7), INVALID, same_id=True),
    Kind(
        "notification, params a string",
        _const(b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":"x"}'),
        INVALID,
    ),
    Kind(
        "notification, method a number",
        _const(b'{"jsonrpc":"2.0","method":1,"params":"bar"}'),
        INVALID,
    ),
    # well-formed requests the server cannot do: the SDK's answers, with the id
    Kind("unknown method", lambda n: _call(n, "nosuch/method"), NO_METHOD, same_id=True),
    Kind("tools/call without a name", lambda n: _call(n, "tools/call", {}), PARAMS, same_id=True),
    Kind(
        "tools/call, arguments a string",
        lambda n: _call(n, "tools/call", {"name": "memory_recall", "arguments": "x"}),
        PARAMS,
        same_id=True,
    ),
    Kind(
        "tools/list, cursor a number",
        lambda n: _call(n, "tools/list", {"cursor": 5}),
        PARAMS,
        same_id=True,
    ),
    Kind(
        "lone surrogate in a tool argument",
        _raw(
            '{"jsonrpc":"2.0","id":{n},"method":"tools/call","params":{"name":"memory_add","arguments":{"content":"bad \\ud800 text"}}}'
        ),
        PARAMS,
        same_id=True,
    ),
    # well-formed tool calls with wrong arguments: a tool error in one plain line
    Kind(
        "tool argument of the wrong type",
        lambda n: _tool(n, "memory_recall", {"query": 5}),
        None,
        tool_error="query must be a string, not an integer",
    ),
    Kind(
        "tool argument missing",
        lambda n: _tool(n, "memory_recall", {}),
        None,
        tool_error="query is missing",
    ),
    Kind(
        "tool list of numbers",
        lambda n: _tool(n, "memory_add", {"content": "x", "keywords": [1, 2]}),
        None,
        tool_error="keywords must be a list of strings",
    ),
    Kind("unknown tool", lambda n: _tool(n, "memory_nosuch", {}), None, tool_error="Unknown tool"),
    Kind(
        "confirm of an unknown id",
        lambda n: _tool(n, "memory_confirm", {"id": "zzzz9999"}),
        None,
        tool_error="call memory_recall to find ids",
    ),
    # never answered: notifications (whatever their params) and responses nobody asked for
    Kind(
        "unknown notification",
        _const(b'{"jsonrpc":"2.0","method":"notifications/nosuch","params":{"a":1}}'),
        None,
    ),
    Kind(
        "notification with bad params",
        _const(
            b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":{"x":1}}}'
        ),
        None,
    ),
    Kind(
        "notification with a lone surrogate",
        _const(b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"x":"\\ud800"}}'),
        None,
    ),
    Kind(
        "initialized again", _const(b'{"jsonrpc":"2.0","method":"notifications/initialized"}'), None
    ),
    Kind("stray response", _raw('{"jsonrpc":"2.0","id":{n},"result":{}}'), None),
    Kind(
        "stray error response",
        _raw('{"jsonrpc":"2.0","id":{n},"error":{"code":1,"message":"x"}}'),
        None,
    ),
    Kind("malformed response", _raw('{"jsonrpc":"2.0","id":{n},"result":"x"}'), None),
    Kind("blank line", _const(b"   \t "), None),
]


@dataclass
class Figures:
    kinds: int = 0
    sent: int = 0
    correct: int = 0
    valid_sent: int = 0
    valid_answered: int = 0
    alive: bool = False
    exit_status: int | None = None
    seconds: float = 0.0
    wrong: list[str] = field(default_factory=list)  # what went wrong, one line each

    def lines(self) -> list[str]:
        return [
            f"kinds of bad line       {self.kinds}",
            f"bad lines sent          {self.sent}",
            f"replies correct         {self.correct} of {self.sent}",
            f"valid requests answered {self.valid_answered} of {self.valid_sent}",
            f"server alive at the end {'yes' if self.alive else 'no'} (exit status {self.exit_status} on EOF)",
            f"seconds                 {self.seconds:.1f}",
            *(f"WRONG {line}" for line in self.wrong[:20]),
        ]


class Wire:
    """The server's stdin and stdout, one JSON message a line, every read bounded."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        self.proc = proc
        self.out = proc.stdout.fileno()
        self.buffer = b""

    def send(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def read(self, seconds: float = BOUND_S) -> dict[str, Any] | None:
        """Return the next message, or None when none comes in `seconds` (or at EOF)."""
        deadline = time.monotonic() + seconds
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.out], [], [], left)[0]:
                return None
            chunk = os.read(self.out, 1 << 16)
            if not chunk:
                return None
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return dict(json.loads(line))


def _valid(n: int, step: int) -> tuple[bytes, Callable[[dict[str, Any]], bool]]:
    """Return a valid request (the step decides which) and the check of its reply."""
    if step % 4 == 0:
        return _call(n, "ping"), lambda r: r.get("result") == {}
    if step % 4 == 1:
        names = {"memory_recall", "memory_add", "memory_confirm"}
        return _call(
            n, "tools/list"
        ), lambda r: {t["name"] for t in r.get("result", {}).get("tools", [])} == names
    if step % 16 == 3:  # a write now and then: one commit each
        content = f"fuzz step {step}: nginx client_max_body_size limits uploads"
        line = _tool(n, "memory_add", {"content": content, "keywords": ["nginx"]})
    else:
        line = _tool(n, "memory_recall", {"query": "nginx upload limit"})
    return line, lambda r: r.get("result", {}).get("isError") is False


def _judge(kind: Kind, n: int, replies: list[dict[str, Any]]) -> str:
    """Return what is wrong with the replies to bad line `n` of `kind` ("" if nothing)."""
    if kind.code is None and not kind.tool_error:
        return f"expected no reply, got {replies}" if replies else ""
    if len(replies) != 1:
        return f"expected one reply, got {len(replies)}: {replies}"
    reply = replies[0]
    if kind.tool_error:
        result = reply.get("result", {})
        text = "".join(part.get("text", "") for part in result.get("content", []))
        if reply.get("id") != n or result.get("isError") is not True:
            return f"expected a tool error for id {n}, got {reply}"
        if kind.tool_error not in text or "\n" in text or "http" in text:
            return f"expected one plain line with {kind.tool_error!r}, got {text!r}"
        return ""
    want_id = n if kind.same_id else None
    error = reply.get("error", {})
    if reply.get("id") != want_id or error.get("code") != kind.code:
        return f"expected error {kind.code} with id {want_id}, got {reply}"
    if not error.get("message") or "\n" in error["message"]:
        return f"expected a one-line message, got {error.get('message')!r}"
    return ""


def fuzz(
    exe: Path, env: dict[str, str], cwd: Path, *, rounds: int, seed: int, kinds: list[Kind] = KINDS
) -> Figures:
    """Drive `memstore serve` over stdio with every kind of `kinds` `rounds` times."""
    figures = Figures(kinds=len(kinds))
    started = time.monotonic()
    rng = random.Random(seed)
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            [str(exe), "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=log, env=env, cwd=cwd,
        )  # fmt: skip
        wire = Wire(proc)
        try:
            _fuzz_rounds(wire, figures, rng, rounds, kinds)
            wire.send(_call(1, "ping"))
            figures.alive = proc.poll() is None and _answers(wire, 1)
        finally:
            assert proc.stdin is not None
            proc.stdin.close()
            try:
                figures.exit_status = proc.wait(timeout=BOUND_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                figures.exit_status = proc.wait()
            assert proc.stdout is not None
            proc.stdout.close()
        if figures.wrong or not figures.alive:
            log.seek(0)
            figures.wrong.append("server stderr: " + log.read()[-2000:].decode("utf-8", "replace"))
    figures.seconds = time.monotonic() - started
    return figures


def _answers(wire: Wire, n: int) -> bool:
    reply = wire.read()
    return reply is not None and reply.get("id") == n and "result" in reply


def _fuzz_rounds(
    wire: Wire, figures: Figures, rng: random.Random, rounds: int, kinds: list[Kind]
) -> None:
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}}
    hello["clientInfo"] = {"name": "fuzz", "version": "1"}
    wire.send(_call(1, "initialize", hello))
    if not _answers(wire, 1):
        figures.wrong.append("initialize was not answered")
        return
    wire.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    n = 10
    for step in range(rounds * len(kinds)):
        if step % len(kinds) == 0:
            order = rng.sample(kinds, len(kinds))
        kind = order[step % len(kinds)]
        bad, good = n, n + 2  # n + 1 may appear in a bad line (two objects, a batch)
        n += 3
        valid, check = _valid(good, step)
        wire.send(kind.line(bad))
        wire.send(valid)
        figures.sent += 1
        figures.valid_sent += 1
        replies: list[dict[str, Any]] = []
        answered = None
        expect_one = kind.code is not None or bool(kind.tool_error)
        while answered is None or (expect_one and not replies):
            # the valid request's answer may come first: the bad line's then has a grace
            reply = wire.read(BOUND_S if answered is None else GRACE_S)
            if reply is None and answered is None:
                state = "died" if wire.proc.poll() is not None else "hung"
                figures.wrong.append(
                    f"{kind.name}: the server {state} (no answer in {BOUND_S:g} s)"
                )
                return
            if reply is None:
                break
            if reply.get("id") == good:
                answered = reply
            else:
                replies.append(reply)
        wrong = _judge(kind, bad, replies)
        if wrong:
            figures.wrong.append(f"{kind.name}: {wrong}"[:600])
        else:
            figures.correct += 1
        if check(answered):
            figures.valid_answered += 1
        else:
            figures.wrong.append(f"valid request after {kind.name}: {answered}"[:600])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="times each kind is sent")
    parser.add_argument("--seed", type=int, default=36)
    parser.add_argument("--no-daemon", action="store_true", help="serve without the daemon")
    parser.add_argument(
        "--skip", action="append", default=[], help="leave out kinds whose name holds this"
    )
    options = parser.parse_args()
    kinds = [k for k in KINDS if not any(part in k.name for part in options.skip)]
    home = Path(tempfile.mkdtemp(prefix="memstore-fuzz-"))
    vault = home / "memstore"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMSTORE_", "GIT_"))}
    env |= {"HOME": str(home), "MEMSTORE_VAULT": str(vault), "MEMSTORE_SOURCE": "fuzz"}
    env |= {"GIT_AUTHOR_NAME": "fuzz", "GIT_AUTHOR_EMAIL": "fuzz@example.com"}
    env |= {"GIT_COMMITTER_NAME": "fuzz", "GIT_COMMITTER_EMAIL": "fuzz@example.com"}
    if options.no_daemon:
        env["MEMSTORE_NO_DAEMON"] = "1"
    try:
        subprocess.run([str(EXE), "init", str(vault)], env=env, check=True, capture_output=True)
        figures = fuzz(EXE, env, home, rounds=options.rounds, seed=options.seed, kinds=kinds)
        if not options.no_daemon:
            subprocess.run(
                [str(EXE), "daemon", "--stop", "--vault", str(vault)], env=env, capture_output=True
            )
    finally:
        shutil.rmtree(home, ignore_errors=True)
    mode = "without a daemon" if options.no_daemon else "through the vault's daemon"
    print(f"memstore serve {mode}, {options.rounds} rounds, seed {options.seed}")
    print("\n".join(figures.lines()))
    return 0 if figures.correct == figures.sent and figures.alive and not figures.wrong else 1


if __name__ == "__main__":
    sys.exit(main())
