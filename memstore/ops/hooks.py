"""Agent hooks: what Claude Code and Codex run on each prompt, at session start and at stop.

A thin, lean shell (no typer): it reads the agent's hook JSON and hands it, with its
arguments, directory and environment, to the vault's daemon (memstore/ops/client.py), or runs
the very same `answer` in this process when no daemon answers or none is allowed. Asking
the daemon imports neither Whoosh nor pygit2. A hook must never break or stall the agent's
session: every failure exits 0 with a note on stderr, and a hook that runs past its time
budget leaves the work to finish in the background and exits 0 with a note.
"""

from __future__ import annotations

import json
import os
import re
import select
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeGuard, get_args

from memstore.ops.client import Reply, Request, ask, daemon_allowed, resolve_vault, start_daemon

# Everything else is imported where it is used: a hook the daemon answers costs an
# interpreter, this module and the client (dataclasses, the model, tempfile: ~30 ms more).
if TYPE_CHECKING:
    from memstore.core.model import AddResult, Hit
    from memstore.ops.lean import OpenStore
    from memstore.service.store import Store
    from memstore.vault.sweep import Final, SweepOutcome
MIN_CAPTURE_CHARS = 200  # shorter final messages are chit-chat ("Done!"), not knowledge
NOVELTY_THRESHOLD = 0.7  # measured: tests/benchmarks/bench_novelty.py (docs/agents.md)
BRIEFING_TOKENS = 300
TRACE_KEYWORDS = 6  # a captured trace's keywords: what it names, then its rarest words
MAX_TRACE_KEYWORD = 40  # longer words (a URL, a long path) make poor keywords
# Seconds a hook may keep the agent waiting (MEMSTORE_HOOK_BUDGET overrides). Below the
# timeouts agents give hooks (Codex's example: 10 s, 30 s for Stop; Claude Code: 60 s).
HookEvent = Literal["prompt", "briefing", "capture", "codex-notify"]
BUDGET_S: dict[str, float] = {"prompt": 4.0, "briefing": 4.0, "capture": 20.0, "codex-notify": 20.0}
# Seconds of the briefing's budget the crashed-session sweep may take (a quarter at most).
# Measured: each trace it keeps costs ~0.1-0.15 s, each transcript tail read ~10 ms.
SWEEP_S = 1.0
EVENTS: tuple[HookEvent, ...] = get_args(HookEvent)  # BUDGET_S has one for each (a test checks)
USAGE = (
    "usage: memstore hook prompt|capture|briefing|codex-notify"
    " [--if-novel] [--min-chars N] [--source AGENT] [--vault PATH]"
)


def workspace_for(
    payload: Mapping[str, Any], vault: Path, cwd: str, *, adding: bool = False
) -> str | None:
    """Return the workspace of the agent's directory (its payload's cwd, else the hook's own);
    None outside any repository or in the vault; `adding`: not another vault's (raises)."""
    from memstore.core import repo_name

    where = Path(cwd or "/", str(payload.get("cwd") or ""))
    return (repo_name.trace_workspace if adding else repo_name.workspace_at)(vault, where)


def final_assistant_text(payload: Mapping[str, Any], cwd: str = "") -> str:
    """Return the session's last assistant message, from the payload or its transcript."""
    for key in ("last_assistant_message", "last-assistant-message"):
        if isinstance(payload.get(key), str):
            return str(payload[key])
    transcript = payload.get("transcript_path")
    if not isinstance(transcript, str) or not transcript:
        return ""
    from memstore.vault.sweep import read_current

    return read_current(Path(cwd or "/", transcript)).text  # unreadable: one line, exit 0


