"""Per-replica counters (`seen_by`, `recalled_by`, `confirmed_by`): grow-only per clone, exact merges.

Issue 36 item 3: two machines making the same bump must not write the same bytes (git then
never calls the merge driver and one bump is lost). Laws as hypothesis properties, the old
plain-scalar format, and hand-written files patched only where they change.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from memstore.core.codec import parse_memory, render_changes, render_memory
from memstore.core.merge import Counter, merge_file, merge_memory, tally, unattributed
from memstore.core.model import Memory
from memstore.service.store import Store
from tests.conftest import settings_at

REPLICAS = ("laptop-ab12", "desk-cd34", "ci-ef56", "1234")
COUNTERS: tuple[Counter, ...] = ("seen", "recalled", "confirmed")


@st.composite
def bases(draw: st.DrawFn) -> Memory:
    """A memory whose counters have an unattributed part and some replicas' entries."""
    memory = Memory(id="k3xq9v2m", workspace="global", body="upload 413 is nginx\n")
    for name in COUNTERS:
        shares = draw(st.dictionaries(st.sampled_from(REPLICAS), st.integers(1, 4), max_size=3))
        loose = draw(st.integers(1 if name == "seen" else 0, 9))
        memory = replace(
            memory,
            **{name: loose + sum(shares.values()), f"{name}_by": tuple(sorted(shares.items()))},
        )
    return memory


@st.composite
def clones(draw: st.DrawFn) -> tuple[Memory, list[Memory], list[int]]:
    """A base and what each of up to three clones made of it by counting on its own entry;
    returns the clones' versions and how many counts each made."""
    base = draw(bases())
    versions, made = [], []
    for replica in draw(
        st.lists(st.sampled_from(REPLICAS[:3]), min_size=2, max_size=3, unique=True)
    ):
        version, counted = base, 0
        for name in COUNTERS:
            times = draw(st.integers(0, 3))
            counted += times
            for _ in range(times):
                version = tally(version, name, replica)
        versions.append(version)
        made.append(counted)
    return base, versions, made


def merged(base: Memory | None, ours: Memory, theirs: Memory) -> Memory:
    return merge_memory(base, ours, theirs).memory


@settings(max_examples=150)
@given(clones())
def test_merging_counters_is_commutative(c: tuple[Memory, list[Memory], list[int]]) -> None:
    base, (ours, theirs, *_), _ = c
    assert render_memory(merged(base, ours, theirs)) == render_memory(merged(base, theirs, ours))
    assert merged(None, ours, theirs) == merged(None, theirs, ours)


@settings(max_examples=150)
@given(clones())
def test_merging_a_version_with_itself_or_its_base_gives_it_back(
    c: tuple[Memory, list[Memory], list[int]],
) -> None:
    base, (ours, theirs, *_), _ = c
    assert merged(base, ours, ours) == ours  # identical bytes are one state, not two bumps
    assert merged(base, ours, base) == ours
    both = merged(base, ours, theirs)
    assert merged(base, both, ours) == both  # merging in what is already in changes nothing
    assert merged(ours, both, both) == both


@settings(max_examples=150)
@given(clones(), st.randoms(use_true_random=False))
def test_every_count_of_every_clone_is_kept_once_in_any_merge_order(
    c: tuple[Memory, list[Memory], list[int]], order: object
) -> None:
    base, versions, _ = c
    shuffled = list(versions)
    order.shuffle(shuffled)  # type: ignore[attr-defined]
    result = shuffled[0]
    for other in shuffled[1:]:
        result = merged(base, result, other)
    for name in COUNTERS:
        made = sum(getattr(v, name) - getattr(base, name) for v in versions)
        assert getattr(result, name) == getattr(base, name) + made
        assert unattributed(result, name) == unattributed(base, name)


@settings(max_examples=100)
@given(clones(), st.integers(1, 3))
def test_an_old_memstore_bumping_the_plain_counter_still_adds_up(
    c: tuple[Memory, list[Memory], list[int]], plain: int
) -> None:
    base, (ours, theirs, *_), _ = c
    old = replace(theirs, seen=theirs.seen + plain)  # a memstore without the map
    result = merged(base, ours, old)
    assert result.seen == ours.seen + old.seen - base.seen
    assert result == merged(base, old, ours)


@settings(max_examples=100)
@given(clones())
def test_counter_maps_round_trip_through_the_file(
    c: tuple[Memory, list[Memory], list[int]],
) -> None:
    _, versions, _ = c
    for version in versions:
        text = render_memory(version)
        assert parse_memory(text, path="global/x-k3xq9v2m.md") == version
        assert render_memory(parse_memory(text, path="global/x-k3xq9v2m.md")) == text


