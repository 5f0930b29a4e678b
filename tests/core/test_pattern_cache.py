"""Patterns built from the pattern cache's kept code are the patterns `re` compiles: the same
code, flags and groups, the same matches; a file that is not the cache's (another memstore
version's) is ignored, and patterns no code compiles any more are dropped."""

from __future__ import annotations

import json
import marshal
import os
import re
import subprocess
import sys
from pathlib import Path
from re import _compiler, _parser  # type: ignore[attr-defined]
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import memstore
from memstore.core import pattern_cache
from memstore.core.pattern_cache import KEY, PatternCache
from memstore.service.store import Store
from tests.conftest import settings_at

PATTERNS: list[tuple[Any, int]] = [
    (r"(?P<word>\w+)@(?P<host>[\w.]+)", 0),
    (r"^\s*#+\s+(.*)$", re.MULTILINE),
    (r"(?i)deploy|roll(back)?", 0),
    (r"[^\x00-\x7f]+", 0),
    (r"(?<=[.!?])\s+|\n", 0),
    (r"\b(?:a|an|the)\b", re.IGNORECASE | re.VERBOSE),
    (r"(\d+)-(\d+)(?:-(\d+))?", re.ASCII),
    (r"x{2,5}?y*+", 0),
    (rb"\x00[\x01-\xff]{4}", 0),
    (r"(?P<a>.)(?P=a)", re.DOTALL),
]
TEXTS = st.text(alphabet="ab xy.!?\n#@-0123456789deployROLLBACKthe é\x00", max_size=60)


def _code(pattern: str | bytes, flags: int) -> list[int]:
    return [int(op) for op in _compiler._code(_parser.parse(pattern, flags), flags)]


@pytest.fixture(scope="module")
def cached(tmp_path_factory: pytest.TempPathFactory) -> PatternCache:
    """A cache filled by one PatternCache and read back by another (a next process)."""
    path = tmp_path_factory.mktemp("patterns") / "patterns.marshal"
    first = PatternCache(path)
    for pattern, flags in PATTERNS:
        first.compile(pattern, flags)
    first.save()
    again = PatternCache(path)
    assert len(again.known) == len(PATTERNS) and again.added == 0
    return again


def test_kept_code_is_the_code_re_compiles(cached: PatternCache) -> None:
    for pattern, flags in PATTERNS:
        entry = cached.known[(type(pattern).__name__, pattern, flags)]
        assert entry[1] == _code(pattern, flags)
        built, fresh = cached.compile(pattern, flags), re.compile(pattern, flags)
        assert (built.pattern, built.flags, built.groups, built.groupindex) == (
            fresh.pattern,
            fresh.flags,
            fresh.groups,
            fresh.groupindex,
        )
    assert cached.added == 0  # every one built from the file


@settings(max_examples=200, deadline=None)
@given(text=TEXTS)
def test_built_patterns_match_as_re_compiles_them(cached: PatternCache, text: str) -> None:
    for pattern, flags in PATTERNS:
        subject: str | bytes = text.encode("utf-8") if isinstance(pattern, bytes) else text
        built, fresh = cached.compile(pattern, flags), re.compile(pattern, flags)
        assert [m.span() for m in built.finditer(subject)] == [
            m.span() for m in fresh.finditer(subject)
        ]
        assert built.split(subject) == fresh.split(subject)


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"not marshal",
        marshal.dumps(("another python|1|4", [])),
        marshal.dumps([1, 2]),
        marshal.dumps((KEY, [(("str", "a", 0), (0, [1], 0, {}, (None,)))])),  # before versions
        marshal.dumps((f"{KEY}|", "one", [])),
    ],
)
def test_a_file_that_is_not_this_interpreters_cache_is_ignored(
    tmp_path: Path, content: bytes
) -> None:
    path = tmp_path / "patterns.marshal"
    path.write_bytes(content)
    cache = PatternCache(path)
    assert cache.known == {}
    assert cache.compile(r"a(b)c", 0).groups == 1
    cache.save()
    assert marshal.loads(path.read_bytes())[0] == f"{KEY}|"  # rewritten as this one's


def test_a_garbled_entry_with_this_interpreters_key_is_compiled_afresh(tmp_path: Path) -> None:
    """A kept code the engine refuses (a damaged or hand-made file with the right key)
    costs the entry, not the command: the pattern is compiled as re would."""
    path = tmp_path / "patterns.marshal"
    key = ("str", r"a(b)c", 0)
    bad = (0, [999999, 1, 2], 1, {}, (None, None))
    path.write_bytes(marshal.dumps((f"{KEY}|", 1, [(key, bad, 1)])))
    cache = PatternCache(path)
    assert key in cache.known
    pattern = cache.compile(r"a(b)c", 0)
    assert pattern.groups == 1 and pattern.match("abc")
    assert key not in cache.known


