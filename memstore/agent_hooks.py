"""Agent hooks: what Claude Code and Codex run on each prompt, at session start and at stop.

A thin, lean shell (no typer): it reads the agent's hook JSON, calls Store, prints context.
A hook must never break the agent's session, so every failure exits 0 with a note on stderr.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from memstore.config import Settings
from memstore.errors import MemstoreError
from memstore.git import detect_workspace
from memstore.model import GLOBAL, to_workspace_name
from memstore.output import briefing_lines, context_lines
from memstore.ranking import estimate_tokens
from memstore.store import Store

MIN_CAPTURE_CHARS = 200  # shorter final messages are chit-chat ("Done!"), not knowledge
NOVELTY_THRESHOLD = 0.7  # measured: tests/benchmarks/bench_novelty.py (docs/agents.md)
BRIEFING_TOKENS = 300
USAGE = (
    "usage: memstore hook prompt|capture|briefing|codex-notify"
    " [--if-novel] [--min-chars N] [--source AGENT] [--vault PATH]"
)


def workspace_for(payload: Mapping[str, Any], vault: Path) -> str:
    """Return the workspace of the directory the agent runs in."""
    # Agents send their cwd; without one, the hook runs where the agent started it.
    cwd = Path(str(payload.get("cwd") or Path.cwd())).resolve()
    vault = vault.resolve()  # the cwd is resolved too: a symlinked vault is still the vault
    if cwd == vault or vault in cwd.parents:
        return GLOBAL
    name = detect_workspace(cwd)
    return GLOBAL if name is None else to_workspace_name(name)


def final_assistant_text(payload: Mapping[str, Any]) -> str:
    """Return the session's last assistant message, from the payload or its transcript."""
    for key in ("last_assistant_message", "last-assistant-message"):
        if isinstance(payload.get(key), str):
            return str(payload[key])
    transcript = payload.get("transcript_path")
    if not isinstance(transcript, str) or not transcript:
        return ""
    last = ""
    with open(transcript, encoding="utf-8", errors="replace") as lines:
        for line in lines:
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue
            if not isinstance(entry, dict) or entry.get("type") != "assistant":
                continue
            message = entry.get("message")
            content = message.get("content") if isinstance(message, dict) else None
            blocks = content if isinstance(content, list) else []
            parts = (
                [content]
                if isinstance(content, str)
                else [
                    str(c.get("text", ""))
                    for c in blocks
                    if isinstance(c, dict) and c.get("type") == "text"
                ]
            )
            text = "\n".join(p for p in parts if p).strip()
            if text:
                last = text
    return last


def prompt_hook(store: Store, payload: Mapping[str, Any]) -> list[str]:
    """UserPromptSubmit: the confident memories for this prompt, as compact context lines."""
    prompt = str(payload.get("prompt") or "").strip()
    if not prompt:
        return []
    result = store.search(prompt, workspace=workspace_for(payload, store.vault.root), k=5)
    return context_lines(result)


def capture_hook(
    store: Store, payload: Mapping[str, Any], *, min_chars: int, if_novel: bool
) -> list[str]:
    """Stop / SessionEnd: keep the final assistant message as a trace, if it says something new."""
    text = final_assistant_text(payload).strip()
    if len(text) < min_chars:
        return []
    workspace = workspace_for(payload, store.vault.root)
    if if_novel and store.overlap(text, workspace) >= NOVELTY_THRESHOLD:
        return []
    result = store.add(text, workspace=workspace, kind="trace")
    return [f"memstore: kept this session's summary as {result.id} ({result.status})"]


def briefing_hook(
    store: Store, payload: Mapping[str, Any], *, agent: str, max_tokens: int
) -> list[str]:
    """SessionStart: what changed in memory since this agent's last session."""
    changes, known = store.changes_since_last_session(agent)
    workspace = workspace_for(payload, store.vault.root)
    changes = [c for c in changes if _concerns(c.summary, workspace)]
    if not known or not changes:
        return []
    return briefing_lines(changes, max_tokens=max_tokens, estimate=estimate_tokens)


