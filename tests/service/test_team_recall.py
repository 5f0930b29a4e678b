"""Recall across tiers: a word is a typo only when no tier holds it; after a leave, the copies
marked shared with the team read as they did (re-checked: holder counts are of live documents)."""

from __future__ import annotations

from pathlib import Path

from memstore.service.following import join
from memstore.service.store import Store
from tests.service.team_hosts import follow, make_team_repo, person
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


def test_after_leaving_a_team_the_copies_marked_shared_with_it_read_as_before(
    tmp_path: Path,
) -> None:
    bare = make_team_repo(tmp_path, [], review="none")
    alice = person(tmp_path, "alice", "alice@acme.com")
    follow(alice, "acme", str(bare))
    memory_id = alice.add("Product images of the webshop are resized by a lambda")
    assert alice.run("share", memory_id, "--team", "acme").returncode == 0
    assert alice.run("sync").returncode == 0  # marks the personal copy shared
    with Store.open(alice.settings) as personal:
        assert "acme" in personal.vault.read(personal.resolve(memory_id).path).extra[0][1]
        before = personal.recall("webshop images resized", workspace=None, tiers=True)
        assert before.hits[0].tier == "acme" and not before.weak
    assert alice.run("team", "leave", "acme").returncode == 0

    with Store.open(alice.settings) as personal:
        after = personal.recall("webshop images resized", workspace=None, tiers=True)
        assert (after.hits[0].id, after.hits[0].tier) == (memory_id, "")
        assert not after.weak and not after.hits[0].weak
        personal.reindex()
        rebuilt = personal.recall("webshop images resized", workspace=None, tiers=True)
        assert rebuilt.hits[0].weak == after.hits[0].weak