def test_installed_re_compiles_through_the_cache_and_uninstalls(tmp_path: Path) -> None:
    cache = pattern_cache.install(tmp_path / "p.marshal")
    try:
        assert cache is not None
        pattern = re.compile(r"install(ed)?-\d{3}-unique-to-this-test")
        assert pattern.match("installed-123-unique-to-this-test")
        assert any(key[1] == pattern.pattern for key in cache.known)
    finally:
        pattern_cache.uninstall()
    assert _compiler.compile is not cache.compile


# A no-daemon search in a fresh interpreter: what it printed and how many patterns its
# cache then held (the launcher saves them), with the cache folder given.
RUN = """
import json, sys
sys.argv = ["memstore", *json.loads(sys.argv[1])]
from memstore.launcher import main
try:
    main()
except SystemExit:
    pass
import memstore
from memstore.core import pattern_cache
print(json.dumps(pattern_cache.INSTALLED.compiled), file=sys.stderr)
"""


def test_a_cli_search_saves_its_patterns_and_the_next_reads_them(
    tmp_path: Path, vault: Path
) -> None:
    with Store.open(settings_at(vault)) as store:
        store.add("the upload limit is 10 MB behind nginx", workspace="global")
    env = {**os.environ, "MEMSTORE_NO_DAEMON": "1", "XDG_CACHE_HOME": str(tmp_path / "cache")}
    argv = ["search", "upload limit", "--vault", str(vault)]
    runs = [
        subprocess.run(
            [sys.executable, "-c", RUN, json.dumps(argv)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        for _ in range(2)
    ]
    assert runs[0].stdout == runs[1].stdout and "upload limit is 10 MB" in runs[0].stdout
    first, second = (json.loads(run.stderr.strip().splitlines()[-1]) for run in runs)
    assert first > 50  # compiled and saved …
    assert second == 0  # … then every one built from the file
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    saved = tmp_path / "cache" / "memstore" / f"patterns-{version}-v2.marshal"
    assert marshal.loads(saved.read_bytes())[0] == f"{KEY}|{memstore.__version__}"


def test_patterns_older_code_compiled_are_dropped_and_those_in_use_kept(tmp_path: Path) -> None:
    path = tmp_path / "patterns.marshal"
    old, steady = r"old-(code)-only", r"steady-(\d+)"
    first = PatternCache(path, "0.1.0")
    first.compile(old, 0)
    first.compile(steady, 0)
    first.save()
    # The code changes many times (a new pattern each), and a command still compiles
    # `steady` every time, nothing of its own: what a checkout moving between branches does.
    for n in range(3 * pattern_cache.AGE):
        changed = PatternCache(path, "0.1.0")
        changed.compile(rf"field-{n}-(x)", 0)
        changed.save()
        steady_user = PatternCache(path, "0.1.0")
        assert steady_user.compile(steady, 0).match("steady-42")[1] == "42"
        steady_user.save()
        assert steady_user.compiled == 0  # never dropped while it is used
    kept = PatternCache(path, "0.1.0").known
    assert ("str", old, 0) not in kept and ("str", steady, 0) in kept  # the old one went
    assert len(kept) <= pattern_cache.AGE + 1  # not one per change: they no longer pile up
    assert ("str", rf"field-{3 * pattern_cache.AGE - 1}-(x)", 0) in kept


def test_another_memstore_versions_file_is_ignored_and_rewritten(tmp_path: Path) -> None:
    path = tmp_path / "patterns.marshal"
    older = PatternCache(path, "0.1.0")
    older.compile(r"ver(s)ion", 0)
    older.save()
    newer = PatternCache(path, "0.2.0")
    assert newer.known == {}
    newer.compile(r"ver(s)ion", 0)
    assert newer.compiled == 1
    newer.save()
    assert PatternCache(path, "0.1.0").known == {}
    assert ("str", r"ver(s)ion", 0) in PatternCache(path, "0.2.0").known


def test_a_process_that_built_only_kept_patterns_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "patterns.marshal"
    cache = PatternCache(path)
    cache.compile(r"kept-(a|b)", 0)
    cache.save()
    written = path.stat().st_mtime_ns, path.read_bytes()
    again = PatternCache(path)
    assert again.compile(r"kept-(a|b)", 0).match("kept-b")
    again.save()
    assert (path.stat().st_mtime_ns, path.read_bytes()) == written and again.compiled == 0
