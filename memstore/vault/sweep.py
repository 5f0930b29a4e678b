"""Crashed sessions: an agent's earlier transcripts of a project that never reached a capture.

At SessionStart the hook looks for this project's earlier transcripts, newest first, and
reads the end of each (a bounded tail) for the session's final assistant message. What it
decided, and what the capture hook captured, is remembered per session id in
`.memstore/state/swept-sessions.json` (local, never committed): a session is looked at
again only when its transcript changed and its final message is not the one already seen.
The gates themselves (length, novelty) are the capture hook's, in memstore.ops.hooks.

Where the agents keep transcripts (no official schema; shapes as the tools write them):

- Claude Code: `$CLAUDE_CONFIG_DIR/projects/<dir>/<session-id>.jsonl` (default
  `~/.claude`), `<dir>` being the session's start directory with every character outside
  `[A-Za-z0-9]` turned into `-`, cut at 200 characters plus `-<hash>` when longer
  (anthropics/claude-code#24067 and #70076; cli.js `sanitizePath`). One line per entry:
  `{"type": "user"|"assistant"|"system"|"summary"|…, "sessionId", "cwd", "timestamp",
  "isSidechain", "message": {"role", "content": str | [{"type": "text", "text"} |
  {"type": "tool_use"} | …]}}`; one API message is split into one line per content block.
  `agent-*.jsonl` files beside them are subagents, not sessions.
- Codex CLI: `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<local time>-<thread id>.jsonl`
  (default `~/.codex`; codex-rs/core/src/rollout/recorder.rs). Lines are
  `{"timestamp", "type", "payload"}`: first `session_meta` (payload `id`, `cwd`, …, then
  the long `base_instructions`), then `turn_context` (payload `cwd`), `response_item`
  (payload `{"type": "message", "role": "assistant", "content": [{"type": "output_text",
  "text"}]}`) and `event_msg` (payload `{"type": "agent_message", "message"}`,
  `{"type": "task_complete", "last_agent_message"}`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

if TYPE_CHECKING:
    from memstore.vault.files import Vault

AGENTS = ("claude-code", "codex")  # the agents whose transcripts memstore can read
# A transcript written to in the last 15 minutes may be a live session in another
# terminal, mid-turn: a turn writes a line per message and per tool result, and Claude
# Code's longest tool call is 10 minutes (BASH_MAX_TIMEOUT_MS default 600000).
QUIET_S = 15 * 60
# Older transcripts are history, not a crash noticed at the next start (Claude Code
# deletes its own after 30 days).
MAX_AGE_S = 7 * 24 * 3600
MAX_SWEPT = 5  # transcripts read per session start, newest first
TAIL_BYTES = 1 << 20  # the end of a transcript holds its final message
HEAD_BYTES = 16 << 10  # a rollout's session_meta names its cwd before its instructions
MAX_LISTED = 400  # transcript files looked at (stat, a rollout's head) per start
CLAUDE_NAME_MAX = 200
STATE = "swept-sessions.json"
_UUID = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$")
_CWD = re.compile(r'"cwd"\s*:\s*("(?:[^"\\]|\\.)*")')
_Listed = tuple[str, Path, os.stat_result]  # (session id, path, its stat)


@dataclass(frozen=True)
class Transcript:
    """One earlier session's transcript file, as found on disk."""

    agent: str
    session: str
    path: Path
    stamp: tuple[int, int]  # (size, mtime in ns): whether it changed since it was swept


@dataclass(frozen=True)
class Final:
    """What a transcript ends with: the last assistant message and the last cwd named."""

    text: str
    cwd: str


# What became of a session's final message: captured by the capture hook, kept (added)
# or known (already held) by a sweep, too short to keep, or refused (e.g. it holds a secret).
SweepOutcome = Literal["captured", "kept", "short", "known", "refused"]
SWEEP_OUTCOMES: frozenset[str] = frozenset(get_args(SweepOutcome))


@dataclass(frozen=True)
class Swept:
    """What is known of one session: the final message seen, and what became of it."""

    digest: str
    outcome: SweepOutcome
    at: float
    stamp: tuple[int, int] | None = None  # None: recorded by the capture hook


def digest(text: str) -> str:
    """Return a short fingerprint of a final message."""
    return hashlib.sha1(text.strip().encode("utf-8")).hexdigest()[:16]


def claude_dir_name(cwd: str) -> str:
    """Return Claude Code's name for a project folder (before the >200 hash suffix)."""
    # JavaScript's regex replaces UTF-16 code units: a character beyond U+FFFF is two.
    return "".join(
        c if c.isascii() and c.isalnum() else "-" * (2 if ord(c) > 0xFFFF else 1) for c in cwd
    )


