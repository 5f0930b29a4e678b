"""`--vault` wherever a command accepts it, a group's included: the command acts on that
vault, and the default vault ($MEMSTORE_VAULT) and its remote stay byte for byte the same."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pygit2
import pytest
import typer
from typer.testing import CliRunner

from memstore.agents.commands import HOOK_EVENTS
from memstore.core.merge import conflict_body
from memstore.launcher import typer_app
from memstore.ops.hooks import EVENTS, event_first
from memstore.service.curation import Curator
from memstore.service.store import Store
from tests.conftest import EXE, git, hang_bound_s, invoke_memstore, settings_at

app = typer_app()  # every shell's commands, as the executable has them

runner = CliRunner()
ZEBRA = "the zebra crossing sensor reports in millimetres"
OTHER = "the lighthouse lamp rotates every twelve seconds"


@dataclass(frozen=True)
class Seeded:
    """A vault made for this test: its memories' ids and what a check needs."""

    zebra: str  # the memory every read command must find
    archived: str
    conflicted: str
    session: str  # the session a revert undoes
    export: Path  # an export of another vault's memory, for restore
    notes: Path  # an instruction file, for import
    code: Path  # a source tree, for ingest
    proposal: str  # a branch of the team vault the target follows (acme), for review


def snapshot(*roots: Path) -> dict[str, bytes]:
    """Every file under `roots` (git objects, config, index and state included)."""
    return {
        str(path): path.read_bytes()
        for root in roots
        for path in sorted(root.rglob("*"))
        if path.is_file() and not path.is_symlink()
    }


def bare(path: Path) -> Path:
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(path)], check=True)
    return path


def seed(root: Path, extras: Path) -> Seeded:
    """Make the target vault at `root`: memories, an archived one, a conflict, a remote."""
    from memstore.service.store import init_vault

    init_vault(root, settings_at(root))
    with Store.open(settings_at(root)) as store:
        zebra = store.add(ZEBRA, workspace="global", keywords=("zebra",)).id
        archived = store.add("an archived note about the walrus", workspace="global").id
        store.set_remote(str(bare(extras / "target.git")))
        store.sync()
    with Store.open(settings_at(root)) as store:
        Curator(store, datetime.now(UTC)).archive(archived)
        added = store.add(OTHER, workspace="global")
        conflicted, path = added.id, root / added.path
    path.write_text(
        path.read_text(encoding="utf-8").replace(OTHER + "\n", conflict_body(OTHER, "twelve")),
        encoding="utf-8",
    )
    git(root, "commit", "-qam", "edit: conflicted by hand")
    env = {**os.environ, "MEMSTORE_SESSION": "s-revert", "MEMSTORE_VAULT": str(root)}
    assert invoke_memstore("add", "a session to revert", env=env).returncode == 0
    other = extras / "other"
    init_vault(other, settings_at(other))
    with Store.open(settings_at(other)) as store:
        store.add("the yak shaver restores exports", workspace="global")
    export = extras / "export.json"
    env = {**os.environ, "MEMSTORE_VAULT": str(other)}
    exported = invoke_memstore("export", env=env)
    assert exported.returncode == 0, exported.stderr
    export.write_text(exported.stdout, encoding="utf-8")
    notes = extras / "CLAUDE.md"
    notes.write_text("# rules\n\n- always run the tapir linter\n", encoding="utf-8")
    code = extras / "code"
    code.mkdir()
    (code / "ocelot.py").write_text("def ocelot_speed():\n    return 3\n", encoding="utf-8")
    return Seeded(
        zebra, archived, conflicted, "s-revert", export, notes, code, follow_a_team(root, extras)
    )


