"""One exit-status convention across the commands (docs/cli.md): 0 done, 1 a thing the person
must act on (no vault there, no such memory, a refusal), 2 the command line is wrong (with the
usage line; tests/cli/test_usage_errors.py has the bad values), 3 done with news for a person
(status: no daemon; sync: both versions of a memory kept). Every command is in one table here,
so a new one must say how it answers a missing vault."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from memstore.core.errors import no_vault_at
from memstore.launcher import typer_app
from tests.conftest import head, invoke_memstore, run_memstore, vault_bytes

# How each command is run against a folder that holds no vault (it must exit 1 with one line
# naming the folder and `memstore init`, print nothing on stdout and create nothing there).
MISSING_VAULT: dict[str, list[str]] = {
    "add": ["add", "a note"],
    "search": ["search", "deploy"],
    "show": ["show", "k3xq"],
    "reindex": ["reindex"],
    "doctor": ["doctor"],
    "watch": ["watch"],
    "daemon": ["daemon", "--stop"],
    "status": ["status"],
    "benchmark": ["benchmark"],  # the default ~/memstore may be missing: its cost is 0
    "serve": ["serve"],
    "sync": ["sync"],
    "confirm": ["confirm", "k3xq"],
    "audit": ["audit"],
    "dedupe": ["dedupe", "--list"],
    "promote": ["promote", "k3xq", "--kind", "core"],
    "archive": ["archive", "k3xq"],
    "revive": ["revive", "k3xq"],
    "forget": ["forget", "k3xq", "--yes"],
    "log": ["log"],
    "revert": ["revert", "--session", "abc"],
    "view": ["view", "--json"],
    "import": ["import", "NOTES"],
    "export": ["export"],
    "restore": ["restore", "EXPORT"],
    "gc": ["gc"],
    "edit": ["edit", "k3xq"],
    "list": ["list"],
    "stats": ["stats"],
    "ingest": ["ingest", "."],
    "share": ["share", "k3xq", "--team", "acme"],
    "review": ["review", "memstore/me/k3xq", "--team", "acme"],
    "remote": ["remote"],
    "remote add": ["remote", "add", "origin", "REMOTE"],
    "remote show": ["remote", "show"],
    "remote remove": ["remote", "remove", "origin"],
    "conflicts": ["conflicts"],
    "conflicts resolve": ["conflicts", "resolve", "k3xq", "--keep", "mine"],
    "team": ["team"],
    "team join": ["team", "join", "acme", "REMOTE"],
    "team list": ["team", "list"],
    "team leave": ["team", "leave", "acme"],
}
# The commands that need no vault, and why.
NO_VAULT_NEEDED = {
    "init": "makes one",
    "demo": "makes one",
    "eval": "loads its fixture into a throwaway vault",
    "hook": "never fails: an agent's prompt must not break (it says why on stderr, exit 0)",
    "agents": "edits the agents' config files",
    "check": "checks the checkout it is given",
}
NO_DAEMON = {"MEMSTORE_NO_DAEMON": "1"}  # a daemon started here would answer status and stop
LONG_RUNNING = {"watch", "serve"}  # run as a process, bounded: a bug must not hang the suite


def every_command() -> set[str]:
    """Return each command's words ("remote add"), however deep, hidden ones left out."""
    found: set[str] = set()
    groups: list[tuple[list[str], typer.core.TyperGroup]] = [
        ([], typer.main.get_command(typer_app()))
    ]  # type: ignore[list-item]
    while groups:
        path, group = groups.pop()
        for name, command in group.commands.items():
            if not command.hidden:
                found.add(" ".join([*path, name]))
                if hasattr(command, "commands"):
                    groups.append(([*path, name], command))  # type: ignore[arg-type]
    return found


