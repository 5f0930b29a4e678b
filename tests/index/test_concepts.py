"""The developer-concept thesaurus (index/concepts.py): what a query's words expand into."""

from __future__ import annotations

from memstore.index import Query
from memstore.index.concepts import _lines, _members, group_count, related


def expanded(text: str) -> set[str]:
    return set(related(Query.of(text).terms))


def test_a_platform_name_expands_into_its_other_names() -> None:
    found = expanded("my mac")
    assert {"maco", "darwin", "silicon", "m1"} <= found
    assert related(Query.of("mac").terms)["darwin"] == {"mac"}


def test_a_phrase_names_its_group_only_when_the_query_holds_all_its_words() -> None:
    assert "mac" in expanded("built on apple silicon")
    assert "mac" not in expanded("apple pie recipe")


def test_a_phrases_particles_are_not_searched_on_their_own() -> None:
    found = expanded("revert the change")
    assert {"rollback", "roll", "back"} <= found
    assert "out" not in found  # from "back out"


def test_words_the_query_holds_are_not_expanded_into_again() -> None:
    assert not expanded("rollback revert") & {"rollback", "revert"}


def test_words_outside_every_group_expand_into_nothing() -> None:
    assert expanded("sandwich coffee") == set()


def test_every_group_keeps_two_distinct_members_after_analysis() -> None:
    lines = _lines()
    assert group_count() == len(lines) >= 240
    for number, line in enumerate(lines):
        assert len(_members(number)) >= 2, line


def test_words_whose_everyday_sense_is_another_expand_into_nothing() -> None:
    """'lives' is not production, a web page is not an alert, black is a colour too."""
    for word in ("lives", "live", "black", "spot", "pat", "ready"):
        assert expanded(word) == set(), word
    assert not expanded("the settings page") & {"alert", "pagerduti", "opsgeni"}
    assert "prod" in expanded("production") and "healthz" in expanded("liveness probe")
