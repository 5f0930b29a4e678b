"""A prompt typed to an agent: when the hook injects two memories, and when only the lead
(issue 38, fifteenth session).

A second memory that holds exactly the answer's words, for fewer units, only echoes it: the
hook injects the answer alone. A rival that holds at most half as many of the prompt's words
as a lead holding three or more is no second answer: the lead is injected. Each rule runs on
a small vault of its own through the real prompt hook (`hook`) and through a plain search,
which means every word and keeps its tiers as before. None of these prompts or memories
comes from a held-out set.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memstore.catalog.particulars import joined_words
from memstore.service.store import Store
from tests.catalog.test_confidence import hook
from tests.conftest import settings_at


@pytest.fixture
def studio(tmp_path: Path) -> Iterator[tuple[Store, Path, dict[str, str]]]:
    """A dance school's booking app: a deploy rule, notes beside it, an export lesson."""
    vault = tmp_path / "vault"
    with Store.open(settings_at(vault), create=True) as opened:
        ids = {
            key: opened.add(text, workspace="plie", keywords=keywords, kind=kind).id
            for key, kind, text, keywords in (
                (
                    "deploy",
                    "core",
                    "Deploy the plie api with `make release` from main; the pipeline runs the "
                    "smoke tests before it switches traffic",
                    ("deploy", "api"),
                ),
                (
                    "health",
                    "note",
                    "The plie api answers /health on port 8040; after a deploy the smoke tests "
                    "poll it for two minutes",
                    ("health",),
                ),
                (
                    "export",
                    "lesson",
                    "Exporting a year of bookings as CSV ran out of memory in the worker: the "
                    "export streams rows with a cursor (exports/stream.ts), never all at once",
                    ("export", "csv"),
                ),
                (
                    "owners",
                    "core",
                    "Studio owners see only their own studio's classes; front desk staff see "
                    "today's classes only",
                    ("studio", "owners"),
                ),
                ("colours", "note", "Brand colours live in the design tokens package", ()),
                ("login", "note", "Teachers log in with a magic link, never a password", ()),
                (
                    "backup",
                    "note",
                    "The bookings database is backed up nightly to cold storage",
                    (),
                ),
                ("mail", "note", "Reminder mails go out at 18:00 the day before a class", ()),
            )
        }
        yield opened, vault, ids


def test_a_second_memory_holding_only_the_answers_words_is_not_injected_beside_it(
    studio: tuple[Store, Path, dict[str, str]],
) -> None:
    """The deploy rule and the health note both hold "api" and "deploy"; the rule names them
    as its keywords and is a core rule (more units). The note adds no word of the prompt the
    rule lacks: the hook injects the rule alone. A search means every word: both stay
    confident there, as before."""
    store, vault, ids = studio
    prompt = "how does the api get deployed"
    out = hook(vault, "plie", prompt)
    assert f"[{ids['deploy']}]" in out and f"[{ids['health']}]" not in out
    found = store.search(prompt, workspace="plie")
    assert {h.id for h in found.hits if not h.weak} >= {ids["deploy"], ids["health"]}


def test_a_second_memory_with_a_word_of_its_own_is_still_injected(
    studio: tuple[Store, Path, dict[str, str]],
) -> None:
    """Asked about the health check too, the note holds a word the rule lacks: both answer."""
    _, vault, ids = studio
    out = hook(vault, "plie", "after the api is deployed, what does the health check poll")
    assert f"[{ids['health']}]" in out


def test_a_rival_holding_half_as_many_of_the_prompts_words_is_no_second_answer(
    studio: tuple[Store, Path, dict[str, str]],
) -> None:
    """The export lesson holds "export", "year", "bookings" and "csv"; the owners rule holds
    "studio" and "owners" (a core rule, keywords: more than half the lesson's units). Two
    words beside four answer less of the prompt: the lesson leads. A search counts the rule
    as a rival, as before."""
    store, vault, ids = studio
    prompt = "the studio owners want to export all bookings of the year as csv, it dies in prod"
    out = hook(vault, "plie", prompt)
    assert f"[{ids['export']}]" in out and f"[{ids['owners']}]" not in out
    found = store.search(prompt, workspace="plie")
    assert found.hits[0].id == ids["export"] and found.weak


def test_the_parts_of_a_joined_identifier_are_one_word() -> None:
    """ "/dev/ttyUSB0" yields `dev`, `tti`, `usb`, `0` and its whole: one word the prompt wrote,
    unless the prompt also writes a part on its own ("dev" below)."""
    [path] = joined_words("ERROR: Failed to open /dev/ttyUSB0")
    assert {"dev", "tti", "0"} <= path
    [alone] = joined_words("on my dev box /dev/ttyUSB0 is gone")
    assert "dev" not in alone and "tti" in alone
    assert joined_words("how does the api get deployed") == ()
