"""The command line as a newcomer types it: unquoted words, text that starts with a dash,
a hint when another workspace has the answer, flags shown as flags, shell completion."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from memstore.catalog.indexer import CatchUp
from memstore.launcher import typer_app
from memstore.ops import lean, options
from memstore.ops.client import Request
from memstore.ops.output import briefing_lines, sync_lines
from memstore.service.store import Store
from memstore.service.sync import SyncOutcome
from memstore.vault.git_log import LogEntry
from tests.cli.help_pages import EVERY_HELP, help_of
from tests.conftest import EXE, head, invoke_memstore, run_memstore, settings_at, vault_bytes
from tests.daemon.test_daemon import (
    env,  # noqa: F401 (a pytest fixture, asked for by name)
    requests_served,
    start_daemon,
)
from tests.mcp.test_mcp import (
    call,
    server,  # noqa: F401 (a pytest fixture, asked for by name)
    text_of,
)

app = typer_app()  # every shell's commands, as the executable has them

runner = CliRunner()


def run(
    *args: str, vault: Path, under: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the executable's `main` in this process (search and add take the lean path); in
    exactly the environment `under`, when given, the installed executable in a process."""
    if under is None:
        return invoke_memstore(*args, vault=vault)
    return run_memstore(*args, vault=vault, base_env=under, timeout=60)


def typer_run(*args: str, vault: Path) -> Any:
    """Run the typer command itself (what the lean path defers to)."""
    return runner.invoke(app, list(args), env={"MEMSTORE_VAULT": str(vault)})


def body_of(vault: Path, memory_id: str) -> str:
    found = [p for p in vault.rglob(f"*{memory_id}.md")]
    assert len(found) == 1, found
    return found[0].read_text(encoding="utf-8").split("---\n", 2)[2]


# --- unquoted words -----------------------------------------------------------------------


def test_unquoted_words_are_one_query_and_print_the_same_on_both_paths(vault: Path) -> None:
    added = run(
        "add", "nginx", "upload", "limit", "is", "client_max_body_size", "-w", "web", vault=vault
    )
    assert added.returncode == 0, added.stderr
    lean_out = run("search", "nginx", "upload", "-w", "web", "limit", vault=vault)
    typer_out = typer_run("search", "nginx", "upload", "-w", "web", "limit", vault=vault)
    assert lean_out.returncode == typer_out.exit_code == 0, lean_out.stderr
    assert lean_out.stdout == typer_out.output
    assert "client_max_body_size" in lean_out.stdout and "(weak)" not in lean_out.stdout


