"""The crashed-session sweep, fed transcripts shaped as Claude Code and Codex write them."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstore.ops.client import Request
from memstore.ops.hooks import answer, sweep_hook
from memstore.service.store import Store
from memstore.vault import sweep
from memstore.vault.files import Vault
from tests.conftest import EXE, commit_count, git, settings_at

HOUR = 3600.0
FINALS = [
    "Fixed the flaky checkout test: the Stripe webhook fixture reused a global event id, so the "
    "second run hit the idempotency cache and returned 200 without creating the order. Each test "
    "now builds a fresh event id with uuid4 and the suite passed ten times in a row.",
    "The nightly invoice export was empty because the cron container ran in UTC while the query "
    "filtered on Europe/Berlin midnight. I moved the boundary computation into SQL with AT TIME "
    "ZONE, added a regression case for the DST switch, and reran the March export by hand.",
    "Upgraded the API gateway from nginx 1.22 to 1.26: client_max_body_size now lives in the "
    "server block, and the health probe path changed to /healthz. Terraform plan shows only the "
    "launch template diff; I left the rollout itself for Monday's change window.",
    "Profiling showed the search endpoint spent 80% of its time rebuilding the synonym map on "
    "every request. It is now built once at startup and cached behind a read-write lock; p95 "
    "latency dropped from 420 ms to 35 ms on the staging replay of yesterday's traffic.",
    "Rotated the Redis TLS certificate: the old one expired on Sunday and the worker pods kept "
    "retrying silently. cert-manager now renews it thirty days ahead, and an alert fires when "
    "the Sidekiq queue latency stays above a minute for five consecutive checks.",
    "The Android build broke after Gradle 8.7 because the Kotlin compiler plugin pinned an old "
    "kapt. I switched annotation processing to KSP for Room and Hilt, cleared the configuration "
    "cache on CI, and the release bundle builds again in eleven minutes instead of nineteen.",
    "Mobile push tokens were stored per device but deleted per user on logout, so logging out on "
    "the tablet silenced the phone too. Tokens are now keyed by installation id; I backfilled "
    "installation ids from the APNs feedback table and wrote a migration note for support.",
    "Customers in Brazil saw doubled prices because the currency formatter received cents twice. "
    "The bug sat in the price widget's memo hook, which multiplied on every re-render. I removed "
    "the conversion there, added a snapshot test per locale, and refunded the three overcharges.",
]


def jsonl(value: object) -> str:
    """One line as the agents write it: compact (JSON.stringify, serde_json), UTF-8 as is."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def session_id(n: int) -> str:
    return f"{n:08x}-1c2d-4e5f-8a9b-0c1d2e3f4a5b"


def claude_transcript(
    folder: Path, session: str, cwd: Path, final: str, *, age: float = HOUR, cut: bool = True
) -> Path:
    """A Claude Code session that ended mid-work: no Stop, a last line half written."""
    base = {
        "parentUuid": None,
        "isSidechain": False,
        "userType": "external",
        "cwd": str(cwd),
        "sessionId": session,
        "version": "2.0.74",
        "gitBranch": "main",
    }

    def entry(kind: str, message: dict[str, object], n: int, **more: object) -> str:
        stamp = f"2025-11-04T10:{n:02d}:00.000Z"
        parent = {"parentUuid": f"u{n - 1}" if n > 1 else None}
        return jsonl(
            {**base, **parent, "type": kind, "message": message, "uuid": f"u{n}"}
            | more
            | {"timestamp": stamp}
        )

    def said(n: int, *blocks: dict[str, object]) -> str:
        message = {
            "model": "claude-sonnet-4-5-20250929",
            "id": f"msg_0{n}",
            "type": "message",
            "role": "assistant",
            "content": list(blocks),
            "stop_reason": None,
            "usage": {"input_tokens": 4, "output_tokens": 120, "cache_read_input_tokens": 9000},
        }
        return entry("assistant", message, n, requestId=f"req_0{n}")

    lines = [
        jsonl({"type": "summary", "summary": "Fix the flaky test", "leafUuid": "u9"}),
        entry("user", {"role": "user", "content": "please look into this"}, 1),
        said(2, {"type": "thinking", "thinking": "Let me run the tests.", "signature": "c2ln"}),
        said(3, {"type": "text", "text": "Running the suite first."}),
        said(4, {"type": "tool_use", "id": "toolu_01", "name": "Bash", "input": {"command": "t"}}),
        entry(
            "user",
            {
                "role": "user",
                "content": [
                    {
                        "tool_use_id": "toolu_01",
                        "type": "tool_result",
                        "content": "2 failed",
                        "is_error": False,
                    }
                ],
            },
            5,
            toolUseResult={"stdout": "2 failed", "stderr": "", "interrupted": False},
        ),
        said(6, {"type": "text", "text": final}),
        entry(  # a subagent's turn written into the main file (older versions)
            "assistant",
            {"role": "assistant", "content": [{"type": "text", "text": "Subagent: done " * 30}]},
            7,
            isSidechain=True,
        ),
        jsonl(
            {
                "type": "file-history-snapshot",
                "messageId": "u6",
                "snapshot": {},
                "isSnapshotUpdate": False,
            }
        ),
    ]
    text = "\n".join(lines) + "\n"
    if cut:
        text += '{"parentUuid":"u6","isSidechain":false,"type":"assistant","message":{"ro'
    path = folder / f"{session}.jsonl"
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    aged(path, age)
    return path