def prompt_hook(store: Store, payload: Mapping[str, Any], cwd: str) -> list[str]:
    """UserPromptSubmit: the confident memories for a prompt (of a pasted log or page, its
    question and error lines: catalog/pasted.py) as context lines, a typo note first."""
    from memstore.catalog.pasted import chat_query  # (the index: not on the daemon path)
    from memstore.catalog.retrieval import names_one_topic, typo_note
    from memstore.ops.output import context_lines

    prompt = str(payload.get("prompt") or "").strip()
    if not prompt:
        return []
    scope = workspace_for(payload, store.vault.root, cwd)
    here = Path(cwd or "/", str(payload.get("cwd") or ""))  # cites of its repository are checked
    result = store.search(asked := chat_query(prompt), workspace=scope, k=5, tiers=True, cwd=here)
    if not _holds_the_prompt(asked.text, result.hits):  # most prompts match some word here:
        return _elsewhere_note(store, asked.text, scope)  # only then one more search
    lines = context_lines(result, one_topic=names_one_topic(asked))
    if not lines:
        return []
    note = typo_note(store.indexer, asked).strip()
    return [lines[0], f"({note})", *lines[1:]] if note else lines


def _holds_the_prompt(prompt: str, hits: Sequence[Hit]) -> bool:
    """Say whether a hit is confident or holds a prompt's word (not just a related one)."""
    from memstore.index import terms

    words = terms(prompt)
    return any(not h.weak or words & terms(" ".join((h.content, *h.keywords))) for h in hits)


def _elsewhere_note(store: Store, prompt: str, scope: str | None) -> list[str]:
    """Return the one line that says other workspaces hold confident matches, if they do
    (asked when nothing in `scope` matched at all)."""
    from memstore.ops.tools import RECALL_ALL, look_elsewhere

    elsewhere = look_elsewhere(store, None, prompt, scope, command=RECALL_ALL, confident=True)
    if elsewhere is None or not elsewhere.matches:
        return []
    from memstore.core.model import GLOBAL
    from memstore.ops.output import elsewhere_line

    where = GLOBAL if scope == GLOBAL else f"{scope} or {GLOBAL}"
    return [f"(memstore: no memory of {where} matches; {elsewhere_line(elsewhere)})"]


def capture_hook(
    store: Store, payload: Mapping[str, Any], cwd: str, *, min_chars: int, if_novel: bool
) -> list[str]:
    """Stop / SessionEnd: keep the final assistant message as a trace, if it says something new."""
    text = final_assistant_text(payload, cwd).strip()
    from memstore.core.model import GLOBAL

    workspace = ""
    if len(text) >= min_chars:
        workspace = workspace_for(payload, store.vault.root, cwd, adding=True) or GLOBAL
    result = keep_trace(store, text, workspace, min_chars=min_chars, if_novel=if_novel)
    lines = (
        [f"memstore: kept this session's summary as {result.id} ({result.status})"]
        if result
        else []
    )
    return lines + _note_captured(store, payload, text)


def keep_trace(
    store: Store, text: str, workspace: str, *, min_chars: int, if_novel: bool
) -> AddResult | None:
    """Add `text` as a trace if it passes the capture gates (length, then novelty)."""
    if len(text) < min_chars:
        return None
    if if_novel and store.overlap(text, workspace) >= NOVELTY_THRESHOLD:
        return None
    keywords = trace_keywords(store, text)
    return store.add(text, workspace=workspace, kind="trace", keywords=keywords)


def _note_captured(store: Store, payload: Mapping[str, Any], text: str) -> list[str]:
    """Remember that this session reached a capture, so no later sweep takes it again."""
    import time

    from memstore.core.errors import MemstoreError
    from memstore.vault.sweep import Swept, digest, record_swept

    session = _payload_session(payload)
    if not session or not text:
        return []
    now = time.time()
    try:
        record_swept(store.vault, {session: Swept(digest(text), "captured", now)}, now)
    except MemstoreError as err:
        return [f"memstore: could not note this session as captured ({err})"]
    return []


def _payload_session(payload: Mapping[str, Any]) -> str:
    session = payload.get("session_id") or payload.get("thread-id")
    return session if isinstance(session, str) else ""


