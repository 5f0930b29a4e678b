"""The merge rules as laws (hypothesis) plus the cases people meet."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from memstore.core.codec import parse_memory, render_memory
from memstore.core.merge import CONFLICT_HEADER, merge_memory, merge_text
from memstore.core.model import Memory

LINES = st.sampled_from(["alpha\n", "bravo\n", "charlie\n", "delta\n", "echo\n", "foxtrot\n"])
bodies = st.lists(LINES, max_size=6).map("".join)
words = st.lists(
    st.sampled_from(["nginx", "redis", "deploy", "413", "k8s"]), max_size=4, unique=True
).map(tuple)
stamps = st.sampled_from(
    ["", "2026-01-01T00:00:00Z", "2026-06-01T12:00:00Z", "2026-11-29T14:12:23Z"]
)


@st.composite
def versions(draw: st.DrawFn) -> tuple[Memory, Memory, Memory]:
    """A base memory and two edits of it, each changing any subset of fields."""
    base = Memory(
        id="k3xq9v2m",
        workspace="global",
        body=draw(bodies),
        kind=draw(st.sampled_from(["note", "lesson"])),
        keywords=draw(words),
        source="cli",
        created=draw(stamps),
        seen=draw(st.integers(1, 5)),
        recalled=draw(st.integers(0, 5)),
        last_recalled=draw(stamps),
        supersedes=(),
        extra=draw(st.sampled_from([(), (("tags", "tags: [ops]"),)])),
    )

    def edit() -> Memory:
        changed = base
        if draw(st.booleans()):
            changed = replace(changed, body=draw(bodies))
        if draw(st.booleans()):
            changed = replace(changed, keywords=draw(words))
        if draw(st.booleans()):
            changed = replace(changed, seen=changed.seen + draw(st.integers(0, 3)))
        if draw(st.booleans()):
            later = max(changed.last_recalled, draw(stamps))  # recalls only move it forward
            changed = replace(
                changed, recalled=changed.recalled + draw(st.integers(0, 3)), last_recalled=later
            )
        if draw(st.booleans()):
            changed = replace(
                changed, kind=draw(st.sampled_from(["note", "lesson", "core", "trace"]))
            )
        if draw(st.booleans()):
            changed = replace(
                changed,
                extra=draw(
                    st.sampled_from([(), (("tags", "tags: [dev]"),), (("owner", "owner: maria"),)])
                ),
            )
        return changed

    return base, edit(), edit()


def rendered(base: Memory | None, ours: Memory, theirs: Memory) -> str:
    return render_memory(merge_memory(base, ours, theirs).memory)


@settings(max_examples=200)
@given(versions())
def test_merge_does_not_depend_on_which_side_is_ours(v: tuple[Memory, Memory, Memory]) -> None:
    base, ours, theirs = v
    assert rendered(base, ours, theirs) == rendered(base, theirs, ours)
    assert rendered(None, ours, theirs) == rendered(None, theirs, ours)


@given(versions())
def test_identical_sides_merge_to_themselves_counting_each_sides_increments(
    v: tuple[Memory, Memory, Memory],
) -> None:
    base, ours, _ = v
    twice = replace(
        ours, seen=2 * ours.seen - base.seen, recalled=2 * ours.recalled - base.recalled
    )
    assert merge_memory(base, ours, ours).memory == twice
    assert merge_memory(base, base, ours).memory == ours
    assert merge_memory(base, base, base).memory == base


@settings(max_examples=150)
@given(versions())
def test_counters_count_each_sides_increments_once(v: tuple[Memory, Memory, Memory]) -> None:
    base, ours, theirs = v
    merged = merge_memory(base, ours, theirs).memory
    assert merged.seen == ours.seen + theirs.seen - base.seen
    assert merged.recalled == ours.recalled + theirs.recalled - base.recalled
    assert merged.last_recalled == max(ours.last_recalled, theirs.last_recalled)


@settings(max_examples=150)
@given(versions())
def test_no_added_line_or_keyword_is_lost(v: tuple[Memory, Memory, Memory]) -> None:
    base, ours, theirs = v
    merged = merge_memory(base, ours, theirs).memory
    base_lines = set(base.body.splitlines())
    for side in (ours, theirs):
        for line in set(side.body.splitlines()) - base_lines:
            assert line in merged.body.splitlines()
    for side in (ours, theirs):
        assert set(side.keywords) - set(base.keywords) <= set(merged.keywords)
    for line in set(ours.body.splitlines()) | set(theirs.body.splitlines()):
        assert line in rendered(None, ours, theirs)


@settings(max_examples=150)
@given(versions())
def test_the_result_always_parses_back(v: tuple[Memory, Memory, Memory]) -> None:
    base, ours, theirs = v
    result = merge_memory(base, ours, theirs)
    text = render_memory(result.memory)
    parsed = parse_memory(text, path="global/x-k3xq9v2m.md")
    assert not parsed.problem and parsed == result.memory
    assert ("conflict", "conflict: true") in parsed.extra if result.conflict else True


def test_the_same_memory_added_on_two_machines_is_seen_twice() -> None:
    one = Memory(
        id="abc",
        workspace="global",
        body="use pnpm\n",
        seen=1,
        created="2026-11-29T10:00:00Z",
        keywords=("pnpm",),
    )
    two = replace(one, created="2026-11-28T09:00:00Z", keywords=("npm",))
    merged = merge_memory(None, one, two).memory
    assert (
        merged.seen == 2
        and merged.created == "2026-11-28T09:00:00Z"
        and merged.keywords == ("npm", "pnpm")
    )


def test_edits_to_different_lines_merge_cleanly() -> None:
    base = "line one\nline two\nline three\n"
    ours = "line ONE\nline two\nline three\n"
    theirs = "line one\nline two\nline THREE\n"
    assert merge_text(base, ours, theirs) == ("line ONE\nline two\nline THREE\n", False)


def test_edits_to_the_same_line_keep_both_texts_marked() -> None:
    base = Memory(id="abc", workspace="global", body="port is 5432\n")
    ours = replace(base, body="port is 5433\n")
    theirs = replace(base, body="port is 6432 (pgbouncer)\n")
    result = merge_memory(base, ours, theirs)
    text = render_memory(result.memory)
    assert result.conflict and "conflict: true" in text and CONFLICT_HEADER in text
    assert "port is 5433" in text and "port is 6432 (pgbouncer)" in text


def test_kind_chosen_by_rank_when_both_change_it() -> None:
    base = Memory(id="abc", workspace="global", body="x\n", kind="note")
    assert (
        merge_memory(base, replace(base, kind="lesson"), replace(base, kind="core")).memory.kind
        == "core"
    )
    assert merge_memory(base, replace(base, kind="lesson"), base).memory.kind == "lesson"


def test_hand_written_files_stay_without_front_matter() -> None:
    base = parse_memory("a\nb\n", path="global/notes.md")
    ours = parse_memory("a\nb\nc\n", path="global/notes.md")
    theirs = parse_memory("z\na\nb\n", path="global/notes.md")
    merged = merge_memory(base, ours, theirs).memory
    assert render_memory(merged) == "z\na\nb\nc\n"