def test_unquoted_words_are_one_memory_on_both_paths(vault: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    assert run("init", str(other), vault=other).returncode == 0
    lean_out = run("add", "use", "pnpm", "not", "npm", "-w", "infra", "-K", "pnpm", vault=vault)
    typer_out = typer_run(
        "add", "use", "pnpm", "not", "npm", "-w", "infra", "-K", "pnpm", vault=other
    )
    assert lean_out.returncode == typer_out.exit_code == 0, lean_out.stderr
    assert lean_out.stdout == typer_out.output
    memory_id = lean_out.stdout.split()[1]
    assert body_of(vault, memory_id) == body_of(other, memory_id) == "use pnpm not npm\n"


def test_the_lean_parser_joins_words_and_keeps_deferring_what_it_does_not_know() -> None:
    def search(argv: list[str]) -> dict[str, list[str]] | None:
        return options.parse(argv, options.SEARCH, "query")

    assert search(["nginx", "-w", "web", "upload", "limit"]) == {
        "query": ["nginx upload limit"],
        "workspace": ["web"],
    }
    assert search(["a", "--", "-b", "--all"]) == {"query": ["a -b --all"]}
    assert search(["--- a note", "-5"]) == {"query": ["--- a note -5"]}
    for argv in (["--help"], ["q", "--bogus"], [], ["q", "-w"], ["q", "--all=1"]):
        assert search(argv) is None, argv


@pytest.mark.parametrize("name", sorted(options.COMMANDS))
def test_a_fast_command_has_exactly_the_options_of_its_table(name: str) -> None:
    """typer and the lean parsers read one table: an option added to one is in the other."""
    table = options.COMMANDS[name]
    command = typer.main.get_command(app).commands[name]  # type: ignore[attr-defined]
    typer_side = {
        (option_name, not (param.is_flag or param.count))
        for param in command.params
        if param.param_type_name == "option"
        for option_name in param.opts + param.secondary_opts
    }
    assert typer_side == {(n, option.takes_value) for option in table for n in option.names}
    for option in table:
        value = ["x"] if option.takes_value else []
        given = options.parse(["word", option.names[0], *value], table, "words")
        assert (given is not None) == option.lean, option  # typer's alone: the lean path defers


def test_the_daemon_and_serve_parsers_defer_what_they_do_not_know() -> None:
    assert options.parse(["--idle-exit=5", "--vault", "v"], options.DAEMON) == {
        "idle_exit": ["5"],
        "vault": ["v"],
    }
    assert options.parse(["-w", "web", "--source=codex"], options.SERVE) == {
        "workspace": ["web"],
        "source": ["codex"],
    }
    for argv in (["--stop=1"], ["word"], ["--"], ["--idle-exit"], ["--help"]):
        assert options.parse(argv, options.DAEMON) is None, argv


# --- text that starts with a dash ---------------------------------------------------------


@pytest.mark.parametrize(
    ("words", "text"),
    [
        (["---", "a", "note", "after", "a", "rule"], "--- a note after a rule"),
        (["--- quoted, with spaces"], "--- quoted, with spaces"),
        (["-5", "degrees", "breaks", "the", "build", "agent"], "-5 degrees breaks the build agent"),
        (["--", "--verbose", "is", "deprecated"], "--verbose is deprecated"),
    ],
)
def test_text_that_starts_with_dashes_is_text_on_both_paths(
    vault: Path, tmp_path: Path, words: list[str], text: str
) -> None:
    other = tmp_path / "other"
    assert run("init", str(other), vault=other).returncode == 0
    lean_out = run("add", "-w", "notes", *words, vault=vault)
    typer_out = typer_run("add", "-w", "notes", *words, vault=other)
    assert lean_out.returncode == typer_out.exit_code == 0, lean_out.stderr
    assert lean_out.stdout == typer_out.output
    assert body_of(vault, lean_out.stdout.split()[1]) == text + "\n"


def test_an_unknown_option_names_the_fix_and_changes_nothing(vault: Path) -> None:
    before = (head(vault), vault_bytes(vault))
    text = run("add", "--verbose", "is", "deprecated", vault=vault)
    assert text.returncode == 2
    assert "No such option: --verbose" in text.stderr
    assert "memstore add -- '--verbose is deprecated'" in text.stderr
    typo = run("add", "x", "--kidn", "lesson", vault=vault)
    assert typo.returncode == 2 and "Did you mean --kind?" in typo.stderr
    assert (head(vault), vault_bytes(vault)) == before


# --- a hint when another workspace has it -------------------------------------------------


def test_no_match_here_points_at_the_matches_elsewhere_on_both_paths(vault: Path) -> None:
    for text, workspace in (
        ("nginx upload limit is client_max_body_size", "webshop"),
        ("nginx upload size must match the proxy", "billing"),
        ("use pnpm, not npm", "infra-tools"),
    ):
        assert run("add", text, "-w", workspace, vault=vault).returncode == 0
    lean_out = run("search", "nginx upload", "-w", "infra-tools", vault=vault)
    typer_out = typer_run("search", "nginx upload", "-w", "infra-tools", vault=vault)
    assert (
        lean_out.stdout
        == typer_out.output
        == (
            "No memory matches 'nginx upload' in infra-tools or global.\n"
            "2 matches in other workspaces: memstore search 'nginx upload' --all\n"
        )
    )
    shown = run("search", "nginx upload", "--all", vault=vault).stdout
    assert shown.count("nginx upload") == 2


def test_the_hint_counts_nothing_it_cannot_show(vault: Path) -> None:
    assert run("add", "use pnpm, not npm", "-w", "infra-tools", vault=vault).returncode == 0
    none = run("search", "kubernetes", "-w", "webshop", vault=vault)
    assert none.stdout == "No memory matches 'kubernetes' in webshop or global.\n"
    in_global = run("search", "kubernetes", "-w", "global", vault=vault)
    assert in_global.stdout == "No memory matches 'kubernetes' in global.\n"  # not "or global"
    context = run("search", "pnpm", "-w", "webshop", "--context", vault=vault)
    assert context.stdout == ""  # agent context stays silent
    data = json.loads(run("search", "pnpm", "-w", "webshop", "--json", vault=vault).stdout)
    assert data["other_workspaces"] == {
        "matches": 1,
        "weak": False,
        "capped": False,
        "command": "memstore search pnpm --all",
    }
    found = json.loads(run("search", "pnpm", "-w", "infra-tools", "--json", vault=vault).stdout)
    assert found["other_workspaces"] is None and len(found["results"]) == 1


def test_a_search_that_finds_nothing_points_at_archived_matches_on_both_paths(
    vault: Path,
) -> None:
    """Found by h-trial13: `search grafana` whose one match was archived said "No memory
    matches" and nothing of `--archived`."""
    added = run(
        "add", "Grafana dashboards live in infra/grafana", "-w", "ops", "--json", vault=vault
    )
    memory_id = json.loads(added.stdout)["id"]
    assert run("archive", memory_id, vault=vault).returncode == 0
    lean_out = run("search", "grafana", "-w", "ops", vault=vault)
    typer_out = typer_run("search", "grafana", "-w", "ops", vault=vault)
    assert (
        lean_out.stdout
        == typer_out.output
        == (
            "No memory matches 'grafana' in ops or global.\n"
            "1 match archived: memstore search grafana -w ops --archived\n"
        )
    )
    data = json.loads(run("search", "grafana", "-w", "ops", "--json", vault=vault).stdout)
    assert data["other_workspaces"] is None
    assert data["archived"] == {
        "matches": 1,
        "weak": False,
        "capped": False,
        "command": "memstore search grafana -w ops --archived",
    }
    shown = run("search", "grafana", "-w", "ops", "--archived", vault=vault).stdout
    assert "Grafana dashboards" in shown and "archived:" not in shown
    assert run("search", "kubernetes", "-w", "ops", vault=vault).stdout == (
        "No memory matches 'kubernetes' in ops or global.\n"  # nothing archived matches either
    )


def test_only_weak_hits_here_point_at_a_strict_match_elsewhere_on_both_paths(
    vault: Path,
) -> None:
    """A search whose hits in scope are all weak guesses names another workspace's memory
    that holds every word (found by docs12: `search "maria approval"` from `mobile` showed
    a weak global hit and nothing of webshop's strict match)."""
    for text, workspace in (
        ("Staging deploys need approval from @maria", "webshop"),
        ("Release approval checklist lives in the wiki", "global"),
        ("Use pnpm, not npm", "mobile"),
    ):
        assert run("add", text, "-w", workspace, vault=vault).returncode == 0
    lean_out = run("search", "maria approval", "-w", "mobile", vault=vault)
    typer_out = typer_run("search", "maria approval", "-w", "mobile", vault=vault)
    assert lean_out.stdout == typer_out.output
    assert "(weak)" in lean_out.stdout and "Release approval" in lean_out.stdout
    assert lean_out.stdout.endswith(
        "1 match in other workspaces: memstore search 'maria approval' --all\n"
    )
    data = json.loads(run("search", "maria approval", "-w", "mobile", "--json", vault=vault).stdout)
    assert data["other_workspaces"]["matches"] == 1 and not data["other_workspaces"]["weak"]
    # another workspace's weak guess is not worth a line: nothing but the weak hits here
    guess = run("search", "release wiki pnpm", "-w", "mobile", vault=vault).stdout
    assert "other workspaces" not in guess
    strict = run("search", "maria approval", "-w", "webshop", vault=vault).stdout
    assert "other workspaces" not in strict  # a confident hit here: no hint


def test_the_hint_names_the_vault_and_archived_when_the_command_did(vault: Path) -> None:
    assert run("add", "use pnpm, not npm", "-w", "infra-tools", vault=vault).returncode == 0
    lean_out = run("search", "pnpm", "-w", "web", "--vault", str(vault), vault=vault)
    typer_out = typer_run("search", "pnpm", "-w", "web", "--vault", str(vault), vault=vault)
    assert lean_out.stdout == typer_out.stdout  # stderr: the note that 'web' is no workspace
    assert lean_out.stdout.endswith(f"memstore search pnpm --all --vault {vault}\n")
    archived = typer_run("search", "pnpm", "-w", "web", "--archived", vault=vault).output
    assert archived.endswith("memstore search pnpm --all --archived\n")


def test_the_daemon_prints_the_hint_as_the_command_does_in_process(
    vault: Path,
    env: dict[str, str],  # noqa: F811 (the fixture imported above)
) -> None:
    alone = {**env, "MEMSTORE_NO_DAEMON": "1"}
    assert (
        run("add", "use pnpm, not npm", "-w", "infra-tools", vault=vault, under=alone).returncode
        == 0
    )
    start_daemon(env, vault)
    served = run("search", "pnpm", "-w", "webshop", vault=vault, under=env)
    assert requests_served(vault) == 1
    in_process = run("search", "pnpm", "-w", "webshop", vault=vault, under=alone)
    assert served.stdout == in_process.stdout
    assert served.stdout.endswith("1 match in other workspaces: memstore search pnpm --all\n")


def test_the_lean_command_counts_through_the_store_it_is_given(vault: Path) -> None:
    assert run("add", "use pnpm, not npm", "-w", "infra-tools", vault=vault).returncode == 0
    caller = {"HOME": str(vault.parent), "MEMSTORE_VAULT": str(vault)}
    request = Request("search", ["pnpm", "-w", "web"], str(vault.parent), caller, b"")
    reply = lean.run_search(request, lean.open_in_process)
    assert reply.status == 0 and "1 match in other workspaces" in reply.stdout


# --- help, plurals, the MCP error ---------------------------------------------------------


def every_command() -> list[list[str]]:
    group = typer.main.get_command(app)
    found = []
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        found.append([name])
        found += [[name, sub] for sub in getattr(command, "commands", {})]
    return found


@EVERY_HELP
def test_flags_are_shown_as_flags_in_every_help() -> None:
    for words in [[], *every_command()]:
        status, output = help_of(tuple(words))
        assert status == 0, words
        assert "<bool>" not in output, words
    search = runner.invoke(app, ["search", "--help"]).output
    assert "  --all  " in search and "-h, --help" in search


def test_a_flag_given_a_value_says_it_takes_none() -> None:
    result = runner.invoke(app, ["search", "x", "--all=true"])
    assert result.exit_code == 2 and "does not take a value" in result.output


def test_the_command_list_shows_each_whole_first_line() -> None:
    listed = runner.invoke(app, ["--help"]).output.split("Commands:")[1]
    assert "..." not in listed and "(e.g.\n" not in listed  # click cut them at a '.'
    for group in (["remote"], ["conflicts"], ["team"]):
        subcommands = runner.invoke(app, [*group, "--help"]).output.split("Commands:")[1]
        assert "..." not in subcommands, group
    assert "Remember something: one markdown file and one git commit (a duplicate" in " ".join(
        listed.split()
    )


def test_counts_read_in_the_singular() -> None:
    change = LogEntry("0" * 40, "add(global): one", "add(global): one", 0)
    header = briefing_lines([change], max_tokens=500, estimate=len)[0]
    assert "(1 commit, newest first)" in header
    lines = sync_lines(SyncOutcome(), 1, CatchUp())
    assert "wrote recall counters of 1 memory" in lines


def test_reindex_says_one_memory(vault: Path) -> None:
    assert run("add", "one memory only", "-w", "notes", vault=vault).returncode == 0
    assert "indexed 1 memory\n" in run("reindex", vault=vault).stdout


def test_the_mcp_error_for_empty_content_speaks_to_the_agent(server: Any) -> None:  # noqa: F811
    result = call(server, "memory_add", {"content": "   ", "keywords": ["a"]})
    assert result.is_error
    message = text_of(result)
    assert "content" in message and "empty" in message and "memstore add" not in message


# --- shell completion ---------------------------------------------------------------------


def complete(words: str, vault: Path, executable: bool = False) -> list[str]:
    """Ask the executable's `main` (or the installed executable itself) for bash completions
    of the line `words`."""
    shell = {
        "MEMSTORE_VAULT": str(vault),
        "_MEMSTORE_COMPLETE": "complete_bash",
        "COMP_WORDS": words,
        "COMP_CWORD": str(len(words.split(" ")) - 1),
    }
    done = run_memstore(env=shell, timeout=60) if executable else invoke_memstore(env=shell)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return done.stdout.split()


def test_completion_offers_workspaces_and_id_prefixes(vault: Path) -> None:
    ids = []
    for text, workspace in (("one", "infra-tools"), ("two", "infra"), ("three", "webshop")):
        added = run("add", f"memory number {text}", "-w", workspace, vault=vault)
        ids.append(added.stdout.split()[1])
    assert complete("memstore search -w inf", vault, executable=True) == ["infra", "infra-tools"]
    assert complete("memstore list -w ", vault) == ["global", "infra", "infra-tools", "webshop"]
    assert complete("memstore add note -w web", vault) == ["webshop"]
    assert complete(f"memstore show {ids[0][:3]}", vault) == [
        i for i in ids if i.startswith(ids[0][:3])
    ]
    assert sorted(complete("memstore forget ", vault)) == sorted(ids)
    assert complete("memstore li", vault) == ["list"]


def test_completion_never_creates_or_indexes_a_vault(tmp_path: Path, vault: Path) -> None:
    missing = tmp_path / "nowhere"
    assert complete("memstore show ", missing) == []
    assert complete("memstore search -w ", missing) == []
    assert not missing.exists()
    # a vault whose index is gone: no ids (no rebuild while a person presses Tab)
    assert run("add", "kept in the file", "-w", "notes", vault=vault).returncode == 0
    shutil.rmtree(vault / ".memstore" / "index")
    assert complete("memstore show ", vault) == []
    assert not (vault / ".memstore" / "index").exists()
    assert complete("memstore stats -w ", vault) == ["global", "notes"]


def test_the_completion_script_installs_for_a_named_shell(tmp_path: Path) -> None:
    shell = {**os.environ, "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}
    shown = subprocess.run(
        [str(EXE), "--show-completion", "bash"],
        env=shell,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0 and "_MEMSTORE_COMPLETE=complete_bash" in shown.stdout
    installed = subprocess.run(
        [str(EXE), "--install-completion", "bash"],
        env=shell,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert installed.returncode == 0, installed.stderr
    assert "memstore" in (Path(os.environ["HOME"]) / ".bashrc").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("args", "status", "says"),
    [
        (["search", ""], 2, "QUERY: the query is empty; pass words to look for"),
        (["search", "  ", "--all", "--json"], 2, "QUERY: the query is empty"),
        (["add", " "], 2, "TEXT: memory text is empty; pass the text to remember"),
        (["add", "a note", "-w", ""], 2, "'-w' / '--workspace': is empty; name a workspace"),
        (["search", "deploy", "-w", " "], 2, "'-w' / '--workspace': is empty"),
    ],
)
def test_an_empty_query_or_workspace_is_an_error_both_ways(
    vault: Path, args: list[str], status: int, says: str
) -> None:
    before = vault_bytes(vault)
    lean_out = run(*args, vault=vault)
    typer_out = typer_run(*args, vault=vault)
    assert lean_out.returncode == status and says in lean_out.stderr, lean_out.stderr
    said = typer_out.output + str(typer_out.exception or "")  # main() prints "Error: " + it
    assert typer_out.exit_code == status and says.removeprefix("Error: ") in said
    assert vault_bytes(vault) == before  # nothing stored


def test_an_empty_query_for_an_agent_context_stays_silent(vault: Path) -> None:
    done = run("search", "", "--context", vault=vault)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_search_in_an_unknown_workspace_says_so_and_names_the_known_ones(vault: Path) -> None:
    assert run("add", "use pnpm, not npm", "-w", "infra-tools", vault=vault).returncode == 0
    lean_run = run("search", "pnpm", "-w", "infra-tool", vault=vault)  # a typo
    assert lean_run.returncode == 0
    note = "note: no workspace 'infra-tool' in this vault (searched it and global); known: "
    assert lean_run.stderr == note + "global, infra-tools\n", lean_run.stderr
    in_typer = CliRunner().invoke(
        app, ["search", "pnpm", "-w", "infra-tool"], env={"MEMSTORE_VAULT": str(vault)}
    )
    assert note + "global, infra-tools" in in_typer.output
    known = run("search", "pnpm", "-w", "infra-tools", vault=vault)
    assert known.stderr == "" and "use pnpm" in known.stdout
    assert run("search", "pnpm", "--all", "-w", "nope", vault=vault).stderr == ""
    assert run("search", "pnpm", "--context", "-w", "nope", vault=vault).stderr == ""


def test_list_in_an_unknown_workspace_says_so_like_search(vault: Path) -> None:
    assert run("add", "use pnpm, not npm", "-w", "infra-tools", vault=vault).returncode == 0
    listed = run("list", "-w", "infra-tool", vault=vault)  # a typo
    assert listed.returncode == 0 and listed.stdout == "No memories match.\n"
    note = "note: no workspace 'infra-tool' in this vault (listed nothing); known: "
    assert listed.stderr == note + "global, infra-tools\n", listed.stderr
    known = run("list", "-w", "infra-tools", vault=vault)
    assert known.stderr == "" and "use pnpm" in known.stdout


@pytest.mark.parametrize(
    ("command", "read"),
    [
        (["audit"], "audited nothing"),
        (["audit", "--json"], "audited nothing"),
        (["export"], "exported nothing"),
        (["conflicts"], "found nothing"),
        (["conflicts", "--json"], "found nothing"),
    ],
)
def test_the_other_workspace_filters_name_the_known_workspaces_too(
    vault: Path, command: list[str], read: str
) -> None:
    """docs/cli.md: search, list, audit, export and conflicts given a -w the vault lacks
    answer with nothing and a note naming the workspaces there are (exit 0)."""
    assert run("add", "use pnpm, not npm", "-w", "infra-tools", vault=vault).returncode == 0
    typo = run(*command, "-w", "infra-tool", vault=vault)
    assert typo.returncode == 0, typo.stderr
    note = f"note: no workspace 'infra-tool' in this vault ({read}); known: "
    assert typo.stderr == note + "global, infra-tools\n", typo.stderr
    assert "pnpm" not in typo.stdout
    known = run(*command, "-w", "infra-tools", vault=vault)
    assert known.returncode == 0 and known.stderr == "", known.stderr


@pytest.mark.parametrize(
    "command", [["list"], ["stats"], ["audit"], ["export"], ["conflicts"], ["list", "--json"]]
)
def test_a_filter_given_w_all_reads_every_workspace_as_search_does(
    vault: Path, command: list[str]
) -> None:
    """`-w all` names every workspace for search, and no workspace may be named `all`; the
    filters took it for a workspace and answered with nothing."""
    assert run("add", "use pnpm, not npm", "-w", "infra-tools", vault=vault).returncode == 0
    assert run("add", "deploys need approval", "-w", "webshop", vault=vault).returncode == 0
    every = run(*command, vault=vault)
    named_all = run(*command, "-w", "all", vault=vault)
    assert named_all.returncode == every.returncode == 0, named_all.stderr
    assert (named_all.stdout, named_all.stderr) == (every.stdout, every.stderr)


def every_command_path() -> list[list[str]]:
    """Every command and group, however deep (hidden ones too: their help is shown)."""
    found: list[list[str]] = [[]]
    groups = [([], typer.main.get_command(app))]
    while groups:
        path, group = groups.pop()
        for name, command in group.commands.items():  # type: ignore[attr-defined]
            found.append([*path, name])
            if hasattr(command, "commands"):
                groups.append(([*path, name], command))
    return found


@EVERY_HELP
def test_every_help_names_values_plainly() -> None:
    # typer 0.29 showed `QUERY <list[str]>`, `-k <int range>`, `--vault <path>`
    for words in every_command_path():
        status, output = help_of(tuple(words))
        assert status == 0, words
        label = re.search(r"<[a-z][\w\[\], |]*>|list\[|int range|<=x|x>=|Input should", output)
        assert label is None, (words, label, output)
    search = runner.invoke(app, ["search", "--help"]).output
    assert "  QUERY...  " in search and "  -k N  " in search and "--vault PATH" in search
    hook = runner.invoke(app, ["hook", "--help"]).output
    for option in ("--source AGENT", "--if-novel", "--min-chars N", "--vault PATH"):
        assert option in hook, option


@EVERY_HELP
def test_every_usage_line_shows_arguments_bare() -> None:
    # typer 0.29 wrapped required arguments in braces: `show [OPTIONS] {ID}`, `{[NAME] URL}...`
    for words in every_command_path():
        usage = help_of(tuple(words), 200)[1]
        line = next(x for x in usage.splitlines() if x.startswith("Usage:"))
        assert "{" not in line and "}" not in line, (words, line)
    shown = {
        ("show",): "Usage: root show [OPTIONS] ID",
        ("add",): "Usage: root add [OPTIONS] TEXT...",
        ("remote", "add"): "Usage: root remote add [OPTIONS] [NAME] URL",
    }
    for words, line in shown.items():
        output = runner.invoke(app, [*words, "--help"], prog_name="root", terminal_width=200).output
        assert output.splitlines()[0] == line, output


def test_a_bad_value_is_named_in_plain_words() -> None:
    for line, said in (
        (["list", "-n", "abc"], "'abc' is not a whole number"),
        (["search", "x", "-k", "0"], "must be at least 1"),
        (["daemon", "--idle-exit", "soon"], "'soon' is not a number"),
    ):
        result = runner.invoke(app, line)
        assert result.exit_code == 2 and said in result.output, (line, result.output)
        assert "Input should" not in result.output


def test_completion_offers_kinds_and_hook_events(vault: Path) -> None:
    assert complete("memstore add note --kind l", vault) == ["lesson"]
    assert complete("memstore promote abc --kind c", vault) == ["core"]
    assert complete("memstore list --kind c", vault) == ["core", "code"]
    assert complete("memstore hook ", vault) == ["prompt", "capture", "briefing", "codex-notify"]


def test_help_lists_every_shells_commands_in_the_launchers_order() -> None:
    from memstore.launcher import HELP_ORDER

    listed = runner.invoke(app, ["--help"]).output.split("Commands:")[1]
    names = [line.split()[0] for line in listed.splitlines() if line[:3].strip()]
    assert names == [*HELP_ORDER, "remote", "conflicts", "team"]


REDIS = [
    "Redis runs on port 6379 in staging",
    "Redis runs on port 6380 in staging since the move",
    "Redis runs on port 6381 in staging",
]
OTHERS = [
    "Staging deploys need approval from maria",
    "Use pnpm not npm in the webshop",
    "Upload 413 is nginx client_max_body_size, not the app",
    "Feature flags live in LaunchDarkly project web",
    "Postgres backups run nightly with pg_dump",
    "Stripe webhooks land on /hooks/stripe",
    "The checkout e2e test waits for the payment iframe",
    "CI caches node_modules by the lockfile hash",
    "Grafana dashboards live in the ops folder",
]


def test_weak_hits_holding_every_word_are_not_said_to_miss_one(vault: Path) -> None:
    """Found by the eleventh session's trial: `memstore search redis` over three memories
    holding "redis" (each a hunch: none stands out) printed "No memory has every word"
    above them, and memory_recall's message said the same."""
    for text in REDIS + OTHERS:
        assert invoke_memstore("add", text, vault=vault).returncode == 0
    found = json.loads(invoke_memstore("search", "redis", "--json", vault=vault).stdout)
    assert found["weak"] and {h["coverage"] for h in found["results"]} == {1.0}, found

    said = invoke_memstore("search", "redis", vault=vault).stdout.splitlines()
    partly = invoke_memstore("search", "redis", "zookeeper", vault=vault).stdout.splitlines()

    assert said[0] == "No memory stands out, though some hold every word; these might be related:"
    assert partly[0] == "No memory has every word; these might be related:", partly
    with Store.open(settings_at(vault)) as store:
        recalled = store.recall("redis", workspace=None)
        elsewhere = store.recall("redis zookeeper", workspace=None)
    assert recalled.weak and recalled.message.startswith(
        "No memory stands out, though some hold every word; 3 memories might be related."
    ), recalled.message
    assert elsewhere.message.startswith("No memory has every word;"), elsewhere.message