def follow_a_team(root: Path, extras: Path) -> str:
    """Make the target follow a team vault 'acme' (its clone under the world's xdg/, the
    team's bare repository extras/team.git) holding one proposal; return its branch."""
    from memstore.service.store import init_vault

    team = extras / "team-src"
    init_vault(team, settings_at(team))
    with Store.open(settings_at(team)) as store:
        store.add("the team's heron feeds at dawn", workspace="global")
        store.set_remote(str(bare(extras / "team.git")))
        store.sync()
    env = {**os.environ, "MEMSTORE_VAULT": str(root), "XDG_DATA_HOME": str(root.parent / "xdg")}
    joined = invoke_memstore("team", "join", "acme", str(extras / "team.git"), env=env)
    assert joined.returncode == 0, joined.stderr
    with Store.open(settings_at(root)) as store:
        ibis = store.add("the ibis proposal waits for review", workspace="global").id
    shared = invoke_memstore("share", ibis, "--team", "acme", env=env)
    assert shared.returncode == 0, shared.stdout + shared.stderr
    heads = git(
        extras / "team.git", "for-each-ref", "--format=%(refname:short)", "refs/heads/memstore"
    )
    (branch,) = heads.split()
    return branch


LAUNCHER_PARSED = {"search", "add", "ingest", "hook", "daemon", "serve", "watch"}


def cases(s: Seeded, scratch: Path) -> dict[tuple[str, ...], list[str]]:
    """Each command that takes --vault, with the rest of its arguments."""
    return {
        ("add",): ["a new fact about the okapi"],
        ("search",): ["zebra"],
        ("show",): [s.zebra],
        ("reindex",): [],
        ("doctor",): [],
        ("status",): [],
        ("benchmark",): [],
        ("sync",): [],
        ("confirm",): [s.zebra],
        ("audit",): [],
        ("dedupe",): [],
        ("promote",): [s.zebra, "--kind", "core"],
        ("archive",): [s.zebra],
        ("revive",): [s.archived],
        ("forget",): [s.zebra, "--yes"],
        ("log",): [],
        ("revert",): ["--session", s.session, "--yes"],
        ("view",): [],
        ("import",): [str(s.notes)],
        ("export",): [],
        ("restore",): [str(s.export)],
        ("gc",): [],
        ("edit",): [s.zebra],
        ("list",): [],
        ("stats",): [],
        ("ingest",): [str(s.code)],
        ("agents",): ["--install", "claude-code", "--yes"],
        ("remote",): [],
        ("remote", "show"): [],
        ("remote", "remove"): ["origin"],
        ("remote", "add"): [str(bare(scratch / "elsewhere.git"))],  # one that exists
        ("conflicts",): [],
        ("conflicts", "resolve"): [s.conflicted, "--keep", "2"],
        ("init",): [],
        ("hook",): ["prompt"],
        ("serve",): [],
        ("watch",): [],
        ("daemon",): ["--stop"],
        ("team",): [],
        ("team", "list"): [],
        ("team", "join"): ["crew", str(scratch / "extras" / "team.git")],
        ("team", "leave"): ["acme"],
        ("share",): [s.zebra, "--team", "acme"],
        ("review",): [s.proposal, "--team", "acme"],
    }


def positions(words: tuple[str, ...], args: list[str], vault: str) -> list[list[str]]:
    """The command lines naming `vault` in each place --vault is accepted: after each
    group and command word, and after the arguments where the launcher parses by hand."""
    option = ["--vault", vault]
    lines = [[*words[: at + 1], *option, *words[at + 1 :], *args] for at in range(len(words))]
    if len(words) > 1:
        lines.append([*words[:1], *option, *words[1:], *option, *args])  # both, the same
    if words[0] in LAUNCHER_PARSED:
        lines.append([*words, *args, *option])
    return lines


def every_vault_command() -> set[tuple[str, ...]]:
    """Every command (and group) whose --help offers --vault."""
    found: set[tuple[str, ...]] = set()
    groups = [((), typer.main.get_command(app))]
    while groups:
        path, group = groups.pop()
        for name, command in group.commands.items():  # type: ignore[attr-defined]
            words = (*path, name)
            if not command.hidden and any(param.name == "vault" for param in command.params):
                found.add(words)
            if hasattr(command, "commands"):
                groups.append((words, command))
    return found


