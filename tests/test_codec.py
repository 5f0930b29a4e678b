"""The memory file format: byte-exact round trips and tolerance of what people write."""

from __future__ import annotations

import string

from hypothesis import given
from hypothesis import strategies as st

from memstore.codec import (
    content_hash,
    derive_id,
    normalize_text,
    parse_memory,
    render_memory,
    slugify,
)
from memstore.model import KINDS, Memory

words = st.text(
    alphabet=string.ascii_letters + string.digits + " _-.:/@#'\"äöüếỗ", min_size=1, max_size=20
)
keyword = words.map(str.strip).filter(bool)
timestamps = st.datetimes().map(lambda d: d.strftime("%Y-%m-%dT%H:%M:%SZ"))
bodies = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\x00"), max_size=300
)


@st.composite
def memories(draw: st.DrawFn) -> Memory:
    return Memory(
        id=draw(st.text(alphabet="abcdefghijklmnopqrstuvwxyz234567", min_size=8, max_size=10)),
        workspace=draw(st.sampled_from(["global", "webshop", "data-pipeline"])),
        body=draw(bodies),
        kind=draw(st.sampled_from(KINDS)),
        keywords=tuple(dict.fromkeys(draw(st.lists(keyword, max_size=5)))),
        source=draw(st.sampled_from(["", "claude-code", "codex", "human"])),
        created=draw(st.one_of(st.just(""), timestamps)),
        seen=draw(st.integers(1, 10_000)),
        recalled=draw(st.integers(0, 10_000)),
        last_recalled=draw(st.one_of(st.just(""), timestamps)),
        supersedes=tuple(
            dict.fromkeys(
                draw(st.lists(st.text("abcdefgh234", min_size=8, max_size=8), max_size=3))
            )
        ),
    )


@given(memories())
def test_memstore_written_file_round_trips_byte_identical(memory: Memory) -> None:
    text = render_memory(memory)
    parsed = parse_memory(text, path=f"{memory.workspace}/x-{memory.id}.md")
    assert parsed == memory
    assert render_memory(parsed) == text


def test_unknown_keys_are_kept_verbatim_and_in_order() -> None:
    text = (
        "---\nid: abcdefgh\nkind: lesson\nkeywords: [a]\nseen: 2\n"
        "tags: [ops, oncall]   # mine\nreviewed: no\nmode: 0755\naliases:\n  - one\n  - two\n---\nbody\n"
    )
    memory = parse_memory(text, path="infra/x.md")
    assert [key for key, _ in memory.extra] == ["tags", "reviewed", "mode", "aliases"]
    assert "reviewed: no" in render_memory(memory)
    assert "mode: 0755" in render_memory(memory)
    assert render_memory(memory) == text


def test_file_without_front_matter_is_a_note_with_a_path_id_and_never_gains_front_matter() -> None:
    text = "# Team contacts\n\n- ask @maria about deploys\n"
    memory = parse_memory(text, path="global/team-contacts.md")
    assert memory.kind == "note" and not memory.has_front_matter and not memory.problem
    assert memory.id == parse_memory("other", path="global/team-contacts.md").id
    assert render_memory(memory) == text


def test_crlf_and_bom_are_read() -> None:
    text = "\ufeff---\r\nid: abcdefgh\r\nkind: lesson\r\nkeywords: [nginx]\r\n---\r\nline one\r\nline two\r\n"
    memory = parse_memory(text, path="global/x.md")
    assert memory.id == "abcdefgh" and memory.kind == "lesson" and memory.keywords == ("nginx",)
    assert memory.body == "line one\r\nline two\r\n"
    rendered = render_memory(memory)
    assert rendered.count("\r\n") == rendered.count("\n")  # line endings kept when rewritten


def test_three_dashes_inside_the_body_stay_in_the_body() -> None:
    text = "---\nid: abcdefgh\nkind: note\nkeywords: []\nseen: 1\n---\nabove\n---\nbelow\n"
    memory = parse_memory(text, path="global/x.md")
    assert memory.body == "above\n---\nbelow\n"
    assert render_memory(memory) == text


def test_malformed_yaml_is_reported_and_the_text_stays_findable() -> None:
    text = "---\nid: [unclosed\nkind: lesson\n---\nnginx returns 413\n"
    memory = parse_memory(text, path="webshop/broken.md")
    assert memory.problem.startswith("malformed YAML front matter")
    assert "nginx returns 413" in memory.body
    assert not memory.has_front_matter  # so nothing ever rewrites it with new front matter
    stated = parse_memory("---\nid: brokn123\nkeywords: [a\n---\nthe text\n", path="w/b.md")
    # the id the file states still finds it; every line stays in the text (nothing lost)
    assert stated.id == "brokn123" and stated.problem and stated.body.startswith("---\nid:")


def test_unclosed_front_matter_and_non_mapping_are_problems_not_crashes() -> None:
    assert "never closed" in parse_memory("---\nid: x\nbody\n", path="a/b.md").problem
    assert "mapping" in parse_memory("---\n- a\n- b\n---\nbody\n", path="a/b.md").problem


def test_bad_field_values_are_reported_and_defaulted() -> None:
    memory = parse_memory("---\nkind: wizard\nseen: lots\n---\nx\n", path="a/b.md")
    assert memory.kind == "note" and memory.seen == 1
    assert "unknown kind" in memory.problem and "seen" in memory.problem


@given(st.text(max_size=400))
def test_parse_never_raises_on_any_text(text: str) -> None:
    parse_memory(text, path="global/any.md")


def test_normalization_folds_case_whitespace_bullets_and_unicode_forms() -> None:
    assert normalize_text("- Use  PNPM\n  not npm") == normalize_text("use pnpm not npm")
    assert normalize_text("cafe\u0301") == normalize_text("café")
    assert content_hash("* Use pnpm") == content_hash("use   pnpm")
    assert derive_id("global", "Use pnpm") == derive_id("global", "- use  PNPM")
    assert derive_id("global", "Use pnpm") != derive_id("webshop", "Use pnpm")
    assert len(derive_id("global", "x")) == 8 and derive_id("global", "x", 10).startswith(
        derive_id("global", "x")
    )


def test_slugs_are_short_ascii_and_never_empty() -> None:
    assert slugify("Upload 413 is NOT the app — lỗi kết nối đ") == "upload-413-is-not-the-app"
    assert slugify("!!! ???") == "memory"
    assert len(slugify("word " * 50)) <= 48
