"""The memory file format: byte-exact round trips and tolerance of what people write."""

from __future__ import annotations

import re
import string
import unicodedata
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstore.core.citations import Cite
from memstore.core.codec import (
    KNOWN_KEYS,
    content_hash,
    derive_id,
    normalize_text,
    parse_memory,
    render_changes,
    render_memory,
    slugify,
)
from memstore.core.model import KINDS, Memory
from memstore.core.yaml_values import render_list, render_scalar

words = st.text(
    alphabet=string.ascii_letters + string.digits + " _-.:/@#'\"äöüếỗ", min_size=1, max_size=20
)
keyword = words.map(str.strip).filter(bool)
timestamps = st.datetimes().map(lambda d: d.strftime("%Y-%m-%dT%H:%M:%SZ"))
bodies = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\x00"), max_size=300
)


@st.composite
def citations(draw: st.DrawFn) -> Cite:
    segment = st.text(
        st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="/\\"),
        min_size=1,
        max_size=12,
    ).filter(lambda s: s.strip() == s and s not in (".", ".."))
    path = "/".join(draw(st.lists(segment, min_size=1, max_size=3)))
    cut = draw(st.sampled_from(["file", "symbol", "lines"]))
    start = draw(st.integers(1, 5000))
    return Cite(
        repo=draw(st.sampled_from(["webshop", "data-pipeline", "my.repo_2"])),
        path=path,
        symbol=draw(st.sampled_from(["handle_upload", "Uploader.handle", "$init"]))
        if cut == "symbol"
        else "",
        lines=(start, start + draw(st.integers(0, 90))) if cut == "lines" else None,
        blob=draw(st.sampled_from(["", "3f2a1c9e" * 5])),
        digest=draw(st.sampled_from(["", "ab12cd34ef56ab12"])),
        at=draw(st.one_of(st.just(""), timestamps)),
    )


