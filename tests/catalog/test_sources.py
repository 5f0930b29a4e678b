"""walk_sources lists the files git would list, minus excluded folders, links, binaries and big files."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstore.catalog.sources import (
    BINARY_PROBE,
    EXCLUDED_FOLDERS,
    SourceFile,
    Walk,
    is_binary,
    read_source,
    walk_sources,
)
from memstore.core.errors import InvalidInputError

needs_symlinks = pytest.mark.skipif(sys.platform == "win32", reason="symlinks need privileges")


@pytest.fixture(autouse=True)
def no_repository_above(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep git from finding a repository above tmp_path or a personal ignore file."""
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    )
    return done.stdout


def _init(repo: Path) -> Path:
    repo.mkdir(parents=True, exist_ok=True)
    _git(repo, "init", "-q")
    _git(repo, "config", "user.name", "Test Person")
    _git(repo, "config", "user.email", "test@example.com")
    _git(repo, "config", "commit.gpgsign", "false")
    return repo


def _commit(repo: Path) -> None:
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "test")


def _write(root: Path, files: Mapping[str, str | bytes]) -> Path:
    for path, content in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")
    return root


def _paths(walk: Walk) -> list[str]:
    return [file.path for file in walk.files]


def _git_lists(tree: Path) -> list[str]:
    """What git itself lists for a copy of `tree` made a fresh repository."""
    copy = tree.with_name(tree.name + "-as-repo")
    shutil.copytree(tree, copy, symlinks=True)
    _init(copy)
    out = _git(copy, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    return sorted(path for path in out.split("\0") if path)


# Nested .gitignore files with negations, `**`, folder-only and anchored patterns.
IGNORE_TREE: dict[str, str | bytes] = {
    ".gitignore": (
        "# build output\n"
        "*.log\n"
        "!keep.log\n"
        "/build/\n"
        "docs/**/*.tmp\n"
        "out/\n"
        "cache/*\n"
        "!cache/keep.txt\n"
        "secret\n"
        "vendor/**\n"
        "!vendor/kept.py\n"
        "tests/**/\n"
        "*.cfg\n"
        "**/tmp/\n"
    ),
    "app.py": "print('app')\n",
    "debug.log": "noise\n",
    "keep.log": "kept by a negation\n",
    "build/gen.py": "generated\n",
    "src/build/real.py": "'/build/' is anchored to the root\n",
    "docs/readme.md": "# docs\n",
    "docs/x.tmp": "'**/' matches no folder too\n",
    "docs/a/b/y.tmp": "scratch\n",
    "out/o.txt": "inside an ignored folder\n",
    "out/.gitignore": "!o.txt\n",  # never read: git does not look inside an ignored folder
    "src/out": "a file: 'out/' matches folders only\n",
    "cache/a.txt": "cached\n",
    "cache/keep.txt": "re-included\n",
    "secret": "a file named secret\n",
    "lib/secret/inner.py": "a folder named secret\n",
    "vendor/x.py": "vendored\n",
    "vendor/kept.py": "'vendor/**' ignores what is inside, not vendor itself\n",
    "tests/keep_me.py": "'tests/**/' ignores the folders below tests, not its files\n",
    "tests/unit/t.py": "ignored\n",
    "settings.cfg": "ignored\n",
    "pkg/.gitignore": "!b/\n",
    "pkg/b/c.cfg": "a negated folder pattern does not re-include the files in it\n",
    "pkg/b/c.py": "kept\n",
    "x/y/tmp/z.py": "in a folder named tmp\n",
    "x/tmp": "a file named tmp\n",
    "src/.gitignore": "!debug.log\n*.txt\n!important.txt\ngen/\n",
    "src/debug.log": "a deeper negation wins\n",
    "src/notes.txt": "ignored by src/.gitignore\n",
    "src/important.txt": "re-included\n",
    "src/gen/g.py": "ignored\n",
    "src/sub/gen/h.py": "'gen/' matches at any depth below src\n",
    "src/deep/.gitignore": "!notes.txt\n",
    "src/deep/notes.txt": "re-included deeper down\n",
}
IGNORE_TREE_LISTED = [
    ".gitignore",
    "app.py",
    "cache/keep.txt",
    "docs/readme.md",
    "keep.log",
    "pkg/.gitignore",
    "pkg/b/c.py",
    "src/.gitignore",
    "src/build/real.py",
    "src/debug.log",
    "src/deep/.gitignore",
    "src/deep/notes.txt",
    "src/important.txt",
    "src/out",
    "tests/keep_me.py",
    "vendor/kept.py",
    "x/tmp",
]


def test_a_repository_is_listed_by_git_honouring_nested_gitignore_files(tmp_path: Path) -> None:
    repo = _write(_init(tmp_path / "repo"), IGNORE_TREE)
    _commit(repo)
    walk = walk_sources(repo)
    assert walk.git
    assert walk.root == repo.resolve()
    assert _paths(walk) == IGNORE_TREE_LISTED
    assert walk.skipped == {}


def test_a_tree_outside_git_is_walked_to_the_same_list_git_gives(tmp_path: Path) -> None:
    tree = _write(tmp_path / "plain", IGNORE_TREE)
    walk = walk_sources(tree)
    assert not walk.git
    assert _paths(walk) == IGNORE_TREE_LISTED
    assert _git_lists(tree) == IGNORE_TREE_LISTED


NAMES = ["a", "b", "ab", "x.py", "y.log", "tmp", "c.txt", "a b", ".h", "[ab]"]
# Every gitwildmatch feature but `**` glued to other characters ("a**/b"): git's own matcher
# strips a pattern's literal prefix first and then reads "**/b" as any folders (dir.c,
# match_pathname), while its documentation and pathspec read "a**" as "a*".
SEGMENTS = [
    *["a", "b", "*", "**", "?", "[ab]", "[!a]*", "[a-c]*", "a*", "b*b", "x.p?", "*.py"],
    *["*.log", "*.[lp]*", "tmp", "c.txt", ".*", "\\[ab]", "a\\ b", "a b ", "#c", "\\#c"],
]
patterns = st.builds(
    lambda negate, anchor, segments, folder: (
        ("!" if negate else "") + ("/" if anchor else "") + "/".join(segments) + folder
    ),
    st.booleans(),
    st.booleans(),
    st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=3),
    st.sampled_from(["", "", "/"]),
)
file_paths = st.lists(st.sampled_from(NAMES), min_size=1, max_size=4).map("/".join)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    files=st.lists(file_paths, min_size=1, max_size=25),
    ignores=st.dictionaries(
        st.lists(st.sampled_from(NAMES), max_size=2).map("/".join),
        st.lists(patterns, min_size=1, max_size=4),
        max_size=5,
    ),
)
def test_the_plain_walk_agrees_with_git_on_any_gitignore_files(
    tmp_path: Path, files: list[str], ignores: dict[str, list[str]]
) -> None:
    tree = Path(tempfile.mkdtemp(dir=tmp_path)) / "tree"
    tree.mkdir()
    for folder, lines in ignores.items():
        (tree / folder).mkdir(parents=True, exist_ok=True)
        (tree / folder / ".gitignore").write_text("\n".join(lines) + "\n", encoding="utf-8")
    for path in files:
        target = tree / path
        if any(p.is_file() for p in target.parents) or target.is_dir():
            continue  # already a folder, or below a file
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(path + "\n", encoding="utf-8")
    assert _paths(walk_sources(tree)) == _git_lists(tree)