def codex_rollout(
    codex_home: Path, session: str, cwd: Path, final: str, *, age: float = HOUR
) -> Path:
    """A Codex rollout that stopped before its task_complete event."""
    when = time.time() - age
    day = codex_home / "sessions" / time.strftime("%Y/%m/%d", time.localtime(when))
    day.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y-%m-%dT%H-%M-%S", time.localtime(when))
    meta = {
        "id": session,
        "timestamp": "2025-11-04T09:59:38.308Z",
        "cwd": str(cwd),
        "originator": "codex_cli_rs",
        "cli_version": "0.46.0",
        "instructions": None,
        "source": "cli",
        "model_provider": "openai",
        # real base instructions run to ~20 KB: longer than the head the sweep reads
        "base_instructions": {"text": "You are Codex, a coding agent. " * 1000},
        "git": {"commit_hash": "9f1c2e", "branch": "main"},
    }

    def line(kind: str, payload: dict[str, object]) -> str:
        return jsonl({"timestamp": "2025-11-04T10:00:00.000Z", "type": kind, "payload": payload})

    lines = [
        line("session_meta", meta),
        line(
            "response_item",
            {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "<environment_context>...</environment_context>"}
                ],
            },
        ),
        line("event_msg", {"type": "user_message", "message": "fix it", "kind": "plain"}),
        line(
            "turn_context",
            {
                "cwd": str(cwd),
                "approval_policy": "on-request",
                "sandbox_policy": {"mode": "workspace-write"},
                "model": "gpt-5-codex",
                "effort": "medium",
                "summary": "auto",
            },
        ),
        line("event_msg", {"type": "agent_reasoning", "text": "**Running the tests**"}),
        line(
            "response_item",
            {
                "type": "function_call",
                "name": "shell",
                "call_id": "call_1",
                "arguments": json.dumps({"command": ["bash", "-lc", "pytest"]}),
            },
        ),
        line(
            "response_item",
            {
                "type": "function_call_output",
                "call_id": "call_1",
                "output": json.dumps({"output": "ok", "metadata": {"exit_code": 0}}),
            },
        ),
        line("event_msg", {"type": "agent_message", "message": final}),
        line(
            "response_item",
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": final}],
            },
        ),
    ]
    path = day / f"rollout-{stamp}-{session}.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    aged(path, age)
    return path