cite_lists = st.lists(citations(), max_size=3).map(
    lambda cs: tuple({c.key: c for c in cs}.values())
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
        cites=draw(cite_lists),
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


@pytest.mark.parametrize(
    ("header", "said"),
    [
        ("keywords: [a, b\n", "line 3: while parsing a flow sequence, did not find expected ',' or ']'"),
        ("kind: lesson\nfoo: : bar\n", "line 4: mapping values are not allowed in this context"),
        ('x: "unclosed\n', "line 3: while scanning a quoted scalar, found unexpected end of stream"),
    ],
)  # fmt: skip
def test_malformed_yaml_names_the_line_of_the_file_and_what_yaml_wanted(
    header: str, said: str
) -> None:
    """doctor said only 'malformed YAML front matter: while parsing a flow sequence' for a
    hand-broken `keywords: [a, b` (trial 14): no line, nothing to fix by."""
    memory = parse_memory(f"---\nid: abcdefgh\n{header}---\nbody\n", path="w/x.md")
    assert memory.problem == f"malformed YAML front matter: {said}"


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


def test_front_matter_closed_by_yaml_dots_is_named_with_its_line() -> None:
    # YAML's document end `...` is not memstore's closing: the reason says so and where,
    # rather than "never closed" (which sent a person looking for a missing line).
    text = "---\nid: dots1234\nkind: note\n...\nkafka retention is 7 days\n"
    memory = parse_memory(text, path="w/b.md")
    assert memory.problem == (
        "front matter opened with '---' is closed by '...' on line 4: make that line '---'"
    )
    assert memory.body == text and not memory.has_front_matter  # still never rewritten
    crlf = parse_memory(text.replace("\n", "\r\n"), path="w/b.md")
    assert "'...' on line 4" in crlf.problem
    fixed = parse_memory(text.replace("\n...\n", "\n---\n"), path="w/b.md")
    assert not fixed.problem and fixed.id == "dots1234"


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


_BULLET = r"^[ \t]*(?:[-*+]|\d{1,3}[.)])[ \t]+"
# every character Python reads as whitespace, and a few that look like it but are not
_SPACES = "".join(c for c in map(chr, range(0x3000 + 1)) if c.isspace()) + "\u200b\ufeff\u00a0"


@given(st.text(alphabet=st.sampled_from(f"ab É-*1.)\u0301{_SPACES}"), max_size=60) | st.text())
def test_normalization_is_the_regex_form_it_replaced(text: str) -> None:
    # the form before the reindex speed-up (tenth session): runs of `\s` become one space
    text_nfc = re.sub(_BULLET, "", unicodedata.normalize("NFC", text), flags=re.MULTILINE)
    assert normalize_text(text) == re.sub(r"\s+", " ", text_nfc.casefold()).strip()


def test_slugs_are_short_ascii_and_never_empty() -> None:
    assert slugify("Upload 413 is NOT the app — lỗi kết nối đ") == "upload-413-is-not-the-app"
    assert slugify("!!! ???") == "memory"
    assert len(slugify("word " * 50)) <= 48


@pytest.mark.parametrize(
    ("text", "slug"),
    [
        ("Some%20Thing", "some-thing"),  # was some-20thing (issue 36)
        ("Ünïcode", "unicode"),
        ("Straße in Ærøskøbing, Łódź", "strasse-in-aeroskobing-lodz"),
        ("x%C3%BCy", "xuy"),  # an escaped ü
        ("100%ff off", "100-ff-off"),  # not an escape of text: kept as written
        ("..%2F..%2Fetc%2Fpasswd", "etc-passwd"),  # still only letters, digits and '-'
        ("%E2%80%AE%00", "memory"),
    ],
)
def test_slugs_decode_percent_escapes_and_drop_accents(text: str, slug: str) -> None:
    assert slugify(text) == slug


# --- render_changes: a hand-written file keeps every byte but the changed keys ---------

HAND_WRITTEN = """\
---
# written by hand; memstore must keep this comment
id: abcdefgh
kind: lesson                 # note | trace | lesson | core | imported
keywords:
  - nginx
  - "413"   # quoted on purpose
source: claude-code
seen: 3                      # times this memory was stored
tags: [ops, oncall]   # mine
mode: 0755
---
upload 413 is nginx client_max_body_size
"""


def test_confirm_on_a_hand_written_file_adds_one_line_and_keeps_the_rest() -> None:
    before = parse_memory(HAND_WRITTEN, path="infra/x.md")
    after = render_changes(HAND_WRITTEN, before, replace(before, confirmed=1))
    assert after == HAND_WRITTEN.replace("mode: 0755\n", "mode: 0755\nconfirmed: 1\n")


def test_a_changed_counter_keeps_its_comment_at_the_same_column() -> None:
    before = parse_memory(HAND_WRITTEN, path="infra/x.md")
    after = render_changes(HAND_WRITTEN, before, replace(before, seen=4, kind="note"))
    assert after == HAND_WRITTEN.replace("seen: 3 ", "seen: 4 ").replace(
        "kind: lesson   ", "kind: note     "
    )
    longer = render_changes(HAND_WRITTEN, before, replace(before, seen=10**30))
    assert f"seen: {10**30} # times this memory was stored\n" in longer


def test_changed_keywords_replace_only_their_block() -> None:
    before = parse_memory(HAND_WRITTEN, path="infra/x.md")
    after = render_changes(HAND_WRITTEN, before, replace(before, keywords=("nginx", "413", "up")))
    block = 'keywords:\n  - nginx\n  - "413"   # quoted on purpose\n'
    assert after == HAND_WRITTEN.replace(block, 'keywords: [nginx, "413", up]\n')


def test_crlf_bom_and_unknown_keys_stay_and_new_keys_go_before_the_closing_line() -> None:
    text = "\ufeff" + HAND_WRITTEN.replace("\n", "\r\n")
    before = parse_memory(text, path="infra/x.md")
    changed = replace(before, recalled=2, extra=(*before.extra, ("conflict", "conflict: true")))
    after = render_changes(text, before, changed)
    assert after == text.replace(
        "mode: 0755\r\n", "mode: 0755\r\nrecalled: 2\r\nconflict: true\r\n"
    )
    dropped = replace(before, extra=before.extra[1:])
    assert render_changes(text, before, dropped) == text.replace(
        "tags: [ops, oncall]   # mine\r\n", ""
    )


def test_render_changes_falls_back_only_when_it_must() -> None:
    before = parse_memory(HAND_WRITTEN, path="infra/x.md")
    new_body = replace(before, body="a new text\n", seen=4)
    assert render_changes(HAND_WRITTEN, before, new_body) == render_memory(new_body)
    twice = HAND_WRITTEN.replace("mode: 0755\n", "mode: 0755\nseen: 5\n")  # YAML keeps the last
    stated = parse_memory(twice, path="infra/x.md")
    assert render_changes(twice, stated, replace(stated, seen=6)) == render_memory(
        replace(stated, seen=6)
    )
    flow = "---\n{id: abcdefgh, seen: 2}\n---\nbody\n"
    from_flow = parse_memory(flow, path="infra/x.md")
    assert render_changes(flow, from_flow, replace(from_flow, seen=3)) == render_memory(
        replace(from_flow, seen=3)
    )
    plain = "# a note with no front matter\n"
    note = parse_memory(plain, path="global/n.md")
    assert render_changes(plain, note, note) == plain


def test_a_file_without_an_id_line_does_not_gain_one() -> None:
    text = "---\nkind: note   # mine\n---\nbody\n"
    before = parse_memory(text, path="global/n.md")
    assert render_changes(text, before, replace(before, confirmed=2)) == text.replace(
        "---\nbody", "confirmed: 2\n---\nbody"
    )


# Hand-written front matter: each entry is (key or "" for a comment/blank line, its lines).
plain_words = st.sampled_from(["nginx", "413", "no", "null", "a b", "x:y", "#tag", "Ünï", "yes"])
comment_text = st.sampled_from(["", " note", " seen: 99", " # twice", " ünicode", "  "])
SOURCES = ["claude-code", '"human"', "cli"]
CREATED = ["2026-11-29T14:12:23Z", '"2026-01-02"']
spacing = st.sampled_from([" ", "  ", "\t", "        "])


@st.composite
def hand_entries(draw: st.DrawFn) -> list[tuple[str, list[str]]]:
    def tail() -> str:
        return draw(
            st.one_of(st.just(""), st.builds(lambda s, c: f"{s}#{c}", spacing, comment_text))
        )

    entries: list[tuple[str, list[str]]] = [
        ("id", [f"id: {draw(st.text('abcdefgh234567', min_size=8, max_size=8))}{tail()}"]),
        ("kind", [f"kind: {draw(st.sampled_from(KINDS))}{tail()}"]),
        ("seen", [f"seen: {draw(st.integers(1, 999))}{tail()}"]),
        ("source", [f"source: {draw(st.sampled_from(SOURCES))}{tail()}"]),
        (
            "created",
            [f"created: {draw(st.sampled_from(CREATED))}"],
        ),
        ("tags", [f"tags: [ops, oncall]{tail()}"]),
        ("reviewed", [f"reviewed: no{tail()}"]),
        (
            "aliases",
            ["aliases:", "  - one", *draw(st.sampled_from([[], ["  # inside"]])), "  - two"],
        ),
    ]
    words = draw(st.lists(plain_words, unique=True, max_size=4))
    if draw(st.booleans()) and words:
        items = [f"  - {render_scalar(w)}" for w in words]
        entries.append(("keywords", ["keywords:", *items]))
    else:
        entries.append(("keywords", [f"keywords: {render_list(tuple(words))}{tail()}"]))
    optional = [
        ("recalled", [f"recalled: {draw(st.integers(0, 50))}{tail()}"]),
        ("confirmed", [f"confirmed: {draw(st.integers(0, 5))}"]),
        ("archived", ["archived: 2026-10-01T00:00:00Z"]),
    ]
    entries += [entry for entry in optional if draw(st.booleans())]
    entries = draw(st.permutations(entries))
    for _ in range(draw(st.integers(0, 4))):
        position = draw(st.integers(0, len(entries)))
        entries.insert(
            position, ("", [draw(st.sampled_from(["", "# a comment", "#", "# seen: 7"]))])
        )
    return entries


timestamp_or_empty = st.sampled_from(["", "2026-12-01T09:00:00Z", "2027-01-01T00:00:00Z"])


@st.composite
def field_changes(draw: st.DrawFn, memory: Memory) -> Memory:
    options = {
        "seen": st.integers(0, 10**6),
        "recalled": st.integers(0, 10**6),
        "confirmed": st.integers(0, 99),
        "last_recalled": timestamp_or_empty,
        "archived": timestamp_or_empty,
        "kind": st.sampled_from(KINDS),
        "source": st.sampled_from(["", "codex", "a person", "no"]),
        "keywords": st.lists(plain_words, unique=True, max_size=5).map(tuple),
        "supersedes": st.lists(st.text("abcdefgh234", min_size=8, max_size=8), max_size=2).map(
            lambda ids: tuple(dict.fromkeys(ids))
        ),
        "cites": cite_lists,
    }
    chosen = draw(st.lists(st.sampled_from(sorted(options)), unique=True, max_size=4))
    changed = replace(memory, **{name: draw(options[name]) for name in chosen})
    if draw(st.booleans()):
        changed = replace(changed, extra=(*changed.extra, ("conflict", "conflict: true")))
    return changed


# The keys render_memory writes only when they hold something.
OPTIONAL_KEYS = set(KNOWN_KEYS) - {
    line.split(":")[0] for line in render_memory(Memory(id="x", workspace="w", body="")).split("\n")
}


@given(hand_entries(), st.sampled_from(["\n", "\r\n"]), st.booleans(), st.data())
def test_render_changes_rewrites_only_changed_keys(
    entries: list[tuple[str, list[str]]], newline: str, bom: bool, data: st.DataObject
) -> None:
    header = [line for _, lines in entries for line in lines]
    body = f"body line{newline}---{newline}more{newline}"
    text = ("\ufeff" if bom else "") + newline.join(["---", *header, "---"]) + newline + body
    before = parse_memory(text, path="infra/x.md")
    assert not before.problem and before.has_front_matter
    after = data.draw(field_changes(before))
    result = render_changes(text, before, after)

    parsed = parse_memory(result, path="infra/x.md")
    notes = re.compile(r"^\s*(#.*)?$")

    def meaning(memory: Memory) -> Memory:
        extra = tuple(
            (key, "\n".join(line for line in raw.split("\n") if not notes.match(line)))
            for key, raw in memory.extra
        )
        return replace(memory, extra=extra)

    assert meaning(parsed) == meaning(after)
    assert result.endswith(newline + "---" + newline + body) and result.startswith(text[:4])
    changed = {key for key in KNOWN_KEYS if getattr(before, key) != getattr(after, key)}
    # a key emptied goes, as render_memory leaves it out (revive: no `archived: ""`)
    emptied = {key for key in changed & OPTIONAL_KEYS if not getattr(after, key)}
    added = len(after.extra) - len(before.extra)
    kept = [line for key, lines in entries if key not in changed for line in lines]
    lines = result.removeprefix("\ufeff").split(newline)
    out = lines[1 : lines.index("---", 1)]
    assert not any(line.startswith(f"{key}:") for key in emptied for line in out)
    # one line per changed key (and one per citation), none for a key emptied
    cited = len(after.cites) if "cites" in changed else 0
    assert len(out) == len(kept) + len(changed) - len(emptied) + added + cited
    cursor = 0
    for line in kept:  # every other line, byte for byte and in order
        cursor = out.index(line, cursor) + 1


@given(st.text(), st.integers(min_value=1, max_value=200))
def test_clip_cuts_to_the_width_and_marks_the_cut(text: str, width: int) -> None:
    from memstore.core.model import clip, summary

    clipped = clip(text, width)
    assert len(clipped) <= width
    assert clipped == text if len(text) <= width else clipped.endswith("…")
    one_line = " ".join(text.split())
    assert summary(one_line, width) == clip(one_line, width)  # one function cuts both
