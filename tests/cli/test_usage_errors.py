"""An option's value the command line got wrong is a usage error: exit 2 with the usage line,
a message naming the value and the fix, and nothing written (as `list --since bogus`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from tests.conftest import EXE, head, invoke_memstore, vault_bytes

BAD_VALUES = [
    (["add", "some text", "--kind", "bogus"], "unknown kind 'bogus'; use one of: note"),
    (["add", "some text", "--kind", "imported"], "kind 'imported' is set by memstore import"),
    (["add", "some text", "-w", "my space"], "invalid workspace name 'my space'; use lowercase"),
    (["add", "some text", "-w", "all"], "workspace 'all' is reserved"),
    (["add", "a\x01b", "-w", "ALL"], "invalid workspace name 'ALL'"),
    (["add", "some text", "-w", "../x"], "invalid workspace name '../x'"),
    (["search", "hello", "-w", "My Space"], "invalid workspace name 'My Space'"),
    (["search", "hello", "--as-of", "bogus"], "--as-of 'bogus' is neither a date nor an age"),
    (["show", "ID", "--as-of", "bogus"], "--as-of 'bogus' is neither a date nor an age; use"),
    (["promote", "ID", "--kind", "bogus"], "unknown kind 'bogus'"),
    (["promote", "ID", "--kind", "imported"], "kind 'imported' is set by memstore import"),
    (["list", "--kind", "lessons"], "unknown kind 'lessons'"),
    (["list", "-w", "Not A Workspace"], "invalid workspace name 'Not A Workspace'"),
    (["audit", "-w", "my space"], "invalid workspace name 'my space'"),
    (["export", "-w", "my space"], "invalid workspace name 'my space'"),
    (["import", "-w", "my space", "NOTES"], "invalid workspace name 'my space'"),
    (["stats", "-w", "my space"], "invalid workspace name 'my space'"),
    (["view", "-w", "Bad Name"], "invalid workspace name 'Bad Name'"),
    (["ingest", "-w", "my space", "."], "invalid workspace name 'my space'"),
    (["conflicts", "-w", "A B"], "invalid workspace name 'A B'"),
    (["conflicts", "resolve", "ID", "--keep", "bogus"], "'bogus' is not a choice; use mine"),
    (["conflicts", "resolve", "ID", "--keep", "0"], "'0' is not a choice"),
    (["conflicts", "resolve", "ID"], "say how to settle it: --keep mine"),
    (["log", "-n", "-3"], "must be at least 0"),
    # an empty query or text is the command line's fault, as a missing one is (exit 1 before)
    (["search", ""], "Invalid value for QUERY: the query is empty; pass words to look for"),
    (["search", "  ", "--all", "--json"], "the query is empty"),
    (["add", ""], "Invalid value for TEXT: memory text is empty; pass the text to remember"),
    (["add", " ", "-w", "webshop", "--json"], "memory text is empty"),
    (["gc", "--prune-traces", "-1"], "'--prune-traces': must be at least 0"),  # was 0: ran
    (["agents", "--install", "emacs"], "unknown agent 'emacs'; use one of: claude-code"),
    (["agents", "--uninstall", "emacs"], "for --uninstall: unknown agent 'emacs'"),
    (["team", "join", "Bad Name", "NOTES"], "Invalid value for NAME: invalid team name 'Bad"),
    (["dedupe", "--merge", "ID", "--keep-both", "ID"], "use one of --list, --merge ID or --keep"),
    (["dedupe", "--list", "--merge", "ID"], "use one of --list, --merge ID or --keep-both ID"),
]


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    vault = tmp_path_factory.mktemp("usage") / "vault"
    assert invoke_memstore("init", str(vault)).returncode == 0
    added = invoke_memstore("add", "the deploy needs approval", "-w", "webshop", vault=vault)
    assert added.returncode == 0, added.stderr
    return vault, added.stdout.split()[1]


@pytest.mark.parametrize(("args", "said"), BAD_VALUES, ids=[" ".join(a) for a, _ in BAD_VALUES])
def test_a_bad_option_value_is_a_usage_error_naming_it_and_writes_nothing(
    seeded: tuple[Path, str], tmp_path: Path, args: list[str], said: str
) -> None:
    vault, memory = seeded
    notes = tmp_path / "notes.md"
    notes.write_text("- a note to import\n", encoding="utf-8")
    args = [{"ID": memory, "NOTES": str(notes)}.get(arg, arg) for arg in args]
    before = (head(vault), vault_bytes(vault))
    done = invoke_memstore(*args, vault=vault, cwd=tmp_path)
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert done.stderr.startswith("Usage: memstore "), done.stderr
    assert said in done.stderr.replace("\n", " "), done.stderr
    assert done.stdout == ""
    assert (head(vault), vault_bytes(vault)) == before
    assert not (vault / ".memstore" / "view.html").exists()


def test_log_n_zero_lists_every_commit_as_list_does(seeded: tuple[Path, str]) -> None:
    vault, _ = seeded
    every = invoke_memstore("log", "-n", "0", vault=vault)
    assert every.returncode == 0 and len(every.stdout.splitlines()) == 2, every.stdout


@pytest.mark.parametrize("typer_only", [[], ["--archived"]])  # the lean path, and typer's
def test_search_w_all_searches_every_workspace_as_all_does(
    seeded: tuple[Path, str], tmp_path: Path, typer_only: list[str]
) -> None:
    # `all` is reserved for every workspace (add refuses it, memory_recall takes it); search
    # read it as a workspace of that name: "No memory matches 'deploy' in all or global"
    vault, memory = seeded
    named = invoke_memstore("search", "deploy", "-w", "all", *typer_only, vault=vault)
    every = invoke_memstore("search", "deploy", "--all", *typer_only, vault=vault)
    assert named.returncode == every.returncode == 0, named.stderr
    assert memory in named.stdout and (named.stdout, named.stderr) == (every.stdout, every.stderr)


def test_good_values_still_pass(seeded: tuple[Path, str]) -> None:
    vault, memory = seeded
    assert invoke_memstore("list", "--kind", "code", vault=vault).returncode == 0
    assert invoke_memstore("show", memory, "--as-of", "2999-01-01", vault=vault).returncode == 0


def test_the_lean_path_answers_a_bad_value_as_typer_does(seeded: tuple[Path, str]) -> None:
    """The executable's lean path (search and add without typer) defers to typer."""
    vault, _ = seeded
    args = ["add", "some text", "-w", "my space", "--kind", "bogus"]
    env = {**os.environ, "MEMSTORE_VAULT": str(vault), "MEMSTORE_NO_DAEMON": "1"}
    typer_main = "from memstore.cli.app import run; from memstore.launcher import typer_app; "
    typer_main += "run(typer_app())"
    lean = subprocess.run([str(EXE), *args], env=env, capture_output=True, text=True, timeout=60)
    full = subprocess.run(
        [sys.executable, "-c", typer_main, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert lean.returncode == full.returncode == 2, lean.stderr
    assert lean.stderr.replace(str(EXE), "memstore") == full.stderr.replace("-c", "memstore")


def commands_with(option: str) -> set[tuple[str, ...]]:
    """Every command (its words, however deep) that takes `option`, from the CLI itself."""
    from memstore.launcher import typer_app

    found: set[tuple[str, ...]] = set()
    groups = [((), typer.main.get_command(typer_app()))]
    while groups:
        path, group = groups.pop()
        for name, command in group.commands.items():  # type: ignore[attr-defined]
            if any(option in param.opts for param in command.params):
                found.add((*path, name))
            if hasattr(command, "commands"):
                groups.append(((*path, name), command))
    return found


AS_OF = {("search",): ["redis"], ("show",): ["ID"]}  # each command taking --as-of, its words


def test_at_is_answered_with_as_of_wherever_the_command_has_it(
    seeded: tuple[Path, str],
) -> None:
    # the trial's `search redis --at 2026-12-07` was "Did you mean --vault?": --at is the
    # name people try for --as-of (a suggestion, not an alias: still exit 2)
    vault, memory = seeded
    assert set(AS_OF) == commands_with("--as-of")
    for words, args in AS_OF.items():
        for at in (["--at", "2026-12-07"], ["--at=2026-12-07"]):
            line = [*words, *[memory if arg == "ID" else arg for arg in args], *at]
            done = invoke_memstore(*line, vault=vault)
            assert (done.returncode, done.stdout) == (2, ""), (line, done.stderr)
            assert done.stderr.startswith(f"Usage: memstore {' '.join(words)} "), done.stderr
            assert "Did you mean --as-of?" in done.stderr, (line, done.stderr)
    listed = invoke_memstore("list", "--at", "2026-12-07", vault=vault)  # no --as-of there
    assert listed.returncode == 2 and "--as-of" not in listed.stderr, listed.stderr
    typo = invoke_memstore("show", "x", "--vaul", "v").stderr  # other typos: click's answer
    assert typo.endswith("Error: No such option: --vaul (Possible options: --vault)\n"), typo
