"""The lean client of the resident index: ask the vault's daemon over its socket, or say no one answered.

It imports a few standard modules and nothing else of memstore (never Whoosh, pygit2 or the
store): a search that the daemon answers costs an interpreter, this module and one round trip.

How a shell uses it (the launcher for search/add, agent hooks, `memstore serve`), with `env`
its whole environment and `cwd` its working directory:

    if daemon_allowed(env, argv):
        reply = ask(vault_of(argv, env, cwd), Request(op, argv, cwd, env, stdin))
    if reply is None or reply.status is None:
        ...run the command in this process, as before...

`ask` returns None when no daemon answered; it then starts one in the background (a new
session, stdio to `.memstore/daemon.log`) for the next command, and the caller runs in-process
this time. A reply whose status is None means "the daemon cannot handle this one": run it
in-process too. Protocol: length-prefixed frames of length-prefixed fields (below).
Every message carries `identity()` (memstore's version, the protocol and the code's
fingerprint): a daemon running other code refuses the request and stops.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time
import zlib
from collections.abc import Callable, Iterator, Mapping

from memstore import __version__

TYPE_CHECKING = False  # not typing's: importing typing costs the client ~2 ms
if TYPE_CHECKING:  # pathlib (with urllib.parse) is imported only where a Path is returned
    import socket
    from pathlib import Path
    from typing import Any

PROTOCOL = 2
# config.DEFAULT_VAULT_NAME (a test checks); config is not imported: it costs ~10 ms
DEFAULT_VAULT_NAME = "memstore"
STATE_DIR = ".memstore"
SOCKET_NAME = "daemon.sock"
LOCK_NAME = "daemon.lock"  # flock held for the daemon's whole life: two never run for one vault
LOG_NAME = "daemon.log"
SPAWN_MARK = "daemon.spawned"  # when a client last started one (no start storms if it dies)
SPAWN_PAUSE_S = 10.0
CONNECT_TIMEOUT_S = 1.0
REPLY_TIMEOUT_S = 120.0  # the daemon bounds its own requests well below this
PATIENCE_S = 0.25  # waiting longer for a reply, the client looks whether the daemon is stopped
MAX_MESSAGE = 256 * 1024 * 1024
SUN_PATH_MAX = 100  # sockaddr_un holds 108 bytes; longer paths go through /proc/self/fd


class _Value:
    """A frozen value with fields in `__slots__`: what @dataclass(frozen=True) would give, written
    out because importing dataclasses (and inspect with it) costs the client ~10 ms."""

    __slots__: tuple[str, ...] = ()

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen: cannot set {name}")

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, _Value)
            and type(other) is type(self)
            and self._values() == other._values()
        )

    __hash__ = None  # type: ignore[assignment]  # argv and env are lists and dicts

    def __repr__(self) -> str:
        fields = ", ".join(
            f"{n}={v!r}" for n, v in zip(self.__slots__, self._values(), strict=True)
        )
        return f"{type(self).__name__}({fields})"


class Request(_Value):
    """One command for the daemon, with everything it may read of its caller."""

    __slots__ = ("op", "argv", "cwd", "env", "stdin")  # noqa: RUF023 (the constructor's order)
    op: str  # an Op's value (memstore.ops.registry.Op: a StrEnum; this module imports no enum)
    argv: list[str]  # the command's arguments after the op word (for "tool": [tool name])
    cwd: str  # the caller's working directory
    env: dict[str, str]  # the caller's environment (the whole os.environ)
    stdin: bytes  # what the caller read from stdin (hook payload, `add -`, tool args JSON)

    def __init__(
        self, op: str, argv: list[str], cwd: str, env: dict[str, str], stdin: bytes = b""
    ) -> None:
        for name, value in zip(self.__slots__, (op, argv, cwd, env, stdin), strict=True):
            object.__setattr__(self, name, value)


class Reply(_Value):
    """The daemon's answer: what the command would have printed, and its exit status."""

    __slots__ = ("status", "stdout", "stderr", "data")  # noqa: RUF023 (the constructor's order)
    status: int | None  # exit status; None = "not handled here, run in-process"
    stdout: str
    stderr: str
    data: dict[str, object]  # structured extras (the status op's figures)

    def __init__(
        self,
        status: int | None,
        stdout: str = "",
        stderr: str = "",
        data: dict[str, object] | None = None,
    ) -> None:
        for name, value in zip(self.__slots__, (status, stdout, stderr, data or {}), strict=True):
            object.__setattr__(self, name, value)