def trace_keywords(store: Store, text: str) -> tuple[str, ...]:
    """Return keywords for a captured trace: the things it names, then its rarest words.

    Rarest in the vault: words no memory holds yet first, then the rest by how few
    memories hold them; words most memories hold are left out. Ties keep the order of
    `specific_words` (repeated, then longer words).
    """
    from memstore.core.codec import specific_words
    from memstore.index import Document, extract_entities, terms

    words = [w for w in specific_words(text) if len(w) <= MAX_TRACE_KEYWORD][:20]
    named = {value for value, _ in extract_entities(text)}
    search = store.indexer.search
    # The daemon's watcher thread may catch up meanwhile: read the index held against
    # other threads, as every Store method does.
    with store.reading():
        store.catch_up()
        unseen = {w for w in words if search.unknown_terms(w)}
        probe = Document("", "", "", "trace", " ".join(words))
        rarest = search.expansion_terms([probe], (), 4 * len(words))
    place = {term: n for n, term in enumerate(rarest)}

    def rarity(word: str) -> tuple[int, int]:
        if word in named or word in unseen:
            return (0, 0)
        known = [place[t] for t in terms(word) if t in place]
        return (1, min(known)) if known else (2, 0)

    ranked = sorted(words, key=rarity)  # stable: ties keep specific_words' order
    return tuple(w for w in ranked if rarity(w)[0] < 2)[:TRACE_KEYWORDS]


def briefing_hook(
    store: Store, payload: Mapping[str, Any], cwd: str, *, agent: str, max_tokens: int
) -> list[str]:
    """SessionStart: what changed in memory since this agent's last session."""
    from memstore.core.ranking import estimate_tokens
    from memstore.ops.output import briefing_lines

    changes, known = store.changes_since_last_session(agent, tiers=True)
    workspace = workspace_for(payload, store.vault.root, cwd)
    changes = [c for c in changes if _concerns(c.summary, workspace)]
    if not known or not changes:
        return []
    return briefing_lines(changes, max_tokens=max_tokens, estimate=estimate_tokens)


def sweep_hook(
    store: Store,
    payload: Mapping[str, Any],
    cwd: str,
    *,
    agent: str,
    env: Mapping[str, str],
    min_chars: int,
    seconds: float,
) -> list[str]:
    """SessionStart: keep the final messages of this project's earlier sessions that never
    reached a capture (crashed, killed), through the capture gates; stop after `seconds`."""
    import logging
    import time

    from memstore.core.errors import MemstoreError
    from memstore.vault import sweep

    session, transcript = _payload_session(payload), payload.get("transcript_path")
    transcript = transcript if isinstance(transcript, str) else ""
    here = os.path.abspath(Path(cwd or "/", transcript)) if transcript else ""
    if not session and not here:
        return []  # without knowing this session, it could be swept itself
    now, deadline = time.time(), time.monotonic() + seconds
    project = Path(cwd or "/", str(payload.get("cwd") or ""))
    root = sweep.transcript_root(agent, env, Path(env.get("HOME") or "/"))
    swept = sweep.read_swept(store.vault)
    due = sweep.find_transcripts(
        agent, project, root, current=(session, here), swept=swept, now=now
    )
    done: dict[str, sweep.Swept] = {}
    kept = []
    for found in due:
        left = deadline - time.monotonic()
        if left <= 0:
            break  # the rest waits for the next session start
        try:
            final = sweep.read_final(found)
        except OSError:
            final = sweep.Final("", "")
        outcome: SweepOutcome | Literal["locked"]
        if (seen := swept.get(found.session)) and seen.digest == sweep.digest(final.text):
            outcome, result = seen.outcome, None  # captured (or swept) with this very ending
        else:
            outcome, result = _sweep_one(store, found.session, final, project, cwd, min_chars, left)
        if outcome == "locked":
            break  # another writer holds the vault: try again next time
        kept += [result.id] if result else []
        done[found.session] = sweep.Swept(sweep.digest(final.text), outcome, now, found.stamp)
    try:
        sweep.record_swept(store.vault, done, now)
    except MemstoreError as err:  # next time these are read again, and the gates say "known"
        logging.getLogger("memstore.hooks").warning("could not note swept sessions: %s", err)
    from memstore.ops.output import swept_line

    return [swept_line(kept)] if kept else []


