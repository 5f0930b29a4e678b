"""The codec's fast path for memstore's own front matter (core/own_front_matter.py) reads every
file as the full reader does: PyYAML, or YAML's fast path, and then the codec's rules. Files
memstore renders and hand-written front matter with odd values (YAML 1.1 booleans, octal and
sexagesimal numbers, quotes, comments, duplicate keys, unknown kinds, CRLF) are compared."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from memstore.core import codec, own_front_matter, yaml_values
from memstore.core.codec import parse_memory, render_memory
from memstore.core.model import KINDS, Memory

ODD_VALUES = [
    *("yes", "No", "on", "OFF", "null", "~", "0012", "0x1f", "1_000", "12:30", "1e3", "1.5"),
    *(".inf", "-3", "+5", "0", "7", "abc", "Lesson", "lesson", "note", "trace", "core"),
    *('"quoted"', '"with \\" escape"', "'single'", "[a, b]", "[]", "[a, , b]", "[yes, 1, x]"),
    *(
        "{a: 1}",
        "2026-07-29T07:06:45Z",
        "2026-07-29",
        "a b c",
        "a: b",
        "",
        " spaced",
        "[ Foo ,bar]",
    ),
    *("x # comment", "[A, a, A]", "[Deploy, deploy]", "2vf4hh2q", "ABC123", "[x]", "[1, 2]"),
    *('""', '"  padded  "', '["q", r]', "a\tb", "-", "@me", "v2.3.1", "src/app.py"),
]
KEYS = [
    *("id", "kind", "keywords", "source", "created", "seen", "recalled", "last_recalled"),
    *("confirmed", "archived", "supersedes", "seen_by", "cites", "tags", "ID", "no", "merged"),
]
WORD = st.one_of(
    st.sampled_from(ODD_VALUES), st.from_regex(r"[a-z0-9][a-z0-9_.-]{0,8}", fullmatch=True)
)
LINE = st.one_of(
    st.tuples(st.sampled_from(KEYS), WORD).map(lambda kv: f"{kv[0]}: {kv[1]}"),
    st.sampled_from(["", "# a comment", "  - indented", "key without value:", "---x", "id:x"]),
)


@contextlib.contextmanager
def _full_reader(simple_yaml: bool) -> Iterator[None]:
    """The codec without its own fast path (and without YAML's, unless `simple_yaml`)."""
    with contextlib.ExitStack() as stack:
        stack.enter_context(mock.patch.object(codec, "read_own", lambda *a, **k: None))
        if not simple_yaml:
            stack.enter_context(mock.patch.object(yaml_values, "_load_simple", lambda text: None))
        yield


def _assert_read_alike(text: str, path: str = "webshop/2026-12/m.md") -> Memory:
    fast = parse_memory(text, path=path)
    for simple_yaml in (True, False):
        with _full_reader(simple_yaml):
            assert parse_memory(text, path=path) == fast, (simple_yaml, text)
    return fast


@given(
    lines=st.lists(LINE, min_size=1, max_size=12),
    crlf=st.booleans(),
)
@settings(max_examples=1500, deadline=None)
def test_hand_written_front_matter_reads_as_the_full_reader_reads_it(
    lines: list[str], crlf: bool
) -> None:
    newline = "\r\n" if crlf else "\n"
    _assert_read_alike(newline.join(["---", *lines, "---", "the body"]))


SCALAR = st.one_of(
    st.sampled_from(ODD_VALUES),
    st.text(alphabet=st.characters(codec="ascii", exclude_characters="\r\n"), max_size=12),
    st.text(max_size=6),
)
MEMORIES = st.builds(
    Memory,
    id=st.from_regex(r"[a-z2-7]{8}", fullmatch=True) | st.sampled_from(["0012", "yes", "ABCD1234"]),
    workspace=st.just("webshop"),
    body=st.text(max_size=40),
    kind=st.sampled_from(KINDS),
    keywords=st.lists(SCALAR, max_size=4).map(tuple),
    source=SCALAR,
    created=SCALAR | st.just("2026-07-29T07:06:45Z"),
    seen=st.integers(0, 10**6),
    recalled=st.integers(0, 50),
    last_recalled=SCALAR,
    confirmed=st.integers(0, 3),
    archived=st.sampled_from(["", "2026-12-01T00:00:00Z", "yes"]),
    supersedes=st.lists(st.from_regex(r"[a-z2-7]{8}", fullmatch=True), max_size=2).map(tuple),
    seen_by=st.sampled_from([(), (("laptop", 2),)]),
)


@given(MEMORIES)
@settings(max_examples=800, deadline=None)
def test_files_memstore_renders_read_as_the_full_reader_reads_them(memory: Memory) -> None:
    _assert_read_alike(render_memory(memory))


def test_a_plain_memory_takes_the_fast_path() -> None:
    text = (
        "---\nid: 2vf4hh2q\nkind: lesson\nkeywords: [python-packaging, poetry, Poetry]\n"
        "source: cursor\ncreated: 2026-07-29T07:06:45Z\nseen: 3\nsupersedes: [ABCDEFGH]\n---\n"
        "mypy says module is installed but missing library stubs\n"
    )
    own = codec.read_own(text.split("---\n")[1], "body", workspace="webshop", newline="\n")
    assert own is not None
    assert (own.id, own.kind, own.keywords, own.seen) == (
        "2vf4hh2q",
        "lesson",
        ("python-packaging", "poetry", "Poetry"),
        3,
    )
    assert own.supersedes == ("abcdefgh",)
    _assert_read_alike(text)


def test_odd_front_matter_goes_to_the_full_reader() -> None:
    for header in (
        "id: a\nkind: lesson\nseen: yes",  # a count that is not a whole number
        "id: a\nkind: weird",  # an unknown kind: the full reader says so
        "id: a\nid: b",  # a duplicate key
        "id: a\ntags: [x]",  # a key memstore does not write
        "id: a # note",  # a comment
        "kind: note",  # no id: the path gives one
        "id: a\nseen_by: {laptop: 2}",
    ):
        assert codec.read_own(header, "", workspace="w", newline="\n") is None, header


def test_remembered_scalars_read_as_the_full_reader_reads_them(monkeypatch: Any) -> None:
    """A raw scalar read again (remembered: apart for block values and flow-list items)
    reads as the full reader reads it, also when the remembered values start over at every
    file (SCALAR_CACHE 1)."""
    stamp = "2026-07-29T07:06:45Z"
    block = f"---\nid: a1\ncreated: {stamp}\nkeywords: [x, 7]\n---\nbody\n"
    flow = f"---\nid: a2\nkeywords: [{stamp}, 7]\nseen: 7\n---\nbody\n"
    for size in (own_front_matter.SCALAR_CACHE, 1):
        monkeypatch.setattr(own_front_matter, "SCALAR_CACHE", size)
        for text in (block, flow, block, flow):
            _assert_read_alike(text)
    assert parse_memory(block, path="w/m.md").created == stamp