def daemon_allowed(env: Mapping[str, str], argv: list[str] = []) -> bool:  # noqa: B006 (read-only)
    """Return whether this command may use (and start) a daemon: no MEMSTORE_NO_DAEMON, no --no-daemon."""
    if env.get("MEMSTORE_NO_DAEMON", "") not in ("", "0"):
        return False
    return "--no-daemon" not in _options_part(argv)


def _options_part(argv: list[str]) -> list[str]:
    """The arguments before `--` (after it everything is text)."""
    return argv[: argv.index("--")] if "--" in argv else list(argv)


def resolve_vault(value: str | None, env: Mapping[str, str], cwd: str) -> Path:
    """Return the absolute vault path: `value` (--vault), else $MEMSTORE_VAULT, else ~/memstore.

    Relative paths are the caller's (`cwd`), not this process's: the daemon resolves them too.
    """
    from pathlib import Path

    return Path(_resolve(value, env, cwd))


def _resolve(value: str | None, env: Mapping[str, str], cwd: str) -> str:
    home = env.get("HOME") or "/"
    chosen = value or env.get("MEMSTORE_VAULT") or os.path.join(home, DEFAULT_VAULT_NAME)
    if chosen == "~" or chosen.startswith("~/"):
        chosen = home + chosen[1:]
    return os.path.normpath(os.path.join(cwd or "/", chosen))


def vault_of(argv: list[str], env: Mapping[str, str], cwd: str) -> str:
    """Return the vault a command line names (its last --vault), as `resolve_vault` does, as
    text (a Path would cost the client pathlib's import)."""
    value = None
    rest = _options_part(argv)
    for at, arg in enumerate(rest):
        if arg == "--vault" and at + 1 < len(rest):
            value = rest[at + 1]
        elif arg.startswith("--vault="):
            value = arg.split("=", 1)[1]
    return _resolve(value, env, cwd)


def state_dir(vault: Path | str) -> Path:
    from pathlib import Path

    return Path(vault, STATE_DIR)


def socket_path(vault: Path | str) -> Path:
    return state_dir(vault) / SOCKET_NAME


def _in_state(vault: Path | str, name: str) -> str:
    return os.path.join(os.fspath(vault), STATE_DIR, name)


_identity: str | None = None


def identity() -> str:
    """Return this memstore's identity: version, protocol and a fingerprint of its code.

    An editable install changes code without a version bump; the fingerprint (names, sizes
    and mtimes of the .py files of the package and its subpackages: one directory listing
    each) tells those apart too.
    """
    global _identity
    if _identity is None:
        listing: list[str] = []
        package = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
        folders = [package]
        while folders:
            folder = folders.pop()
            with contextlib.suppress(OSError), os.scandir(folder) as entries:
                for entry in entries:
                    if entry.name.endswith(".py"):
                        info = entry.stat()
                        name = os.path.join(os.path.basename(folder), entry.name)
                        listing.append(f"{name}:{info.st_size}:{info.st_mtime_ns}")
                    elif entry.is_dir() and entry.name.isidentifier() and entry.name != "fixtures":
                        folders.append(entry.path)
        fingerprint = zlib.crc32(";".join(sorted(listing)).encode())  # zlib: hashlib costs ~5 ms
        _identity = f"{__version__}/{PROTOCOL}/{fingerprint:08x}"
    return _identity


