"""`memstore view`: the private page it writes and prints, --json, --open only when asked, and
one-line errors for what it cannot do."""

from __future__ import annotations

import html
import json
import re
import stat
from pathlib import Path

import pytest

from memstore.cli import view as view_command
from memstore.core.secrets import find_secrets
from memstore.ops.view_page import unpack
from tests.conftest import git, invoke_memstore, run_memstore

TOKEN = "ghp_R8x2Lq9ZtV4mW7nB3cY6pK1sD5fH0jG2aE8u"


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    assert invoke_memstore("init", str(root)).returncode == 0
    for text, workspace in (
        ("upload 413 is nginx client_max_body_size; raise it in the server block", "webshop"),
        ("the billing worker retries stripe_webhook_handler 3 times", "billing"),
    ):
        assert invoke_memstore("add", text, "-w", workspace, vault=root).returncode == 0
    notes = root / "webshop" / "deploy-notes-k7deploy.md"
    notes.write_text(f"deploy with token {TOKEN} </script> from the vault\n", encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "notes written by hand")
    return root


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The pages handed to the browser (none is: the opener is replaced)."""
    pages: list[Path] = []

    def opener(path: Path) -> bool:
        pages.append(path)
        return True

    monkeypatch.setattr(view_command, "open_in_browser", opener)
    return pages


def embedded(page: str) -> dict[str, object]:
    found = re.search(
        r'<script type="application/json" id="memstore-data">(.*?)</script>', page, re.DOTALL
    )
    assert found, page[:300]
    return unpack(json.loads(found.group(1)))  # memories and changes are tables in the page


def test_view_writes_a_private_page_in_the_vault_and_prints_its_path(
    vault: Path, opened: list[Path]
) -> None:
    done = invoke_memstore("view", vault=vault)
    page = vault / ".memstore" / "view.html"
    assert done.returncode == 0 and done.stdout == f"{page}\n", done.stderr
    assert stat.S_IMODE(page.stat().st_mode) == 0o600
    text = page.read_text(encoding="utf-8")
    data = embedded(text)
    assert data["schema"] == 1 and len(data["memories"]) == 3  # type: ignore[arg-type]
    assert TOKEN not in text and "[secret: a GitHub token]" in text
    assert find_secrets(html.unescape(text)) == []
    assert "</script> from" not in text  # the data cannot close its own script element
    assert opened == []  # nothing opens unasked
    assert "view.html" not in git(vault, "status", "--porcelain")  # outside git


def test_view_opens_the_page_only_with_open(
    vault: Path, opened: list[Path], tmp_path: Path
) -> None:
    target = tmp_path / "out" / "page.html"
    target.parent.mkdir()
    target.write_text("old", encoding="utf-8")
    target.chmod(0o644)
    done = invoke_memstore("view", "-o", str(target), "--open", vault=vault)
    assert done.returncode == 0, done.stderr
    assert opened == [target] and done.stdout == f"{target}\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600  # a file it replaces becomes private
    assert [p.name for p in target.parent.iterdir()] == ["page.html"]  # no temp file left


def test_view_json_prints_or_writes_the_data(vault: Path, tmp_path: Path) -> None:
    printed = invoke_memstore("view", "--json", "-w", "billing", vault=vault)
    assert printed.returncode == 0, printed.stderr
    data = json.loads(printed.stdout)
    assert [m["workspace"] for m in data["memories"]] == ["billing"]
    out = tmp_path / "view.json"
    written = invoke_memstore("view", "--json", "-o", str(out), "--since", "7d", vault=vault)
    assert written.returncode == 0 and written.stdout == f"{out}\n"
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert json.loads(out.read_text(encoding="utf-8"))["vault"]["since"]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["-w", "nowhere"], "Error: no memory in workspace 'nowhere'; workspaces: "),  # as stats -w
    ],
)
def test_view_refuses_bad_options_in_one_line(
    vault: Path, opened: list[Path], args: list[str], said: str
) -> None:
    done = invoke_memstore("view", *args, "--open", vault=vault)
    assert done.returncode == 1 and done.stderr.startswith(said), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and done.stdout == ""
    assert opened == [] and not (vault / ".memstore" / "view.html").exists()


def test_view_says_in_one_line_when_it_cannot_write_the_file(vault: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    done = invoke_memstore("view", "-o", str(blocker / "page.html"), vault=vault)
    assert done.returncode == 1
    assert done.stderr.startswith(f"Error: cannot write {blocker / 'page.html'}: ")
    assert done.stderr.rstrip().endswith("choose another file with -o")
    assert len(done.stderr.strip().splitlines()) == 1


def test_view_names_a_missing_folder_and_how_to_make_it(vault: Path, tmp_path: Path) -> None:
    # It said "No such file or directory" of the page it was asked to create.
    folder = tmp_path / "not made yet"
    done = invoke_memstore("view", "-o", str(folder / "page.html"), vault=vault)
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert f"there is no folder {folder}; create it (mkdir -p '{folder}')" in done.stderr
    assert not folder.exists()


def test_view_through_the_executable_has_help_with_an_example(vault: Path) -> None:
    helped = run_memstore("view", "--help")
    assert helped.returncode == 0 and "Example:  memstore view --since 7d --open" in helped.stdout
    done = run_memstore("view", vault=vault)
    assert done.returncode == 0 and Path(done.stdout.strip()).is_file(), done.stderr
