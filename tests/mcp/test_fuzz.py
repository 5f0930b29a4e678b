"""Fuzz: hostile arguments to the CLI and the MCP tools get an answer or one clear error.

Never a traceback, a hang (every call is bounded) or a write on error (HEAD and the files
stay as they were). Arbitrary Unicode: lone surrogates (what invalid UTF-8 becomes in
Python), control characters, NUL, escape sequences, huge strings, option-looking strings.
Most examples run in-process (the same lean-then-typer dispatch as the executable); a
handful go through the installed executable and a real `memstore serve` over stdio.
The short versions run in CI; `python -m pytest -m long tests/mcp/test_fuzz.py` runs many more.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import random
import select
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pygit2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.shared.exceptions import MCPError

from memstore.cli.app import run
from memstore.launcher import typer_app
from memstore.mcp.server import build_server
from memstore.ops import client, lean, registry
from memstore.service.store import Store
from tests.conftest import EXE, settings_at, vault_bytes

cli = typer_app()  # every shell's commands, as the executable has them

# Strict stdout, as under an en_US.UTF-8 locale (C.UTF-8 would hide a crash behind
# surrogateescape); stderr is backslashreplace there, as Python sets it.
STRICT = {"PYTHONIOENCODING": "utf-8:strict"}
BOUND = 60  # seconds any one command or tool call may take before it counts as a hang

# --- what to throw ----------------------------------------------------------------------

CONTROLS = list("\x00\x01\x07\x08\x0b\x0c\x1b\x7f\x85\x9b\u061c\u200b\u202e\u2066\ufeff\r\t\n")
SURROGATES = ["\ud800", "\udcff", "\udc80", "\udfff"]
OPTION_LIKE = ["-", "--", "-w", "--kind", "--json", "--help", "-K", "--keyword=", "--bogus"]
OPTION_LIKE += ["-k", "--all", "--as-of", "-h", "--source=", "- a bullet", "-0", "--=x"]


class Huge(str):
    """A long string that hypothesis reports in a few characters, not 150 kB."""

    def __repr__(self) -> str:
        return f"Huge({str.__repr__(self[:12])} * … {len(self):,} chars)"


HUGE = [Huge(text) for text in ("x" * 150_000, "é " * 60_000, "word " * 3_000, "\x1b[31m" * 5_000)]
WORDS = ["nginx", "413", "upload", "deploy", "redis", "port", "approval", "ünïcode", "café"]

any_char = st.characters(exclude_categories=())  # every code point, surrogates included
piece = st.one_of(
    st.text(any_char, max_size=6),
    st.sampled_from(CONTROLS + SURROGATES + WORDS + [" ", "\x1b[2J", "\x1b]0;title\x07"]),
)
fuzz_text = st.one_of(
    st.lists(piece, max_size=10).map("".join),
    st.sampled_from(OPTION_LIKE),
    st.sampled_from(HUGE),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join),
)
ids = st.text("abcdefghijklmnopqrstuvwxyz234567", min_size=1, max_size=10)


@st.composite
def cli_argv(draw: st.DrawFn) -> tuple[list[str], bytes]:
    """Return arguments for add, search or show, and what stdin holds."""
    command = draw(st.sampled_from(["add", "search", "show"]))
    positional = draw(
        st.one_of(fuzz_text, ids if command == "show" else st.just("-"))
        if command != "search"
        else fuzz_text
    )
    value = st.one_of(fuzz_text, st.sampled_from(["global", "webshop", "note", "lesson", "3"]))
    choices: dict[str, list[tuple[str, ...]]] = {
        "add": [("-w",), ("--kind",), ("-K",), ("--keyword",), ("--source",), ("--supersedes",)],
        "search": [("-w",), ("-k",), ("--as-of",)],
        "show": [("--as-of",)],
    }
    flags = {"add": ["--json"], "search": ["--json", "--all", "--context", "--archived"]}
    options: list[list[str]] = []
    for (name,) in draw(st.lists(st.sampled_from(choices[command]), max_size=4)):
        options.append([name, draw(value)])
    for flag in draw(st.lists(st.sampled_from(flags.get(command, ["--json"])), max_size=2)):
        options.append([flag])
    order = draw(st.permutations([[positional], *options]))
    argv = [command, *(arg for group in order for arg in group)]
    stdin = draw(
        st.one_of(
            st.binary(max_size=300),
            st.text(any_char, max_size=100).map(lambda s: s.encode("utf-8", "surrogatepass")),
        )
    )
    return argv, stdin


# --- running the CLI in-process, as the executable dispatches it ------------------------


@contextlib.contextmanager
def bounded(seconds: int) -> Iterator[None]:
    """Raise TimeoutError in this thread if the block takes longer than `seconds`."""

    def expire(_signum: int, _frame: object) -> None:
        raise TimeoutError(f"no answer within {seconds} s: a hang")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def run_in_process(argv: list[str], stdin: bytes) -> tuple[int, bytes, bytes]:
    """Run `memstore <argv>` as the launcher does (lean path, else typer); return rc, out, err."""
    out, err = io.BytesIO(), io.BytesIO()
    streams = {
        "stdin": io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8"),
        "stdout": io.TextIOWrapper(out, encoding="utf-8", write_through=True),
        "stderr": io.TextIOWrapper(err, encoding="utf-8", errors="backslashreplace"),
    }
    saved = {name: getattr(sys, name) for name in (*streams, "argv")}
    unseeded()
    try:
        for name, stream in streams.items():
            setattr(sys, name, stream)
        sys.argv = ["memstore", *argv]
        with bounded(BOUND):
            status = None
            if argv[:1] in (["search"], ["add"]):
                op, rest = argv[0], argv[1:]
                data = stdin if lean.wants_stdin(op, rest) else b""
                request = client.Request(op, rest, os.getcwd(), dict(os.environ), data)
                reply = registry.RUNNERS[registry.Op(op)](request, lean.open_in_process)
                status = reply.status
                if status is not None:
                    streams["stdout"].write(reply.stdout)
                    streams["stderr"].write(reply.stderr)
            if status is None:
                try:
                    run(cli)
                    status = 0
                except SystemExit as done:
                    status = (
                        done.code if isinstance(done.code, int) else 0 if done.code is None else 1
                    )
        streams["stdout"].flush()
        streams["stderr"].flush()
    finally:
        for name, stream in saved.items():
            setattr(sys, name, stream)
    return status, out.getvalue(), err.getvalue()


def unseeded() -> None:
    """Seed `random` as a new process does: hypothesis fixes the seed for each example, and
    Whoosh names segments with `random`, so two examples would write the same segment name."""
    random.seed()


def snapshot(vault: Path) -> tuple[str, dict[str, bytes]]:
    return str(pygit2.Repository(str(vault)).head.target), vault_bytes(vault)


def commits_since(vault: Path, commit: str) -> int:
    repo = pygit2.Repository(str(vault))
    walker = repo.walk(repo.head.target)
    walker.hide(pygit2.Oid(hex=commit))
    return sum(1 for _ in walker)


def check_outcome(
    vault: Path, before: tuple[str, dict[str, bytes]], argv: list[str], rc: int, err: bytes
) -> None:
    """An answer or one clear error; an error or a read changes nothing; an add one commit."""
    assert b"Traceback" not in err and b"Exception ignored" not in err, err[-2000:]
    assert rc in (0, 1, 2), (rc, err[-2000:])
    if rc == 1:
        assert err.startswith(b"Error: ") and err.count(b"\n") == 1, err[-2000:]
    if rc != 0 or argv[0] != "add":
        assert snapshot(vault) == before, f"{argv[:1]} exited {rc} but changed the vault"
    else:
        assert commits_since(vault, before[0]) <= 1


@pytest.fixture
def seeded(vault: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A vault with memories holding escape sequences, bidi marks and non-ASCII text."""
    monkeypatch.setenv("MEMSTORE_VAULT", str(vault))
    with Store.open(settings_at(vault)) as store:
        for text in (
            "nginx 413 upload: \x1b[31mclient_max_body_size\x1b[0m \x1b]0;pwned\x07",
            "deploy needs approval \u202eevil\u202c from @maria \x9b2J",
            "redis port 6380 in dev; café ünïcode",
        ):
            store.add(text, workspace="global", keywords=("seed",))
    return vault


