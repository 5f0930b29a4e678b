"""Leads in prompts as people type them to an agent (issue 38, fourteenth session).

A prompt typed to an agent says much in passing ("keeps falling behind", "every few minutes
during the import window"): a memory holding several of its words, and no other memory
holding half as much, answers it even when its share of all those words is small. Each rule
runs on a small vault of its own through the real prompt hook (`hook`) and through a plain
search, which means every word and keeps its tiers as before. None of these prompts or
memories comes from a held-out set.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memstore.service.store import Store
from tests.catalog.test_confidence import hook
from tests.conftest import settings_at


@pytest.fixture
def billing(tmp_path: Path) -> Iterator[tuple[Store, Path, dict[str, str]]]:
    """A billing team's vault: a consumer-lag lesson, flashing notes, and notes around them."""
    vault = tmp_path / "vault"
    with Store.open(settings_at(vault), create=True) as opened:
        ids = {
            key: opened.add(text, workspace="tally", keywords=keywords).id
            for key, text, keywords in (
                (
                    "lag",
                    "Invoice consumer lag: when the invoice consumer falls behind, scale its "
                    "consumer group to 6 replicas; lag over 50k messages pages on-call",
                    ("consumer", "lag"),
                ),
                (
                    "flash",
                    "Flash the till printer over USB with `make flash PORT=/dev/ttyACM0`; hold "
                    "the feed button while plugging it in",
                    ("flash", "usb"),
                ),
                (
                    "hub",
                    "The USB hub on the lab bench drops devices; flash from the laptop's own "
                    "ports instead",
                    (),
                ),
                (
                    "watchdog",
                    "The payment watchdog restarts the worker when no heartbeat arrives for 90 "
                    "s; its log is in /var/log/tally/watchdog.log",
                    ("watchdog",),
                ),
                ("vat", "VAT rates come from the tax service, never hard-coded", ("vat",)),
                ("pdf", "Invoice PDFs are rendered by the pdf worker with WeasyPrint", ("pdf",)),
                ("deploy", "Deploy tally with `make release` from main", ("deploy",)),
                ("login", "Staff log in with SSO only; there are no local accounts", ("login",)),
                ("colours", "Brand colours live in the design tokens package", ("design",)),
                ("backup", "The ledger database is backed up every hour to cold storage", ()),
            )
        }
        yield opened, vault, ids


CHATTY = (
    "the invoice consumer keeps falling behind again this week and the lag grows every few "
    "minutes during the big nightly import window, finance is nervous, any idea what we "
    "usually do here"
)


def test_a_lead_several_words_corroborate_answers_a_chatty_prompt(
    billing: tuple[Store, Path, dict[str, str]],
) -> None:
    """The lag lesson holds "invoice", "consumer", "lag", "falling" and "behind", which no
    other memory holds half as much of, but under 0.4 of a prompt that says much in passing
    (0.38): three or more words of the prompt corroborate it, so it leads
    (CORROBORATED_SHARE). A search means every word: its tiers are as before."""
    store, vault, ids = billing
    assert f"[{ids['lag']}]" in hook(vault, "tally", CHATTY)
    found = store.search(CHATTY, workspace="tally")
    assert found.hits[0].id == ids["lag"] and found.weak


@pytest.mark.parametrize(
    "prompt",
    [
        # "invoice" and "page" (as in "pages on-call") are held, "sale" is searched as its
        # nearest term "scale": a typo's stand-in is a guess, it corroborates nothing
        "the designer wants the invoice page redone with brighter colours for the spring sale",
        "can you write a haiku about the nightly import window and the cold winter",
    ],
)
def test_one_word_among_many_is_still_no_lead(
    billing: tuple[Store, Path, dict[str, str]], prompt: str
) -> None:
    _, vault, _ = billing
    assert hook(vault, "tally", prompt) == ""


def test_a_memory_holding_the_same_words_for_fewer_units_is_no_rival(
    billing: tuple[Store, Path, dict[str, str]],
) -> None:
    """The flashing note and the hub note both hold "flash" and "usb"; the first names them
    as its keywords (its writer's own evidence, more units). The hub note finds the same
    words less well and answers nothing else: the flashing note leads in a prompt."""
    store, vault, ids = billing
    prompt = "how do i flash new firmware over usb"  # "firmware": a word neither holds
    out = hook(vault, "tally", prompt)
    assert f"[{ids['flash']}]" in out and f"[{ids['hub']}]" not in out
    found = store.search(prompt, workspace="tally")  # a search: two answers, as before
    assert found.hits[0].id == ids["flash"] and found.weak
    # Both hold one word only ("flash"): one coincidence each, the keyword decides nothing.
    assert hook(vault, "tally", "the flash on my phone camera is too bright") == ""


@pytest.mark.parametrize("prompt", ["watchdog doesnt work", "the watchdog is broken"])
def test_one_topic_word_with_a_problem_stated_asks(
    billing: tuple[Store, Path, dict[str, str]], prompt: str
) -> None:
    """The word "watchdog" alone names a topic and asks nothing; saying it does not work asks for
    help with it."""
    _, vault, ids = billing
    assert f"[{ids['watchdog']}]" in hook(vault, "tally", prompt)


def test_one_topic_word_alone_still_injects_nothing(
    billing: tuple[Store, Path, dict[str, str]],
) -> None:
    _, vault, _ = billing
    assert hook(vault, "tally", "watchdog") == ""
    assert hook(vault, "tally", "the watchdog!") == ""