PROCESSES = {"daemon", "serve", "watch"}  # the long-running shells: always a process


def run_line(
    argv: list[str], env: dict[str, str], payload: str, *, executable: bool
) -> tuple[int, str]:
    """Run a command line: what the launcher parses by hand in the installed executable
    (`watch` until it says it watches, then Ctrl-C), or the launcher's `main` in-process
    for search, add, ingest and hook unless `executable`; the rest through typer in-process."""
    if argv[0] not in LAUNCHER_PARSED:
        result = runner.invoke(app, argv, env=env, input=payload)
        return result.exit_code, result.output
    if argv[0] not in PROCESSES and not executable:
        done = invoke_memstore(*argv, env=env, stdin=payload)
        return done.returncode, done.stdout + done.stderr
    if argv[0] == "watch":
        with subprocess.Popen(
            [str(EXE), *argv],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            # Ctrl-C as in a terminal: a suite started in the background (`make test &`)
            # passes SIGINT down ignored, and python then never turns it into an interrupt.
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        ) as process:
            timer = threading.Timer(hang_bound_s(30), process.kill)  # a bound, not a sleep
            timer.start()
            assert process.stdout is not None
            line = process.stdout.readline()
            process.send_signal(signal.SIGINT)
            out = line + process.stdout.read()
            timer.cancel()
            return (0 if process.wait() in (0, 130) else 1), out
    done = subprocess.run(
        [str(EXE), *argv],
        env=env,
        input=payload,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=hang_bound_s(60),  # ends a hang; `serve` took 60 s at load 20
    )
    return done.returncode, done.stdout + done.stderr


def mcp_lines() -> str:
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "memory_recall", "arguments": {"query": "zebra crossing"}},
        },
    ]
    return "".join(json.dumps(message) + "\n" for message in messages)


def test_every_command_with_vault_acts_on_that_vault_only(tmp_path: Path) -> None:
    """Every command and every place of --vault, the launcher's own parsing in-process; a
    long-running shell (daemon, serve, watch) is a process, so each is run at one place
    (the places taken in turn). The long version runs every line through the executable."""
    walk(tmp_path, everything=False)


@pytest.mark.long
def test_every_command_at_every_place_of_vault_through_the_executable(tmp_path: Path) -> None:
    walk(tmp_path, everything=True)


def walk(tmp_path: Path, *, everything: bool) -> None:
    """Run each command line naming the target vault; check only that vault changed."""
    default = tmp_path / "default"
    assert invoke_memstore("init", str(default)).returncode == 0
    env = {**os.environ, "MEMSTORE_VAULT": str(default), "MEMSTORE_PROGRESS_DELAY": "999"}
    for setup in (
        ["add", "the default vault keeps the aardvark"],
        ["remote", "add", str(bare(tmp_path / "default.git"))],
        ["sync"],
    ):
        assert invoke_memstore(*setup, env=env).returncode == 0, setup
    template = tmp_path / "template"
    extras = tmp_path / "extras"
    extras.mkdir()
    seeded = seed(template / "target", extras)
    editor = tmp_path / "editor.sh"
    editor.write_text('#!/bin/sh\nprintf "seen again\\n" >> "$1"\n', encoding="utf-8")
    editor.chmod(0o700)
    env |= {"EDITOR": str(editor), "VISUAL": ""}
    table = cases(seeded, tmp_path)
    assert set(table) == every_vault_command() | {("hook",)}
    before = snapshot(default, tmp_path / "default.git")
    payloads = {
        "hook": json.dumps({"prompt": "zebra crossing sensor", "cwd": str(tmp_path)}),
        "serve": mcp_lines(),
    }
    shells = 0
    for at, (words, args) in enumerate(table.items()):
        lines = positions(words, args, "VAULT")
        if words[0] in PROCESSES and not everything:
            lines, shells = [lines[shells % len(lines)]], shells + 1
        for number, line in enumerate(lines):
            world = tmp_path / f"run-{at}-{number}"
            shutil.copytree(template, world, symlinks=True)
            shutil.copytree(extras / "target.git", world / "target.git")
            shutil.copytree(extras / "team.git", world / "team.git")
            target = world / "target"
            # pygit2, not the git CLI: a git process per line cost more than the command
            pygit2.Repository(str(target)).remotes.set_url("origin", str(world / "target.git"))
            (clone,) = (world / "xdg" / "memstore" / "teams").iterdir()  # acme's
            pygit2.Repository(str(clone)).remotes.set_url("origin", str(world / "team.git"))
            if words == ("init",):
                shutil.rmtree(target)
            start = snapshot(target) if target.exists() else {}
            argv = [str(target) if word == "VAULT" else word for word in line]
            here = env | {"XDG_DATA_HOME": str(world / "xdg")}
            status, out = run_line(argv, here, payloads.get(words[0], ""), executable=everything)
            assert status == (3 if words == ("status",) else 0), (argv, out)  # 3: not running
            assert snapshot(default, tmp_path / "default.git") == before, argv
            assert "aardvark" not in out and str(default) not in out, (argv, out)
            markers = ("zebra", "twelve", "target", "okapi", "acme", "ibis")
            touched = snapshot(target) != start or any(m in out for m in markers)
            assert touched, (argv, out)  # (the worlds stay for pytest to clear: rmtree is slow)


