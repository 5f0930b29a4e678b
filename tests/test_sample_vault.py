"""The shipped sample vault is realistic, complete and in memstore's own format."""

from __future__ import annotations

from collections import Counter

from memstore.core.codec import parse_memory, render_memory
from tests.conftest import SAMPLE_VAULT


def memories() -> dict[str, object]:
    return {
        p.relative_to(SAMPLE_VAULT).as_posix(): parse_memory(
            p.read_text(encoding="utf-8"), path=p.relative_to(SAMPLE_VAULT).as_posix()
        )
        for p in SAMPLE_VAULT.glob("*/*.md")
    }


def test_sample_vault_has_enough_memories_workspaces_and_kinds() -> None:
    found = memories()
    assert len(found) >= 40
    workspaces = Counter(m.workspace for m in found.values())
    assert len(workspaces) >= 4 and "global" in workspaces
    assert {"note", "trace", "lesson", "core"} <= {m.kind for m in found.values()}


def test_sample_files_parse_cleanly_and_round_trip_byte_identical() -> None:
    for path, memory in memories().items():
        assert not memory.problem, path
        text = (SAMPLE_VAULT / path).read_text(encoding="utf-8")
        assert render_memory(memory) == text, path
        if memory.has_front_matter:
            assert path.endswith(f"-{memory.id}.md"), path


def test_sample_supersede_links_point_at_existing_memories() -> None:
    found = memories()
    ids = {m.id for m in found.values()}
    links = [target for m in found.values() for target in m.supersedes]
    assert links and set(links) <= ids
