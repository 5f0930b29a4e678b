"""Hook commands fed real hook payload JSON, through the installed executable."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from memstore.ops.client import Request
from memstore.ops.hooks import answer, budget
from memstore.service.store import Store
from tests.conftest import EXE, REPO_ROOT, commit_count, git, invoke_memstore, settings_at

LONG = (
    "Fixed the flaky checkout test: the Stripe webhook fixture reused a global event id, so the "
    "second run hit the idempotency cache and returned 200 without creating the order. Each test "
    "now builds a fresh event id with uuid4 and the suite passed ten times in a row."
)


def hook(
    event: str, payload: dict | None, vault: Path, *args: str, raw: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run an agent's hook command: the executable's main, in-process."""
    stdin = raw if raw is not None else json.dumps(payload)
    env = {"PATH": f"{EXE.parent}:/usr/bin:/bin"}
    return invoke_memstore("hook", event, *args, vault=vault, stdin=stdin, env=env)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "webshop-checkout"
    path.mkdir()
    git(path, "init", "-q")
    git(path, "remote", "add", "origin", "git@github.com:acme/webshop.git")
    return path


def transcript(tmp_path: Path, final: str) -> Path:
    path = tmp_path / "transcript.jsonl"
    lines = [
        {"type": "user", "message": {"role": "user", "content": "fix the flaky test"}},
        {
            "type": "assistant",
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Looking."},
                    {"type": "tool_use", "name": "Bash", "input": {}},
                ],
            },
        },
        {
            "type": "user",
            "message": {"role": "user", "content": [{"type": "tool_result", "content": "ok"}]},
        },
        {
            "type": "assistant",
            "message": {"role": "assistant", "content": [{"type": "text", "text": final}]},
        },
    ]
    path.write_text(
        "\n".join(json.dumps(line) for line in lines) + "\nnot json\n", encoding="utf-8"
    )
    return path


def test_prompt_hook_prints_matching_memories_and_is_silent_otherwise(
    sample_vault: Path, project: Path
) -> None:
    payload = {
        "session_id": "s1",
        "hook_event_name": "UserPromptSubmit",
        "cwd": str(project),
        "prompt": "why does upload fail with 413 in nginx?",
    }
    result = hook("prompt", payload, sample_vault)
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout.startswith("Relevant memories") and "client_max_body_size" in result.stdout
    quiet = hook(
        "prompt", {**payload, "prompt": "tell me about zebras and kangaroos"}, sample_vault
    )
    assert quiet.returncode == 0 and quiet.stdout == ""


def test_prompt_hook_cuts_long_memories_with_their_id(vault: Path, project: Path) -> None:
    with Store.open(settings_at(vault)) as store:
        added = store.add("terraform plan drift " + "word " * 200, workspace="webshop")
    out = hook("prompt", {"cwd": str(project), "prompt": "terraform drift"}, vault).stdout
    assert f"(full text: memstore show {added.id})" in out and len(out) < 600


def test_capture_keeps_a_long_final_message_as_a_trace(
    vault: Path, project: Path, tmp_path: Path
) -> None:
    payload = {
        "session_id": "sess-42",
        "hook_event_name": "Stop",
        "cwd": str(project),
        "transcript_path": str(transcript(tmp_path, LONG)),
    }
    result = hook("capture", payload, vault, "--if-novel")
    assert result.returncode == 0 and result.stdout == ""
    assert "kept this session's summary" in result.stderr
    message = git(vault, "log", "-1", "--format=%B")
    assert (
        message.startswith("add(webshop): Fixed the flaky checkout test")
        and "Memstore-Session: sess-42" in message
    )
    with Store.open(settings_at(vault)) as store:
        hit = store.search("stripe webhook idempotency").hits[0]
        assert hit.kind == "trace" and hit.source == "claude-code"
    before = commit_count(vault)
    again = hook(
        "capture",
        {**payload, "transcript_path": str(transcript(tmp_path, LONG + " Verified again."))},
        vault,
        "--if-novel",
    )
    assert again.stdout == "" and commit_count(vault) == before  # the redundancy gate


