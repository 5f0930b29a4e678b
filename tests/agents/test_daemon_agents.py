"""Agent hooks and `memstore serve` through the vault's daemon: same answers, one index.

Real processes throughout: the installed executable, the real MCP stdio client, daemons
started the way agents start them and killed with SIGKILL. Helpers and the `env` fixture
(daemons allowed, every daemon gone after the test) come from tests/daemon/test_daemon.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from memstore.mcp.server import Forwarder
from memstore.ops import client
from memstore.service.store import Store
from memstore.vault.files import Vault
from tests.conftest import EXE, git, invoke_memstore, settings_at, wait_until
from tests.daemon.test_daemon import (
    TIMEOUT,
    daemon_pid,
    make_vault,
    requests_served,
    start_daemon,
    status,
)
from tests.daemon.test_daemon import env as daemons_allowed  # noqa: F401 (a fixture)


@pytest.fixture
def env(daemons_allowed: dict[str, str]) -> dict[str, str]:  # noqa: F811
    """A person's environment with daemons allowed; every daemon is gone after the test."""
    return daemons_allowed


LONG = (
    "Fixed the flaky checkout test: the Stripe webhook fixture reused a global event id, so the "
    "second run hit the idempotency cache and returned 200 without creating the order. Each test "
    "now builds a fresh event id with uuid4 and the suite passed ten times in a row."
)


def project_at(path: Path) -> Path:
    """A project checkout whose workspace is 'webshop' (its remote's name)."""
    path.mkdir()
    git(path, "init", "-q")
    git(path, "remote", "add", "origin", "git@github.com:acme/webshop.git")
    return path