def _sweep_one(
    store: Store, session: str, final: Final, project: Path, cwd: str, min_chars: int, left: float
) -> tuple[SweepOutcome | Literal["locked"], AddResult | None]:
    """Run the capture gates over one earlier session's final message; say what became of it."""
    from dataclasses import replace

    from memstore.core.errors import LockedError, MemstoreError
    from memstore.core.model import GLOBAL

    if len(final.text) < min_chars:
        return "short", None
    # The trace is that session's: its commit names it; the add waits no longer than the sweep.
    acting = replace(store.settings, session=session, lock_timeout=left)
    try:
        where = {"cwd": final.cwd or str(project)}
        workspace = workspace_for(where, store.vault.root, cwd, adding=True) or GLOBAL
        with store.serving(acting) as view:
            result = keep_trace(view, final.text, workspace, min_chars=0, if_novel=True)
    except LockedError:
        return "locked", None
    except MemstoreError:
        return "refused", None  # e.g. the text holds a credential: asking again changes nothing
    return ("kept" if result else "known"), result


_BOOKKEEPING = ("recall:", "sync: merge")  # counters; merges (their commits show apart)
_SCOPED = re.compile(r"^[\w-]+\(([^)]*)\):")  # "add(webshop): …"


def _concerns(summary: str, workspace: str | None) -> bool:
    """Say whether a commit belongs in a briefing for `workspace` (None: every workspace)."""
    from memstore.core.model import GLOBAL

    if summary.startswith(_BOOKKEEPING):
        return False
    scoped = _SCOPED.match(summary)
    return scoped is None or workspace is None or scoped.group(1) in (workspace, GLOBAL)


def answer(request: Request, open_store: OpenStore | None = None) -> Reply:
    """Run one hook for `request` (its arguments, directory, environment and payload); the
    daemon runs it over its resident store, the hook process over its own (`open_store`
    None). Never raises."""
    from memstore.core.errors import MemstoreError
    from memstore.ops.lean import open_in_process

    argv = list(request.argv)
    event, flags = (argv[0], argv[1:]) if argv else ("", [])
    if not is_event(event):
        # Still 0: an agent reads exit 2 from a prompt hook as "block this prompt".
        return Reply(0, "", USAGE + "\n")
    try:
        lines = _run_event(event, flags, request, open_store or open_in_process)
    except (MemstoreError, OSError, ValueError) as err:
        return Reply(0, "", f"memstore hook {event}: {err}\n")
    except Exception as err:  # a shell's outer loop: a hook must never break the session
        return Reply(0, "", f"memstore hook {event}: unexpected {type(err).__name__}: {err}\n")
    if event in ("capture", "codex-notify"):
        # Nothing on stdout: Codex counts any non-JSON stdout of a Stop hook as a failure.
        return Reply(0, "", "".join(f"{line}\n" for line in lines))
    return Reply(0, "".join(f"{line}\n" for line in lines), "")


def is_event(word: str) -> TypeGuard[HookEvent]:
    """Say whether `word` names a hook event memstore answers."""
    return word in EVENTS


def _run_event(
    event: HookEvent, flags: list[str], request: Request, open_store: OpenStore
) -> list[str]:
    """Return the lines hook `event` says; raise what the caller turns into a note."""
    from dataclasses import replace

    from memstore.core.config import Settings

    env = request.env
    from_argv = event == "codex-notify" and bool(flags)
    raw = flags.pop() if from_argv else request.stdin.decode("utf-8", errors="replace")
    _check_flags(flags)
    payload = _parse_payload(raw, "its last argument" if from_argv else "stdin")
    min_chars = int(_option(flags, "--min-chars") or MIN_CAPTURE_CHARS)
    default_agent = "codex" if event == "codex-notify" else "claude-code"
    agent = _option(flags, "--source") or env.get("MEMSTORE_SOURCE", default_agent)
    vault = resolve_vault(_option(flags, "--vault") or None, env, request.cwd)
    home = Path(env.get("HOME") or "/")
    settings = Settings.from_env(env, home=home, source=agent, vault=vault)
    session = str(payload.get("session_id") or payload.get("thread-id") or settings.session)
    # Never create a vault: a hook that made ~/memstore would split memory from the
    # vault the agent's server uses.
    with open_store(replace(settings, source=agent, session=session), False) as store:
        if event == "prompt":
            return prompt_hook(store, payload, request.cwd)
        if event == "briefing":
            lines = briefing_hook(
                store, payload, request.cwd, agent=agent, max_tokens=BRIEFING_TOKENS
            )
            return lines + _sweep_quietly(store, payload, request, agent, min_chars)
        if_novel = "--if-novel" in flags
        return capture_hook(store, payload, request.cwd, min_chars=min_chars, if_novel=if_novel)