def fuzz_cli_in_process(vault: Path, examples: int) -> None:
    @settings(max_examples=examples, deadline=None, database=None)
    @given(cli_argv())
    def one(case: tuple[list[str], bytes]) -> None:
        argv, stdin = case
        before = snapshot(vault)
        rc, _out, err = run_in_process(argv, stdin)
        check_outcome(vault, before, argv, rc, err)

    one()


def test_cli_arguments_in_process(seeded: Path) -> None:
    fuzz_cli_in_process(seeded, 60)


@pytest.mark.long
def test_cli_arguments_in_process_long(seeded: Path) -> None:
    fuzz_cli_in_process(seeded, 3000)


# --- the installed executable -----------------------------------------------------------

# Linux refuses one argument over 128 KiB (E2BIG), and NUL cannot be in one at all.
raw_arg = st.one_of(
    st.binary(min_size=1, max_size=40).map(lambda b: b.replace(b"\0", b"?")),
    fuzz_text.map(lambda s: s.replace("\0", "?").encode("utf-8", "surrogatepass")[:100_000]),
)


def fuzz_executable(vault: Path, examples: int) -> None:
    @settings(max_examples=examples, deadline=None, database=None)
    @given(
        st.sampled_from([b"add", b"search", b"show"]),
        st.lists(raw_arg, min_size=1, max_size=4),
        st.binary(max_size=200),
    )
    def one(command: bytes, args: list[bytes], stdin: bytes) -> None:
        before = snapshot(vault)
        env = {**os.environ, **STRICT, "MEMSTORE_VAULT": str(vault)}
        done = subprocess.run(
            [os.fsencode(EXE), command, *args],
            env=env,
            input=stdin,
            capture_output=True,
            timeout=BOUND,
            check=False,
        )
        check_outcome(vault, before, [command.decode()], done.returncode, done.stderr)

    one()


