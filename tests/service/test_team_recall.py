"""Recall across tiers says a word is a typo only when no tier holds it."""

from __future__ import annotations

from pathlib import Path

from memstore.service.following import join
from memstore.service.store import Store
from tests.service.test_team_tiers import machine, team_remote


def test_a_word_a_team_tier_holds_is_not_read_as_a_typo_of_a_personal_word(
    tmp_path: Path,
) -> None:
    acme = team_remote(tmp_path, "acme", ("teraform is the platform team's deploy tool",))
    with Store.open(machine(tmp_path, "a")) as person:
        person.add("the terraform module pins the provider version", workspace="infra")
        alone = person.recall("teraform module", workspace=None)
        assert "teraform → terraform" in alone.message  # one vault: a typo's stand-in
        join(person, "acme", str(acme))

        found = person.recall("teraform module", workspace=None, tiers=True)

        assert {hit.tier for hit in found.hits} == {"", "acme"}
        assert "teraform →" not in found.message
        # a word no tier holds is still read as the nearest one a tier holds
        typo = person.recall("terraform verison", workspace=None, tiers=True)
        assert "verison → version" in typo.message
