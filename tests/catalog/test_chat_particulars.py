"""The parts of a pasted address, version or target triple no memory holds whole are no
codes of their own (issue 38, thirteenth session): a prompt typed to an agent weighs them as
plain words. None of these prompts or memories comes from a held-out set."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memstore.catalog.particulars import camel_wholes, orphan_parts
from memstore.service.store import Store
from tests.catalog.test_confidence import hook
from tests.conftest import settings_at


def test_the_parts_of_a_joined_identifier_no_memory_holds_are_orphans() -> None:
    held = {"127": 0, "0": 4, "1": 9, "127.0.0.1": 0, "localhost": 2, "openssl-si": 1}
    assert orphan_parts("connect to 127.0.0.1 refused", held) == {"127", "0", "1"}
    # A part the prompt also names on its own is the prompt's own particular.
    assert orphan_parts("127.0.0.1 refused, retried 1 time", held) == {"127", "0"}
    # An identifier a memory holds whole keeps its parts: "openssl-sys" is the vault's.
    assert orphan_parts("openssl-sys fails to build", held) == frozenset()
    assert orphan_parts("x86_64-unknown-linux-musl", {}) >= {"x86", "64", "unknown"}
    assert orphan_parts("no identifiers here", held) == frozenset()


@pytest.fixture
def ops(tmp_path: Path) -> Iterator[tuple[Store, Path, dict[str, str]]]:
    """An ops team's vault: a retry rule with small numbers in it, and notes around it."""
    vault = tmp_path / "vault"
    with Store.open(settings_at(vault), create=True) as opened:
        ids = {
            keywords[0]: opened.add(text, workspace="ops", keywords=keywords).id
            for text, keywords in (
                (
                    "Uploads are retried 3 times, 10 seconds apart, then the job is marked failed",
                    ("uploads", "retries"),
                ),
                (
                    "The build box runs the nightly images; its disk fills up every 2 weeks, "
                    "prune with make prune",
                    ("build-box", "disk"),
                ),
                (
                    "Printer on the second floor only accepts jobs from the office network",
                    ("printer",),
                ),
                ("Staging is rebuilt from main every night at 01:00", ("staging",)),
                (
                    "Cross-compile the agent for arm64 with make agent-arm64; the binary goes to "
                    "dist/",
                    ("cross-compile", "arm64"),
                ),
                ("Invoices are sent by Stripe, never by hand", ("invoices",)),
                ("Grafana dashboards live in the ops folder; edit them as code", ("grafana",)),
                ("The VPN drops idle sessions after 8 hours", ("vpn",)),
            )
        }
        yield opened, vault, ids


def test_the_numbers_of_an_address_the_vault_lacks_are_no_codes(
    ops: tuple[Store, Path, dict[str, str]],
) -> None:
    """ "10.0.3.7" is an address no memory holds; its "10" and "3" weighed as codes, and the
    retry rule, which holds both as counts, was injected for a ping timing out. Now silent."""
    _, vault, _ = ops
    assert hook(vault, "ops", "ping 10.0.3.7 times out from the build box") == ""


@pytest.mark.parametrize(
    "prompt", ["how are uploads retried", "why are uploads retried 3 times before failing"]
)
def test_a_number_typed_on_its_own_still_counts(
    ops: tuple[Store, Path, dict[str, str]], prompt: str
) -> None:
    _, vault, ids = ops
    assert f"[{ids['uploads']}]" in hook(vault, "ops", prompt)


def test_camel_case_identifiers_are_split_into_their_words() -> None:
    found = camel_wholes("WorkNCCL(SeqNum=1) in ActiveRecord::RecordNotFound, not a camel")
    assert found == {"worknccl", "seqnum", "activerecord", "recordnotfound"}


@pytest.fixture
def jobs(tmp_path: Path) -> Iterator[Path]:
    """A back office's vault: an export timeout lesson, and notes that share none of it."""
    vault = tmp_path / "vault"
    with Store.open(settings_at(vault), create=True) as opened:
        for text, keywords in (
            (
                "The nightly export job hits the scheduler's 30 minute timeout on big "
                "customers: split it per customer with export --customer",
                ("export", "timeout"),
            ),
            ("Invoices are sent by Stripe, never by hand", ("invoices",)),
            ("Grafana dashboards live in the ops folder; edit them as code", ("grafana",)),
            ("The VPN drops idle sessions after 8 hours", ("vpn",)),
            ("Staging is rebuilt from main every night at 01:00", ("staging",)),
            ("Customer emails go through Postmark; bounces land in the support inbox", ("email",)),
            ("Use the read replica for reports; the primary is for writes only", ("database",)),
            ("Feature flags are read from flags.yaml at startup", ("flags",)),
        ):
            opened.add(text, workspace="ops", keywords=keywords)
    return vault


def test_a_camel_case_identifier_the_vault_lacks_whole_is_read_as_its_words(jobs: Path) -> None:
    """ "ExportRunner" and "JobTimeoutError" are a stack trace's names: no memory holds them
    whole, and each counted against the export lesson as a word no memory holds would, which
    kept it from the hook; their words ("export", "job", "timeout") are the lesson's."""
    out = hook(jobs, "ops", "ExportRunner died with JobTimeoutError on the big customers")
    assert "The nightly export job" in out


@pytest.mark.parametrize("prompt", ["deploy the export to GitHub Pages", "grafana"])
def test_a_camel_case_name_is_no_evidence_by_itself(jobs: Path, prompt: str) -> None:
    assert hook(jobs, "ops", prompt) == ""


def test_a_hurry_is_no_topic(jobs: Path) -> None:
    """ "quickly" (like "quick", "asap", "somehow") says how the person wants it, not what
    about: a request word, it no longer dilutes what the prompt holds of the lesson."""
    out = hook(jobs, "ops", "can you quickly look why exports time out")
    assert "The nightly export job" in out
    assert hook(jobs, "ops", "quick question, can you do it asap") == ""


@pytest.mark.parametrize(
    "word", ["getUserById", "İstanbulCode", "straßeNummer", "ﬁleName", "ÆgirClient", "WorkNCCL"]
)
def test_a_camel_case_identifiers_whole_is_the_term_the_index_holds(word: str) -> None:
    """Its whole, as particulars fold it, is one of the word's terms in the index: "İ"
    lowercased first gave "stanbulcod", a term no memory holds (review14)."""
    from memstore.index import terms

    assert camel_wholes(f"see {word} here") <= terms(word) and len(camel_wholes(word)) == 1