def test_untracked_files_git_does_not_ignore_are_listed(tmp_path: Path) -> None:
    repo = _write(_init(tmp_path / "repo"), {".gitignore": "*.tmp\n", "a.py": "a\n"})
    _commit(repo)
    _write(repo, {"new.py": "not committed yet\n", "scratch.tmp": "ignored\n"})
    assert _paths(walk_sources(repo)) == [".gitignore", "a.py", "new.py"]


def test_a_tracked_file_deleted_from_the_work_tree_is_neither_listed_nor_counted(
    tmp_path: Path,
) -> None:
    repo = _write(_init(tmp_path / "repo"), {"a.py": "a\n", "gone/b.py": "b\n"})
    _commit(repo)
    shutil.rmtree(repo / "gone")
    walk = walk_sources(repo)
    assert _paths(walk) == ["a.py"]
    assert walk.skipped == {}


def test_a_file_in_a_merge_conflict_is_listed_once(tmp_path: Path) -> None:
    repo = _write(_init(tmp_path / "repo"), {"a.py": "base\n"})
    _commit(repo)
    _git(repo, "checkout", "-q", "-b", "other")
    _write(repo, {"a.py": "theirs\n"})
    _commit(repo)
    _git(repo, "checkout", "-q", "-")
    _write(repo, {"a.py": "ours\n"})
    _commit(repo)
    merge = subprocess.run(["git", "-C", str(repo), "merge", "-q", "other"], capture_output=True)
    assert merge.returncode != 0
    assert _git(repo, "ls-files").split() == ["a.py", "a.py", "a.py"]  # one per stage
    assert _paths(walk_sources(repo)) == ["a.py"]


TREE_WITH_EXCLUDED_FOLDERS: dict[str, str | bytes] = {
    "src/m.py": "code\n",
    "src/__pycache__/m.cpython-311.pyc": b"\x00bytecode",
    "node_modules/left-pad/index.js": "module.exports = pad\n",
    "node_modules/left-pad/node_modules/x/index.js": "nested\n",
    "web/node_modules/y.js": "y\n",
}


