"""One line of MCP's stdio wire read safely: the JSON-RPC message it holds, or the error reply.

A bad line never ends the server and never goes unanswered unless JSON-RPC says so. The
checks run in an order that keeps every step bounded: the transport refuses a line over
MAX_LINE_BYTES before anything reads it; pydantic-core's parser (Rust, iterative below its
own 200-level cap) turns the text into Python values; the nesting of those values is
measured without recursion and refused past MAX_DEPTH; only then does anything recursive
(the SDK's validation, the tools) see them.

Replies: −32700 (parse error) for a line that is not JSON text (not UTF-8, not JSON, NaN or
Infinity), −32600 (invalid request) for JSON that is not one JSON-RPC message (too long, too
deep, a batch, not an object, a wrong `jsonrpc`, `id`, `method` or `params`), −32602 for a
lone surrogate in a request. The reply carries the request's id when the line has a readable
one (a client waiting on it gets its answer), else `null`. A well-formed notification (a
method, no id) is never answered, whatever its params hold.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import pydantic_core
from mcp.shared.message import SessionMessage
from mcp.types import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError

# A memory holds at most 100,000 bytes; JSON escapes (\uXXXX) make that ~600 KB at worst.
MAX_LINE_BYTES = 4 * 1024 * 1024
# MCP's own messages nest ~6 levels; a tool's arguments a few more.
MAX_DEPTH = 64

RequestId = str | int
# A \uXXXX escape of a UTF-16 surrogate not part of a pair (an odd number of backslashes
# before it: an even number escapes the backslashes themselves).
_LONE_SURROGATE = re.compile(
    r"(?<!\\)((?:\\\\)*)\\u("
    r"[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    r"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2}\\u)[dD][c-fC-F][0-9a-fA-F]{2})"
)
SURROGATE_MESSAGE = (
    "the request holds a lone surrogate (e.g. \\ud800), which is not Unicode text; "
    "send valid UTF-8 strings"
)


@dataclass(frozen=True)
class Refusal:
    """The error reply a bad line gets (or, for a notification, none)."""

    code: int
    message: str
    id: RequestId | None = None

    def reply(self) -> SessionMessage:
        error = ErrorData(code=self.code, message=self.message)
        return SessionMessage(JSONRPCError(jsonrpc="2.0", id=self.id, error=error))


Read = SessionMessage | Refusal | None  # None: nothing to do (a blank line)


def too_long(size: int) -> Refusal:
    """Return the reply to a line the transport refused for its length (it was not read)."""
    return Refusal(
        INVALID_REQUEST,
        f"invalid request: the line is {size:,} bytes, over the {MAX_LINE_BYTES:,}-byte limit "
        "for one message; send less per call",
    )


def read_line(line: bytes) -> Read:
    """Return the message one line of the wire holds, or the reply it gets (never raises)."""
    if not line.strip():
        return None
    fault: Refusal | None = None
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as err:
        text = line.decode("utf-8", errors="replace")  # read on only to find its id
        bad = line[err.start]
        fault = Refusal(
            PARSE_ERROR,
            f"parse error: the line is not UTF-8 (byte 0x{bad:02x} at offset {err.start}); "
            "send JSON text encoded as UTF-8",
        )
    text, lone = _LONE_SURROGATE.subn(r"\1\\ufffd", text)  # the parser refuses them
    try:
        value = pydantic_core.from_json(text, allow_inf_nan=True)
    except ValueError as err:
        if "recursion limit" in str(err):
            return _too_deep(None)
        return fault or Refusal(
            PARSE_ERROR, f"parse error: not JSON ({err}); send one JSON-RPC object per line"
        )
    depth, finite = _shape(value, text)
    request_id = _request_id(value)
    if depth > MAX_DEPTH:
        return _too_deep(request_id)
    if fault is None and not finite:
        fault = Refusal(
            PARSE_ERROR,
            "parse error: NaN and Infinity are not JSON numbers; send a number or a string",
        )
    if fault is not None:
        return Refusal(fault.code, fault.message, request_id)
    invalid = _envelope_fault(value)
    if invalid is not None:
        return Refusal(INVALID_REQUEST, f"invalid request: {invalid}", request_id)
    if lone:
        if isinstance(value, dict) and "id" not in value:
            return None  # a notification: never answered
        return Refusal(INVALID_PARAMS, SURROGATE_MESSAGE, request_id)
    try:
        return SessionMessage(jsonrpc_message_adapter.validate_json(text, by_name=False))
    except ValidationError as err:
        if isinstance(value, dict) and "method" not in value:
            return None  # a malformed response: JSON-RPC never answers one
        first = err.errors()[0]
        where = ".".join(str(part) for part in first["loc"][1:]) or "the message"
        return Refusal(INVALID_REQUEST, f"invalid request: {where}: {first['msg']}", request_id)


def read_refused(error: Exception) -> Refusal | None:
    """Return the reply to a line the SDK's own transport could not validate (it passes the
    error on, with the line as the error's input), if that line gets one."""
    details = error.errors() if isinstance(error, ValidationError) else []
    line = details[0].get("input") if details else None
    if not isinstance(line, str):
        return Refusal(PARSE_ERROR, "parse error: the line could not be read as JSON text")
    read = read_line(line.encode("utf-8", errors="surrogatepass"))
    return read if isinstance(read, Refusal) else None


