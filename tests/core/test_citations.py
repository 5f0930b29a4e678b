"""Citations as values: front matter YAML round-trips, digests, and the merge laws."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstore.core.citations import Cite, cites_yaml, merge_cites, parse_cites, text_digest
from memstore.core.errors import InvalidInputError
from memstore.core.yaml_values import load_yaml

CITE = Cite(
    repo="webshop",
    path="src/upload.py",
    symbol="handle_upload",
    blob="3f2a1c9e" * 5,
    digest="ab12cd34ef56ab12",
    at="2026-12-06T10:00:00Z",
)


def _read_back(cites: tuple[Cite, ...]) -> tuple[Cite, ...]:
    data = load_yaml(cites_yaml(cites))
    assert isinstance(data, dict)
    return parse_cites(data["cites"])


def test_cites_render_as_one_flow_mapping_per_line_and_read_back_the_same() -> None:
    ranged = Cite("webshop", "src/odd name, [x].py", lines=(12, 40), digest="00ff", at="2026-12-06")
    whole = Cite("web-shop", "README.md", blob="ff" * 20)
    text = cites_yaml((CITE, ranged, whole))
    assert text.splitlines()[0] == "cites:"
    assert text.splitlines()[1] == (
        "  - {repo: webshop, path: src/upload.py, symbol: handle_upload, "
        f"blob: {CITE.blob}, digest: ab12cd34ef56ab12, at: 2026-12-06T10:00:00Z}}"
    )
    assert len(text.splitlines()) == 4
    assert _read_back((CITE, ranged, whole)) == (CITE, ranged, whole)


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ("src/upload.py", "not a list"),
        (["src/upload.py"], "entry 1 is not a mapping"),
        ([{"repo": "w"}], "needs both repo and path"),
        ([{"repo": "w", "path": "a.py", "colour": "red"}], "unknown key 'colour'"),
        ([{"repo": "w", "path": "a.py", "lines": [9, 3]}], "lines is not [start, end]"),
        ([{"repo": "w", "path": "a.py", "lines": "12-40"}], "lines is not [start, end]"),
        ([{"repo": "w", "path": "../etc/passwd"}], "not relative"),
        ([{"repo": "w", "path": "/etc/passwd"}], "not relative"),
        (
            [{"repo": "w", "path": "a.py", "symbol": "f", "lines": [1, 2]}],
            "both a symbol and lines",
        ),
    ],
)
def test_malformed_cites_raise_one_line_naming_the_problem(value: object, named: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        parse_cites(value)
    assert named in str(caught.value)
    assert "\n" not in str(caught.value)


def test_timestamps_yaml_reads_as_dates_come_back_as_written() -> None:
    import yaml

    data = yaml.safe_load(cites_yaml((CITE,)))  # a plain loader makes a datetime of `at`
    assert parse_cites(data["cites"]) == (CITE,)


def test_text_digest_ignores_trailing_whitespace_and_blank_ends_only() -> None:
    assert text_digest("\n\ndef f():  \n    return 1\n\n") == text_digest("def f():\n    return 1")
    assert text_digest("def f():\n    return 1") != text_digest("def f():\n  return 1")
    assert len(text_digest("x")) == 16


def test_key_is_repo_path_and_symbol_or_lines() -> None:
    assert CITE.key == ("webshop", "src/upload.py", "handle_upload")
    assert Cite("w", "a.py", lines=(3, 9)).key == ("w", "a.py", (3, 9))
    assert Cite("w", "a.py").key == ("w", "a.py", "")


# --- merging ------------------------------------------------------------------------------

_keys = st.sampled_from(
    [
        ("w", "a.py", "f", None),
        ("w", "a.py", "", (3, 9)),
        ("w", "b.go", "", None),
        ("v", "a.py", "f", None),
    ]
)
_anchors = st.tuples(
    st.sampled_from(["", "2026-12-01T00:00:00Z", "2026-12-06T10:00:00Z"]),
    st.sampled_from(["", "aa", "bb"]),
)


@st.composite
def _cite(draw: st.DrawFn) -> Cite:
    repo, path, symbol, lines = draw(_keys)
    at, digest = draw(_anchors)
    return Cite(repo, path, symbol, lines, digest=digest, at=at)


_sides = st.lists(_cite(), max_size=4).map(lambda cs: tuple({c.key: c for c in cs}.values()))


@given(_sides, _sides, _sides)
def test_merge_does_not_depend_on_which_side_is_ours(
    base: tuple, ours: tuple, theirs: tuple
) -> None:
    assert merge_cites(base, ours, theirs) == merge_cites(base, theirs, ours)


@given(_sides, _sides)
def test_merging_a_side_with_itself_gives_that_side(base: tuple, side: tuple) -> None:
    merged = merge_cites(base, side, side)
    assert set(merged) == set(side)
    assert merge_cites(base, merged, merged) == merged


@given(_sides, _sides)
def test_merging_with_an_unchanged_side_keeps_the_other_sides_keys(
    base: tuple, ours: tuple
) -> None:
    # which citations there are follows the side that changed; each one's anchor the newer
    assert {c.key for c in merge_cites(base, ours, base)} == {c.key for c in ours}


def test_removed_on_one_side_and_untouched_on_the_other_is_removed() -> None:
    other = Cite("w", "b.py")
    assert merge_cites((CITE, other), (other,), (CITE, other)) == (other,)


def test_both_sides_reanchoring_keeps_the_newer_anchor() -> None:
    older = Cite(
        "webshop", "src/upload.py", "handle_upload", digest="ff", at="2026-12-01T00:00:00Z"
    )
    assert merge_cites((), (older,), (CITE,)) == (CITE,)
    assert merge_cites((), (CITE,), (older,)) == (CITE,)


# --- in a memory file -------------------------------------------------------------------------

HAND_WRITTEN = (
    "---\nid: abcdefgh\nkind: lesson\nkeywords: [upload]\nseen: 1\n"
    "cites:\n  - src/upload.py   # a person's shorthand\n---\nuploads go through nginx\n"
)


def test_a_malformed_cites_key_is_a_problem_kept_verbatim_never_a_crash() -> None:
    from memstore.core.codec import parse_memory, render_memory

    memory = parse_memory(HAND_WRITTEN, path="webshop/x.md")
    assert memory.cites == ()
    assert "cites entry 1 is not a mapping" in memory.problem
    assert render_memory(memory) == HAND_WRITTEN


def test_cites_are_written_after_supersedes_and_read_back() -> None:
    from memstore.core.codec import parse_memory, render_memory
    from memstore.core.model import Memory

    memory = Memory(
        id="abcdefgh", workspace="webshop", body="b\n", supersedes=("k3xq9v2m",), cites=(CITE,)
    )
    text = render_memory(memory)
    header = text.split("---\n")[1].split("\n")
    keys = [line.split(":")[0] for line in header if line and not line.startswith(" ")]
    assert keys[-2:] == ["supersedes", "cites"]
    assert parse_memory(text, path="webshop/x.md") == memory
    crlf = Memory(id="abcdefgh", workspace="webshop", body="b\r\n", cites=(CITE,), newline="\r\n")
    assert "\n" not in render_memory(crlf).replace("\r\n", "")
    assert parse_memory(render_memory(crlf), path="webshop/x.md") == crlf


# --- the fast reading path ----------------------------------------------------------------

_flow_words = st.sampled_from(
    ["webshop", "src/upload.py", "a b", "no", "on", "1e3", "0x1f", "10:00", "-x", "x:", "12",
     "2026-12-06T10:00:00Z", "2026-12-06", "[1, 2]", "[1]", "[]", "[a, 3]", '"q, r"', "~", "null",
     "a#b", "a #b", "Uploader.handle", "$init", ""]
)  # fmt: skip
_flow_keys = st.sampled_from(["repo", "path", "lines", "at", "no", "x_y", "Key", "on"])


@given(st.lists(st.lists(st.tuples(_flow_keys, _flow_words), min_size=1, max_size=5), max_size=3))
def test_the_fast_reader_reads_cites_as_pyyaml_does_or_leaves_them_to_it(
    items: list[list[tuple[str, str]]],
) -> None:
    from memstore.core.yaml_values import _load_simple, _yaml

    rows = ["  - {" + ", ".join(f"{k}: {v}" for k, v in item) + "}" for item in items]
    text = "\n".join(["id: abcdefgh", "cites:", *rows, "seen: 2"])
    yaml, loader = _yaml()
    try:
        expected = yaml.load(text, Loader=loader)
    except yaml.YAMLError:
        expected = "error"
    fast = _load_simple(text)
    assert fast is None or fast == expected


@given(st.lists(_cite(), max_size=4))
def test_memstore_written_cites_take_the_fast_reader(cites: list[Cite]) -> None:
    from memstore.core.yaml_values import _load_simple, _yaml

    text = "id: abcdefgh\n" + cites_yaml(tuple(cites)) + "\nseen: 2"
    yaml, loader = _yaml()
    assert _load_simple(text) == yaml.load(text, Loader=loader) or not cites