def transcript_root(agent: str, env: Mapping[str, str], home: Path) -> Path:
    """Return the folder an agent keeps its transcripts under."""
    if agent == "codex":
        return Path(env.get("CODEX_HOME") or home / ".codex") / "sessions"
    return Path(env.get("CLAUDE_CONFIG_DIR") or home / ".claude") / "projects"


def find_transcripts(
    agent: str,
    project: Path,
    root: Path,
    *,
    current: tuple[str, str],
    swept: Mapping[str, Swept],
    now: float,
) -> list[Transcript]:
    """Return the transcripts of `project` to read now: quiet, recent, not the current
    session (`current`: its id and transcript path), changed since last swept; newest first."""
    found = _claude_files(project, root, current[1]) if agent == "claude-code" else None
    files = found if found is not None else _codex_files(root, now)
    due = []
    for session, path, info in sorted(files, key=lambda f: -f[2].st_mtime)[:MAX_LISTED]:
        stamp = (info.st_size, info.st_mtime_ns)
        if not now - MAX_AGE_S <= info.st_mtime <= now - QUIET_S:
            continue
        if (
            session == current[0]
            or str(path) == current[1]
            or (session in swept and swept[session].stamp == stamp)
        ):
            continue
        if agent == "codex" and not _same_dir(_rollout_cwd(path), project):
            continue
        due.append(Transcript(agent, session, path, stamp))
        if len(due) == MAX_SWEPT:
            break
    return due


def _claude_files(project: Path, root: Path, current_path: str) -> list[_Listed]:
    """Claude Code: the project's folder is the current transcript's, else named from cwd."""
    here = Path(current_path).parent if current_path else None
    if here is not None and _same_dir(str(here.parent), root):
        folders = [here]
    else:
        name = claude_dir_name(str(project))
        if len(name) <= CLAUDE_NAME_MAX:
            folders = [root / name]
        else:  # the hash differs between Claude Code builds: match the kept prefix
            prefix = f"{name[:CLAUDE_NAME_MAX]}-"
            folders = [root / n for n in _names(root) if n.startswith(prefix)]
    return [
        (path.stem, path, info)
        for folder in folders
        for path, info in _files(folder)
        if path.suffix == ".jsonl" and not path.name.startswith("agent-")
    ]


def _codex_files(root: Path, now: float) -> list[_Listed]:
    """Codex: the day folders (local dates, named when a rollout starts) of the last 9 days."""
    days = {time.strftime("%Y/%m/%d", time.localtime(now - n * 86400)) for n in range(-1, 9)}
    listed = []
    for day in sorted(days):
        for path, info in _files(root / day):
            if path.name.startswith("rollout-") and path.suffix == ".jsonl":
                match = _UUID.search(path.name)
                listed.append((match.group(1) if match else path.stem, path, info))
    return listed


def _names(folder: Path) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []


def _files(folder: Path) -> list[tuple[Path, os.stat_result]]:
    """Return the regular files in `folder` with their stat (never a FIFO or a link)."""
    found = []
    for name in _names(folder):
        try:
            info = os.lstat(folder / name)
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode):
            found.append((folder / name, info))
    return found


def _same_dir(a: str, b: Path) -> bool:
    if not a:
        return False
    try:
        return Path(a).resolve() == b.resolve()
    except (OSError, RuntimeError):
        return False


