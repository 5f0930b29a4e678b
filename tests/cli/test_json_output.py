"""Every command that reports something answers `--json` (docs/cli.md): stdout holds one JSON
document and nothing else, with the keys docs/cli.md lists; an error is the usual one line on
stderr, stdout empty (tests/cli/test_exit_codes.py)."""

from __future__ import annotations

import dataclasses
import json
import os
import pty
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_exit_codes import every_command
from tests.conftest import EXE, head, invoke_memstore, vault_bytes

# The commands without --json, and why (every other one must take it).
NO_JSON = {
    "watch": "runs until stopped; each catch-up is a line on stderr",
    "daemon": "runs until stopped (`status --json` reports on it)",
    "serve": "speaks MCP's JSON-RPC on stdout already",
    "hook": "prints the agent's context in the form the agent reads",
    "demo": "a walk-through for a person",
    "edit": "an editor session for a person",
    "export": "prints JSON already",
}
ENV = {"MEMSTORE_NO_DAEMON": "1", "MEMSTORE_SESSION": "sess-json"}


def test_every_command_that_reports_something_takes_json() -> None:
    missing = []
    for name in sorted(every_command() - set(NO_JSON)):
        helped = invoke_memstore(*name.split(), "--help")
        if "--json" not in helped.stdout:
            missing.append(name)
    assert missing == []
    assert set(NO_JSON) <= every_command()


def as_json(*args: str, vault: Path, status: int = 0, cwd: Path | None = None) -> Any:
    """Run a command with --json; return what it printed, checking it printed JSON alone."""
    done = invoke_memstore(*args, "--json", vault=vault, env=ENV, cwd=cwd)
    assert done.returncode == status, (args, done.returncode, done.stderr)
    return json.loads(done.stdout)  # the whole of stdout: one document, nothing around it


def add(vault: Path, text: str) -> str:
    return str(as_json("add", text, "-w", "webshop", vault=vault)["id"])