def test_capture_from_inside_another_vault_keeps_nothing_and_names_both(
    vault: Path, tmp_path: Path
) -> None:
    """As `add` and MCP's memory_add from there: an agent working in another vault's folder
    had its final message kept in the vault in use, in a workspace named after the other."""
    other = tmp_path / "work-vault"
    assert invoke_memstore("init", str(other)).returncode == 0
    (other / "notes").mkdir()
    payload = {"session_id": "s-other", "cwd": str(other / "notes"), "last_assistant_message": LONG}
    before = {folder: commit_count(folder) for folder in (vault, other)}

    done = hook("capture", payload, vault)

    assert done.returncode == 0 and done.stdout == ""
    assert done.stderr == (
        f"memstore hook capture: kept nothing: the agent works in the vault {other}, but "
        f"memstore uses {vault}; give the hooks --vault {other} (memstore agents --install "
        f"NAME --vault {other})\n"
    ), done.stderr
    assert {folder: commit_count(folder) for folder in (vault, other)} == before
    kept = hook("capture", payload, other)  # the vault it works in keeps it
    assert kept.returncode == 0 and "kept this session's summary" in kept.stderr, kept.stderr


def test_capture_noise_gate_and_broken_input_never_fail(
    vault: Path, project: Path, tmp_path: Path
) -> None:
    before = commit_count(vault)
    short = hook(
        "capture",
        {"cwd": str(project), "transcript_path": str(transcript(tmp_path, "Done!"))},
        vault,
    )
    assert short.returncode == 0 and short.stdout == ""
    for raw in ("not json", "[1, 2]", json.dumps({"transcript_path": "/no/such/file"})):
        broken = hook("capture", None, vault, raw=raw)
        assert broken.returncode == 0 and broken.stdout == ""
    assert commit_count(vault) == before
    typo = hook("Prompt", {"prompt": "x"}, vault)  # exit 2 would block the agent's prompt
    assert typo.returncode == 0 and typo.stdout == "" and typo.stderr.startswith("usage:")


def test_briefing_lists_changes_since_the_last_session(vault: Path, project: Path) -> None:
    payload = {
        "session_id": "a",
        "hook_event_name": "SessionStart",
        "source": "startup",
        "cwd": str(project),
    }
    assert hook("briefing", payload, vault).stdout == ""  # first session: nothing to compare
    with Store.open(settings_at(vault)) as store:
        store.add("Use pnpm 9 in the webshop", workspace="webshop")
        store.add("Staging DB is read-only on Fridays", workspace="global")
        store.add("Invoices are numbered per tenant", workspace="billing")  # another project
        store.recall("pnpm", workspace="webshop", record_usage=True)
        assert store.flush_usage() == 1  # a "recall: usage" commit: bookkeeping
    out = hook("briefing", payload, vault).stdout
    assert (
        "2 commits" in out
        and "add(webshop): Use pnpm 9" in out
        and "add(global): Staging DB" in out
        and "billing" not in out
        and "recall:" not in out
    )
    assert hook("briefing", payload, vault).stdout == ""  # nothing new since