def test_a_group_and_its_command_naming_two_vaults_is_refused(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    for path in (first, second):
        assert subprocess.run([str(EXE), "init", str(path)], capture_output=True).returncode == 0
    before = snapshot(first, second)
    for line in (
        ["remote", "--vault", str(first), "add", "/x.git", "--vault", str(second)],
        [
            "conflicts",
            "--vault",
            str(first),
            "resolve",
            "abc",
            "--keep",
            "1",
            "--vault",
            str(second),
        ],
    ):
        done = subprocess.run([str(EXE), *line], capture_output=True, text=True)
        assert done.returncode == 2 and "names two folders" in done.stderr, done.stderr
    assert snapshot(first, second) == before


def test_init_given_a_path_and_another_vault_makes_neither(tmp_path: Path) -> None:
    # `memstore init A --vault B` made A and said nothing of B
    first, second = tmp_path / "a", tmp_path / "b"
    for line in (
        ["init", str(first), "--vault", str(second)],
        ["--vault", str(second), "init", str(first)],
    ):
        done = invoke_memstore(*line)
        assert done.returncode == 2, done.stderr
        assert f"names {second}, but PATH names {first}" in done.stderr
        assert not first.exists() and not second.exists()
    done = invoke_memstore("init", str(first), "--vault", f"{first}/")  # the same folder
    assert done.returncode == 0 and (first / ".git").is_dir(), done.stderr


def test_hook_takes_its_options_before_or_after_the_event() -> None:
    assert set(HOOK_EVENTS) == set(EVENTS)
    assert event_first(["--vault", "/v", "--source", "x", "prompt"]) == [
        "prompt",
        "--vault",
        "/v",
        "--source",
        "x",
    ]
    assert event_first(["prompt", "--vault", "/v"]) == ["prompt", "--vault", "/v"]
    assert event_first(["--if-novel", "capture"]) == ["capture", "--if-novel"]
    assert event_first(["nonsense"]) == ["nonsense"]
    assert event_first(["--vault=/v", "prompt"]) == ["prompt", "--vault", "/v"]


def test_vault_before_the_command_acts_as_after_it(tmp_path: Path) -> None:
    """`memstore --vault V COMMAND …` (as `git -C` comes first) was "No such option: --vault"
    for every command; now it is the command's own --vault, on the lean paths as in typer."""
    default, target = tmp_path / "default", tmp_path / "target"
    for path in (default, target):
        assert invoke_memstore("init", str(path)).returncode == 0
    env = {"MEMSTORE_VAULT": str(default), "MEMSTORE_NO_DAEMON": "1"}
    assert invoke_memstore("add", "the default vault keeps the aardvark", env=env).returncode == 0
    added = invoke_memstore("--vault", str(target), "add", ZEBRA, "-w", "zoo", env=env)
    assert added.returncode == 0, added.stderr
    memory = added.stdout.split()[1]
    before = snapshot(default)
    for line in (
        ["search", "zebra", "crossing", "--all"],
        ["search", "zebra", "--json", "--all"],
        ["--no-daemon", "search", "zebra", "--all"],
        ["show", memory],
        ["list", "--json"],
        ["log"],
        ["stats"],
        ["conflicts", "--json"],
    ):
        place = line.index("search") if "--no-daemon" in line else 0
        before_it = [*line[:place], f"--vault={target}", *line[place:]]
        after_it = [*line, "--vault", str(target)]
        first = invoke_memstore("--vault", str(target), *line, env=env)
        assert first.returncode == 0 and "aardvark" not in first.stdout, (line, first.stderr)
        assert (first.stdout, first.stderr) == (
            invoke_memstore(*after_it, env=env).stdout,
            invoke_memstore(*after_it, env=env).stderr,
        ), line
        assert invoke_memstore(*before_it, env=env).stdout == first.stdout, line
    assert memory in invoke_memstore("--vault", str(target), "show", memory, env=env).stdout
    two = invoke_memstore("--vault", str(target), "search", "zebra", "--vault", str(default))
    assert two.returncode == 2 and "names two folders" in two.stderr, two.stderr
    assert two.stdout == ""
    same = invoke_memstore("--vault", str(target), "search", "zebra", "--vault", str(target))
    assert same.returncode == 0 and memory in same.stdout, same.stderr
    for alone in (["--vault"], ["--vault", str(target)], ["--vault", str(target), "--json"]):
        done = invoke_memstore(*alone, env=env)
        assert done.returncode == 2 and "--vault PATH comes with a command" in done.stderr, alone
    assert "Example:" in invoke_memstore("--vault", str(target), "--help", env=env).stdout
    assert snapshot(default) == before


def test_two_vaults_both_after_the_command_or_both_before_it_are_refused(tmp_path: Path) -> None:
    """Found by the fifteenth session's trial: `memstore add TEXT --vault A --vault B` wrote to
    B without a word (typer keeps an option's last value), and `memstore --vault A --vault B
    search …` said "--vault PATH comes with a command" of a line that has one."""
    first, second = tmp_path / "a", tmp_path / "b"
    for path in (first, second):
        assert invoke_memstore("init", str(path)).returncode == 0
    env = {"MEMSTORE_NO_DAEMON": "1"}
    before = snapshot(first, second)
    a, b = str(first), str(second)
    for line in (
        ["add", "the okapi lives in the rainforest", "--vault", a, "--vault", b],
        ["add", "the okapi lives in the rainforest", f"--vault={a}", "--vault", b],
        ["list", "--vault", a, "--vault", b],
        ["--vault", a, "--vault", b, "search", "okapi"],
        ["--vault", a, f"--vault={b}", "list"],
    ):
        done = invoke_memstore(*line, env=env)
        assert done.returncode == 2, (line, done.stdout, done.stderr)
        assert "names two folders" in done.stderr and done.stdout == "", (line, done.stderr)
    assert snapshot(first, second) == before
    added = invoke_memstore("--vault", a, "--vault", a, "add", "the okapi eats leaves", env=env)
    assert added.returncode == 0, added.stderr
    found = invoke_memstore("search", "okapi", "--vault", a, f"--vault={first}/.", env=env)
    assert found.returncode == 0 and "okapi eats leaves" in found.stdout, found.stderr
    hook = invoke_memstore("hook", "prompt", "--vault", a, "--vault", b, env=env)
    assert hook.returncode == 0  # a hook never fails the agent's prompt


@pytest.mark.parametrize("command", ["add", "import"])
@pytest.mark.parametrize("path", ["in-process", "executable"])
def test_an_add_from_inside_another_vault_is_refused_naming_both(
    tmp_path: Path, command: str, path: str
) -> None:
    """Found by the eleventh session's trial: `memstore init ~/work-vault`, `cd ~/work-vault`,
    `memstore add …` wrote into the default vault ($MEMSTORE_VAULT) in a workspace named
    `work-vault`. It names both vaults and the options that choose now, and changes
    nothing; `-w` (a workspace of the vault in use, chosen on purpose) still adds there."""
    used, other = tmp_path / "memstore", tmp_path / "work-vault"
    for folder in (used, other):
        assert invoke_memstore("init", str(folder)).returncode == 0
    (other / "notes").mkdir()
    where = other / "notes"
    # a heading above: the file (a memory of workspace `notes` itself) is not the same text
    # as the add, which from that folder goes to `notes` (trial 14), or as the imported piece
    (where / "CLAUDE.md").write_text(
        "# Infra\n\n- the terraform state lock lives in dynamodb\n", "utf-8"
    )
    before = {folder: git(folder, "rev-parse", "HEAD") for folder in (used, other)}
    args = ["add", "the terraform state lock lives in dynamodb"]
    if command == "import":
        args = ["import", "CLAUDE.md"]
    run = invoke_memstore if path == "in-process" else _run_executable

    refused = run(*args, vault=used, cwd=where)

    assert refused.returncode == 1 and refused.stderr.count("\n") == 1, refused.stderr
    assert refused.stderr.startswith(
        f"Error: this folder is in the vault {other}, but memstore uses {used}; pass --vault "
        f"{other} (or export MEMSTORE_VAULT={other}) to add there"
    ), refused.stderr
    assert {folder: git(folder, "rev-parse", "HEAD") for folder in (used, other)} == before
    assert not (used / "work-vault").exists()
    there = run(*args, "--vault", str(other), cwd=where)
    assert there.returncode == 0 and git(other, "rev-parse", "HEAD") != before[other]
    chosen = run(*args, "-w", "infra", vault=used, cwd=where)
    assert chosen.returncode == 0 and (used / "infra").is_dir(), chosen.stderr


def test_a_search_from_inside_another_vault_names_both_on_stderr(tmp_path: Path) -> None:
    """Found by the thirteenth session's trial: in ~/work-vault, `memstore search wireguard`
    read the default vault's workspace `work-vault` (none) and said only "No memory
    matches"; the lean path and typer's (--as-of) both say which vault they read."""
    used, other = tmp_path / "memstore", tmp_path / "work-vault"
    for folder in (used, other):
        assert invoke_memstore("init", str(folder)).returncode == 0
    added = invoke_memstore("add", "the vpn is wireguard", "--vault", str(other), cwd=other)
    assert added.returncode == 0, added.stderr
    note = (
        f"note: this folder is in the vault {other}, but memstore searched {used}; pass "
        f"--vault {other} (or export MEMSTORE_VAULT={other}) to search there\n"
    )
    for extra in ([], ["--as-of", "2099-01-01"]):  # the lean path, and typer's
        done = invoke_memstore("search", "wireguard", *extra, vault=used, cwd=other)
        assert done.returncode == 0 and done.stderr == note, done.stderr
    for chosen in (["-w", "infra"], ["--all"], ["--vault", str(other)]):
        done = invoke_memstore("search", "wireguard", *chosen, vault=used, cwd=other)
        assert done.returncode == 0 and "note: this folder" not in done.stderr, done.stderr
    found = invoke_memstore("search", "wireguard", "--vault", str(other), cwd=other)
    assert "the vpn is wireguard" in found.stdout


def _run_executable(
    *args: str, vault: Path | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, **({"MEMSTORE_VAULT": str(vault)} if vault else {})}
    if vault is None:
        environment.pop("MEMSTORE_VAULT", None)
    return subprocess.run(
        [str(EXE), *args],
        cwd=cwd,
        env=environment,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=hang_bound_s(120),
    )