def _parse_payload(raw: str, where: str) -> dict[str, Any]:
    """Return the agent's hook input; raise a one-line ValueError naming what was expected."""
    expected = f"expected the agent's hook input, a JSON object, on {where}"
    try:
        payload = json.loads(raw or "{}")
    except json.JSONDecodeError:
        start = raw.strip().splitlines()[0][:40] if raw.strip() else ""
        raise ValueError(f"{expected}; got text that is not JSON ({start!r})") from None
    if not isinstance(payload, dict):
        raise ValueError(f"{expected}; got a JSON {type(payload).__name__}")
    return payload


def _sweep_quietly(
    store: Store, payload: Mapping[str, Any], request: Request, agent: str, min_chars: int
) -> list[str]:
    """Run the sweep after the briefing; whatever goes wrong, the briefing still goes out."""
    import logging

    from memstore.vault.sweep import AGENTS

    env = request.env
    if agent not in AGENTS or env.get("MEMSTORE_NO_SWEEP", "") not in ("", "0"):
        return []
    seconds = min(SWEEP_S, budget("briefing", env) / 4)
    try:
        return sweep_hook(
            store, payload, request.cwd, agent=agent, env=env, min_chars=min_chars, seconds=seconds
        )
    except Exception as err:  # a shell's guard: a sweep bug must not cost the agent its briefing
        logging.getLogger("memstore.hooks").warning(
            "could not sweep earlier sessions: %s: %s", type(err).__name__, err
        )
        return []


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


def respond(request: Request, here: Callable[[Callable[[], Reply]], Reply] | None = None) -> Reply:
    """Ask the daemon to run the hook, else run it here (as `here` runs one command), start one."""
    reply: Reply | None = None
    vault: Path | None = None
    if daemon_allowed(request.env, request.argv):
        try:
            vault = resolve_vault(_vault_flag(request.argv), request.env, request.cwd)
        except ValueError:
            vault = None  # "--vault" without a value: answer() says so
        reply = ask(vault, request, start=False) if vault is not None else None
    if reply is None or reply.status is None:
        from memstore.ops.lean import open_in_process, open_one_shot, opener_for

        opener = opener_for(vault, open_in_process if here is None else open_one_shot)
        reply = answer(request, opener) if here is None else here(lambda: answer(request, opener))
        if vault is not None and reply.status is not None:
            # only now: a starting daemon holds the vault lock, which this hook's catch-up needs
            start_daemon(vault, request.env)
    return reply


def event_first(argv: list[str]) -> list[str]:
    """Return `argv` with the event first: `hook --vault V prompt` is `hook prompt --vault V`
    (options may come before the event, as before a typer group's subcommand), and an
    option's `--name=value` as two words, as typer reads it."""
    split: list[str] = []
    for arg in argv:
        name, equals, value = arg.partition("=")
        split += [name, value] if equals and name in OPTIONS else [arg]
    argv = split
    at = 0
    while at < len(argv) and argv[at] not in EVENTS:
        if argv[at] not in OPTIONS and argv[at] not in FLAGS:
            return argv  # not an option: answer() names the event it does not know
        at += 2 if argv[at] in OPTIONS else 1
    if at >= len(argv):
        return argv
    return [argv[at], *argv[:at], *argv[at + 1 :]]


def _vault_flag(argv: list[str]) -> str | None:
    return _option(argv[1:-1] if argv[:1] == ["codex-notify"] else argv[1:], "--vault") or None


MAX_BUDGET_S = 3600.0


