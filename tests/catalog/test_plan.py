"""The catch-up planner: files on disk and a manifest's record in, the plan out (pure)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memstore.catalog.plan import (
    FINE_RACY_NS,
    RACY,
    RACY_NS,
    Plan,
    plan_catch_up,
    settle,
    settle_all,
)

paths = st.text(alphabet="abc/", min_size=1, max_size=6)
fingerprints = st.tuples(st.integers(0, 3), st.integers(0, 3))
listings = st.dictionaries(paths, fingerprints, max_size=12)


def test_a_plan_sorts_files_into_added_changed_removed_and_unchanged() -> None:
    on_disk = {"a.md": (1, 10), "b.md": (2, 20), "d.md": (4, 40)}
    recorded = {"a.md": (1, 10), "b.md": (2, 99), "c.md": (3, 30)}
    plan = plan_catch_up(on_disk, recorded)
    assert plan == Plan(added=("d.md",), changed=("b.md",), removed=("c.md",), unchanged=("a.md",))
    assert plan.to_index == ["b.md", "d.md"]
    assert plan


def test_nothing_changed_is_an_empty_plan() -> None:
    plan = plan_catch_up({"a.md": (1, 10)}, {"a.md": (1, 10)})
    assert not plan
    assert plan.unchanged == ("a.md",)


@given(listings, listings)
def test_every_file_lands_in_exactly_one_part_of_the_plan(
    on_disk: dict[str, tuple[int, int]], recorded: dict[str, tuple[int, int]]
) -> None:
    plan = plan_catch_up(on_disk, recorded)
    parts = (plan.added, plan.changed, plan.removed, plan.unchanged)
    every = [path for part in parts for path in part]
    assert sorted(every) == sorted(set(on_disk) | set(recorded))
    assert all(list(part) == sorted(part) for part in parts)
    assert set(plan.added) == set(on_disk) - set(recorded)
    assert set(plan.removed) == set(recorded) - set(on_disk)
    assert all(on_disk[p] == recorded[p] for p in plan.unchanged)
    assert all(on_disk[p] != recorded[p] for p in plan.changed)


@given(listings, listings)
def test_applying_a_plan_to_the_record_gives_what_is_on_disk(
    on_disk: dict[str, tuple[int, int]], recorded: dict[str, tuple[int, int]]
) -> None:
    plan = plan_catch_up(on_disk, recorded)
    after = {p: fp for p, fp in recorded.items() if p not in plan.removed}
    after.update({p: on_disk[p] for p in plan.to_index})
    assert after == on_disk
    assert not plan_catch_up(on_disk, after)  # and the next catch-up finds nothing


def test_what_changed_within_racy_ns_of_its_reading_is_recorded_racy() -> None:
    started = 10 * RACY_NS
    assert settle(started - RACY_NS - 1, started) == started - RACY_NS - 1
    assert settle(started - RACY_NS, started) == RACY
    assert settle(started + 5, started) == RACY  # a clock that went back
    assert settle_all({"a": 0, "b": started}, started) == {"a": 0, "b": RACY}


def test_a_fine_time_settles_after_the_fine_margin_a_whole_second_after_racy_ns() -> None:
    started = 10 * RACY_NS
    fine = started - FINE_RACY_NS - 1  # a fraction of a second: a fine file system's time
    assert settle(fine, started) == fine
    assert settle(started - FINE_RACY_NS, started) == RACY
    whole = started - 1_000_000_000  # may come from a coarse file system: 2 s apply
    assert settle(whole, started) == RACY


@given(st.integers(0, 10**19), st.integers(0, 10**19))
def test_a_settled_time_is_the_time_itself_or_racy(mtime: int, started: int) -> None:
    settled = settle(mtime, started)
    assert settled in (mtime, RACY)
    margin = RACY_NS if mtime % 1_000_000_000 == 0 else FINE_RACY_NS
    assert (settled == RACY) == (started - mtime <= margin)