def test_committed_node_modules_and_pycache_are_skipped_as_excluded_folders(
    tmp_path: Path,
) -> None:
    repo = _write(_init(tmp_path / "repo"), TREE_WITH_EXCLUDED_FOLDERS)
    _commit(repo)
    assert "node_modules/left-pad/index.js" in _git(repo, "ls-files")
    walk = walk_sources(repo)
    assert walk.git
    assert _paths(walk) == ["src/m.py"]
    assert walk.skipped == {"excluded folder": 3}


def test_the_plain_walk_prunes_excluded_folders_too(tmp_path: Path) -> None:
    tree = _write(tmp_path / "plain", TREE_WITH_EXCLUDED_FOLDERS)
    walk = walk_sources(tree)
    assert not walk.git
    assert _paths(walk) == ["src/m.py"]
    assert walk.skipped == {"excluded folder": 3}


def test_excluded_folders_hold_no_folder_a_project_names_its_code_after() -> None:
    assert {".git", "node_modules", ".memstore", "__pycache__"} <= EXCLUDED_FOLDERS
    assert not {"venv", "env", "build", "dist", "lib", "src", "vendor"} & EXCLUDED_FOLDERS


@pytest.mark.parametrize("in_git", [True, False], ids=["git", "plain"])
def test_binary_and_too_large_files_are_counted_not_listed(tmp_path: Path, in_git: bool) -> None:
    limit = BINARY_PROBE + 100
    root = tmp_path / "root"
    _write(
        root,
        {
            "small.py": "x = 1\n",
            "blob.dat": b"PK\x03\x04\x00\x00",
            "late-nul.txt": b"a" * BINARY_PROBE + b"\x00",  # beyond git's probe: text
            "big.py": "#" * (limit + 1),
            "exactly.py": "#" * limit,
        },
    )
    if in_git:
        _init(root)
    walk = walk_sources(root, max_bytes=limit)
    assert walk.git is in_git
    assert _paths(walk) == ["exactly.py", "late-nul.txt", "small.py"]
    assert walk.skipped == {"binary": 1, "too large": 1}


@needs_symlinks
@pytest.mark.parametrize("in_git", [True, False], ids=["git", "plain"])
def test_symlinks_are_skipped_and_never_followed(tmp_path: Path, in_git: bool) -> None:
    outside = _write(tmp_path / "outside", {"secret.py": "not part of the tree\n"})
    root = _write(tmp_path / "root", {"app.py": "app\n"})
    (root / "alias.py").symlink_to("app.py")
    (root / "elsewhere").symlink_to(outside, target_is_directory=True)
    if in_git:
        _init(root)
    walk = walk_sources(root)
    assert walk.git is in_git
    assert _paths(walk) == ["app.py"]
    assert walk.skipped == {"not a regular file": 2}
    assert read_source(root, "alias.py") is None
    assert read_source(root, "elsewhere/secret.py") is None


@needs_symlinks
def test_a_tracked_file_under_a_folder_now_a_symlink_is_not_read(tmp_path: Path) -> None:
    outside = _write(tmp_path / "outside", {"a.py": "outside the tree\n"})
    repo = _write(_init(tmp_path / "repo"), {"lib/a.py": "a\n", "top.py": "top\n"})
    _commit(repo)
    shutil.rmtree(repo / "lib")
    (repo / "lib").symlink_to(outside, target_is_directory=True)
    assert "lib/a.py" in _git(repo, "ls-files")
    walk = walk_sources(repo)
    assert _paths(walk) == ["top.py"]
    assert walk.skipped == {"not a regular file": 1}  # the link itself


def test_submodules_and_nested_repositories_are_not_regular_files(tmp_path: Path) -> None:
    repo = _write(_init(tmp_path / "repo"), {"top.py": "top\n"})
    for name in ("module", "nested"):
        _write(_init(repo / name), {"inner.py": "inner\n"})
        _commit(repo / name)
    _git(repo, "add", "top.py", "module")  # "module" becomes a gitlink; "nested" stays untracked
    _git(repo, "commit", "-q", "-m", "with a submodule")
    assert "160000" in _git(repo, "ls-files", "--stage", "module")
    walk = walk_sources(repo)
    assert _paths(walk) == ["top.py"]
    assert walk.skipped == {"not a regular file": 2}