def test_every_command_says_how_it_answers_a_missing_vault() -> None:
    assert every_command() == set(MISSING_VAULT) | set(NO_VAULT_NEEDED)
    assert not set(MISSING_VAULT) & set(NO_VAULT_NEEDED)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The files a command's arguments name: notes to import, an export, a bare remote."""
    root = tmp_path_factory.mktemp("inputs")
    notes = root / "notes.md"
    notes.write_text("- a note to import\n", encoding="utf-8")
    vault = root / "vault"
    assert invoke_memstore("init", str(vault)).returncode == 0
    exported = invoke_memstore("export", vault=vault)
    assert exported.returncode == 0, exported.stderr
    export = root / "export.json"
    export.write_text(exported.stdout, encoding="utf-8")
    remote = root / "remote.git"
    assert run_memstore("init", str(remote)).returncode == 0  # any git repository will do
    return {"NOTES": str(notes), "EXPORT": str(export), "REMOTE": str(remote)}


@pytest.mark.parametrize("name", sorted(MISSING_VAULT))
def test_a_missing_vault_is_one_line_naming_it_and_exit_1(
    name: str, files: dict[str, str], tmp_path: Path
) -> None:
    missing = tmp_path / "typo"
    args = [files.get(arg, arg) for arg in MISSING_VAULT[name]]
    env = {"EDITOR": "true", "MEMSTORE_NO_DAEMON": "1"}
    if name in LONG_RUNNING:
        done = run_memstore(*args, vault=missing, cwd=tmp_path, env=env, timeout=60)
    else:
        done = invoke_memstore(*args, vault=missing, cwd=tmp_path, env=env)
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line == (
        f"Error: there is no vault at {missing}; run 'memstore init {missing}' to make one "
        "there, or fix MEMSTORE_VAULT / --vault"
    )  # the same words from every command (the daemon's said 'or memstore add to start one')
    assert not missing.exists()


ID_COMMANDS = [
    ["show", "zzzz"],
    ["confirm", "zzzz"],
    ["promote", "zzzz", "--kind", "core"],
    ["archive", "zzzz"],
    ["revive", "zzzz"],
    ["forget", "zzzz", "--yes"],
    ["edit", "zzzz"],
    ["dedupe", "--merge", "zzzz"],
    ["conflicts", "resolve", "zzzz", "--keep", "mine"],
    ["log", "zzzz"],
]


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    vault = tmp_path_factory.mktemp("exits") / "vault"
    assert invoke_memstore("init", str(vault)).returncode == 0
    added = invoke_memstore(
        "add", "the deploy needs approval", "-w", "webshop", vault=vault, env=NO_DAEMON
    )
    assert added.returncode == 0, added.stderr
    return vault


@pytest.mark.parametrize("args", ID_COMMANDS, ids=[" ".join(a) for a in ID_COMMANDS])
@pytest.mark.parametrize("as_json", [False, True])
def test_a_bad_id_is_one_line_naming_it_exit_1_and_changes_nothing(
    seeded: Path, args: list[str], as_json: bool
) -> None:
    words = max((args[:n] for n in (1, 2) if " ".join(args[:n]) in every_command()), key=len)
    if as_json and "--json" not in invoke_memstore(*words, "--help").stdout:
        pytest.skip("no --json")
    before = (head(seeded), vault_bytes(seeded))
    done = invoke_memstore(
        *args, *(["--json"] if as_json else []), vault=seeded, env={"EDITOR": "true"}
    )
    assert done.returncode == 1, (done.returncode, done.stderr)
    assert done.stdout == ""  # not even JSON: an error is on stderr, as every --json has it
    (line,) = done.stderr.splitlines()
    assert line.startswith("Error: ") and "'zzzz'" in line, line
    assert (head(seeded), vault_bytes(seeded)) == before


def test_daemon_stop_is_0_where_none_runs_and_1_where_there_is_no_vault(
    seeded: Path, tmp_path: Path
) -> None:
    done = run_memstore("daemon", "--stop", vault=seeded, timeout=60)
    assert (done.returncode, done.stdout) == (0, f"no daemon runs for {seeded}\n")
    missing = run_memstore("daemon", "--stop", "--vault", str(tmp_path / "typo"), timeout=60)
    assert missing.returncode == 1 and missing.stdout == "", missing.stdout
    assert missing.stderr.startswith(f"Error: there is no vault at {tmp_path / 'typo'};")