def budget(event: str, env: Mapping[str, str]) -> float:
    """Return the seconds hook `event` may keep the agent waiting (MEMSTORE_HOOK_BUDGET's,
    when it is a valid number of seconds; else the event's default)."""
    return _budget_setting(env) or BUDGET_S.get(event, 4.0)


def budget_warning(event: str, env: Mapping[str, str]) -> str:
    """Return the one-line warning for a MEMSTORE_HOOK_BUDGET that is not a valid budget
    ("" when it is, or unset): the hook goes on with its default, never failing the prompt."""
    value = env.get("MEMSTORE_HOOK_BUDGET")
    if not value or _budget_setting(env) is not None:
        return ""
    return (
        f"memstore hook {event}: MEMSTORE_HOOK_BUDGET={value!r} is not a number of seconds "
        f"above 0 and at most {MAX_BUDGET_S:g}; using the default {budget(event, {}):g} s\n"
    )


def _budget_setting(env: Mapping[str, str]) -> float | None:
    try:
        seconds = float(env.get("MEMSTORE_HOOK_BUDGET") or "")
    except ValueError:
        return None
    return seconds if 0 < seconds <= MAX_BUDGET_S else None  # NaN fails both tests


def within_budget(work: Callable[[], Reply], seconds: float, event: str) -> Reply:
    """Return what `work` replies, or, past `seconds`, a note while it finishes on its own.

    `work` runs in a child process with no hold on the agent's pipes: an answer late for
    this prompt still completes (a capture still commits, an index catch-up still lands).
    """
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(reader)
        _work_in_child(work, writer, event)
    os.close(writer)
    try:
        ready, _, _ = select.select([reader], [], [], seconds)
        if not ready:
            return Reply(
                0,
                "",
                f"memstore hook {event}: no answer within {seconds:g} s; it finishes in the "
                "background (MEMSTORE_HOOK_BUDGET sets the limit)\n",
            )
        data = _read_all(reader)
    finally:
        os.close(reader)
    os.waitpid(pid, 0)
    try:
        status, out, err = json.loads(data)
        return Reply(int(status), str(out), str(err))
    except (ValueError, TypeError):
        return Reply(0, "", f"memstore hook {event}: the hook process ended without an answer\n")


def _work_in_child(work: Callable[[], Reply], writer: int, event: str) -> None:
    """Run `work` with stdio away from the agent's pipes; send its reply to `writer`; exit."""
    import tempfile

    status = 0
    try:
        # What the work itself writes to stderr (warnings) comes back with its reply.
        with tempfile.TemporaryFile() as spill:
            devnull = os.open(os.devnull, os.O_RDWR)
            os.dup2(devnull, 0)
            os.dup2(devnull, 1)
            os.dup2(spill.fileno(), 2)
            reply = _run_guarded(work, event)
            sys.stderr.flush()
            spill.seek(0)
            spilled = spill.read().decode("utf-8", "replace")
        answer = json.dumps([reply.status or 0, reply.stdout, spilled + reply.stderr])
        view = memoryview(answer.encode("utf-8"))
        while view:
            view = view[os.write(writer, view) :]
    except OSError:
        status = 1  # the hook process left (past its budget): nobody reads this
    finally:
        os._exit(status)


def _run_guarded(work: Callable[[], Reply], event: str) -> Reply:
    try:
        return work()
    except Exception as err:  # a shell's outer loop: the agent still gets exit 0
        return Reply(0, "", f"memstore hook {event}: unexpected {type(err).__name__}: {err}\n")


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    return b"".join(chunks)


def main(argv: list[str], here: Callable[[Callable[[], Reply]], Reply] | None = None) -> int:
    """Entry point for `memstore hook …` (reads the environment: this is a shell)."""
    stdin = b"" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.buffer.read()
    try:
        cwd = os.getcwd()
    except OSError:  # the current folder was removed
        cwd = ""
    argv = event_first(argv)
    request = Request("hook", argv, cwd, dict(os.environ), stdin)
    event = argv[0] if argv else ""
    reply = within_budget(lambda: respond(request, here), budget(event, request.env), event)
    sys.stdout.write(reply.stdout)
    sys.stderr.write(budget_warning(event, request.env) + reply.stderr)
    return reply.status or 0