def test_a_subfolder_of_a_repository_lists_paths_relative_to_it(tmp_path: Path) -> None:
    repo = _write(
        _init(tmp_path / "repo"),
        {
            ".gitignore": "/pkg/sub/ignored.py\n",
            "top.py": "outside the subfolder\n",
            "pkg/mod.py": "m\n",
            "pkg/.gitignore": "*.tmp\n",
            "pkg/sub/deep.py": "d\n",
            "pkg/sub/ignored.py": "ignored by the repository's root .gitignore\n",
        },
    )
    _commit(repo)
    _write(repo, {"pkg/new.py": "untracked\n", "pkg/sub/x.tmp": "ignored\n"})
    walk = walk_sources(repo / "pkg")
    assert walk.git
    assert walk.root == (repo / "pkg").resolve()
    assert _paths(walk) == [".gitignore", "mod.py", "new.py", "sub/deep.py"]
    assert read_source(walk.root, "sub/deep.py") == "d\n"


def test_a_folder_its_repository_ignores_is_walked_as_a_tree_of_its_own(tmp_path: Path) -> None:
    repo = _write(
        _init(tmp_path / "repo"),
        {
            ".gitignore": "vendored/\n",
            "vendored/x.py": "x\n",
            "vendored/.gitignore": "*.gen\n",
            "vendored/y.gen": "ignored\n",
        },
    )
    walk = walk_sources(repo / "vendored")
    assert not walk.git
    assert _paths(walk) == [".gitignore", "x.py"]


def test_without_git_on_path_a_repository_is_walked_by_its_gitignore_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _write(_init(tmp_path / "repo"), IGNORE_TREE)
    _commit(repo)
    empty = tmp_path / "no-programs"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    walk = walk_sources(repo)
    assert not walk.git
    assert _paths(walk) == IGNORE_TREE_LISTED
    assert walk.skipped == {"excluded folder": 1}  # .git, pruned like any excluded folder


def test_each_file_carries_its_size_and_modification_time(tmp_path: Path) -> None:
    tree = _write(tmp_path / "plain", {"b.py": "bb\n", "a/z.py": "z\n", "a.py": ""})
    walk = walk_sources(tree)
    info = (tree / "b.py").stat()
    assert walk.files == (
        SourceFile("a.py", 0, (tree / "a.py").stat().st_mtime_ns),
        SourceFile("a/z.py", 2, (tree / "a/z.py").stat().st_mtime_ns),
        SourceFile("b.py", 3, info.st_mtime_ns),
    )


@pytest.mark.skipif(
    sys.platform == "win32" or os.geteuid() == 0, reason="root reads any file; no chmod"
)
def test_a_file_that_cannot_be_read_is_counted_unreadable(tmp_path: Path) -> None:
    tree = _write(tmp_path / "plain", {"a.py": "a\n", "locked.py": "l\n"})
    (tree / "locked.py").chmod(0)
    walk = walk_sources(tree)
    assert _paths(walk) == ["a.py"]
    assert walk.skipped == {"unreadable": 1}
    assert read_source(tree, "locked.py") is None


def test_walking_a_missing_folder_names_it(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="no folder at"):
        walk_sources(tmp_path / "nowhere")


def test_text_that_is_not_utf8_is_read_with_replacement_characters(tmp_path: Path) -> None:
    tree = _write(tmp_path / "plain", {"latin1.py": "café = 1\r\n".encode("latin-1")})
    assert read_source(tree, "latin1.py") == "caf\ufffd = 1\r\n"


def test_read_source_returns_none_for_binary_large_missing_or_outside_files(
    tmp_path: Path,
) -> None:
    _write(tmp_path, {"outside.py": "not in the tree\n"})
    tree = _write(tmp_path / "plain", {"blob.bin": b"\x89PNG\x00", "big.py": "#" * 11})
    assert read_source(tree, "blob.bin") is None
    assert read_source(tree, "big.py", max_bytes=10) is None
    assert read_source(tree, "big.py", max_bytes=11) == "#" * 11
    assert read_source(tree, "missing.py") is None
    assert read_source(tree, "../outside.py") is None
    assert read_source(tree, "/etc/passwd") is None


def test_a_nul_byte_within_gits_probe_makes_a_file_binary() -> None:
    assert is_binary(b"text\x00more")
    assert is_binary(b"a" * (BINARY_PROBE - 1) + b"\x00")
    assert not is_binary(b"a" * BINARY_PROBE + b"\x00")
    assert not is_binary("naïve ünïcode".encode())


def test_malformed_lines_and_crlf_endings_in_a_gitignore_are_read_as_git_reads_them(
    tmp_path: Path,
) -> None:
    tree = _write(
        tmp_path / "plain",
        {
            ".gitignore": b"\xef\xbb\xbf*.tmp\r\nbroken\\\r\n!keep.tmp\r\n",
            "a.tmp": "ignored\n",
            "keep.tmp": "re-included\n",
            "broken\\": "a malformed pattern matches nothing\n",
        },
    )
    assert _paths(walk_sources(tree)) == [".gitignore", "broken\\", "keep.tmp"]
    assert _git_lists(tree) == [".gitignore", "broken\\", "keep.tmp"]