def _too_deep(request_id: RequestId | None) -> Refusal:
    return Refusal(
        INVALID_REQUEST,
        f"invalid request: the message nests deeper than {MAX_DEPTH} levels; "
        "send flat arguments (strings, numbers, lists of strings)",
        request_id,
    )


def _shape(value: object, text: str) -> tuple[int, bool]:
    """Return how deep `value` nests and whether its numbers are all finite, without recursion.

    Walked only when the text could hold either problem: its brackets are more than
    MAX_DEPTH, or it spells NaN or Infinity outside a string (checked here).
    """
    brackets = text.count("[") + text.count("{")
    odd = "NaN" in text or "Infinity" in text
    if brackets <= MAX_DEPTH and not odd:
        return brackets, True
    deepest, finite = 0, True
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            deepest = max(deepest, depth + 1)
            if deepest > MAX_DEPTH:
                return deepest, finite
            stack.extend((child, depth + 1) for child in item)
        elif isinstance(item, float) and not math.isfinite(item):
            finite = False
    return deepest, finite


def _request_id(value: object) -> RequestId | None:
    """Return the id of a message, if it has one a reply can carry."""
    found = value.get("id") if isinstance(value, dict) else None
    if isinstance(found, bool) or not isinstance(found, str | int):
        return None
    return found


def _envelope_fault(value: object) -> str | None:
    """Say what makes `value` not one JSON-RPC 2.0 message as MCP sends them (None: nothing)."""
    if isinstance(value, list):
        return "batches (a JSON array of messages) are not supported; send one message per line"
    if not isinstance(value, dict):
        kind = "a string" if isinstance(value, str) else "null" if value is None else "a number"
        kind = "a boolean" if isinstance(value, bool) else kind
        return f'a message is a JSON object such as {{"jsonrpc":"2.0","id":1,"method":"ping"}}, not {kind}'
    if value.get("jsonrpc") != "2.0":
        return 'jsonrpc must be "2.0"'
    if "id" in value and _request_id(value) is None:
        return "id must be a string or an integer (not null, a boolean, a fraction or a list)"
    if "method" in value:
        if not isinstance(value["method"], str):
            return 'method must be a string naming the call, e.g. "tools/list"'
        if "params" in value and not isinstance(value["params"], dict | None):
            return 'params must be an object, e.g. {"name":"memory_recall","arguments":{...}}'
        return None
    if "id" in value and ("result" in value or "error" in value):
        return None  # a response: the SDK matches it to what it asked (or drops it)
    return 'method is missing: a request names its call, e.g. "method":"tools/list"'
