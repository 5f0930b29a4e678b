"""MCP's stdio transport on the event loop: the lines of stdin in, the replies out to stdout.

The SDK's `stdio_server` reads each line and writes each reply (and flushes it) in a worker
thread: three thread hand-offs a tool call, each a wait for a core when the machine is busy
(the MCP hop of a recall on the sample vault, ~1 ms of work, took ~10 ms). This transport
reads stdin through the event loop's own pipe reader and writes replies directly. Like the
SDK's, it moves the wire off file descriptors 0 and 1 while serving (fd 0 reads the null
device, fd 1 writes to stderr), so stray output of a library cannot corrupt the protocol.
Standard input that is not a pipe (a regular file) is served by the SDK's transport.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import selectors
from collections.abc import AsyncIterator
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import INTERNAL_ERROR

from memstore.mcp.lines import MAX_LINE_BYTES, Refusal, read_line, too_long

Streams = tuple[MemoryObjectReceiveStream[Any], MemoryObjectSendStream[SessionMessage]]


@contextlib.asynccontextmanager
async def stdio_streams() -> AsyncIterator[Streams]:
    """Yield (messages read, replies to write) over stdin and stdout, as `stdio_server`
    does; a line that is not a JSON-RPC message comes as the Refusal it gets, and the SDK's
    transport (stdin from a file) passes the validation error on."""
    wire_in, wire_out = _take_wire()
    loop = asyncio.get_running_loop()
    inbox, incoming = anyio.create_memory_object_stream[SessionMessage | Refusal](math.inf)
    outgoing, outbox = anyio.create_memory_object_stream[SessionMessage](0)
    reading = None
    try:
        try:
            if not _is_pollable(wire_in):
                raise ValueError("the event loop cannot wait on it")
            reading, _ = await loop.connect_read_pipe(
                lambda: _Lines(inbox), os.fdopen(wire_in, "rb", buffering=0, closefd=False)
            )
        except ValueError:  # not a pipe, socket or terminal: the SDK reads it in a thread
            _give_back(wire_in, wire_out)
            wire_in = wire_out = -1
            async with stdio_server() as streams:
                yield streams
            return
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_write_replies, outbox, wire_out)
            yield incoming, outgoing
            tasks.cancel_scope.cancel()
    finally:
        if reading is not None:
            reading.close()
        if wire_in >= 0:
            _give_back(wire_in, wire_out)


class _Lines(asyncio.Protocol):
    """Cut what arrives on stdin into lines and pass each on as a message (or the reply a
    bad line gets), without waiting: the inbox has no bound. A line is kept only up to
    MAX_LINE_BYTES; the rest of a longer one is counted and dropped as it comes."""

    def __init__(self, inbox: MemoryObjectSendStream[SessionMessage | Refusal]) -> None:
        self.inbox = inbox
        self.parts: list[bytes] = []
        self.size = 0  # bytes of the current line so far

    def data_received(self, data: bytes) -> None:
        start = 0
        while (end := data.find(b"\n", start)) >= 0:
            self._keep(data[start:end])
            self._pass()
            start = end + 1
        self._keep(data[start:])

    def eof_received(self) -> bool:
        if self.size:
            self._pass()
        self.inbox.close()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.inbox.close()

    def _keep(self, piece: bytes) -> None:
        self.size += len(piece)
        if self.size <= MAX_LINE_BYTES:
            self.parts.append(piece)
        else:
            self.parts.clear()

    def _pass(self) -> None:
        try:
            line = b"".join(self.parts)
            read = read_line(line) if self.size <= MAX_LINE_BYTES else too_long(self.size)
        except Exception:  # a shell's outer loop: one line must not end the agent's session
            logging.getLogger("memstore").exception("memstore serve could not read a line")
            read = Refusal(INTERNAL_ERROR, "internal error: memstore could not read this line")
        self.parts.clear()
        self.size = 0
        if read is None:
            return
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            self.inbox.send_nowait(read)


async def _write_replies(outbox: MemoryObjectReceiveStream[SessionMessage], wire: int) -> None:
    async with outbox:
        async for message in outbox:
            data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
            view = memoryview(data.encode("utf-8"))
            try:
                while view:  # a pipe takes a reply whole unless the client stops reading
                    view = view[os.write(wire, view) :]
            except BrokenPipeError:  # the client is gone; its end of stdin closes next
                return


def _is_pollable(fd: int) -> bool:
    """Say whether the event loop can wait on `fd`: a character device such as /dev/null
    passes connect_read_pipe's check, but epoll refuses it (EPERM, in a callback: the
    server then never read its end and hung)."""
    with selectors.DefaultSelector() as probe:
        try:
            probe.register(fd, selectors.EVENT_READ)
        except (OSError, ValueError):
            return False
    return True


def _take_wire() -> tuple[int, int]:
    """Return private copies of fds 0 and 1, and point 0 at the null device and 1 at stderr."""
    wire_in = os.dup(0)
    wire_out = os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    os.dup2(2, 1)
    os.set_blocking(wire_out, True)  # replies are written whole, in order
    return wire_in, wire_out


def _give_back(wire_in: int, wire_out: int) -> None:
    """Point fds 0 and 1 at the wire again and close the private copies."""
    for fd, wire in ((0, wire_in), (1, wire_out)):
        with contextlib.suppress(OSError):
            os.dup2(wire, fd)
        with contextlib.suppress(OSError):
            os.close(wire)