def test_init_remote_and_team_answer_in_json(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    made = as_json("init", str(vault), vault=vault)
    assert made["state"] == "created" and made["path"] == str(vault)
    assert set(made) >= {"path", "state", "created_repository", "changed_files", "commit"}
    assert as_json("init", str(vault), vault=vault)["state"] == "ready"
    assert as_json("remote", vault=vault) == {}
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    added = as_json("remote", "add", str(bare), vault=vault)
    assert set(added) == {"name", "url", "git_config", "synced_with"}
    assert (added["name"], added["url"], added["synced_with"]) == ("origin", str(bare), "origin")
    assert as_json("remote", vault=vault) == {"origin": str(bare)}
    assert as_json("remote", "show", vault=vault) == {"name": "origin", "url": str(bare)}
    team = tmp_path / "team"
    as_json("init", str(team), vault=team)
    team_bare = tmp_path / "team.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(team), str(team_bare)], check=True)
    joined = as_json("team", "join", "acme", str(team_bare), vault=vault)
    assert set(joined) == {"name", "url", "path", "joined"} and joined["joined"] is True
    assert as_json("team", "join", "acme", str(team_bare), vault=vault)["joined"] is False
    left = as_json("team", "leave", "acme", vault=vault)
    assert set(left) == {"name", "removed_clone", "clone", "unpushed"}
    assert left["removed_clone"] is True and left["unpushed"] == []


def test_forget_gc_dedupe_and_revert_answer_in_json(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    as_json("init", str(vault), vault=vault)
    one = add(vault, "the staging deploy needs approval from maria")
    two = add(vault, "the staging deploy needs approval from maria first")
    three = add(vault, "redis runs on port 6380 in staging")
    listed = as_json("dedupe", "--list", vault=vault)
    assert set(listed) == {"pairs", "contradictions"}
    (pair,) = listed["pairs"]
    assert {pair["a"], pair["b"]} == {one, two} and 0 < pair["overlap"] <= 1
    kept = as_json("dedupe", "--keep-both", one, vault=vault)
    assert kept == {"kept_apart": [f"{pair['a']}:{pair['b']}"]}
    assert as_json("dedupe", "--list", vault=vault)["pairs"] == []
    before = (head(vault), vault_bytes(vault))
    dry = as_json("forget", three, "--dry-run", vault=vault)
    assert dry == {
        "id": three,
        "path": dry["path"],
        "dry_run": True,
        "purge": False,
        "forgotten": False,
        "rewritten_commits": None,
        "next": None,
    }
    assert (head(vault), vault_bytes(vault)) == before  # a dry run changes nothing
    gone = as_json("forget", three, "--yes", vault=vault)
    assert gone["forgotten"] is True and not (vault / dry["path"]).exists()
    purged = as_json("forget", two, "--yes", "--purge", vault=vault)
    assert purged["forgotten"] is True and purged["rewritten_commits"] >= 1
    assert purged["next"].startswith("memstore sync --force-purged")
    collected = as_json("gc", "--dry-run", vault=vault)
    assert set(collected) == {"dry_run", "folders", "traces", "before", "after", "index_segments"}
    assert collected["dry_run"] is True and collected["after"] is None
    assert as_json("gc", vault=vault)["after"] is not None
    planned = as_json("revert", "--session", "sess-json", "--dry-run", vault=vault)
    assert set(planned) == {"session", "dry_run", "commits", "commit", "reverted", "kept"}
    assert planned["commit"] is None and planned["commits"]
    undone = as_json("revert", "--session", "sess-json", "--yes", vault=vault)
    assert undone["commit"] and undone["dry_run"] is False


def test_import_restore_check_and_a_question_answer_in_json(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    as_json("init", str(vault), vault=vault)
    notes = tmp_path / "CLAUDE.md"
    notes.write_text("- use pnpm, not npm\n- run the tests with make test\n", encoding="utf-8")
    would = as_json("import", str(notes), "-w", "webshop", "--dry-run", vault=vault)
    assert would["created"] == [] and len(would["would_create"]) == 2
    assert set(would) == {
        "workspace",
        "dry_run",
        "created",
        "would_create",
        "unchanged",
        "refused",
        "too_short",
    }
    done = as_json("import", str(notes), "-w", "webshop", vault=vault)
    assert len(done["created"]) == 2 and done["would_create"] == [] and done["unchanged"] == 0
    export = tmp_path / "export.json"
    assert invoke_memstore("export", "-o", str(export), vault=vault, env=ENV).returncode == 0
    other = tmp_path / "other"
    as_json("init", str(other), vault=other)
    restored = as_json("restore", str(export), vault=other)
    assert restored == {"added": 2, "merged": 0, "unchanged": 0, "kept": []}
    checked = as_json("check", str(other), vault=other)
    assert checked == {"files": 2, "findings": []}
    (other / "webshop" / "broken.md").write_text("---\nid: [\n---\nx\n", encoding="utf-8")
    found = as_json("check", str(other), vault=other, status=1)  # the findings are the report
    assert [f["path"] for f in found["findings"]] == ["webshop/broken.md"]
    # a question asked with --json goes to stderr: without a terminal it is refused there
    memory = done["created"][0]
    asked = invoke_memstore("forget", memory, "--json", vault=vault, env=ENV)
    assert asked.returncode == 1 and asked.stdout == "", asked.stdout
    assert "rerun with --yes" in asked.stderr


@pytest.mark.parametrize("args", [["forget", "zzzz", "--yes"], ["gc", "--prune-traces", "x"]])
def test_an_error_with_json_is_the_usual_line_on_stderr(tmp_path: Path, args: list[str]) -> None:
    vault = tmp_path / "vault"
    as_json("init", str(vault), vault=vault)
    done = invoke_memstore(*args, "--json", vault=vault, env=ENV)
    assert done.returncode in (1, 2) and done.stdout == "" and "Error: " in done.stderr


def test_a_question_asked_with_json_goes_to_stderr_and_stdout_holds_the_json(
    tmp_path: Path,
) -> None:
    vault = tmp_path / "vault"
    as_json("init", str(vault), vault=vault)
    memory = add(vault, "the staging deploy needs approval from maria")
    main, terminal = pty.openpty()  # a person at a terminal answers the question
    os.write(main, b"y\n")
    env = {**os.environ, **ENV, "MEMSTORE_VAULT": str(vault)}
    child = subprocess.Popen(
        [str(EXE), "forget", memory, "--json"],
        stdin=terminal,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    try:
        out, err = child.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        child.kill()
        out, err = child.communicate(timeout=10)
    finally:
        os.close(main)
        os.close(terminal)
    assert child.returncode == 0, err
    assert json.loads(out)["forgotten"] is True  # stdout: the JSON alone
    assert f"Forget {memory}? [y/N]" in err and "approval from maria" in err


CLI_MD = (Path(__file__).parents[2] / "docs" / "cli.md").read_text(encoding="utf-8")


def documented_shape(command: str) -> str:
    """The `--json prints` cell of docs/cli.md's row for `command`: its first code span."""
    row = next(line for line in CLI_MD.splitlines() if line.startswith(f"| `{command}` |"))
    return row.split("|", 2)[2].split("`")[1].replace("\\|", "|")


def shape_keys(shape: str) -> set[str]:
    """The keys at the top of a documented shape (`{"a", "b": […]}` or `[{"a", …}]`): each
    quoted word just inside the outermost object, after its `{` or a `,`, not a value."""
    keys: set[str] = set()
    depth, before, inside = 0, "", shape.lstrip().startswith("[")
    target = 2 if inside else 1
    i = 0
    while i < len(shape):
        char = shape[i]
        if char == '"':
            end = shape.index('"', i + 1)
            if depth == target and before in "{,":
                keys.add(shape[i + 1 : end])
            before, i = '"', end + 1
            continue
        if char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
        if not char.isspace():
            before = char
        i += 1
    return keys


def nested_shape(shape: str, key: str) -> str:
    """The shape of `key`'s value in a documented shape: `"key": [{…}]` → `{…}`."""
    start = shape.index("{", shape.index(f'"{key}": '))
    depth = 0
    for end in range(start, len(shape)):
        depth += {"{": 1, "}": -1}.get(shape[end], 0)
        if depth == 0:
            return shape[start : end + 1]
    raise AssertionError(shape)


def test_the_shapes_docs_cli_md_gives_are_the_keys_the_commands_print(tmp_path: Path) -> None:
    """A script written from docs/cli.md reads the keys the commands print (a fresh reader
    was sent to search.md, upkeep.md and sync.md for shapes none of them gave)."""
    vault = tmp_path / "vault"
    as_json("init", str(vault), vault=vault)
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    as_json("remote", "add", str(bare), vault=vault)
    added = as_json("add", "redis runs on port 6380 in staging", "-w", "webshop", vault=vault)
    memory = added["id"]
    found = as_json("search", "redis port", "--all", vault=vault)
    printed: dict[str, Any] = {
        "add TEXT": added,
        "search QUERY": found,
        "show ID": as_json("show", memory, vault=vault),
        "list": as_json("list", vault=vault),
        "stats": as_json("stats", vault=vault),
        "stats -w WS": as_json("stats", "-w", "webshop", vault=vault),
        "audit": as_json("audit", vault=vault),
        "doctor": as_json("doctor", vault=vault),
        "sync": as_json("sync", vault=vault),
    }
    for command, data in printed.items():
        assert shape_keys(documented_shape(command)) == set(data), command
    results = nested_shape(documented_shape("search QUERY"), "results")
    assert shape_keys(results) == set(found["results"][0])
    memories = nested_shape(documented_shape("list"), "memories")
    assert shape_keys(memories) == set(printed["list"]["memories"][0])
    # conflicts: a list of objects, [] when none
    assert as_json("conflicts", vault=vault) == []
    from memstore.service.resolution import Conflict

    kept = {field.name for field in dataclasses.fields(Conflict)}  # what _conflict_json prints
    assert shape_keys(documented_shape("conflicts")) == kept


@pytest.mark.parametrize(
    "args",
    [
        ["list"],
        ["stats"],
        ["audit"],
        ["doctor"],
        ["dedupe", "--list"],
        ["conflicts"],
        ["remote"],
        ["remote", "show"],
        ["team"],
        ["status"],
        ["log"],
        ["ingest", "--list"],
        ["search", "nothing-here"],
        ["sync"],
    ],
    ids=" ".join,
)
def test_json_never_changes_the_exit_status(tmp_path: Path, args: list[str]) -> None:
    """docs/cli.md: with --json only stdout's form changes, never the status. `memstore
    remote` with no remote exited 1 in text and 0 with --json."""
    vault = tmp_path / "vault"
    as_json("init", str(vault), vault=vault)
    text = invoke_memstore(*args, vault=vault, env=ENV)
    data = invoke_memstore(*args, "--json", vault=vault, env=ENV)
    assert text.returncode == data.returncode, (text.stderr, data.stderr)