_BOOKKEEPING = ("recall:", "sync: merge")  # counters; merges (their commits show apart)
_SCOPED = re.compile(r"^[\w-]+\(([^)]*)\):")  # "add(webshop): …"


def _concerns(summary: str, workspace: str) -> bool:
    """Say whether a commit belongs in a briefing for `workspace`."""
    if summary.startswith(_BOOKKEEPING):
        return False
    scoped = _SCOPED.match(summary)
    return scoped is None or scoped.group(1) in (workspace, GLOBAL)


def run(
    argv: list[str], stdin_text: str, env: Mapping[str, str], home: Path
) -> tuple[int, str, str]:
    """Run one hook; return (exit status, stdout, stderr). Never raises."""
    if not argv or argv[0] not in ("prompt", "capture", "briefing", "codex-notify"):
        # Still 0: an agent reads exit 2 from a prompt hook as "block this prompt".
        return 0, "", USAGE + "\n"
    event, flags = argv[0], argv[1:]
    try:
        raw = flags.pop() if event == "codex-notify" and flags else stdin_text
        _check_flags(flags)
        payload = json.loads(raw or "{}")
        if not isinstance(payload, dict):
            raise ValueError("hook input is not a JSON object")
        min_chars = int(_option(flags, "--min-chars") or MIN_CAPTURE_CHARS)
        default_agent = "codex" if event == "codex-notify" else "claude-code"
        agent = _option(flags, "--source") or env.get("MEMSTORE_SOURCE", default_agent)
        vault = _option(flags, "--vault")
        settings = Settings.from_env(
            env, home=home, source=agent, vault=Path(vault).expanduser() if vault else None
        )
        session = str(payload.get("session_id") or payload.get("thread-id") or settings.session)
        # Never create a vault: a hook that made ~/memstore would split memory from the
        # vault the agent's server uses.
        with Store.open(replace(settings, source=agent, session=session)) as store:
            if event == "prompt":
                lines = prompt_hook(store, payload)
            elif event == "briefing":
                lines = briefing_hook(store, payload, agent=agent, max_tokens=BRIEFING_TOKENS)
            else:
                # Nothing on stdout: Codex counts any non-JSON stdout of a Stop hook as a failure.
                notes = capture_hook(
                    store, payload, min_chars=min_chars, if_novel="--if-novel" in flags
                )
                return 0, "", "".join(f"{note}\n" for note in notes)
    except (MemstoreError, OSError, ValueError) as err:
        return 0, "", f"memstore hook {event}: {err}\n"
    except Exception as err:  # a shell's outer loop: a hook must never break the session
        return 0, "", f"memstore hook {event}: unexpected {type(err).__name__}: {err}\n"
    return 0, "\n".join(lines) + ("\n" if lines else ""), ""


FLAGS = ("--if-novel",)
OPTIONS = ("--min-chars", "--source", "--vault")


def _check_flags(flags: list[str]) -> None:
    """Raise ValueError naming the first flag the hook does not know."""
    rest = iter(flags)
    for flag in rest:
        if flag in OPTIONS:
            next(rest, None)
        elif flag not in FLAGS:
            raise ValueError(f"unknown option {flag!r}; {USAGE}")


def _option(flags: list[str], name: str) -> str:
    """Return the value after `name` in `flags` ("" when absent)."""
    if name not in flags:
        return ""
    at = flags.index(name) + 1
    if at >= len(flags) or flags[at].startswith("--"):
        raise ValueError(f"{name} needs a value")
    return flags[at]


def main(argv: list[str]) -> int:
    """Entry point for `memstore hook …` (reads the environment: this is a shell)."""
    stdin_text = "" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.read()
    status, out, err = run(argv, stdin_text, os.environ, Path.home())
    sys.stdout.write(out)
    sys.stderr.write(err)
    return status