def test_executable_arguments(seeded: Path) -> None:
    fuzz_executable(seeded, 6)


@pytest.mark.long
def test_executable_arguments_long(seeded: Path) -> None:
    fuzz_executable(seeded, 300)


# --- MCP tools --------------------------------------------------------------------------

odd_value = st.one_of(st.integers(), st.none(), st.booleans(), st.lists(st.integers(), max_size=2))


@st.composite
def tool_call(draw: st.DrawFn) -> tuple[str, dict[str, Any], bool]:
    """Return a tool, its arguments, and whether every argument has the declared type."""
    tool = draw(st.sampled_from(["memory_add", "memory_recall"]))
    text = st.one_of(fuzz_text, st.sampled_from(["", "global", "webshop", "all", "note"]))
    if tool == "memory_add":
        arguments: dict[str, Any] = {"content": draw(fuzz_text)}
        optional: dict[str, Any] = {
            "keywords": st.lists(text, max_size=4),
            "kind": text,
            "workspace": text,
            "supersedes": st.lists(st.one_of(ids, fuzz_text), max_size=2),
            "source": text,
        }
    else:
        arguments = {"query": draw(fuzz_text)}
        optional = {
            "workspace": text,
            "k": st.integers(-10, 10**6),
            "max_tokens": st.integers(-5, 10**9),
        }
    for name in draw(st.lists(st.sampled_from(sorted(optional)), unique=True, max_size=3)):
        arguments[name] = draw(optional[name])
    typed = draw(st.integers(0, 9)) != 0
    if not typed:
        arguments[draw(st.sampled_from(sorted(arguments)))] = draw(odd_value)
    return tool, arguments, typed


def fuzz_mcp_in_process(vault: Path, examples: int) -> None:
    with Store.open(settings_at(vault)) as store:
        server = build_server(store, workspace="global", source="claude-code")

        @settings(
            max_examples=examples,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow],
        )
        @given(tool_call())
        def one(case: tuple[str, dict[str, Any], bool]) -> None:
            tool, arguments, typed = case
            before = snapshot(vault)

            async def go() -> Any:
                async with Client(server) as client:
                    return await asyncio.wait_for(client.call_tool(tool, arguments), BOUND)

            unseeded()
            try:
                result = asyncio.run(go())
            except MCPError:
                failed = True  # a JSON-RPC error: an answer
            else:
                failed = result.is_error
                text = "".join(getattr(part, "text", "") for part in result.content)
                if failed and typed:
                    assert "\n" not in text.strip() and "Traceback" not in text, text
            if failed or tool == "memory_recall":
                assert snapshot(vault) == before, f"{tool} failed or read, yet wrote"

        one()


def test_mcp_tool_arguments_in_process(seeded: Path) -> None:
    fuzz_mcp_in_process(seeded, 60)


@pytest.mark.long
def test_mcp_tool_arguments_in_process_long(seeded: Path) -> None:
    fuzz_mcp_in_process(seeded, 3000)


# --- MCP over stdio: what a client serializes, lone surrogates as \\ud800 escapes --------


class Serve:
    """A `memstore serve` process spoken to in raw JSON-RPC lines."""

    def __init__(self, vault: Path) -> None:
        env = {**os.environ, "MEMSTORE_VAULT": str(vault)}
        self.proc = subprocess.Popen(
            [str(EXE), "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
        )
        self.next_id = 0
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}}
        hello["clientInfo"] = {"name": "fuzz", "version": "1"}
        assert "result" in self.request("initialize", hello)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        # ensure_ascii: a lone surrogate goes out as the escape a JavaScript client sends
        self.proc.stdin.write(json.dumps(message, ensure_ascii=True).encode("ascii") + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], BOUND)
        assert ready, f"no reply to {method} within {BOUND} s"
        reply = json.loads(self.proc.stdout.readline())
        assert reply.get("id") == self.next_id, reply
        return reply

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        assert self.proc.wait(timeout=BOUND) == 0
        self.proc.stdout.close()


def fuzz_mcp_stdio(vault: Path, examples: int) -> None:
    serve = Serve(vault)
    try:

        @settings(max_examples=examples, deadline=None, database=None)
        @given(tool_call())
        def one(case: tuple[str, dict[str, Any], bool]) -> None:
            tool, arguments, _typed = case
            before = snapshot(vault)
            reply = serve.request("tools/call", {"name": tool, "arguments": arguments})
            failed = "error" in reply or reply["result"].get("isError")
            if failed or tool == "memory_recall":
                assert snapshot(vault) == before, f"{tool} failed or read, yet wrote"

        one()
    finally:
        serve.close()


def test_mcp_over_stdio(seeded: Path) -> None:
    fuzz_mcp_stdio(seeded, 15)


@pytest.mark.long
def test_mcp_over_stdio_long(seeded: Path) -> None:
    fuzz_mcp_stdio(seeded, 500)