def forget_identity() -> None:
    """Name the code on disk at the next request (a long-lived caller that outlived an
    upgrade: the daemons it would start run the new code and refuse the old identity)."""
    global _identity
    _identity = None


@contextlib.contextmanager
def short_address(path: Path | str) -> Iterator[str]:
    """Yield an AF_UNIX address for `path` that fits sockaddr_un (via a directory fd if long)."""
    text = os.fspath(path)
    if len(os.fsencode(text)) <= SUN_PATH_MAX:
        yield text
        return
    folder = os.open(os.path.dirname(text), os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{folder}/{os.path.basename(text)}"
    finally:
        os.close(folder)


# --- the wire: a frame is a 4-byte big-endian length and that many bytes, which are fields,
# each a 4-byte length and its bytes. Every protocol version keeps this framing and the first
# two fields (kind, identity), so a daemon of any version can read who asks and refuse. Text is UTF-8 (surrogateescape: any environment or
# path round-trips); stdin travels as it was read. No JSON on the client's path: json (with
# re) is a third of a lean search's imports. The status op's figures are JSON in one field.

Frame = list[bytes]


def send_frame(sock: socket.socket, fields: Frame) -> None:
    body = b"".join(len(f).to_bytes(4, "big") + f for f in fields)
    sock.sendall(len(body).to_bytes(4, "big") + body)


def read_frame(sock: socket.socket) -> Frame:
    """Read one frame; raise ConnectionError on a short read (the other side left) and
    ValueError on a frame this protocol cannot read (another protocol, or garbage)."""
    size = int.from_bytes(_read_exactly(sock, 4), "big")
    if size > MAX_MESSAGE:
        raise ValueError(f"message of {size} bytes is too large")
    body, fields, at = _read_exactly(sock, size), [], 0
    while at < size:
        length = int.from_bytes(body[at : at + 4], "big")
        if at + 4 + length > size:
            raise ValueError("malformed message: a field runs past its end")
        fields.append(body[at + 4 : at + 4 + length])
        at += 4 + length
    return fields


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise ConnectionError("the other side closed the connection")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def _text(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def encode_request(request: Request, name: str | None = None) -> Frame:
    """Return the frame for `request`, naming this code (or `name`)."""
    env = [_bytes(part) for pair in request.env.items() for part in pair]
    head = [b"request", _bytes(name or identity()), _bytes(request.op), _bytes(request.cwd)]
    return [
        *head,
        bytes(request.stdin),
        b"%d" % len(request.argv),
        *map(_bytes, request.argv),
        *env,
    ]


def decode_request(fields: Frame) -> Request:
    """Return the Request in a frame; raise ValueError when it is not a well-formed one."""
    if len(fields) < 6 or fields[0] != b"request" or not fields[5].isdigit():
        raise ValueError("not a request frame")
    count = int(fields[5])
    argv, env = fields[6 : 6 + count], fields[6 + count :]
    if len(argv) != count or len(env) % 2:
        raise ValueError("request frame has a broken argument or environment list")
    pairs = {_text(env[i]): _text(env[i + 1]) for i in range(0, len(env), 2)}
    return Request(_text(fields[2]), [_text(a) for a in argv], _text(fields[3]), pairs, fields[4])


def sender(fields: Frame) -> str:
    """Return the code a frame names (its identity), '' when it names none."""
    return _text(fields[1]) if len(fields) > 1 else ""


def encode_reply(reply: Reply) -> Frame:
    status = b"" if reply.status is None else b"%d" % reply.status
    data = b""
    if reply.data:
        import json

        data = json.dumps(reply.data).encode("ascii")
    return [b"reply", _bytes(identity()), status, _bytes(reply.stdout), _bytes(reply.stderr), data]


def refusal(reason: str) -> Frame:
    return [b"refused", _bytes(identity()), _bytes(reason)]


def decode_reply(fields: Frame) -> Reply | None:
    """Return the Reply in a frame, or None for a refusal or anything malformed."""
    if len(fields) != 6 or fields[0] != b"reply":
        return None
    status = fields[2]
    if status and not status.lstrip(b"-").isdigit():
        return None
    data: dict[str, object] = {}
    if fields[5]:
        import json

        loaded = json.loads(fields[5])
        data = loaded if isinstance(loaded, dict) else {}
    code = int(status) if status else None
    return Reply(code, _text(fields[3]), _text(fields[4]), data)


def connect(vault: Path | str, timeout: float = CONNECT_TIMEOUT_S) -> socket.socket | None:
    """Return a connection to the vault's daemon, or None when none listens there."""
    import socket

    return _connect(vault, timeout, socket.socket)


def _connect(vault: Path | str, timeout: float, make: Callable[[int, int], Any]) -> Any:
    # The client asks through _socket, the C module under socket.py: socket.py (with enum
    # and selectors) costs a search ~2 ms of imports, for nothing it uses.
    import _socket

    path = _in_state(vault, SOCKET_NAME)
    sock = make(_socket.AF_UNIX, _socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        with short_address(path) as address:
            sock.connect(address)
    except OSError:  # no socket file, a stale one (refused), a full backlog, a path gone
        sock.close()
        return None
    return sock


def ask(vault: Path | str, request: Request, *, start: bool = True) -> Reply | None:
    """Return the daemon's reply, or None when no daemon answered.

    With `start` (and the caller's environment allowing a daemon), a None also means a
    daemon was started in the background for the next command; this one runs in-process.
    """
    reply = _exchange(vault, request)
    if reply is None and start and daemon_allowed(request.env, request.argv):
        start_daemon(vault, request.env)
    return reply


def _exchange(vault: Path | str, request: Request) -> Reply | None:
    import _socket

    sock = _connect(vault, CONNECT_TIMEOUT_S, _socket.socket)
    if sock is None:
        return None
    try:
        send_frame(sock, encode_request(request))
        if not _reply_coming(vault, sock):
            return None
        sock.settimeout(REPLY_TIMEOUT_S)
        fields = read_frame(sock)
    except (OSError, ConnectionError, ValueError):
        return None  # the daemon went away mid-request (killed, stopping), or spoke nonsense
    finally:
        sock.close()
    # A refusal (other memstore code: it stops itself, the next command starts ours) or a
    # malformed reply is None too: the command runs here.
    return decode_reply(fields)


def _reply_coming(vault: Path | str, sock: Any) -> bool:
    """Wait until the daemon starts its reply; return False when it is stopped (Ctrl-Z on
    `memstore watch`, a debugger) or REPLY_TIMEOUT_S passes: the caller runs the command itself.

    A stopped daemon still accepts connections, so only its process state tells. Once
    resumed, the daemon sees this client gone and does not run its request; what a daemon
    stopped in the middle of a write does is in docs/daemon.md ("Requests").
    """
    import select

    deadline = time.monotonic() + REPLY_TIMEOUT_S
    waiting = select.poll()  # not select(): a long-lived caller may hold descriptors past 1024
    waiting.register(sock, select.POLLIN)
    while not waiting.poll(PATIENCE_S * 1000):
        pid = stopped_daemon(vault)
        if pid is not None:
            os.write(
                2,
                f"memstore: the daemon of {os.fspath(vault)} (pid {pid}) is stopped, so this "
                f"command runs here; `kill -CONT {pid}` resumes it\n".encode(errors="replace"),
            )
            return False
        if time.monotonic() > deadline:
            return False
    return True


def stopped_daemon(vault: Path | str) -> int | None:
    """Return the pid of the vault's daemon when it is stopped by a signal (state T or t in
    /proc), else None (running, gone, or no /proc to ask)."""
    try:
        with open(_in_state(vault, LOCK_NAME), "rb") as handle:
            pid = int(handle.read(32).split()[0])
        with open(f"/proc/{pid}/stat", "rb") as handle:
            state = handle.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, ValueError, IndexError):
        return None
    return pid if state in (b"T", b"t") else None


def is_running(vault: Path | str) -> bool:
    """Return whether a daemon holds the vault's daemon lock (running or starting)."""
    try:
        handle = os.open(_in_state(vault, LOCK_NAME), os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as err:
        return err.errno in (errno.EWOULDBLOCK, errno.EAGAIN)
    finally:
        os.close(handle)  # closing drops a lock we took
    return False


def will_start_daemon(vault: Path | str) -> bool:
    """Say whether start_daemon, called after this command, would start one now."""
    return (
        os.path.exists(os.path.join(vault, ".git"))
        and not is_running(vault)
        and not _spawned_lately(vault)
        and os.access(_in_state(vault, ""), os.W_OK)
    )


def start_daemon(vault: Path | str, env: Mapping[str, str]) -> bool:
    """Start a daemon for `vault` in the background unless one runs or started moments ago.

    Returns whether one was started. Never waits for it: it answers from the next command on.
    """
    if not os.path.exists(os.path.join(vault, ".git")) or is_running(vault):
        return False
    if _spawned_lately(vault):
        return False  # one was started just now (and is still starting, or died: see its log)
    mark = _in_state(vault, SPAWN_MARK)
    try:
        os.makedirs(os.path.dirname(mark), mode=0o700, exist_ok=True)
        os.close(os.open(mark, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))
        os.utime(mark)
        log = os.open(_in_state(vault, LOG_NAME), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    except OSError:
        return False  # a read-only vault: no daemon, every command runs in-process
    try:
        _spawn(vault, env, log)
    finally:
        os.close(log)
    return True


def _spawn(vault: Path | str, env: Mapping[str, str], log: int) -> None:
    import subprocess
    import sys
    import threading

    # Its own session and source for its own commits (recall counters, hand edits); each
    # request brings the caller's. A crash point armed for the caller is not the daemon's.
    own = ("MEMSTORE_CRASH_AT", "MEMSTORE_SESSION", "MEMSTORE_SOURCE")
    child_env = {k: v for k, v in env.items() if k not in own}
    process = subprocess.Popen(
        [sys.executable, "-m", "memstore", "daemon", "--background", "--vault", os.fspath(vault)],
        env=child_env,
        cwd="/",  # never pin a folder the person may want to remove or unmount
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=log,
        start_new_session=True,  # no terminal's Ctrl-C or hangup reaches it
        close_fds=True,
    )
    # A long-lived caller (memstore serve) reaps it when it exits; a CLI process is gone by then.
    threading.Thread(target=process.wait, name="memstore-daemon-reaper", daemon=True).start()


def status(vault: Path | str) -> Reply | None:
    """Return the running daemon's status reply (its `data` holds the figures), or None."""
    return _exchange(vault, Request("status", [], "/", {}))


def stop(vault: Path | str, timeout: float = 30.0) -> bool:
    """Ask the vault's daemon to stop and wait until it has; return whether one was running.

    A daemon a command started moments ago (`add` starts one) may not listen yet: it is
    asked again until it answers, or until it plainly is not coming (no lock holder, and no
    start within SPAWN_PAUSE_S), so it cannot come up after "stopped".
    """
    deadline = time.monotonic() + timeout
    asked = False
    while time.monotonic() < deadline:
        asked = asked or _exchange(vault, Request("stop", [], "/", {})) is not None
        if not is_running(vault) and (asked or not _spawned_lately(vault)):
            return asked
        time.sleep(0.05)
    return True


def _spawned_lately(vault: Path | str) -> bool:
    """Return whether a command started a daemon for `vault` within SPAWN_PAUSE_S."""
    try:
        return time.time() - os.stat(_in_state(vault, SPAWN_MARK)).st_mtime < SPAWN_PAUSE_S
    except OSError:
        return False
