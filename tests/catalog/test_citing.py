"""Citations against a real git repository: anchored, then the code edited, moved, deleted."""

from __future__ import annotations

import os
from pathlib import Path

import pygit2
import pytest

from memstore.catalog.citing import CiteChecker, anchor, locate, parse_spec, relative_spec
from memstore.core.errors import InvalidInputError
from tests.conftest import git

NOW = "2026-12-06T10:00:00Z"

UPLOAD = '''"""Uploads."""

import os


def handle_upload(request):
    """Store an uploaded file."""
    size = len(request.body)
    if size > LIMIT:
        raise TooLarge(size)
    return save(request.body)


class Uploader:
    def handle(self, request):
        return handle_upload(request)

    def close(self):
        pass
'''

SERVER_GO = """package server

import "fmt"

// Serve answers one request.
func Serve(name string) string {
\treturn fmt.Sprintf("hello %s", name)
}

type Server struct{}

func (s *Server) Stop() error {
\treturn nil
}
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "webshop"
    (root / "src").mkdir(parents=True)
    (root / "src" / "upload.py").write_text(UPLOAD, encoding="utf-8")
    (root / "src" / "server.go").write_text(SERVER_GO, encoding="utf-8")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-qm", "first")
    return root


def _write(root: Path, path: str, text: str) -> None:
    target = root / path
    before = target.stat().st_mtime_ns if target.exists() else 0
    target.write_text(text, encoding="utf-8")
    os.utime(target, ns=(before + 10**9, before + 10**9))  # a new mtime even on a coarse clock


def test_spec_is_a_path_with_an_optional_range_or_symbol() -> None:
    assert parse_spec("src/upload.py") == ("src/upload.py", "", None)
    assert parse_spec("src/upload.py:12-40") == ("src/upload.py", "", (12, 40))
    assert parse_spec("src/upload.py:7") == ("src/upload.py", "", (7, 7))
    assert parse_spec("src/upload.py:Uploader.handle") == ("src/upload.py", "Uploader.handle", None)
    for bad in ("src/upload.py:40-12", "src/upload.py:a-b", ":f", ""):
        with pytest.raises(InvalidInputError):
            parse_spec(bad)


def test_anchor_records_the_blob_git_gives_and_a_digest(repo: Path) -> None:
    cite = anchor(repo, "webshop", "src/upload.py:handle_upload", NOW)
    data = (repo / "src" / "upload.py").read_bytes()
    assert cite.blob == str(pygit2.hash(data)) == git(repo, "hash-object", "src/upload.py").strip()
    assert (cite.repo, cite.path, cite.symbol, cite.at) == (
        "webshop",
        "src/upload.py",
        "handle_upload",
        NOW,
    )
    assert len(cite.digest) == 16
    assert anchor(repo, "webshop", "src/upload.py:handle", NOW).symbol == "Uploader.handle"
    whole = anchor(repo, "webshop", "src/upload.py", NOW)
    assert (whole.symbol, whole.lines, whole.digest) == ("", None, "")


@pytest.mark.parametrize(
    ("spec", "named"),
    [
        ("src/missing.py", "src/missing.py"),
        ("src/upload.py:no_such_function", "no_such_function"),
        ("src/upload.py:5-400", "has 19 lines"),
        ("../outside.py", "inside the repository"),
        ("src", "it is a folder"),
        ("src/upload.py:close_all", "no function or class close_all"),
    ],
)
def test_anchor_refuses_what_is_not_there_in_one_line(repo: Path, spec: str, named: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        anchor(repo, "webshop", spec, NOW)
    assert named in str(caught.value) and "\n" not in str(caught.value)


def test_a_name_two_classes_define_is_refused_naming_both(repo: Path) -> None:
    _write(
        repo,
        "src/two.py",
        "class A:\n    def handle(self):\n        pass\n\n\nclass B:\n    def handle(self):\n        pass\n",
    )
    twice = "defined 2 times; name one: A.handle, B.handle"
    with pytest.raises(InvalidInputError, match=twice):
        anchor(repo, "webshop", "src/two.py:handle", NOW)
    assert anchor(repo, "webshop", "src/two.py:B.handle", NOW).symbol == "B.handle"


def test_relative_spec_reads_paths_from_the_callers_folder(repo: Path) -> None:
    assert (
        relative_spec(repo, repo / "src", "upload.py:handle_upload")
        == "src/upload.py:handle_upload"
    )
    assert relative_spec(repo, repo / "src", "../src/server.go:3-5") == "src/server.go:3-5"
    with pytest.raises(InvalidInputError, match="outside the repository"):
        relative_spec(repo, repo / "src", "../../elsewhere.py")


def test_locate_finds_nested_definitions_by_qualified_name() -> None:
    assert locate("u.py", UPLOAD, "handle_upload") == (6, 11)
    assert locate("u.py", UPLOAD, "Uploader.close") == (18, 19)
    assert locate("u.py", UPLOAD, "close") is None
    assert locate("s.go", SERVER_GO, "Server.Stop") == (12, 14)


def test_body_change_marks_the_symbol_changed_and_a_revert_makes_it_fresh(repo: Path) -> None:
    cite = anchor(repo, "webshop", "src/upload.py:handle_upload", NOW)
    other = anchor(repo, "webshop", "src/upload.py:Uploader.close", NOW)
    checker = CiteChecker(repo)
    assert checker.check(cite).state == "fresh"
    _write(repo, "src/upload.py", UPLOAD.replace("size > LIMIT", "size >= LIMIT"))
    assert checker.check(cite).state == "changed"
    assert checker.check(cite).reason == "src/upload.py:handle_upload changed"
    assert checker.check(other).state == "fresh"  # the rest of the file did not change
    _write(repo, "src/upload.py", UPLOAD)
    assert checker.check(cite).state == "fresh"


def test_code_inserted_above_moves_lines_without_a_false_mark(repo: Path) -> None:
    specs = ["src/upload.py:handle_upload", "src/upload.py:Uploader.handle", "src/upload.py:6-11"]
    cites = [anchor(repo, "webshop", spec, NOW) for spec in specs]
    go = [anchor(repo, "webshop", s, NOW) for s in ("src/server.go:Serve", "src/server.go:6-8")]
    moved = UPLOAD.replace(
        "import os\n", "import os\nimport sys\n\nLIMIT = 10\n\n\ndef helper():\n    return 1\n"
    )
    _write(repo, "src/upload.py", moved + "\n\ndef later():\n    pass\n")
    _write(
        repo,
        "src/server.go",
        SERVER_GO.replace('import "fmt"\n', 'import (\n\t"fmt"\n\t"os"\n)\n\nvar _ = os.Args\n'),
    )
    checker = CiteChecker(repo)
    states = [checker.check(cite) for cite in [*cites, *go]]
    assert [s.state for s in states] == ["fresh"] * 5
    assert states[2].reason == "moved to lines 13-18"
    assert states[4].reason.startswith("moved to lines ")


def test_changed_go_function_is_changed_and_trailing_spaces_are_not_a_change(repo: Path) -> None:
    serve = anchor(repo, "webshop", "src/server.go:Serve", NOW)
    stop = anchor(repo, "webshop", "src/server.go:Server.Stop", NOW)
    checker = CiteChecker(repo)
    _write(repo, "src/server.go", SERVER_GO.replace("return nil", "return nil   "))
    assert checker.check(stop).state == "fresh"
    _write(repo, "src/server.go", SERVER_GO.replace("hello %s", "hi %s"))
    assert (checker.check(serve).state, checker.check(stop).state) == ("changed", "fresh")


def test_rename_or_delete_is_gone(repo: Path) -> None:
    cite = anchor(repo, "webshop", "src/upload.py:handle_upload", NOW)
    ranged = anchor(repo, "webshop", "src/server.go:6-8", NOW)
    whole = anchor(repo, "webshop", "src/server.go", NOW)
    checker = CiteChecker(repo)
    _write(repo, "src/upload.py", UPLOAD.replace("handle_upload", "store_upload"))
    assert checker.check(cite) == checker.check(cite)
    assert (checker.check(cite).state, checker.check(cite).reason) == (
        "gone",
        "handle_upload no longer in src/upload.py",
    )
    git(repo, "mv", "src/server.go", "src/serve.go")
    assert checker.check(ranged).state == checker.check(whole).state == "gone"
    assert checker.check(whole).reason == "src/server.go deleted"


def test_whole_file_cite_follows_the_blob(repo: Path) -> None:
    whole = anchor(repo, "webshop", "src/server.go", NOW)
    checker = CiteChecker(repo)
    assert checker.check(whole).state == "fresh"
    _write(repo, "src/server.go", SERVER_GO + "\n// more\n")
    assert checker.check(whole).state == "changed"
    _write(repo, "src/server.go", SERVER_GO)
    assert checker.check(whole).state == "fresh"


def test_explain_names_the_commit_that_changed_the_path_after_the_anchor(repo: Path) -> None:
    cite = anchor(repo, "webshop", "src/upload.py:handle_upload", "2000-01-01T00:00:00Z")
    # anchored on the committed version: the commit that added it is no change since
    checker = CiteChecker(repo)
    assert checker.explain(cite) == ""
    _write(repo, "src/upload.py", UPLOAD.replace("size > LIMIT", "size >= LIMIT"))
    assert checker.explain(cite) == "src/upload.py:handle_upload changed (not committed yet)"
    git(repo, "commit", "-qam", "stricter limit")
    sha = git(repo, "rev-parse", "--short=7", "HEAD").strip()
    stamp = int(git(repo, "log", "-1", "--format=%ct").strip())
    assert checker.explain(cite, now=stamp + 2 * 86400 + 60) == (
        f"src/upload.py:handle_upload changed in {sha}, 2 days ago"
    )
    git(repo, "rm", "-q", "src/upload.py")
    git(repo, "commit", "-qm", "drop uploads")
    sha = git(repo, "rev-parse", "--short=7", "HEAD").strip()
    assert checker.explain(cite, now=stamp) == f"src/upload.py deleted in {sha}, today"


def test_an_unchanged_file_is_not_read_again(repo: Path) -> None:
    cite = anchor(repo, "webshop", "src/upload.py:handle_upload", NOW)
    checker = CiteChecker(repo)
    checker.check(cite)
    read = checker._files["src/upload.py"][1]
    assert checker.check(cite).state == "fresh"
    assert checker._files["src/upload.py"][1] is read


def test_without_a_grammar_a_changed_file_is_changed_not_gone(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memstore.catalog import chunking, citing

    cite = anchor(repo, "webshop", "src/server.go:Serve", NOW)
    _write(repo, "src/server.go", SERVER_GO.replace("hello %s", "hi %s"))
    monkeypatch.setattr(chunking, "_parser", lambda language: None)  # a machine without it
    monkeypatch.setattr(chunking, "tree_sitter_languages", lambda: frozenset())
    citing.definitions.cache_clear()
    state = CiteChecker(repo).check(cite)
    assert (state.state, state.reason) == (
        "changed",
        "src/server.go changed (no parser here for its language)",
    )


def test_a_change_only_in_the_working_tree_is_not_blamed_on_a_later_commit(repo: Path) -> None:
    # h-stale saw "save no longer in src/upload.py in fd30b0b": a later commit touched the
    # file elsewhere, and the rename was only in the working tree
    cite = anchor(repo, "webshop", "src/upload.py:handle_upload", "2000-01-01T00:00:00Z")
    checker = CiteChecker(repo)
    _write(repo, "src/upload.py", UPLOAD + "\n\ndef unrelated():\n    return 1\n")
    git(repo, "commit", "-qam", "an unrelated function")
    assert checker.explain(cite) == ""  # the cited function did not change
    renamed = (UPLOAD + "\n\ndef unrelated():\n    return 1\n").replace(
        "def handle_upload(", "def store_upload("
    )
    _write(repo, "src/upload.py", renamed)
    assert checker.explain(cite) == ("handle_upload no longer in src/upload.py (not committed yet)")
