"""The core block is read again only when a core memory changed (issue 39: at 100k every add
made the next recall read ~6,700 core documents again, ~0.3 s), and it is always the block a
fresh process computes."""

from __future__ import annotations

from pathlib import Path

import pytest

from memstore.catalog import retrieval
from memstore.service.store import Store
from tests.conftest import settings_at


def _fresh_block(vault: Path, workspace: str | None) -> list[tuple[str, str, str]]:
    with Store.open(settings_at(vault)) as other:
        found = other.recall("deploy", workspace=workspace, k=3)
        return [(c.id, c.workspace, c.content) for c in found.core]


@pytest.mark.parametrize("workspace", [None, "webshop"])
def test_an_add_of_a_note_keeps_the_block_a_core_change_reads_it_again(
    vault: Path, monkeypatch: pytest.MonkeyPatch, workspace: str | None
) -> None:
    reads: list[object] = []
    computed = retrieval.core_memories

    def counted(*args: object, **kwargs: object) -> object:
        reads.append(args[1])
        return computed(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr("memstore.service.reader.core_memories", counted)
    with Store.open(settings_at(vault)) as store:
        store.add("deploys go out on tuesdays only", workspace="webshop", kind="core")
        store.add("every change needs a ticket number", workspace="global", kind="core")

        def block() -> list[tuple[str, str, str]]:
            found = store.recall("deploy", workspace=workspace, k=3)
            return [(c.id, c.workspace, c.content) for c in found.core]

        first = block()
        assert len(first) == 2 and len(reads) == 1
        store.add("the deploy script lives in tools/deploy.sh", workspace="webshop")
        assert block() == first
        assert len(reads) == 1  # a note changed no core memory: the block was kept
        assert first == _fresh_block(vault, workspace)  # (a process of its own: reads it)
        core = store.add("deploys freeze in december", workspace="webshop", kind="core")
        reads.clear()
        changed = block()
        assert len(reads) == 1
        assert core.id in {c[0] for c in changed}
        assert changed == _fresh_block(vault, workspace)