def aged(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def start(
    vault: Path, payload: dict[str, object], *args: str, **env: str
) -> subprocess.CompletedProcess[str]:
    """Run the installed `memstore hook briefing` as an agent's SessionStart does."""
    environment = {**os.environ, "MEMSTORE_VAULT": str(vault), **env}
    return subprocess.run(
        [str(EXE), "hook", "briefing", *args],
        input=json.dumps(payload),
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )


def session_start(cwd: Path, session: str, transcript: Path | None) -> dict[str, object]:
    return {
        "session_id": session,
        "transcript_path": str(transcript) if transcript else None,
        "cwd": str(cwd),
        "hook_event_name": "SessionStart",
        "source": "startup",
    }


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "webshop-checkout"
    path.mkdir()
    git(path, "init", "-q")
    git(path, "remote", "add", "origin", "git@github.com:acme/webshop.git")
    return path


@pytest.fixture
def claude_dir(hermetic: Path, project: Path) -> Path:
    return hermetic / ".claude" / "projects" / sweep.claude_dir_name(str(project))


def current_session(claude_dir: Path, project: Path) -> tuple[str, Path]:
    """This session's own transcript: just started, one line."""
    session = session_id(0xC0FFEE)
    path = claude_dir / f"{session}.jsonl"
    claude_dir.mkdir(parents=True, exist_ok=True)
    path.write_text(
        jsonl(
            {
                "type": "user",
                "sessionId": session,
                "cwd": str(project),
                "message": {"role": "user", "content": "hi"},
            }
        )
        + "\n",
        encoding="utf-8",
    )
    return session, path


def traces(vault: Path) -> list[str]:
    with Store.open(settings_at(vault)) as store:
        return sorted(
            store.vault.read(h.path).body.strip() for h in store.indexer.by_kind("trace", None)
        )


def test_a_crashed_sessions_final_message_becomes_a_trace_once(
    vault: Path, project: Path, claude_dir: Path
) -> None:
    crashed = session_id(1)
    claude_transcript(claude_dir, crashed, project, FINALS[0])
    session, here = current_session(claude_dir, project)
    before = commit_count(vault)
    done = start(vault, session_start(project, session, here))
    assert done.returncode == 0 and "Traceback" not in done.stderr
    assert done.stdout.startswith("memstore: kept 1 earlier session's summary (crashed")
    message = git(vault, "log", "-1", "--format=%B")
    assert message.startswith("add(webshop): Fixed the flaky checkout test")
    assert f"Memstore-Session: {crashed}" in message and "Memstore-Source: claude-code" in message
    assert commit_count(vault) == before + 1 and traces(vault) == [FINALS[0]]
    state = json.loads((vault / ".memstore" / "state" / sweep.STATE).read_text(encoding="utf-8"))
    assert state["sessions"][crashed]["outcome"] == "kept"
    again = start(vault, session_start(project, session_id(0xBEEF), None))
    assert again.returncode == 0 and "kept" not in again.stdout
    assert commit_count(vault) == before + 1


def test_the_briefing_comes_first_and_unchanged(
    vault: Path, project: Path, claude_dir: Path
) -> None:
    session, here = current_session(claude_dir, project)
    assert start(vault, session_start(project, session, here)).stdout == ""  # first: silent
    with Store.open(settings_at(vault)) as store:
        store.add("Use pnpm 9 in the webshop", workspace="webshop")
    claude_transcript(claude_dir, session_id(2), project, FINALS[1])
    out = start(vault, session_start(project, session, here)).stdout.splitlines()
    assert out[0].startswith("Memory changed since your last session (1 commit")
    assert out[1] == "- add(webshop): Use pnpm 9 in the webshop"
    assert len(out) == 3 and out[2].startswith("memstore: kept 1 earlier session's summary")


def test_the_current_session_a_live_one_and_other_projects_are_not_swept(
    vault: Path, project: Path, claude_dir: Path, hermetic: Path, tmp_path: Path
) -> None:
    session, here = current_session(claude_dir, project)
    resumed = claude_transcript(claude_dir, session, project, FINALS[0])  # resumed: old mtime
    live = claude_transcript(claude_dir, session_id(3), project, FINALS[1], age=60)
    claude_transcript(claude_dir, "agent-5d1e2f3a", project, FINALS[2])  # a subagent's file
    other = tmp_path / "billing"
    other.mkdir()
    elsewhere = hermetic / ".claude" / "projects" / sweep.claude_dir_name(str(other))
    claude_transcript(elsewhere, session_id(4), other, FINALS[3])
    before = commit_count(vault)
    done = start(vault, session_start(project, session, resumed))
    assert done.returncode == 0 and done.stdout == "" and commit_count(vault) == before
    aged(live, HOUR)  # the other terminal was closed an hour ago: now it is a crash
    later = start(vault, session_start(project, session, here))
    assert "kept 1 earlier session's summary" in later.stdout
    assert traces(vault) == [FINALS[1]]


def test_a_session_the_capture_hook_saw_is_not_swept_but_what_it_said_after_is(
    vault: Path, project: Path, claude_dir: Path
) -> None:
    earlier = session_id(5)
    path = claude_transcript(claude_dir, earlier, project, FINALS[2], cut=False, age=0)
    stop = {
        "session_id": earlier,
        "transcript_path": str(path),
        "cwd": str(project),
        "hook_event_name": "Stop",
        "stop_hook_active": False,
    }
    env = {**os.environ, "MEMSTORE_VAULT": str(vault)}
    # the capture gate said no (a higher bar than the sweep's): the sweep must not say yes
    captured = subprocess.run(
        [str(EXE), "hook", "capture", "--if-novel", "--min-chars", "5000"],
        input=json.dumps(stop),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert captured.returncode == 0 and captured.stdout == "" and captured.stderr == ""
    aged(path, HOUR)
    session, here = current_session(claude_dir, project)
    before = commit_count(vault)
    assert start(vault, session_start(project, session, here)).stdout == ""
    assert commit_count(vault) == before
    # the session went on after that Stop, and died mid-turn: its new ending is swept
    claude_transcript(claude_dir, earlier, project, FINALS[3])
    resumed = start(vault, session_start(project, session, here))
    assert "kept 1 earlier session's summary" in resumed.stdout
    assert traces(vault) == [FINALS[3]]


def test_a_crashed_codex_rollout_becomes_a_codex_trace(
    vault: Path, project: Path, tmp_path: Path
) -> None:
    codex_home = tmp_path / "codex-home"  # CODEX_HOME moves ~/.codex
    crashed = "019a2d7a-41c4-78b1-b7cc-a45d62a89cd5"
    codex_rollout(codex_home, crashed, project, FINALS[4])
    other = tmp_path / "billing"
    other.mkdir()
    codex_rollout(codex_home, "019a2d7a-6455-7170-a661-c6d8b94c630a", other, FINALS[5])
    current = "019a2d7b-0000-7000-8000-000000000001"
    here = codex_rollout(codex_home, current, project, FINALS[6], age=0)
    payload = {
        **session_start(project, current, here),
        "model": "gpt-5-codex",
        "permission_mode": "default",
    }
    done = start(vault, payload, "--source", "codex", CODEX_HOME=str(codex_home))
    assert done.returncode == 0 and "kept 1 earlier session's summary" in done.stdout
    message = git(vault, "log", "-1", "--format=%B")
    assert "Memstore-Source: codex" in message and f"Memstore-Session: {crashed}" in message
    assert traces(vault) == [FINALS[4]]
    # Claude Code's SessionStart reads only Claude Code's transcripts
    assert "kept" not in start(vault, session_start(project, session_id(6), None)).stdout


def test_claude_config_dir_and_the_path_naming_rule_find_the_project(
    vault: Path, tmp_path: Path
) -> None:
    project = tmp_path / "shop_front.v2"  # `_` and `.` become `-` too
    project.mkdir()
    config = tmp_path / "claude-config"
    folder = config / "projects" / sweep.claude_dir_name(str(project))
    assert folder.name.endswith("-shop-front-v2")
    claude_transcript(folder, session_id(7), project, FINALS[5])
    done = start(vault, session_start(project, session_id(8), None), CLAUDE_CONFIG_DIR=str(config))
    assert "kept 1 earlier session's summary" in done.stdout
    assert git(vault, "log", "-1", "--format=%s").startswith("add(global): The Android build")


def test_broken_transcripts_are_skipped_and_the_hook_still_answers(
    vault: Path, project: Path, claude_dir: Path
) -> None:
    session, here = current_session(claude_dir, project)
    junk = {
        "not-json": "not json at all\n{{{\n",
        "binary": os.urandom(4096).decode("latin-1"),
        "one-line": '{"type": "assistant", "message": {"content": "' + "x" * 3_000_000,
    }
    for n, text in enumerate(junk.values(), 20):
        path = claude_dir / f"{session_id(n)}.jsonl"
        path.write_bytes(text.encode("latin-1"))
        aged(path, HOUR)
    os.mkfifo(claude_dir / f"{session_id(30)}.jsonl")  # never opened: it would block
    huge = claude_transcript(claude_dir, session_id(31), project, FINALS[7], age=2 * HOUR)
    bulk = "\n".join(
        jsonl(
            {
                "type": "user",
                "message": {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": f"t{n}",
                            "content": "log line " * 200,
                        }
                    ],
                },
            }
        )
        for n in range(2000)
    )
    text = huge.read_text(encoding="utf-8")
    cut = text.index('{"parentUuid":null,')  # after the summary line
    huge.write_text(bulk + "\n" + text[cut:], encoding="utf-8")  # ~3.5 MB, the end intact
    aged(huge, 2 * HOUR)
    done = start(vault, session_start(project, session, here))
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert "kept 1 earlier session's summary" in done.stdout
    assert traces(vault) == [FINALS[7]]
    state = sweep.parse_swept((vault / ".memstore/state" / sweep.STATE).read_text("utf-8"))
    assert {state[session_id(n)].outcome for n in (20, 21, 22)} == {"short"}
    assert session_id(30) not in state