def _rollout_cwd(path: Path) -> str:
    """Return the cwd a rollout's session_meta names ('' if unreadable)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(HEAD_BYTES).split(b"\n", 1)[0].decode("utf-8", "replace")
    except OSError:
        return ""
    try:
        entry = json.loads(head)
        payload = entry.get("payload") if isinstance(entry, dict) else None
        cwd = payload.get("cwd") if isinstance(payload, dict) else None
        return cwd if isinstance(cwd, str) else ""
    except json.JSONDecodeError:
        pass
    # A session_meta longer than HEAD_BYTES (its instructions): cwd comes before them.
    match = _CWD.search(head) if '"session_meta"' in head else None
    try:
        return str(json.loads(match.group(1))) if match else ""
    except json.JSONDecodeError:
        return ""


def read_final(transcript: Transcript) -> Final:
    """Return how a transcript ends, from its last TAIL_BYTES (raises OSError)."""
    with open(transcript.path, "rb") as handle:
        start = max(0, os.fstat(handle.fileno()).st_size - TAIL_BYTES)
        handle.seek(start)
        data = handle.read(TAIL_BYTES)
    lines = data.split(b"\n")[1 if start else 0 :]  # the first line was cut
    texts = (line.decode("utf-8", "replace") for line in lines if line.strip())
    return parse_codex(texts) if transcript.agent == "codex" else parse_claude(texts)


def read_current(path: Path) -> Final:
    """Return how the transcript at `path` ends: the one a Stop hook's payload names.

    Raises:
        InvalidInputError: it cannot be read (one line naming it and what to do).
    """
    from memstore.core.errors import InvalidInputError

    try:
        with open(path, encoding="utf-8", errors="replace") as lines:
            return parse_claude(lines)
    except OSError as err:
        why = err.strerror or type(err).__name__
        raise InvalidInputError(
            f"cannot read the transcript the agent named, {path} ({why.lower()}); nothing was "
            "captured: run the hook on the machine (or in the container) where the agent "
            "writes its transcripts, or put the final message in the payload's "
            "last_assistant_message"
        ) from err


def _entries(lines: Iterable[str]) -> Iterable[dict[str, Any]]:
    for line in lines:
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(entry, dict):
            yield entry


def parse_claude(lines: Iterable[str]) -> Final:
    """Return a Claude Code transcript's last assistant text and last cwd."""
    text, cwd = "", ""
    for entry in _entries(lines):
        if isinstance(entry.get("cwd"), str):
            cwd = entry["cwd"]
        if entry.get("type") != "assistant" or entry.get("isSidechain") is True:
            continue
        if entry.get("isApiErrorMessage") is True:
            continue  # "API Error: …", written by Claude Code itself, not the model
        message = entry.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            parts = [content]
        else:
            blocks = content if isinstance(content, list) else []
            parts = [
                str(b.get("text", ""))
                for b in blocks
                if isinstance(b, dict) and b.get("type") == "text"
            ]
        said = "\n".join(p for p in parts if p).strip()
        if said:
            text = said
    return Final(text, cwd)


def parse_codex(lines: Iterable[str]) -> Final:
    """Return a Codex rollout's last agent message and last cwd."""
    text, cwd = "", ""
    for entry in _entries(lines):
        payload = entry.get("payload")
        if not isinstance(payload, dict):
            continue
        kind, what = entry.get("type"), payload.get("type")
        said: object = None
        if kind in ("session_meta", "turn_context") and isinstance(payload.get("cwd"), str):
            cwd = payload["cwd"]
        elif kind == "event_msg" and what == "agent_message":
            said = payload.get("message")
        elif kind == "event_msg" and what == "task_complete":
            said = payload.get("last_agent_message")
        elif kind == "response_item" and what == "message" and payload.get("role") == "assistant":
            blocks = payload.get("content")
            said = "\n".join(
                str(b.get("text", ""))
                for b in (blocks if isinstance(blocks, list) else [])
                if isinstance(b, dict) and b.get("type") == "output_text"
            )
        if isinstance(said, str) and said.strip():
            text = said.strip()
    return Final(text, cwd)


def parse_swept(text: str) -> dict[str, Swept]:
    """Return the sessions recorded in the state file's text (garbled: none)."""
    try:
        data = json.loads(text) if text else {}
    except json.JSONDecodeError:
        return {}  # derived state: at worst a session is looked at, and gated, again
    sessions = data.get("sessions") if isinstance(data, dict) else None
    found = {}
    for session, value in (sessions if isinstance(sessions, dict) else {}).items():
        try:
            stamp = value.get("stamp")
            outcome = value["outcome"]
            if outcome not in SWEEP_OUTCOMES:
                continue  # written by another version: looked at, and gated, again
            found[str(session)] = Swept(
                str(value["digest"]),
                outcome,
                float(value["at"]),
                (int(stamp[0]), int(stamp[1])) if stamp else None,
            )
        except (AttributeError, KeyError, TypeError, ValueError, IndexError):
            continue
    return found


def render_swept(swept: Mapping[str, Swept], now: float) -> str:
    """Return the state file's text, without sessions too old to be swept again."""
    kept = {
        session: {"digest": s.digest, "outcome": s.outcome, "at": round(s.at, 3)}
        | ({"stamp": list(s.stamp)} if s.stamp else {})
        for session, s in sorted(swept.items())
        if s.at >= now - 2 * MAX_AGE_S
    }
    return json.dumps({"version": 1, "sessions": kept}, sort_keys=True)


def read_swept(vault: Vault) -> dict[str, Swept]:
    """Return what is known of earlier sessions (local state under .memstore/)."""
    return parse_swept(vault.read_state(STATE))


def record_swept(vault: Vault, sessions: Mapping[str, Swept], now: float) -> None:
    """Remember these sessions (raises VaultError); the file is replaced atomically."""
    if sessions:
        known = read_swept(vault)  # read again: another session's hook may have written
        vault.write_state(STATE, render_swept({**known, **sessions}, now))
