"""`memstore check` on a team repository's plain checkout, as CI runs it (issue 40); and the
CI jobs docs/team.md ships run a command line the CLI accepts."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from memstore.core.merge import conflict_body
from memstore.vault.files import GITATTRIBUTES
from tests.conftest import SAMPLE_VAULT, git, invoke_memstore, vault_bytes
from tests.service.team_hosts import AWS_KEY_ID

DOC = Path(__file__).resolve().parents[2] / "docs" / "team.md"
GOOD = "---\nid: {id}\nkind: note\nkeywords: [deploy]\nseen: 1\n---\n{text}\n"


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A plain checkout of a team vault: memory files and git, no .memstore folder."""
    path = tmp_path / "checkout"
    shutil.copytree(SAMPLE_VAULT, path)
    (path / ".gitattributes").write_text(GITATTRIBUTES, encoding="utf-8")  # as init writes it
    git(path, "init", "-q", "-b", "main")
    git(path, "add", "-A")
    git(path, "commit", "-qm", "team vault")
    return path


def _write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_a_clean_checkout_passes_and_nothing_is_written_into_it(checkout: Path) -> None:
    before = vault_bytes(checkout)

    done = invoke_memstore("check", str(checkout))

    assert done.returncode == 0, done.stdout
    assert done.stdout == ""
    assert re.fullmatch(r"checked \d+ memory files: no problems\n", done.stderr)
    assert not (checkout / ".memstore").exists()
    assert vault_bytes(checkout) == before
    assert git(checkout, "status", "--porcelain") == ""


def test_each_broken_file_is_one_file_line_message(checkout: Path) -> None:
    _write(
        checkout,
        "webshop/2026-01/bad-count-aaaa1111.md",
        GOOD.replace("seen: 1", "seen: many").format(id="aaaa1111", text="Counting goes wrong"),
    )
    _write(
        checkout,
        "webshop/2026-01/unclosed-bbbb2222.md",
        "---\nid: bbbb2222\nkind: note\nno closing line\n",
    )
    _write(
        checkout, "webshop/2026-01/first-cccc3333.md", GOOD.format(id="cccc3333", text="One text")
    )
    _write(
        checkout, "ops/2026-01/again-cccc3333.md", GOOD.format(id="cccc3333", text="Another text")
    )
    conflicted = GOOD.format(id="dddd4444", text=conflict_body("Port 8080", "Port 8443").rstrip())
    _write(
        checkout,
        "webshop/2026-01/port-dddd4444.md",
        conflicted.replace("seen: 1\n", "seen: 1\nconflict: true\n"),
    )
    _write(
        checkout,
        "webshop/2026-01/git-eeee5555.md",
        GOOD.format(id="eeee5555", text="<<<<<<< HEAD\nmine\n=======\ntheirs\n>>>>>>> other"),
    )
    _write(
        checkout,
        "webshop/2026-01/key-ffff6666.md",
        GOOD.format(id="ffff6666", text=f"The deploy key id:\n{AWS_KEY_ID}"),
    )
    _write(checkout, "Web Shop/2026-01/x-gggg7777.md", GOOD.format(id="gggg7777", text="Folder"))
    _write(checkout, "webshop/notes.txt", "not a memory")
    _write(checkout, "memstore.toml", 'review = "sometimes"\n')

    done = invoke_memstore("check", str(checkout))

    assert done.returncode == 1
    lines = done.stdout.splitlines()
    expected = [
        "Web Shop/:1: folder 'Web Shop' is not a workspace name",
        "memstore.toml:1: review is 'sometimes'",
        "webshop/2026-01/first-cccc3333.md:2: id cccc3333 is also used by ops/2026-01/again",
        "webshop/2026-01/bad-count-aaaa1111.md:5: seen is not a whole number",
        "webshop/2026-01/git-eeee5555.md:7: git conflict markers",
        "webshop/2026-01/key-ffff6666.md:8: holds what looks like",
        "webshop/2026-01/port-dddd4444.md:6: holds versions sync kept apart",
        "webshop/2026-01/unclosed-bbbb2222.md:1: front matter opened with '---' is never closed",
        "webshop/notes.txt:1: not a memory file",
    ]
    for start in expected:
        assert any(line.startswith(start) for line in lines), (start, lines)
    assert len(lines) == len(expected), lines
    assert AWS_KEY_ID not in done.stdout
    assert not (checkout / ".memstore").exists()


def test_github_format_emits_workflow_annotations(checkout: Path) -> None:
    _write(
        checkout,
        "webshop/2026-01/bad, name-aaaa1111.md",
        GOOD.replace("seen: 1", "seen: many").format(id="aaaa1111", text="x"),
    )

    done = invoke_memstore("check", str(checkout), "--format", "github")

    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        "::error file=webshop/2026-01/bad%2C name-aaaa1111.md,line=5::seen is not a whole number: 'many'"
    ]
    wrong = invoke_memstore("check", str(checkout), "--format", "gitlab")
    assert wrong.returncode == 2 and "--format" in wrong.stderr


def test_check_of_a_missing_folder_says_so(tmp_path: Path) -> None:
    done = invoke_memstore("check", str(tmp_path / "nowhere"))
    assert done.returncode == 1 and "is not a folder" in done.stderr


def _ci_commands() -> list[str]:
    """Every `memstore check` command line in docs/team.md's CI jobs and hook."""
    text = DOC.read_text(encoding="utf-8")
    found = re.findall(r"(?m)^\s*(?:(?:-|run:|script:)\s*)*(memstore check[^\n#]*)", text)
    return sorted({line.strip() for line in found if "`" not in line})


def test_the_ci_jobs_in_the_docs_run_a_command_line_the_cli_accepts(checkout: Path) -> None:
    commands = _ci_commands()
    assert any("--format github" in c for c in commands), commands  # the GitHub workflow
    assert len(commands) >= 2, commands  # the GitLab job and the hook run it too
    _write(
        checkout,
        "webshop/2026-01/bad-aaaa1111.md",
        GOOD.replace("seen: 1", "seen: many").format(id="aaaa1111", text="x"),
    )
    for command in commands:
        args = command.split()[1:]
        args = [
            str(checkout) if a in (".", '"$work"', "$work", "$CI_PROJECT_DIR") else a for a in args
        ]
        done = invoke_memstore(*args)
        assert done.returncode == 1, (command, done.stderr)  # it ran, and the broken file fails it
        assert "bad-aaaa1111.md" in done.stdout, command