def hook(
    environment: dict[str, str], vault: Path, event: str, payload: dict[str, Any], *args: str
) -> tuple[int, str, str]:
    done = subprocess.run(
        [str(EXE), "hook", event, *args],
        input=json.dumps(payload),
        env={**environment, "MEMSTORE_VAULT": str(vault)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.returncode, done.stdout, done.stderr.replace(str(vault), "<vault>")


def hook_here(
    environment: dict[str, str], vault: Path, event: str, payload: dict[str, Any], *args: str
) -> tuple[int, str, str]:
    """`hook` through the executable's `main` in this process (no daemon asked)."""
    given = {**environment, "MEMSTORE_VAULT": str(vault)}
    done = invoke_memstore("hook", event, *args, env=given, stdin=json.dumps(payload))
    return done.returncode, done.stdout, done.stderr.replace(str(vault), "<vault>")


def hook_calls(project: Path) -> list[tuple[str, dict[str, Any], tuple[str, ...]]]:
    start = {"session_id": "s1", "hook_event_name": "SessionStart", "cwd": str(project)}
    prompt = {"session_id": "s1", "cwd": str(project)}
    stop = {"session_id": "s1", "cwd": str(project), "last_assistant_message": LONG}
    return [
        ("briefing", start, ()),
        ("prompt", {**prompt, "prompt": "why does upload fail with 413 in nginx?"}, ()),
        ("prompt", {**prompt, "prompt": "tell me about zebras and kangaroos"}, ()),
        ("capture", stop, ("--if-novel",)),
        ("capture", stop, ("--if-novel",)),  # the redundancy gate: nothing kept
        ("capture", stop, ("--if-novle",)),  # a typo: a note, exit 0
        ("Prompt", prompt, ()),  # an unknown event: the usage line, exit 0
        ("prompt", {**prompt, "prompt": "stripe webhook idempotency"}, ()),  # the new trace
        ("briefing", start, ()),
    ]


def test_hooks_through_the_daemon_print_what_they_print_in_process(
    tmp_path: Path, env: dict[str, str]
) -> None:
    served, alone = make_vault(tmp_path / "served"), make_vault(tmp_path / "alone")
    start_daemon(env, served)
    project = project_at(tmp_path / "webshop-checkout")
    no_daemon = {**env, "MEMSTORE_NO_DAEMON": "1"}
    calls = hook_calls(project)
    outputs = []
    for event, payload, args in calls:
        through = hook(env, served, event, payload, *args)
        here = hook_here(no_daemon, alone, event, payload, *args)
        assert through == here, (event, payload.get("prompt"), args)
        outputs.append(through)
    assert "client_max_body_size" in outputs[1][1] and outputs[2][1] == ""
    assert "kept this session's summary" in outputs[3][2] and outputs[3][1] == ""
    assert outputs[4] == (0, "", "")  # the redundancy gate
    assert "add(webshop): Fixed the flaky checkout test" in outputs[-1][1]
    # every hook above was the daemon's (the typo and the unknown event too)
    assert requests_served(served) == len(calls)
    assert not (alone / ".memstore" / client.SOCKET_NAME).exists()
    # the capture's commit carries the agent's session and source, as in-process
    for vault in (served, alone):
        message = git(vault, "log", "-1", "--format=%B")
        assert "Memstore-Source: claude-code" in message and "Memstore-Session: s1" in message


def test_a_prompt_hook_answered_by_the_daemon_imports_neither_whoosh_nor_pygit2(
    tmp_path: Path, env: dict[str, str]
) -> None:
    vault = make_vault(tmp_path / "vault")
    start_daemon(env, vault)
    project = project_at(tmp_path / "webshop-checkout")
    payload = json.dumps({"cwd": str(project), "prompt": "nginx 413 upload"})
    # `respond` is what the hook process runs (main runs it in a child under the budget)
    code = (
        "import os, sys\n"
        "from memstore.ops.hooks import respond\n"
        "from memstore.ops.client import Request\n"
        f"request = Request('hook', ['prompt'], os.getcwd(), dict(os.environ), {payload!r}.encode())\n"
        "reply = respond(request)\n"
        "sys.stdout.write(reply.stdout)\n"
        "heavy = ('whoosh', 'pygit2', 'yaml', 'watchdog', 'typer', 'mcp', 'memstore.service.store',"
        " 'memstore.catalog.indexer', 'memstore.vault.git', 'memstore.ops.output', 'index')\n"
        "print(reply.status, sorted(m for m in heavy if m in sys.modules), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**env, "MEMSTORE_VAULT": str(vault)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "client_max_body_size" in done.stdout, done.stderr
    assert done.stderr.strip() == "0 []"
    assert requests_served(vault) == 1


def test_a_hook_past_its_budget_exits_and_its_work_still_lands(
    tmp_path: Path, env: dict[str, str]
) -> None:
    vault = make_vault(tmp_path / "vault")
    project = project_at(tmp_path / "webshop-checkout")
    payload = {"session_id": "late", "cwd": str(project), "last_assistant_message": LONG}
    quick = {**env, "MEMSTORE_NO_DAEMON": "1", "MEMSTORE_HOOK_BUDGET": "1"}
    before = git(vault, "rev-parse", "HEAD")
    with Vault(vault).lock(5):  # a writer holds the vault: the capture must wait for it
        started = time.monotonic()
        status_, out, err = hook(quick, vault, "capture", payload)
        took = time.monotonic() - started
        assert git(vault, "rev-parse", "HEAD") == before
    assert (status_, out) == (0, "") and "no answer within 1 s" in err
    assert took < 8  # the lock would have held it 5 s and more
    wait_until(lambda: git(vault, "rev-parse", "HEAD") != before, TIMEOUT, "the capture commits")
    assert "Memstore-Session: late" in git(vault, "log", "-1", "--format=%B")


# --- memstore serve -------------------------------------------------------------------


def serve_params(
    environment: dict[str, str], vault: Path, cwd: Path, *args: str
) -> StdioServerParameters:
    return StdioServerParameters(
        command=str(EXE),
        args=["serve", "--source", "claude-code", *args],
        env={**environment, "MEMSTORE_VAULT": str(vault)},
        cwd=str(cwd),
    )


TOOL_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("memory_recall", {"query": "nginx upload 413"}),
    ("memory_recall", {"query": "nginx upload 413"}),  # the core block is not repeated
    ("memory_add", {"content": "Port 8443 is the admin API", "keywords": ["port", "admin"]}),
    ("memory_add", {"content": "port 8443 is the admin api", "keywords": ["api"]}),  # merged
    ("memory_add", {"content": "a fact", "keywords": ["a"], "kind": "core"}),  # a tool error
    ("memory_add", {"content": "a fact", "supersedes": ["nope1234"]}),  # a tool error
    ("memory_recall", {"query": "admin port", "max_tokens": 60}),
    ("memory_recall", {"query": "zebras kangaroos"}),
    ("memory_confirm", {"id": "mfjscswv"}),  # the sample vault's nginx lesson
    ("memory_confirm", {"id": "nope1234"}),  # a tool error
]


def text_of(result: Any) -> str:
    return "".join(getattr(part, "text", "") for part in result.content)


async def answers(params: StdioServerParameters) -> list[tuple[bool, str]]:
    async with Client(params) as session:
        found = []
        for name, arguments in TOOL_CALLS:
            result = await session.call_tool(name, arguments)
            found.append((bool(result.is_error), text_of(result)))
        return found


def comparable(answers: list[tuple[bool, str]]) -> list[tuple[bool, object]]:
    """The answers without what depends on the second they ran: a new memory's creation
    time, and the last digits of scores (recency moves them)."""
    new = json.loads(answers[2][1])["id"]
    found: list[tuple[bool, object]] = []
    for is_error, text in answers:
        data = json.loads(text) if text.startswith("{") else text
        for hit in data.get("results", []) if isinstance(data, dict) else []:
            hit["created"] = "<new>" if hit["id"] == new else hit["created"]
            hit["score"] = round(hit["score"], 3)
        found.append((is_error, data))
    return found


def test_serve_through_the_daemon_answers_what_it_answers_in_process(
    tmp_path: Path, env: dict[str, str]
) -> None:
    served, alone = make_vault(tmp_path / "served"), make_vault(tmp_path / "alone")
    project = project_at(tmp_path / "webshop-checkout")
    through = asyncio.run(answers(serve_params(env, served, project)))
    here = asyncio.run(answers(serve_params(env, alone, project, "--no-daemon")))
    assert comparable(through) == comparable(here)
    assert "client_max_body_size" in through[0][1] and '"core_memory":[]' in through[1][1]
    assert through[4][0] and "set by a person" in through[4][1]
    # the first call started the daemon; every call was its
    assert requests_served(served) == len(TOOL_CALLS)
    assert not (alone / ".memstore" / client.SOCKET_NAME).exists()
    assert client.stop(served)  # the recall counters stay journaled (issue 39), as at serve's exit
    with Store.open(settings_at(served)) as store:  # the next flush writes them
        assert store.flush_usage() == 2  # (`alone`'s serve wrote them at its exit: its first
    # periodic flush of the hour)
    # the same commits (the counters' commit is the daemon's own: its source is not the agent's)
    logs = [git(vault, "log", "--format=%s") for vault in (served, alone)]
    assert logs[0] == logs[1] and logs[0].startswith("recall: usage of 2 memories\n")
    assert "\nconfirm(webshop): Upload 413" in logs[0]
    assert through[-2][1] == '{"id":"mfjscswv","confirmed":1,"workspace":"webshop"}'
    assert through[-1][0] and "nope1234" in through[-1][1]
    adds = [git(vault, "log", "-1", "--format=%B", "HEAD~3") for vault in (served, alone)]
    assert adds[0] == adds[1] and adds[0].startswith("add(webshop): Port 8443")
    assert "Memstore-Source: claude-code" in adds[0]


@pytest.mark.long  # three serve processes (mcp costs each ~0.7 s to import): ~10 s
def test_three_servers_share_one_daemon_and_its_recall_counters_reach_the_files(
    tmp_path: Path, env: dict[str, str]
) -> None:
    vault = make_vault(tmp_path / "vault")
    start_daemon(env, vault)

    async def go() -> list[Any]:
        params = serve_params(env, vault, tmp_path)
        async with Client(params) as one, Client(params) as two, Client(params) as three:
            calls = [
                c.call_tool("memory_recall", {"query": "nginx upload 413", "workspace": "all"})
                for c in (one, two, three)
            ]
            return list(await asyncio.gather(*calls))

    results = asyncio.run(go())
    first = results[0].structured_content["results"][0]
    assert all(r.structured_content["results"][0]["id"] == first["id"] for r in results)
    assert requests_served(vault) == 3
    before = git(vault, "rev-parse", "HEAD")
    assert client.stop(vault)  # the counters stay journaled (issue 39): no commit on its way out
    assert git(vault, "rev-parse", "HEAD") == before
    with Store.open(settings_at(vault)) as store:  # the next flush (a tick, a sync)
        store.flush_usage()
    hits = len(results[0].structured_content["results"])
    assert git(vault, "log", "-1", "--format=%s") == f"recall: usage of {hits} memories\n"
    assert git(vault, "rev-parse", "HEAD") != before
    path = next(vault.rglob(f"*{first['id']}.md"))
    assert "recalled: 7\n" in path.read_text(encoding="utf-8")  # 4 in the sample vault, +3


def test_serve_answers_after_its_daemon_is_killed_between_two_calls(
    tmp_path: Path, env: dict[str, str]
) -> None:
    vault = make_vault(tmp_path / "vault")
    start_daemon(env, vault)

    async def go() -> tuple[Any, Any]:
        async with Client(serve_params(env, vault, tmp_path)) as session:
            arguments = {"query": "nginx upload 413", "workspace": "all"}
            first = await session.call_tool("memory_recall", arguments)
            killed = daemon_pid(vault)
            os.kill(killed, signal.SIGKILL)
            wait_until(lambda: not client.is_running(vault), TIMEOUT, "the daemon is gone")
            second = await session.call_tool("memory_recall", arguments)
            assert daemon_pid(vault) != killed  # a new daemon answered
            return first, second

    first, second = asyncio.run(go())
    assert not second.is_error
    assert second.structured_content["results"] == first.structured_content["results"]
    assert status(vault)["requests"] == 1


def test_a_serve_shell_older_than_the_code_on_disk_still_reaches_a_daemon(
    tmp_path: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # memstore was upgraded under a running agent session: its shell names the old code
    vault = make_vault(tmp_path / "vault")
    start_daemon(env, vault)
    before = daemon_pid(vault)
    monkeypatch.setattr(client, "_identity", "0.0.1/1/0123abcd")
    forwarder = Forwarder(settings_at(vault), workspace="", cwd=str(tmp_path), env=env)
    arguments = {"query": "nginx upload 413", "workspace": "all", "k": 5, "max_tokens": 0}
    out = forwarder("memory_recall", arguments)
    assert "client_max_body_size" in json.dumps(out)
    assert forwarder._store is None  # a daemon answered: the shell never opened the index
    assert daemon_pid(vault) != before  # the old daemon stopped; one of the code on disk answered


def test_serve_answers_in_process_when_no_daemon_can_start(
    tmp_path: Path, env: dict[str, str]
) -> None:
    vault = make_vault(tmp_path / "vault")
    # a client started one moments ago and it died at once: no new one for a while
    (vault / ".memstore").mkdir(exist_ok=True)
    (vault / ".memstore" / client.SPAWN_MARK).write_bytes(b"")

    async def go() -> Any:
        async with Client(serve_params(env, vault, tmp_path)) as session:
            arguments = {"query": "nginx upload 413", "workspace": "all"}
            return await session.call_tool("memory_recall", arguments)

    started = time.monotonic()
    found = asyncio.run(go())
    assert not found.is_error and "client_max_body_size" in text_of(found)
    assert time.monotonic() - started < 20  # it did not wait for a daemon that is not coming
    assert not client.is_running(vault)
    # at its exit: the first periodic flush of the hour writes what it counted
    assert git(vault, "log", "-1", "--format=%s").startswith("recall: usage of")