def test_the_sweep_reads_at_most_a_few_transcripts_per_start_newest_first(
    vault: Path, project: Path, claude_dir: Path
) -> None:
    session, here = current_session(claude_dir, project)
    count = sweep.MAX_SWEPT + 2
    for n in range(count):
        claude_transcript(claude_dir, session_id(40 + n), project, FINALS[n], age=HOUR * (n + 1))
    kept: list[str] = []
    for _ in range(count):  # each start keeps what fits in its time, newest first
        done = start(vault, session_start(project, session, here))
        assert done.returncode == 0 and "no answer within" not in done.stderr
        now = [t for t in FINALS[:count] if t in traces(vault) and t not in kept]
        assert len(now) <= sweep.MAX_SWEPT
        assert now == [t for t in FINALS[:count] if t not in kept][: len(now)]
        kept += now
        if len(kept) == count:
            break
    assert kept == FINALS[:count] and len(traces(vault)) == count


def test_the_sweep_stops_at_its_time_and_reads_the_callers_home(
    vault: Path, project: Path, tmp_path: Path
) -> None:
    # The daemon answers hooks for callers: their HOME, not its own, says where to look.
    home = tmp_path / "callers-home"
    folder = home / ".claude" / "projects" / sweep.claude_dir_name(str(project))
    claude_transcript(folder, session_id(50), project, FINALS[6])
    payload = session_start(project, session_id(51), None)
    env = {**os.environ, "MEMSTORE_VAULT": str(vault), "HOME": str(home)}
    with Store.open(settings_at(vault)) as store:
        late = sweep_hook(
            store, payload, str(project), agent="claude-code", env=env, min_chars=200, seconds=0.0
        )
    assert late == [] and traces(vault) == []  # out of time: nothing read, nothing noted
    assert sweep.read_swept(Vault(vault)) == {}
    reply = answer(Request("hook", ["briefing"], str(project), env, json.dumps(payload).encode()))
    assert reply.status == 0 and "kept 1 earlier session's summary" in reply.stdout
    off = {**env, "MEMSTORE_NO_SWEEP": "1"}
    claude_transcript(folder, session_id(52), project, FINALS[7])
    quiet = answer(Request("hook", ["briefing"], str(project), off, json.dumps(payload).encode()))
    assert quiet.status == 0 and "kept" not in quiet.stdout and len(traces(vault)) == 1