def test_status_answers_3_when_no_daemon_runs_in_text_and_json(seeded: Path) -> None:
    for as_json in ([], ["--json"]):
        done = invoke_memstore("status", *as_json, vault=seeded, env=NO_DAEMON)
        assert done.returncode == 3, done.stderr
    assert json.loads(done.stdout)["running"] is False


# The commands where -w chooses what to read, each run asking about a workspace the vault
# lacks; the others' -w says where to write (a new workspace is made by its first add).
READS_A_WORKSPACE: dict[str, list[str]] = {
    "search": ["search", "deploy"],
    "list": ["list"],
    "audit": ["audit"],
    "export": ["export"],
    "conflicts": ["conflicts"],
    "stats": ["stats"],
    "view": ["view", "-o", "PAGE"],
}
WRITES_TO_A_WORKSPACE = {"add", "import", "ingest", "share", "serve"}


def test_every_command_taking_w_says_whether_it_reads_or_writes_there() -> None:
    app = typer.main.get_command(typer_app())
    taking = set()
    for name in every_command():
        command = app
        for word in name.split():
            command = command.commands[word]  # type: ignore[attr-defined]
        if any("-w" in param.opts for param in command.params):
            taking.add(name)
    assert taking == set(READS_A_WORKSPACE) | WRITES_TO_A_WORKSPACE


@pytest.mark.parametrize(
    ("name", "as_json"),
    [
        (name, as_json)
        for name in sorted(READS_A_WORKSPACE)
        for as_json in (False, True)
        if not (name == "export" and as_json)
    ],  # export's output is JSON already
)
def test_a_workspace_the_vault_lacks_is_an_empty_answer_a_note_and_exit_0(
    name: str, as_json: bool, seeded: Path, tmp_path: Path
) -> None:
    """docs/cli.md: a read command asked about a workspace the vault lacks answers with
    nothing and exits 0, as a search with no hit does (a workspace exists from its first
    add on: a new project's is the same as a typo's); one note on stderr names the
    workspaces there are, so a typo does not pass for "nothing there"."""
    args = [str(tmp_path / "page") if arg == "PAGE" else arg for arg in READS_A_WORKSPACE[name]]
    args += ["-w", "typo", *(["--json"] if as_json else [])]
    before = vault_bytes(seeded)

    done = invoke_memstore(*args, vault=seeded, env=NO_DAEMON)

    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith("note: no workspace 'typo' in this vault ("), done.stderr
    assert done.stderr.count("\n") == 1 and "known: " in done.stderr, done.stderr
    if name == "view":  # its stdout is the file it wrote
        assert done.stdout == f"{tmp_path / 'page'}\n"
    elif as_json or name == "export":
        json.loads(done.stdout)
    assert vault_bytes(seeded) == before


def test_the_missing_vault_sentence_is_written_once_and_daemon_stop_says_it_leanly(
    tmp_path: Path,
) -> None:
    """Written in four places before (the service, the daemon's two commands, its server):
    one wording drifting from the others would go unseen. `core/errors.no_vault_at` holds
    it; `daemon --stop` (a lean path: the client only) says it without the service layer."""
    package = Path(__file__).resolve().parents[2] / "memstore"
    holding = [
        path.relative_to(package).as_posix()
        for path in sorted(package.rglob("*.py"))
        if "there is no vault at" in path.read_text(encoding="utf-8")
    ]
    assert holding == ["core/errors.py"]
    missing = tmp_path / "typo"
    script = (
        "import sys\n"
        "from memstore.launcher import main\n"
        f"sys.argv = ['memstore', 'daemon', '--stop', '--vault', {str(missing)!r}]\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as stop:\n"
        "    print(stop.code, sorted(m for m in sys.modules if m.startswith('memstore.service')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.stderr == f"Error: {no_vault_at(missing)}\n", done.stderr
    assert done.stdout == "1 []\n"