def test_codex_notify_reads_the_json_argument(vault: Path, project: Path) -> None:
    payload = {
        "type": "agent-turn-complete",
        "thread-id": "t1",
        "cwd": str(project),
        "last-assistant-message": LONG,
    }
    env = {**os.environ, "MEMSTORE_VAULT": str(vault)}
    result = subprocess.run(
        [str(EXE), "hook", "codex-notify", json.dumps(payload)],
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert result.returncode == 0 and "kept" in result.stderr
    assert "Memstore-Source: codex" in git(vault, "log", "-1", "--format=%B")


def codex_payload(event: str, cwd: Path, **fields: object) -> dict[str, object]:
    """A Codex hook payload with every field its published input schema requires."""
    return {
        "session_id": "019a-codex-session",
        "transcript_path": None,
        "cwd": str(cwd),
        "hook_event_name": event,
        "model": "gpt-5-codex",
        "permission_mode": "default",
        **({"turn_id": "turn-1"} if event != "SessionStart" else {}),
        **fields,
    }


def test_codex_hooks_recall_capture_and_brief_with_their_payloads(
    vault: Path, project: Path
) -> None:
    example = json.loads((REPO_ROOT / "hooks" / "codex" / "hooks.example.json").read_text())
    commands = {
        event: group[0]["hooks"][0]["command"].split() for event, group in example["hooks"].items()
    }
    assert set(commands) == {"SessionStart", "UserPromptSubmit", "Stop"}
    assert all(
        c[:2] == ["memstore", "hook"] and c[-2:] == ["--source", "codex"] for c in commands.values()
    )

    def run(event: str, payload: dict[str, object]) -> subprocess.CompletedProcess[str]:
        return hook(commands[event][2], payload, vault, *commands[event][3:])

    start = codex_payload("SessionStart", project, source="startup")
    assert run("SessionStart", start).stdout == ""  # first session: nothing to compare
    with Store.open(settings_at(vault)) as store:
        store.add("Checkout tests need STRIPE_TEST_KEY from 1Password", workspace="webshop")
    prompt = run(
        "UserPromptSubmit",
        codex_payload(
            "UserPromptSubmit", project, prompt="why do checkout tests need a stripe key?"
        ),
    )
    # Codex adds plain stdout as context, but reads stdout starting with { or [ as JSON
    assert prompt.returncode == 0 and "STRIPE_TEST_KEY" in prompt.stdout
    assert prompt.stdout.lstrip()[0] not in "{["
    stop = codex_payload("Stop", project, stop_hook_active=False, last_assistant_message=LONG)
    captured = run("Stop", stop)
    # a Stop hook's stdout must be empty (or JSON): anything else fails the hook in Codex
    assert captured.returncode == 0 and captured.stdout == "" and "kept" in captured.stderr
    message = git(vault, "log", "-1", "--format=%B")
    assert "Memstore-Source: codex" in message and "Memstore-Session: 019a-codex-session" in message
    again = run("Stop", {**stop, "last_assistant_message": None})  # Codex sends null when none
    assert again.returncode == 0 and again.stdout == "" and again.stderr == ""
    briefing = run("SessionStart", start)
    assert "add(webshop): Checkout tests need STRIPE_TEST_KEY" in briefing.stdout
    assert briefing.stdout.lstrip()[0] not in "{["


def test_hook_options_need_values(vault: Path, project: Path) -> None:
    for args in (("--source",), ("--min-chars", "--if-novel")):
        result = hook(
            "capture", {"cwd": str(project), "last_assistant_message": LONG}, vault, *args
        )
        assert result.returncode == 0 and result.stdout == ""
        assert f"{args[0]} needs a value" in result.stderr


def test_hook_scripts_are_executable_and_call_the_cli(sample_vault: Path, project: Path) -> None:
    script = REPO_ROOT / "hooks" / "claude-code" / "recall.sh"
    env = {**os.environ, "MEMSTORE_VAULT": str(sample_vault), "MEMSTORE_BIN": str(EXE)}
    payload = json.dumps({"cwd": str(project), "prompt": "nginx 413 upload"})
    result = subprocess.run(
        [str(script)], input=payload, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0 and "client_max_body_size" in result.stdout
    for name in ("capture.sh", "briefing.sh"):
        assert os.access(REPO_ROOT / "hooks" / "claude-code" / name, os.X_OK)
    settings = json.loads(
        (REPO_ROOT / "hooks" / "claude-code" / "settings.example.json").read_text(encoding="utf-8")
    )
    assert set(settings["hooks"]) == {"SessionStart", "UserPromptSubmit", "Stop"}


def test_search_and_prompt_hook_put_the_correction_first(vault: Path, project: Path) -> None:
    with Store.open(settings_at(vault)) as store:
        old = store.add("Run the API locally with make dev on port 3000", workspace="webshop")
        new = store.add(
            "Run the API locally with docker compose up; make dev was removed",
            workspace="webshop",
            supersedes=(old.id,),
        )
        # Other memories: a word every memory holds tells none apart (docs/retrieval.md).
        for text in ("Prices are integer cents", "Deploy with the GitHub action", "Use pnpm"):
            store.add(text, workspace="webshop")
    found = invoke_memstore("search", "make dev", "-w", "webshop", "--json", vault=vault)
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)["results"]
    assert [h["id"] for h in hits] == [new.id, old.id]
    assert hits[1]["superseded_by"] == [new.id]
    text = invoke_memstore("search", "make dev", "-w", "webshop", vault=vault).stdout
    assert f"(superseded by {new.id})" in text
    context = hook(
        "prompt", {"cwd": str(project), "prompt": "how do I run the API with make dev?"}, vault
    ).stdout
    assert f"[{new.id}]" in context and f"[{old.id}]" not in context


def test_hooks_take_vault_never_create_one_and_name_unknown_flags(
    vault: Path, project: Path, tmp_path: Path
) -> None:
    with Store.open(settings_at(vault)) as store:
        store.add("Staging deploys need approval from maria", workspace="webshop")
    elsewhere = tmp_path / "not-a-vault"
    payload = {"cwd": str(project), "prompt": "who approves staging deploys?"}
    # MEMSTORE_VAULT points elsewhere; --vault (what agents --install writes) wins
    found = hook("prompt", payload, elsewhere, "--vault", str(vault))
    assert "maria" in found.stdout
    for event in ("prompt", "capture", "briefing"):
        missing = hook(event, {"cwd": str(project), "last_assistant_message": LONG}, elsewhere)
        assert missing.returncode == 0 and missing.stdout == "" and "no vault" in missing.stderr
    assert not elsewhere.exists()  # a hook never makes a second vault
    typo = hook("capture", payload, vault, "--if-novle")
    assert typo.returncode == 0 and "unknown option '--if-novle'" in typo.stderr


@pytest.mark.parametrize(
    "lines",
    [
        ["[1, 2, 3]"],
        ['{"type": "assistant", "message": {"content": 5}}'],
        ['{"type": "assistant", "message": "text"}', "not json"],
    ],
)
def test_capture_survives_odd_transcripts(
    vault: Path, project: Path, tmp_path: Path, lines: list[str]
) -> None:
    path = tmp_path / "odd.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    before = commit_count(vault)
    done = hook("capture", {"cwd": str(project), "transcript_path": str(path)}, vault)
    assert done.returncode == 0 and done.stdout == "" and "Traceback" not in done.stderr
    bool_path = hook("capture", {"cwd": str(project), "transcript_path": True}, vault)
    assert bool_path.returncode == 0 and bool_path.stdout == ""
    assert commit_count(vault) == before


def test_source_flag_wins_over_the_environment(vault: Path, project: Path) -> None:
    env = {**os.environ, "MEMSTORE_VAULT": str(vault), "MEMSTORE_SOURCE": "claude-code"}
    done = subprocess.run(
        [str(EXE), "hook", "capture", "--source", "codex"],
        input=json.dumps({"cwd": str(project), "last_assistant_message": LONG}),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and "kept" in done.stderr
    assert "Memstore-Source: codex" in git(vault, "log", "-1", "--format=%B")


def test_a_hook_answers_for_the_callers_directory_not_its_own(
    vault: Path, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the daemon runs hooks for callers elsewhere: the payload's cwd, else the caller's
    with Store.open(settings_at(vault)) as store:
        store.add("Staging deploys need approval from maria", workspace="webshop")
        store.add("Staging deploys in billing need no approval", workspace="billing")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")  # this process's own directory: no project
    env = {**os.environ, "MEMSTORE_VAULT": str(vault)}
    payload = json.dumps({"prompt": "who approves staging deploys?"}).encode()
    reply = answer(Request("hook", ["prompt"], str(project), env, payload))
    assert reply.status == 0 and "maria" in reply.stdout and "billing" not in reply.stdout
    transcript_at = transcript(project, LONG).name  # a relative path, from the caller's cwd
    stop = json.dumps({"transcript_path": transcript_at, "session_id": "rel"}).encode()
    kept = answer(Request("hook", ["capture"], str(project), env, stop))
    assert "kept this session's summary" in kept.stderr
    assert git(vault, "log", "-1", "--format=%s").startswith("add(webshop): Fixed the flaky")


def test_hook_budget_comes_from_the_environment_or_the_event() -> None:
    assert budget("prompt", {}) == 4.0 and budget("capture", {}) == 20.0
    assert budget("prompt", {"MEMSTORE_HOOK_BUDGET": "1.5"}) == 1.5
    assert budget("prompt", {"MEMSTORE_HOOK_BUDGET": "soon"}) == 4.0
    for invalid in ("-1", "0", "nan", "inf", "1e9"):
        assert budget("prompt", {"MEMSTORE_HOOK_BUDGET": invalid}) == 4.0


@pytest.mark.parametrize("setting", ["-1", "nan", "soon"])
def test_an_invalid_hook_budget_is_one_warning_line_and_the_hook_still_answers(
    vault: Path, tmp_path: Path, setting: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a hook never breaks the agent's prompt: the default budget, a note, exit 0
    with Store.open(settings_at(vault)) as store:
        added = store.add("Deploys to staging need a second approval", workspace="global")
    monkeypatch.setenv("MEMSTORE_HOOK_BUDGET", setting)
    done = hook("prompt", {"prompt": "staging deploys approval", "cwd": str(tmp_path)}, vault)
    assert done.returncode == 0 and added.id in done.stdout
    assert done.stderr == (
        f"memstore hook prompt: MEMSTORE_HOOK_BUDGET={setting!r} is not a number of seconds "
        "above 0 and at most 3600; using the default 4 s\n"
    )


def test_capture_names_a_trace_by_its_specific_words_and_gives_it_keywords(
    vault: Path, project: Path
) -> None:
    with Store.open(settings_at(vault)) as store:
        for n in range(8):  # words most memories hold say little about this one
            store.add(f"the nightly container job number {n} ran", workspace="webshop")
    final = (
        "Found it: the backup container ships without pg_dump, so the nightly restore job "
        "silently produced empty archives. I added postgresql-client-16 to the Dockerfile and "
        "re-ran the job; the restore works now."
    )
    done = hook("capture", {"cwd": str(project), "last_assistant_message": final}, vault)
    assert done.returncode == 0 and "kept" in done.stderr
    with Store.open(settings_at(vault)) as store:
        trace = store.indexer.by_kind("trace", None)[0]
        memory = store.vault.read(trace.path)
    name = Path(trace.path).name
    assert name.startswith("pg-dump-postgresql-client-16-"), name
    assert {"pg_dump", "postgresql-client-16", "restore"} <= set(memory.keywords)
    assert not {"found", "nightly", "container", "the"} & set(memory.keywords)
    assert 3 <= len(memory.keywords) <= 6


@pytest.mark.parametrize(
    ("raw", "got"),
    [("hello, not json", "text that is not JSON ('hello, not json')"), ("[1, 2]", "a JSON list")],
)
def test_a_hook_fed_anything_but_a_json_object_says_so_in_one_line_and_exits_0(
    vault: Path, raw: str, got: str
) -> None:
    # exit 0: an agent reads exit 2 from a prompt hook as "block this prompt"
    done = hook("prompt", None, vault, raw=raw)
    assert done.returncode == 0 and done.stdout == ""
    assert done.stderr == (
        f"memstore hook prompt: expected the agent's hook input, a JSON object, on stdin; got {got}\n"
    )


def test_prompt_hook_searches_once_when_its_workspace_matches_some_word(
    vault: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Most prompts share a word with some memory (weak hits, never shown): the hook then
    answers from its one search. Only when nothing in its workspace matches at all does it
    search every workspace to say what others hold."""
    from memstore.ops.hooks import prompt_hook

    with Store.open(settings_at(vault)) as store:
        store.add("nginx 413: raise client_max_body_size for uploads", workspace="infra")
        store.add("kubernetes ingress annotations live in the chart values", workspace="webshop")
        searches: list[str | None] = []
        search = store.search

        def counted(query: str, **kwargs: object) -> object:
            searches.append(kwargs.get("workspace"))  # type: ignore[arg-type]
            return search(query, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(store, "search", counted)
        payload = {"cwd": str(project), "prompt": "nginx 413 on uploads behind the ingress"}
        assert prompt_hook(store, payload, str(project)) == []  # a weak hit here: silent
        assert searches == ["webshop"]
        searches.clear()
        payload = {"cwd": str(project), "prompt": "nginx 413 on uploads"}
        assert prompt_hook(store, payload, str(project)) == [
            "(memstore: no memory of webshop or global matches; "
            '1 match in other workspaces: memory_recall with workspace "all" shows them)'
        ]
        assert searches == ["webshop", None]


@pytest.mark.parametrize("where", ["missing.jsonl", "."])
def test_capture_with_an_unreadable_transcript_names_it_and_the_fix_in_one_line(
    vault: Path, project: Path, tmp_path: Path, where: str
) -> None:
    path = tmp_path / where  # no such file; a folder
    before = commit_count(vault)
    done = hook("capture", {"cwd": str(project), "transcript_path": str(path)}, vault)
    assert done.returncode == 0 and done.stdout == ""  # a hook never fails the agent
    (line,) = done.stderr.splitlines()
    assert line.startswith(
        f"memstore hook capture: cannot read the transcript the agent named, {path} ("
    )
    assert "Errno" not in line and "nothing was captured" in line
    assert "last_assistant_message" in line  # what to do instead
    assert commit_count(vault) == before


def test_a_prompt_of_a_megabyte_costs_the_hook_what_a_page_costs(
    sample_vault: Path, project: Path
) -> None:
    """Found by the fifteenth session's trial: a 1 MB prompt of 100,000 distinct words (a file
    pasted whole) took ~8 s of CPU in the prompt hook (in the daemon, stalling every agent's
    next recall); it is read as its beginning and its end (catalog/pasted.py, CHAT_CHARS)."""
    import resource

    pasted = " ".join(f"field{n}x" for n in range(100_000))
    prompt = f"{pasted}\nwhy does upload fail with 413 in nginx?"
    payload = {"cwd": str(project), "hook_event_name": "UserPromptSubmit", "prompt": prompt}
    env = {
        **os.environ,
        "MEMSTORE_VAULT": str(sample_vault),
        "MEMSTORE_NO_DAEMON": "1",
        "MEMSTORE_HOOK_BUDGET": "600",  # the whole answer, not what fits in 4 s
    }
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [str(EXE), "hook", "prompt"],
        input=json.dumps(payload),
        text=True,
        env=env,
        capture_output=True,
        check=False,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert cpu < 4.0, f"{cpu:.1f} s of CPU for one prompt"  # ~0.5 s; it was ~8 s