def test_claude_dir_name_follows_claude_codes_rule() -> None:
    assert sweep.claude_dir_name("/Users/foo/src/github.com/omnara-ai/omnara") == (
        "-Users-foo-src-github-com-omnara-ai-omnara"
    )
    assert sweep.claude_dir_name("/home/chris/2_project-files") == "-home-chris-2-project-files"
    assert sweep.claude_dir_name("/Users/me/.agents") == "-Users-me--agents"
    assert sweep.claude_dir_name("/tmp/é 😀") == "-tmp-----"  # UTF-16 units, as in JavaScript


def test_a_long_project_path_is_found_by_its_kept_prefix(tmp_path: Path) -> None:
    project = tmp_path / ("deep" * 60)
    root = tmp_path / "projects"
    name = sweep.claude_dir_name(str(project))
    folder = root / f"{name[: sweep.CLAUDE_NAME_MAX]}-on930v"  # the hash Claude Code appends
    path = claude_transcript(folder, session_id(60), project, FINALS[0])
    found = sweep.find_transcripts(
        "claude-code", project, root, current=("", ""), swept={}, now=time.time()
    )
    assert [t.path for t in found] == [path]


swept_values = st.builds(
    sweep.Swept,
    st.text(min_size=1),
    st.sampled_from(sorted(sweep.SWEEP_OUTCOMES)),
    st.floats(min_value=1e9, max_value=2e9),
    st.none() | st.tuples(st.integers(0, 2**40), st.integers(0, 2**62)),
)


@given(st.dictionaries(st.text(min_size=1), swept_values, max_size=8))
def test_the_state_file_reads_back_what_was_written(sessions: dict[str, sweep.Swept]) -> None:
    now = min((s.at for s in sessions.values()), default=1e9)
    back = sweep.parse_swept(sweep.render_swept(sessions, now))
    assert back.keys() == sessions.keys()
    assert all(back[k].digest == v.digest and back[k].stamp == v.stamp for k, v in sessions.items())
    assert sweep.parse_swept("garbled {") == {}


def test_a_session_with_an_outcome_this_version_does_not_know_is_looked_at_again() -> None:
    entry = {"digest": "ab", "at": 1e9}
    text = json.dumps(
        {"sessions": {"a": entry | {"outcome": "kept"}, "b": entry | {"outcome": "x"}}}
    )
    assert list(sweep.parse_swept(text)) == ["a"]
