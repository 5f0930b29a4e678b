"""`memstore add --cite` and the citations an add records by itself, on the lean and typer paths."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memstore.core.citations import Cite
from memstore.core.codec import parse_memory
from memstore.launcher import typer_app
from memstore.ops.tools import ToolSession
from memstore.ops.tools import run as run_tool
from memstore.service.store import Store
from tests.conftest import commit_count, git, invoke_memstore, settings_at

UPLOAD = '''def handle_upload(request):
    """Store an uploaded file."""
    if len(request.body) > LIMIT:
        raise TooLarge()
    return save(request.body)


class Uploader:
    def handle(self, request):
        return handle_upload(request)
'''
CART_TS = """export function addToCart(cart: Cart, item: Item): Cart {
  return { ...cart, items: [...cart.items, item] };
}

export class CartStore {
  clear(): void {}
}
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "webshop"
    (root / "src").mkdir(parents=True)
    (root / "src" / "upload.py").write_text(UPLOAD, encoding="utf-8")
    (root / "web").mkdir()
    (root / "web" / "cart.ts").write_text(CART_TS, encoding="utf-8")
    (root / "README.md").write_text("# webshop\n", encoding="utf-8")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-qm", "first")
    return root


def cites_of(vault: Path, memory_id: str) -> tuple[Cite, ...]:
    (path,) = vault.rglob(f"*{memory_id}.md")
    return parse_memory(path.read_text(encoding="utf-8"), path="webshop/x.md").cites


def added_id(stdout: str) -> str:
    return stdout.split()[1]


def test_cite_flags_anchor_paths_from_the_callers_folder_and_say_so(
    vault: Path, repo: Path
) -> None:
    done = invoke_memstore(
        "add",
        "uploads over the limit raise TooLarge",
        "--cite",
        "upload.py:handle_upload",
        "--cite",
        "../web/cart.ts:1-3",
        "--cite",
        "../README.md",
        vault=vault,
        cwd=repo / "src",
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1:] == [
        "cited src/upload.py:handle_upload",
        "cited web/cart.ts:1-3",
        "cited README.md",
    ]
    cites = cites_of(vault, added_id(done.stdout))
    assert [c.label for c in cites] == [
        "src/upload.py:handle_upload",
        "web/cart.ts:1-3",
        "README.md",
    ]
    assert {c.repo for c in cites} == {"webshop"}
    blob = git(repo, "hash-object", "src/upload.py").strip()
    assert cites[0].blob == blob and len(cites[0].digest) == 16 and cites[0].at.endswith("Z")


def test_a_cite_that_is_not_there_is_one_line_and_nothing_is_written(
    vault: Path, repo: Path, tmp_path: Path
) -> None:
    before = commit_count(vault)
    cases = [
        (repo, ["--cite", "src/missing.py"], "src/missing.py"),
        (repo, ["--cite", "src/upload.py:no_such"], "no_such"),
        (repo, ["--cite", "src/upload.py:40-90"], "has 10 lines"),
        (repo / "src", ["--cite", "../../outside.py"], "outside the repository"),
        (tmp_path, ["--cite", "anything.py"], "inside the git repository"),
        (vault, ["--cite", "anything.py"], "inside the git repository"),
    ]
    for cwd, flags, named in cases:
        done = invoke_memstore("add", "a memory citing nothing real", *flags, vault=vault, cwd=cwd)
        assert done.returncode == 1, (flags, done.stdout)
        assert named in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert commit_count(vault) == before


def test_the_typer_command_records_the_same_citations(
    vault: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo)
    args = ["add", "the Uploader delegates", "--cite", "src/upload.py:Uploader.handle", "--json"]
    done = CliRunner().invoke(typer_app(), args, env={"MEMSTORE_VAULT": str(vault)})
    assert done.exit_code == 0, done.output
    data = json.loads(done.output)
    assert data["cites"] == ["src/upload.py:Uploader.handle"]
    assert [c.symbol for c in cites_of(vault, data["id"])] == ["Uploader.handle"]


def test_an_add_cites_the_files_and_symbols_its_text_names_by_itself(
    vault: Path, repo: Path
) -> None:
    text = "handle_upload in src/upload.py raises TooLarge past LIMIT; addToCart() in web/cart.ts is fine"
    done = invoke_memstore("add", text, "--json", vault=vault, cwd=repo)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["cites"] == ["src/upload.py:handle_upload", "web/cart.ts:addToCart"]
    assert [c.label for c in cites_of(vault, data["id"])] == data["cites"]
    # a file named with nothing of it named: the whole file; from a subfolder, relative to it
    done = invoke_memstore(
        "add", "see ../README.md before a release", vault=vault, cwd=repo / "src"
    )
    assert done.stdout.splitlines()[1:] == ["cited README.md"]


