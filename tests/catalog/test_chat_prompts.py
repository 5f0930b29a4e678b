"""What the prompt hook answers for prompts as people type them (issue 38, twelfth session).

Each rule runs on a small vault of its own through the real prompt hook (`hook`, the function
the `memstore hook prompt` process and the daemon run) and through a plain search, which
means every word and keeps what the vault measured: the rules apply to prompts typed to an
agent only (Query.chat). None of these prompts or memories comes from a held-out set.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memstore.service.store import Store
from tests.catalog.test_confidence import hook
from tests.conftest import settings_at


@pytest.fixture
def lake(tmp_path: Path) -> Iterator[tuple[Store, Path, dict[str, str]]]:
    """A data-lake vault: the backfill lesson, and a note holding part of its words."""
    vault = tmp_path / "vault"
    with Store.open(settings_at(vault), create=True) as opened:
        ids = {
            keywords[0]: opened.add(text, workspace="lake", keywords=keywords).id
            for text, keywords in (
                (
                    "Backfill the nightly_export job one day at a time: airflow dags backfill "
                    "nightly_export -s DAY -e DAY, never a whole month in one run",
                    ("backfill", "nightly_export"),
                ),
                (
                    "nightly_export writes parquet files to the lake bucket under "
                    "exports/YYYY/MM/DD",
                    ("nightly_export", "parquet"),
                ),
                ("The lake bucket keeps 90 days of raw events", ("lake",)),
                ("Airflow runs on the ops cluster; its UI is behind the VPN", ("airflow",)),
                ("Invoices are sent by Stripe, never by hand", ("invoices",)),
                ("Deploy the pipelines with make deploy from main", ("deploy",)),
                ("Staff log in with Google accounts only", ("login",)),
                ("Weather data comes from the Met Office API every hour", ("weather",)),
            )
        }
        yield opened, vault, ids


PROMPT = "backfill nightly_export for the first week of march, the grafana panel shows gaps"


def test_a_hit_holding_part_of_the_leads_words_is_no_rival(
    lake: tuple[Store, Path, dict[str, str]],
) -> None:
    """The parquet note holds "nightly_export" and nothing else of the prompt; the backfill
    lesson holds that and "backfill". The note finds the same words less well, it answers
    nothing else: it no longer keeps the lesson from leading in a prompt typed to an agent."""
    store, vault, ids = lake
    out = hook(vault, "lake", PROMPT)
    assert f"[{ids['backfill']}]" in out and f"[{ids['nightly_export']}]" not in out
    # A search means every word: there the note is still a rival, as before.
    found = store.search(PROMPT, workspace="lake")
    assert found.hits[0].id == ids["backfill"] and found.weak


def test_a_hit_holding_a_word_the_lead_lacks_is_still_a_rival(
    lake: tuple[Store, Path, dict[str, str]],
) -> None:
    """The parquet note holds "parquet", which the lesson lacks: two answers, so neither leads."""
    _, vault, _ = lake
    assert hook(vault, "lake", "nightly_export parquet backfill gaps in grafana, zookeeper") == ""
