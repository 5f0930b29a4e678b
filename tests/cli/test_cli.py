"""The CLI as people use it: typer's CliRunner, and the installed executable in a subprocess."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from memstore import __version__
from memstore.launcher import typer_app
from memstore.ops.options import SEARCH, parse
from tests.cli.help_pages import EVERY_HELP, help_of
from tests.conftest import (
    EXE,
    commit_count,
    git,
    head,
    invoke_memstore,
    run_memstore,
    vault_bytes,
)

app = typer_app()  # every shell's commands, as the executable has them

runner = CliRunner()


def run(
    *args: str, vault: Path | None = None, cwd: Path | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the executable's `main` in this process (the launcher, its lean path, typer)."""
    return invoke_memstore(*args, vault=vault, cwd=cwd, stdin=stdin)


def run_exe(
    *args: str, vault: Path | None = None, cwd: Path | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the installed memstore executable (where the process itself is what is tested)."""
    return run_memstore(*args, vault=vault, cwd=cwd, stdin=stdin, timeout=60)


def new_vault(path: Path) -> Path:
    """Make a vault at `path` with `memstore init` (only ~/memstore is made on first add)."""
    made = run("init", str(path))
    assert made.returncode == 0, made.stderr
    return path


@EVERY_HELP
def test_version_and_help() -> None:
    assert run_exe("--version").stdout.strip() == f"memstore {__version__}"
    # Every command and command group, however deep, shows an example in its --help; so
    # does `memstore --help` itself (the first help a new user reads had none).
    paths: list[list[str]] = [[]]
    groups = [([], typer.main.get_command(app))]
    while groups:
        path, group = groups.pop()
        for name, command in group.commands.items():  # type: ignore[attr-defined]
            if command.hidden:
                continue
            paths.append([*path, name])
            if hasattr(command, "commands"):
                groups.append(([*path, name], command))
    assert {"remote", "add", "search"} <= {p[0] for p in paths if p} and ["remote", "add"] in paths
    for words in paths:
        status, output = help_of(tuple(words))
        assert status == 0 and re.search(r"Examples?:  ", output), words


def _examples(help_text: str) -> list[list[str]]:
    """Return each command line a help's Example(s) paragraph shows, as memstore's arguments
    (an environment assignment before it and a redirection after it left out)."""
    found = re.search(r"Examples?:(.*?)(?:\n\s*\n|$)", help_text, re.S)
    assert found is not None, help_text
    lines = []
    for part in re.split(r" ; |\s+(?=memstore )", " ".join(found.group(1).split())):
        words = shlex.split(part)
        while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
            words.pop(0)  # MEMSTORE_SEMANTIC=on memstore eval
        if not words:
            continue
        assert words[0] == "memstore", part
        while len(words) > 2 and words[-2] in ("<", ">"):
            del words[-2:]  # < payload.json, > eval.json
        lines.append(words[1:])
    return lines


def test_every_example_runs_its_own_command_with_options_it_has() -> None:
    # An example naming an option the command lost, or another command, would teach a new
    # user a usage error: each is parsed by the command it names, as the shell would.
    root = typer.main.get_command(app)
    pending: list[tuple[list[str], typer.core.TyperGroup]] = [([], root)]  # type: ignore[list-item]
    seen = 0
    while pending:
        path, group = pending.pop()
        for name, command in [("", group), *group.commands.items()]:  # type: ignore[attr-defined]
            words = [*path, name] if name else path
            if command.hidden or (name and hasattr(command, "commands")):
                if name and not command.hidden:
                    pending.append((words, command))  # its own help is read in its turn
                continue
            for example in _examples(command.help or ""):
                target, rest = root, list(example)
                named: list[str] = []
                while hasattr(target, "commands") and rest and rest[0] in target.commands:
                    named.append(rest[0])
                    target = target.commands[rest.pop(0)]
                assert named[: len(words)] == words, (words, example)
                target.make_context(" ".join(["memstore", *named]), rest)  # a usage error raises
                seen += 1
    assert seen >= 50


def test_init_creates_a_private_vault_with_its_git_files(tmp_path: Path) -> None:
    target = tmp_path / "v"
    result = run_exe("init", str(target))
    assert result.returncode == 0, result.stderr
    assert (target / ".gitignore").read_text(encoding="utf-8") == ".memstore/\n"
    assert (target / ".gitattributes").read_text(encoding="utf-8") == "*.md merge=memstore\n"
    assert oct(target.stat().st_mode & 0o777) == "0o700"
    assert oct((target / ".gitignore").stat().st_mode & 0o777) == "0o600"
    assert git(target, "log", "--format=%s") == "init: memstore vault\n"
    assert run("init", str(target)).returncode == 0  # idempotent
    assert commit_count(target) == 1


def test_init_adopts_an_existing_repository(tmp_path: Path) -> None:
    target = tmp_path / "existing"
    target.mkdir()
    git(target, "init", "-q")
    (target / ".gitignore").write_text("*.log", encoding="utf-8")
    assert run("init", str(target)).returncode == 0
    assert (target / ".gitignore").read_text(encoding="utf-8") == "*.log\n.memstore/\n"


def test_init_refuses_a_folder_inside_another_repository(tmp_path: Path) -> None:
    outer = tmp_path / "project"
    (outer / "sample-vault").mkdir(parents=True)
    git(outer, "init", "-q")
    result = run("init", str(outer / "sample-vault"))
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "inside the git repository" in result.stderr
    assert not (outer / "sample-vault" / ".git").exists()
    assert "cp -r" in result.stderr  # a folder with files: copy it out
    missing = run("init", str(outer / "new-vault"))
    assert missing.returncode == 1 and "choose a folder outside it" in missing.stderr
    assert "cp -r" not in missing.stderr and not (outer / "new-vault").exists()
    add = run("add", "a fact", vault=outer / "sample-vault")
    assert add.returncode == 1 and "memstore init" in add.stderr


def test_vault_path_that_is_a_file(tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_text("x", encoding="utf-8")
    for args in (("init", str(target)), ("add", "hello"), ("search", "hello")):
        result = run(*args, vault=target)
        assert (
            result.returncode == 1
            and "is a file" in result.stderr
            and result.stderr.count("\n") == 1
        )


def test_add_search_show_stats_through_the_executable(tmp_path: Path) -> None:
    vault = new_vault(tmp_path / "v")
    added = run_exe(
        "add",
        "Upload 413 is nginx client_max_body_size",
        "-w",
        "webshop",
        "--kind",
        "lesson",
        "-K",
        "nginx",
        "--json",
        vault=vault,
    )
    assert added.returncode == 0, added.stderr
    data = json.loads(added.stdout)
    assert data["status"] == "added" and data["workspace"] == "webshop"
    again = json.loads(
        run_exe(
            "add",
            "upload 413 is nginx  client_max_body_size",
            "-w",
            "webshop",
            "--json",
            vault=vault,
        ).stdout
    )
    assert again["status"] == "duplicate_merged" and again["seen"] == 2
    found = json.loads(run_exe("search", "nginx 413", "--all", "--json", vault=vault).stdout)
    assert [r["id"] for r in found["results"]] == [data["id"]] and found["weak"] is False
    text = run_exe("search", "nginx", "-w", "webshop", vault=vault).stdout
    assert data["id"] in text and "webshop · lesson" in text
    shown = run_exe("show", data["id"][:4], vault=vault)
    assert shown.stderr == f"# {data['path']}\n"  # stdout is the file itself, byte for byte
    assert shown.stdout.encode() == (vault / data["path"]).read_bytes()
    stats = json.loads(run_exe("stats", "--json", vault=vault).stdout)
    assert stats["memories"] == 1 and stats["by_workspace"] == {"webshop": 1}
    assert "seen(webshop)" in run_exe("stats", vault=vault).stdout


def test_add_reads_stdin_with_dash(tmp_path: Path) -> None:
    vault = new_vault(tmp_path / "v")
    result = run("add", "-", "-w", "global", "--json", vault=vault, stdin="from a pipe\n")
    assert json.loads(result.stdout)["status"] == "added"


def test_workspace_is_detected_from_the_current_repository(tmp_path: Path) -> None:
    project = tmp_path / "Shop Front"
    project.mkdir()
    git(project, "init", "-q")
    new_vault(tmp_path / "v")
    assert (
        json.loads(run("add", "one", "--json", vault=tmp_path / "v", cwd=project).stdout)[
            "workspace"
        ]
        == "shop-front"
    )
    git(project, "remote", "add", "origin", "git@github.com:acme/webshop.git")
    assert (
        json.loads(run("add", "two", "--json", vault=tmp_path / "v", cwd=project).stdout)[
            "workspace"
        ]
        == "webshop"
    )
    elsewhere = tmp_path / "plain"
    elsewhere.mkdir()
    assert (
        json.loads(run("add", "three", "--json", vault=tmp_path / "v", cwd=elsewhere).stdout)[
            "workspace"
        ]
        == "global"
    )
    scoped = json.loads(run("search", "two", "--json", vault=tmp_path / "v", cwd=project).stdout)
    assert scoped["workspace"] == "webshop" and len(scoped["results"]) == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("add", "-"), "empty"),  # an empty stdin; `add ""` is a usage error (exit 2)
        # a bad -w is a usage error (exit 2): tests/cli/test_usage_errors.py
        (("add", "a fact", "--supersedes", "nope1234"), "supersedes 'nope1234'"),
        (("show", "zzzz"), "no memory with id"),
        (("show", "../../etc/passwd"), "not a memory id"),
    ],
)
def test_errors_are_one_line_exit_1_and_change_nothing(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    vault = new_vault(tmp_path / "v")
    assert run("add", "seed", "-w", "global", vault=vault).returncode == 0
    before = (head(vault), vault_bytes(vault))
    result = run(*args, vault=vault)
    assert result.returncode == 1, result.stdout
    assert (
        result.stderr.startswith("Error: ")
        and result.stderr.count("\n") == 1
        and message in result.stderr
    )
    assert (head(vault), vault_bytes(vault)) == before


def test_text_with_nul_bytes_from_stdin_is_refused(tmp_path: Path) -> None:
    vault = new_vault(tmp_path / "v")
    run("add", "seed", vault=vault)
    before = head(vault)
    result = run("add", "-", vault=vault, stdin="bin\0ary")
    assert result.returncode == 1 and "NUL" in result.stderr and head(vault) == before


def test_an_empty_stdin_is_input_not_usage_exit_1_and_nothing_written(tmp_path: Path) -> None:
    """docs/cli.md: `add " "` is the command line's fault (2); an empty pipe is input (1)."""
    vault = new_vault(tmp_path / "v")
    run("add", "seed", vault=vault)
    before = head(vault)
    piped = run("add", "-", vault=vault, stdin=" \n")
    assert piped.returncode == 1 and "memory text is empty" in piped.stderr
    assert run("add", " ", vault=vault).returncode == 2
    assert head(vault) == before


TOO_SHORT = "memory text 'x' is too short to recall; write the fact itself in words"


def test_a_text_too_short_to_recall_is_refused_as_memory_add_refuses_it(tmp_path: Path) -> None:
    """`memstore add x` stored a one-letter memory (trial 14): on the command line it is a
    usage error (2), from stdin an input error (1), with the line memory_add gives
    (tests/mcp/test_mcp.py); two letters or digits in any script are enough."""
    vault = new_vault(tmp_path / "v")
    run("add", "seed memory", vault=vault)
    before = head(vault)
    typed = run("add", "x", vault=vault)
    assert typed.returncode == 2 and f"Invalid value for TEXT: {TOO_SHORT}" in typed.stderr
    for text in ("?", "— ", "7"):
        assert run("add", text, vault=vault).returncode == 2
    piped = run("add", "-", vault=vault, stdin="x\n")
    assert piped.returncode == 1 and piped.stderr == f"Error: {TOO_SHORT}, e.g. " + (
        '"staging deploys need approval from @maria"\n'
    )
    assert head(vault) == before
    for text in ("ok", "42", "猫猫"):
        assert run("add", text, vault=vault).returncode == 0


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    assert run_exe("add", "x", "--kind", vault=tmp_path / "v").returncode == 2
    assert run_exe("search", "x", "-k", "0", vault=tmp_path / "v").returncode == 2
    assert run_exe("frobnicate").returncode == 2


def test_search_without_a_vault_says_how_to_start(tmp_path: Path) -> None:
    result = run("search", "x", vault=tmp_path / "none")
    assert result.returncode == 1 and "memstore init" in result.stderr


def test_lean_search_path_prints_what_the_typer_command_prints(sample_vault: Path) -> None:
    for args in (
        ["nginx upload"],
        ["deploy", "-w", "webshop", "-k", "3"],
        ["zebra nginx", "--all"],
        ["nothing-here", "--json"],
    ):
        lean = run("search", *args, vault=sample_vault)
        typer_result = runner.invoke(
            app, ["search", *args], env={"MEMSTORE_VAULT": str(sample_vault)}
        )
        assert lean.returncode == typer_result.exit_code == 0
        assert lean.stdout == typer_result.output


def test_lean_add_path_prints_what_the_typer_command_prints(tmp_path: Path) -> None:
    one, two = new_vault(tmp_path / "one"), new_vault(tmp_path / "two")
    for args in (
        ["Redis runs on 6380 in dev", "-w", "infra", "-K", "redis", "--keyword", "port"],
        ["Redis runs on 6380 in dev", "-w", "infra", "--json"],
        ["Deploys need approval", "--kind", "lesson", "--source", "human", "--workspace=webshop"],
    ):
        lean = run("add", *args, vault=one)
        typer_result = runner.invoke(app, ["add", *args], env={"MEMSTORE_VAULT": str(two)})
        assert lean.returncode == typer_result.exit_code == 0, lean.stderr
        if "--json" in args:  # the same fields; commit ids differ between the two vaults
            mine, theirs = json.loads(lean.stdout), json.loads(typer_result.output)
            assert mine.pop("commit") != "" and theirs.pop("commit") != "" and mine == theirs
        else:
            assert lean.stdout == typer_result.output

    def without_times(files: dict[str, bytes]) -> dict[str, list[bytes]]:
        # (each vault counts under its own clone name: seen_by differs in that name only)
        return {
            p: [
                line
                for line in data.splitlines()
                if not line.startswith((b"created:", b"seen_by:", b"recalled_by:"))
            ]
            for p, data in files.items()
        }

    assert without_times(vault_bytes(one)) == without_times(vault_bytes(two))


def test_lean_parser_defers_what_it_does_not_know() -> None:
    def search(argv: list[str]) -> dict | None:
        return parse(argv, SEARCH, "query")

    assert search(["q", "-k", "3", "--all"]) == {"query": ["q"], "k": ["3"], "all": ["1"]}
    assert search(["--", "-dash"]) == {"query": ["-dash"]}
    assert search(["-"]) == {"query": ["-"]}
    assert search(["a", "b"]) == {"query": ["a b"]}  # unquoted words are one query
    for argv in (["--help"], ["q", "--bogus"], [], ["q", "-w"]):
        assert search(argv) is None, argv


def test_reindex_and_demo(tmp_path: Path) -> None:
    demo = run("demo", str(tmp_path / "demo"))
    assert demo.returncode == 0, demo.stderr
    assert "duplicate_merged" in demo.stdout and "git log" in demo.stdout
    # The add the demo names is the add it made: its kind and every -K are in the file it shows.
    named = re.search(r"memstore add \"…\" -w webshop (.*?)   \(", demo.stdout)
    assert named, demo.stdout
    shown = demo.stdout.split("memstore show", 1)[1]
    kind = re.search(r"--kind (\w+)", named[1])
    assert kind and f"kind: {kind[1]}" in shown
    words = re.findall(r"-K (\S+)", named[1])
    stored = re.search(r"keywords: \[(.*)\]", shown)
    assert words and stored
    assert set(words) <= {w.strip(' "') for w in stored[1].split(",")}, (words, stored[1])
    again = run("reindex", "--json", vault=tmp_path / "demo")
    assert json.loads(again.stdout)["indexed"] >= 40
    assert run("demo", str(tmp_path / "demo")).returncode == 1  # not empty: refused


def test_read_only_vault_is_a_clear_error(tmp_path: Path) -> None:
    vault = new_vault(tmp_path / "v")
    assert run("add", "seed", vault=vault).returncode == 0
    before = (head(vault), vault_bytes(vault))
    if os.geteuid() == 0:  # root ignores permissions: make the mount itself read-only
        assert shutil.which("unshare"), "unshare is needed to test a read-only vault as root"
        script = f'mount --bind -o ro "{vault}" "{vault}" && exec "{EXE}" add second -w global'
        result = subprocess.run(
            ["unshare", "-m", "sh", "-c", script],
            capture_output=True,
            text=True,
            env={**os.environ, "MEMSTORE_VAULT": str(vault)},
            timeout=60,
        )
    else:
        for folder in (vault, vault / ".memstore", vault / "global"):
            folder.chmod(0o500)
        result = run_exe("add", "second", "-w", "global", vault=vault)
        for folder in (vault, vault / ".memstore", vault / "global"):
            folder.chmod(0o700)
    assert (
        result.returncode == 1
        and result.stderr.startswith("Error: ")
        and result.stderr.count("\n") == 1
    )
    assert "read-only" in result.stderr or "permission" in result.stderr.lower()
    assert (head(vault), vault_bytes(vault)) == before


@pytest.mark.parametrize("args", [["search", "deploy", "--all", "--json"], ["log"], ["stats"]])
def test_a_reader_that_leaves_early_ends_the_command_quietly(
    sample_vault: Path, args: list[str]
) -> None:
    env = {**os.environ, "MEMSTORE_VAULT": str(sample_vault)}
    subprocess.run([str(EXE), "reindex"], env=env, check=True, capture_output=True)
    # `memstore … | head -0`: the pipe's reader is gone before anything is written
    with subprocess.Popen(
        [str(EXE), *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()
        err = proc.stderr.read()
        assert proc.wait(timeout=60) == -13  # ended by SIGPIPE, like cat or git
    assert err == b""  # no traceback, no "Exception ignored"


def test_text_that_starts_with_a_dash_is_text(tmp_path: Path) -> None:
    vault = new_vault(tmp_path / "v")
    added = run("add", "- staging deploys need approval", "-w", "webshop", vault=vault)
    assert added.returncode == 0, added.stderr
    assert (
        "- staging deploys need approval"
        in run("search", "- staging deploys", "-w", "webshop", vault=vault).stdout
    )
    flag_like = run("search", "-w", "webshop", "--", "-Werror", vault=vault)
    assert flag_like.returncode == 0 and "No memory matches '-Werror'" in flag_like.stdout


# --- bad bytes and control characters ---------------------------------------------------

# Python's strict handling, as under an en_US.UTF-8 locale (the C.UTF-8 locale of CI would
# hide a crash behind surrogateescape).
STRICT = {"PYTHONIOENCODING": "utf-8:strict"}
TYPER_MAIN = [
    sys.executable,
    "-c",
    "from memstore.cli.app import run; from memstore.launcher import typer_app; run(typer_app())",
]


def run_bytes(
    command: list[str], args: list[bytes], vault: Path, stdin: bytes = b""
) -> subprocess.CompletedProcess[bytes]:
    """Run a memstore entry with raw bytes as arguments and stdin."""
    env = {**os.environ, **STRICT, "MEMSTORE_VAULT": str(vault)}
    return subprocess.run(
        [*command, *args], env=env, input=stdin, capture_output=True, timeout=60, check=False
    )


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        ([b"add", b"-", b"-w", b"global"], b"caf\xe9 in latin-1\n", b"standard input is not"),
        ([b"add", b"caf\xe9 in latin-1", b"-w", b"global"], b"", b"not valid UTF-8"),
        ([b"add", b"fine text", b"-K", b"\xff\xfe"], b"", b"not valid UTF-8"),
    ],
)
def test_invalid_utf8_is_one_line_error_on_both_paths_and_writes_nothing(
    tmp_path: Path, args: list[bytes], stdin: bytes, message: bytes
) -> None:
    vault = new_vault(tmp_path / "v")
    assert run("add", "seed", "-w", "global", vault=vault).returncode == 0
    before = (head(vault), vault_bytes(vault))
    lean = run_bytes([str(EXE)], args, vault, stdin)
    full = run_bytes(TYPER_MAIN, args, vault, stdin)
    assert lean.returncode == full.returncode == 1, lean.stderr
    assert lean.stderr.startswith(b"Error: ") and lean.stderr.count(b"\n") == 1, lean.stderr
    assert message in lean.stderr and lean.stderr == full.stderr
    assert lean.stdout == full.stdout == b""
    assert (head(vault), vault_bytes(vault)) == before


def test_stdin_in_utf8_with_crlf_is_added(tmp_path: Path) -> None:
    vault = new_vault(tmp_path / "v")
    done = run_bytes([str(EXE)], [b"add", b"-", b"--json"], vault, "café\r\nline two\r\n".encode())
    assert done.returncode == 0, done.stderr
    path = vault / json.loads(done.stdout)["path"]
    assert path.read_bytes().endswith("café\nline two\n".encode())


def test_stdin_with_a_byte_order_mark_is_added_without_it(tmp_path: Path) -> None:
    """Found by the fifteenth session's trial: `add -` kept a BOM (PowerShell's pipes, Windows
    editors' files) as the text's first character, and the same text typed was a second memory."""
    vault = new_vault(tmp_path / "v")
    text = "celery beat reads its schedule from the database"
    piped = run_bytes([str(EXE)], [b"add", b"-", b"--json"], vault, b"\xef\xbb\xbf" + text.encode())
    assert piped.returncode == 0, piped.stderr
    added = json.loads(piped.stdout)
    assert "\ufeff" not in (vault / added["path"]).read_text(encoding="utf-8")
    typed = run("add", text, "--json", vault=vault)
    assert typed.returncode == 0, typed.stderr
    assert (json.loads(typed.stdout)["id"], json.loads(typed.stdout)["seen"]) == (added["id"], 2)


HOSTILE = "red \x1b[31mALERT\x1b[0m \x1b]0;title\x07 \u202eevil\u202c \x9b2J bell\x07 cr\rover"


def hostile_vault(tmp_path: Path) -> tuple[Path, str]:
    vault = new_vault(tmp_path / "v")
    added = run("add", HOSTILE, "-w", "global", "-K", "alert", "--json", vault=vault)
    assert added.returncode == 0, added.stderr
    return vault, json.loads(added.stdout)["id"]


def test_search_prints_control_characters_as_escapes_and_json_keeps_them(
    tmp_path: Path,
) -> None:
    vault, memory_id = hostile_vault(tmp_path)
    env = {"MEMSTORE_VAULT": str(vault)}
    for args in (["ALERT"], ["ALERT", "--context"], ["nothing\x1b[2J"]):
        lean = run_bytes([str(EXE)], [b"search", *(a.encode() for a in args)], vault)
        typer_result = runner.invoke(app, ["search", *args], env=env)
        assert lean.returncode == typer_result.exit_code == 0
        assert lean.stdout == typer_result.stdout_bytes
        shown = lean.stdout.decode("utf-8")
        for char in "\x1b\x07\x9b\u202e\u202c\r":
            assert char not in shown, (args, char)
    shown = runner.invoke(app, ["search", "ALERT"], env=env).output
    assert "red \\x1b[31mALERT\\x1b[0m" in shown and "\\u202eevil" in shown
    raw = run("search", "ALERT", "--json", vault=vault).stdout
    assert "\\u001b[31m" in raw and "\\u202e" in raw and "\x1b" not in raw
    assert json.loads(raw)["results"][0]["content"] == HOSTILE + "\n"
    assert memory_id in shown


def test_show_is_byte_exact_when_piped_and_escaped_on_a_terminal(tmp_path: Path) -> None:
    import pty

    vault, memory_id = hostile_vault(tmp_path)
    path = next((vault / "global").rglob("*.md"))
    path.write_bytes(path.read_bytes() + b"latin-1 \xe9 by hand")  # no final newline
    git(vault, "commit", "-qam", "hand edit")
    piped = run_bytes([str(EXE)], [b"show", memory_id.encode()], vault)
    assert piped.returncode == 0 and piped.stdout == path.read_bytes()
    main_fd, terminal = pty.openpty()
    env = {**os.environ, "MEMSTORE_VAULT": str(vault)}
    with subprocess.Popen(
        [str(EXE), "show", memory_id], stdout=terminal, stderr=subprocess.PIPE, env=env
    ) as proc:
        os.close(terminal)
        seen = b""
        while True:
            try:
                chunk = os.read(main_fd, 65536)  # EIO once the process closed the terminal
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
        assert proc.wait(timeout=60) == 0
    os.close(main_fd)
    text = seen.decode("utf-8").replace("\r\n", "\n")  # the terminal's own line discipline
    assert "\x1b" not in text and "\u202e" not in text and "\x07" not in text
    assert "red \\x1b[31mALERT" in text and "latin-1 \ufffd by hand\n" in text


def test_confirm_on_a_hand_written_file_changes_only_its_counter_line(tmp_path: Path) -> None:
    vault = tmp_path / "v"
    assert run("init", str(vault)).returncode == 0
    text = (
        "---\n"
        "# my own notes on this one\n"
        "id: hand1234\n"
        "kind: lesson            # I set this\n"
        "keywords:\n"
        "  - nginx\n"
        "  - '413'\n"
        "tags: [ops]   # mine\n"
        "---\n"
        "upload 413 is nginx client_max_body_size\n"
    )
    (vault / "infra").mkdir()
    (vault / "infra" / "upload-limit.md").write_text(text, encoding="utf-8")
    git(vault, "add", "-A")
    git(vault, "commit", "-qm", "hand-written")
    for times in (1, 2):
        done = run("confirm", "hand1234", vault=vault)
        assert done.returncode == 0, done.stderr
        replica = (vault / ".memstore" / "state" / "replica").read_text("utf-8").split()[0]
        diff = git(vault, "show", "--format=", "--unified=0", "HEAD").splitlines()
        changes = [line for line in diff if line[:1] in "+-" and line[:3] not in ("+++", "---")]
        assert changes == (
            ["+confirmed: 1", f"+confirmed_by: {{{replica}: 1}}"]
            if times == 1
            else [
                "-confirmed: 1",
                f"-confirmed_by: {{{replica}: 1}}",
                "+confirmed: 2",
                f"+confirmed_by: {{{replica}: 2}}",
            ]
        ), diff
    expected = text.replace(
        "tags: [ops]   # mine\n",
        f"tags: [ops]   # mine\nconfirmed: 2\nconfirmed_by: {{{replica}: 2}}\n",
    )
    assert (vault / "infra" / "upload-limit.md").read_text(encoding="utf-8") == expected


def test_benchmark_prints_its_numbers_in_one_column(vault: Path, tmp_path: Path) -> None:
    # Before (issue 36) each row had its own padding: the numbers did not line up, and an
    # instruction file's row had no column at all.
    for n in range(12):  # two digits in "core memories (12)"
        added = run("add", f"standing rule {n}: run make check", "--kind", "core", vault=vault)
        assert added.returncode == 0, added.stderr
    project = tmp_path / "project"
    (project / ".cursor" / "rules").mkdir(parents=True)
    (project / "CLAUDE.md").write_text("Use pnpm, never npm.\n" * 400, encoding="utf-8")
    (project / ".cursor" / "rules" / "style.mdc").write_text("Tabs.\n", encoding="utf-8")
    done = run("benchmark", vault=vault, cwd=project)
    assert done.returncode == 0, done.stderr
    rows = done.stdout.splitlines()[1:]
    assert len(rows) == 7 and "core memories (12)" in rows[2]
    ends = {re.match(r"  \S.*?  +[\d,]+", row).end() for row in rows}  # type: ignore[union-attr]
    assert len(ends) == 1, done.stdout
    assert rows[-1].startswith("  instruction files, total ") and rows[-1].endswith(" vs memstore)")


def test_sync_uses_the_remote_that_remote_add_named(tmp_path: Path) -> None:
    vault = new_vault(tmp_path / "v")
    backup = tmp_path / "backup.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(backup))
    assert run("add", "the heron nests by the weir", vault=vault).returncode == 0
    added = run("remote", "add", "backup", str(backup), vault=vault)
    assert "branch main tracks backup/main" in added.stdout, added.stdout
    assert added.stdout.endswith("Next:  memstore sync\n")
    synced = run("sync", vault=vault)  # before: "the vault has no remote 'origin'"
    assert synced.returncode == 0, synced.stderr
    assert git(backup, "rev-parse", "main") == git(vault, "rev-parse", "HEAD")
    assert run("remote", "show", vault=vault).stdout == f"{backup}\n"
    typo = run("sync", "--remote", "bakcup", vault=vault)  # found by the eleventh trial
    assert typo.returncode == 1 and typo.stderr == (
        "Error: the vault has no remote 'bakcup' (it has: backup); sync one with 'memstore "
        "sync --remote backup', or add this one with 'memstore remote add bakcup URL'\n"
    ), typo.stderr
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(tmp_path / "other.git"))
    other = run("remote", "add", str(tmp_path / "other.git"), vault=vault)  # origin now
    assert "memstore sync uses backup" in other.stdout
    assert other.stdout.endswith("Next:  memstore sync --remote origin\n")