@pytest.mark.parametrize(
    "text",
    [
        "handle_upload raises TooLarge",  # a symbol, but no file named
        "src/missing.py has handle_upload",  # a file that does not exist
        "the Uploader in src/upload.py is fine",  # a plain word, though the file defines it
        "run make in web before a release",  # a folder, not a file
        "nginx.conf decides the upload limit",  # not a file of this repository
    ],
)
def test_an_add_cites_nothing_that_is_not_certainly_there(
    vault: Path, repo: Path, text: str
) -> None:
    done = invoke_memstore("add", text, "--json", vault=vault, cwd=repo)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    cited = data["cites"]
    assert all(c == "src/upload.py" for c in cited), cited
    assert cited == (["src/upload.py"] if "src/upload.py" in text else [])


def test_an_add_outside_a_repository_cites_nothing(vault: Path, repo: Path, tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "upload.py").write_text(UPLOAD, encoding="utf-8")
    done = invoke_memstore("add", "handle_upload in src/upload.py", vault=vault, cwd=tmp_path)
    assert done.returncode == 0 and "cited" not in done.stdout


def test_a_duplicate_add_adds_its_citations_to_the_memory(vault: Path, repo: Path) -> None:
    text = "uploads are stored by the uploader"
    first = invoke_memstore(
        "add", text, "--cite", "src/upload.py:handle_upload", vault=vault, cwd=repo
    )
    again = invoke_memstore("add", text, "--cite", "web/cart.ts", vault=vault, cwd=repo)
    assert again.returncode == 0, again.stderr
    assert "seen 2 times" in again.stdout and "cited web/cart.ts" in again.stdout
    labels = [c.label for c in cites_of(vault, added_id(first.stdout))]
    assert labels == ["src/upload.py:handle_upload", "web/cart.ts"]


def test_memory_add_takes_cites_from_the_agents_repository(vault: Path, repo: Path) -> None:
    with Store.open(settings_at(vault)) as store:
        session = ToolSession("webshop", "claude-code", lambda: False, str(repo / "web"))
        out = run_tool(
            "memory_add",
            store,
            {
                "content": "CartStore.clear keeps the session",
                "keywords": ["cart"],
                "cites": ["cart.ts:CartStore.clear"],
            },
            session,
        )
        assert out["cites"] == ["web/cart.ts:CartStore.clear"]
        assert "cites" not in run_tool("memory_add", store, {"content": "no code here"}, session)
        with pytest.raises(Exception, match="no function or class nope"):
            run_tool("memory_add", store, {"content": "x y", "cites": ["cart.ts:nope"]}, session)


def test_a_named_file_too_large_to_be_code_is_not_cited(vault: Path, repo: Path) -> None:
    (repo / "data").mkdir()
    (repo / "data" / "dump.csv").write_bytes(b"x" * (3 * 1024 * 1024))
    done = invoke_memstore(
        "add", "data/dump.csv is refreshed nightly", "--json", vault=vault, cwd=repo
    )
    assert json.loads(done.stdout)["cites"] == []
    cited = invoke_memstore(
        "add", "the dump", "--cite", "data/dump.csv", "--json", vault=vault, cwd=repo
    )
    assert json.loads(cited.stdout)["cites"] == ["data/dump.csv"]  # asked for: cited


@pytest.mark.parametrize(
    ("text", "cited"),
    [
        ("Uploader.handle in src/upload.py only delegates", ["src/upload.py:Uploader.handle"]),
        ("src/upload.py:handle and src/upload.py agree", ["src/upload.py:Uploader.handle"]),
        ("src/upload.py:3-4 raises TooLarge", ["src/upload.py:3-4"]),
        ("src/upload.py:no_such_thing is wrong", ["src/upload.py"]),
        (
            "`CartStore` in web/cart.ts and addToCart() there",
            ["web/cart.ts:CartStore", "web/cart.ts:addToCart"],
        ),
    ],
)
def test_what_the_text_writes_after_a_path_or_in_code_form_is_cited(
    vault: Path, repo: Path, text: str, cited: list[str]
) -> None:
    done = invoke_memstore("add", text, "--json", vault=vault, cwd=repo)
    assert json.loads(done.stdout)["cites"] == cited