OLD = """---
id: k3xq9v2m
kind: lesson
keywords: [nginx]
created: 2026-01-01T00:00:00Z
seen: 8
---
upload 413 is nginx client_max_body_size
"""


def test_an_old_files_plain_seen_reads_and_two_same_bumps_add_up() -> None:
    old = parse_memory(OLD, path="global/x-k3xq9v2m.md")
    assert old.seen == 8 and old.seen_by == () and not old.problem
    a, b = (tally(old, "seen", r) for r in ("laptop-ab12", "desk-cd34"))
    a_bytes, b_bytes = (render_memory(m).encode() for m in (a, b))
    assert a_bytes != b_bytes  # git sees two changes and runs the driver
    result = merge_file("global/x-k3xq9v2m.md", OLD.encode(), a_bytes, b_bytes)
    text = (result.data or b"").decode()
    assert "seen: 10\nseen_by: {desk-cd34: 1, laptop-ab12: 1}\n" in text
    # an old memstore's plain bump on one side, a new one on the other
    plain = OLD.replace("seen: 8", "seen: 9").encode()
    result = merge_file("global/x-k3xq9v2m.md", OLD.encode(), plain, a_bytes)
    assert parse_memory((result.data or b"").decode(), path="global/x.md").seen == 10


HAND = """---
# my notes on this one
id: k3xq9v2m
kind: lesson
seen: 8   # bumped by hand once
tags: [ops]
---
upload 413 is nginx client_max_body_size
"""


def test_a_hand_written_file_changes_only_in_its_counter_lines() -> None:
    before = parse_memory(HAND, path="global/x-k3xq9v2m.md")
    after = tally(tally(before, "seen", "laptop-ab12"), "recalled", "laptop-ab12", 2)
    text = render_changes(HAND, before, after)
    assert text == HAND.replace(
        "seen: 8   # bumped by hand once\n",
        "seen: 9   # bumped by hand once\nseen_by: {laptop-ab12: 1}\n",
    ).replace("tags: [ops]\n", "tags: [ops]\nrecalled: 2\nrecalled_by: {laptop-ab12: 2}\n")
    again = tally(after, "seen", "laptop-ab12")
    # the comment keeps its column
    assert render_changes(text, after, again) == text.replace("seen: 9 ", "seen: 10").replace(
        "seen_by: {laptop-ab12: 1}", "seen_by: {laptop-ab12: 2}"
    )


def test_a_broken_counter_map_is_reported_and_the_counter_still_reads() -> None:
    memory = parse_memory(
        OLD.replace("seen: 8\n", "seen: 8\nseen_by: {a: lots}\n"), path="global/x.md"
    )
    assert memory.seen == 8 and memory.seen_by == () and "seen_by" in memory.problem


def test_a_duplicate_add_a_recall_flush_and_a_confirm_count_on_this_clones_entry(
    store: Store,
) -> None:
    added = store.add("upload 413 is nginx client_max_body_size", workspace="global")
    store.add("upload 413 is nginx client_max_body_size", workspace="global")
    store.recall("nginx 413", workspace="global", record_usage=True)
    assert store.flush_usage() == 1
    store.confirm(added.id)
    memory = parse_memory(
        (store.vault.root / added.path).read_text(encoding="utf-8"), path=added.path
    )
    replica = store.replica()
    assert replica.startswith("test-host-") and len(replica) == len("test-host-") + 4
    assert (memory.seen, memory.seen_by) == (2, ((replica, 1),))
    assert (memory.recalled, memory.recalled_by) == (1, ((replica, 1),))
    assert (memory.confirmed, memory.confirmed_by) == (1, ((replica, 1),))


def test_each_clone_and_each_copy_of_a_vault_counts_under_its_own_name(
    store: Store, tmp_path: Path
) -> None:
    name = store.replica()
    assert store.replica() == name  # kept
    copy = tmp_path / "copy"
    shutil.copytree(store.vault.root, copy)  # .memstore/ and all
    with Store.open(settings_at(copy)) as copied:
        assert copied.replica() != name


def test_a_vault_reached_through_a_symlink_and_its_real_path_keeps_one_name(
    vault: Path, tmp_path: Path
) -> None:
    linked = tmp_path / "linked-vault"
    linked.symlink_to(vault)
    with Store.open(settings_at(vault)) as store:
        added = store.add("upload 413 is nginx client_max_body_size", workspace="global")
        name = store.replica()
    for path in (linked, vault, linked):  # --vault one way, MEMSTORE_VAULT the other
        with Store.open(settings_at(path)) as store:
            assert store.replica() == name
            store.add("upload 413 is nginx client_max_body_size", workspace="global")
    memory = parse_memory((vault / added.path).read_text(encoding="utf-8"), path=added.path)
    assert (memory.seen, memory.seen_by) == (4, ((name, 3),))  # the add itself: unattributed
