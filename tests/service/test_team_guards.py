"""Guards around team vaults a new user's trial found missing: a workspace named after the
vault's config, a credential in a team URL, a team's clone pushing past review, `check` on a
folder that is no vault, and a review repeating the credential it warns about."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from memstore.core.errors import InvalidInputError, NotFoundError
from memstore.core.model import check_workspace
from memstore.core.vault_config import VAULT_CONFIG_NAME
from memstore.ops.proposals import review_markdown
from memstore.service.following import join
from memstore.service.proposal_review import WITHHELD, Review, assess
from memstore.service.store import Store
from memstore.service.vault_check import check_vault
from tests.service.test_team_tiers import git, machine, team_remote

KEY = "AKIAIOSFODNN7" + "QWERTY7"  # an AWS-shaped key id, split so no scanner flags this file


@pytest.mark.parametrize("name", ["memstore.toml", "readme.md", "README", "license"])
def test_a_workspace_cannot_take_the_name_of_a_file_at_the_vaults_top(name: str) -> None:
    with pytest.raises(InvalidInputError, match="file at the vault's top"):
        check_workspace(name.lower())
    assert check_workspace("readme-tools") == "readme-tools"


def test_a_team_url_holding_a_credential_is_refused_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    with Store.open(machine(tmp_path, "a")) as person:
        head = git(person.vault.root, "rev-parse", "HEAD")
        for url in (
            "https://bob:hunter2-Secret@github.com/acme/memory.git",
            f"https://x:{KEY}@gitlab.com/acme/memory.git",
        ):
            with pytest.raises(InvalidInputError, match="holds a credential") as caught:
                join(person, "acme", url)
            assert "hunter2" not in str(caught.value) and KEY not in str(caught.value)
        assert git(person.vault.root, "rev-parse", "HEAD") == head
        assert not (person.vault.root / VAULT_CONFIG_NAME).exists()
        assert not (tmp_path / "home-a" / ".local" / "share" / "memstore").exists()


def test_joining_this_vault_or_its_own_remote_is_refused(tmp_path: Path) -> None:
    own_remote = team_remote(tmp_path, "mine")
    with Store.open(machine(tmp_path, "a")) as person:
        person.set_remote(str(own_remote))
        for url in (str(person.vault.root), str(own_remote)):
            with pytest.raises(InvalidInputError, match="this vault or its own remote"):
                join(person, "me", url)
        assert not (person.vault.root / VAULT_CONFIG_NAME).exists()


def test_a_team_clone_synced_on_its_own_pulls_and_never_pushes(tmp_path: Path) -> None:
    acme = team_remote(tmp_path, "acme")
    with Store.open(machine(tmp_path, "a")) as person:
        team, _ = join(person, "acme", str(acme))
        settings = person.settings
    main = git(acme, "rev-parse", "main")
    clone_settings = machine(tmp_path, "a", create=False)
    with Store.open(type(settings)(**{**vars(clone_settings), "vault": team.path})) as clone:
        clone.add("written into the clone by hand, past review", workspace="webshop")
        outcome, _, _ = clone.sync()
    assert git(acme, "rev-parse", "main") == main  # the host never saw it
    assert not outcome.pushed


def test_check_refuses_a_folder_that_is_no_vault_and_flags_a_file_without_front_matter(
    tmp_path: Path,
) -> None:
    plain = tmp_path / "notes"
    (plain / "webshop").mkdir(parents=True)
    (plain / "webshop" / "a.md").write_text("just notes\n", encoding="utf-8")
    with pytest.raises(NotFoundError, match="is not a memstore vault"):
        check_vault(plain)
    team = tmp_path / "acme-checkout"
    subprocess.run(
        ["git", "clone", "-q", str(team_remote(tmp_path, "acme")), str(team)], check=True
    )
    checked = check_vault(team)  # a real team vault's clone: its .gitattributes marks it
    assert checked.files == 3 and checked.findings == []


def test_a_review_withholds_the_text_of_a_memory_holding_a_credential(tmp_path: Path) -> None:
    acme = team_remote(tmp_path, "acme")
    with Store.open(machine(tmp_path, "a")) as person:
        team, _ = join(person, "acme", str(acme))
        settings = person.settings
    text = f"---\nid: k3y5h0wn\nkind: note\nkeywords: []\n---\nthe deploy key is {KEY}\n"
    with Store.open(type(settings)(**{**vars(settings), "vault": team.path})) as clone:
        head = git(team.path, "rev-parse", "HEAD")
        [assessed] = assess(clone, {"webshop/2026-12/deploy-k3y5h0wn.md": text.encode()}, head)
    assert assessed.secrets and assessed.text == WITHHELD and KEY not in repr(assessed)


def test_a_memory_stored_with_a_credential_keeps_it_out_of_its_file_name(tmp_path: Path) -> None:
    with Store.open(machine(tmp_path, "a")) as person:
        text = f"deploy key for staging is {KEY} keep it handy"
        added = person.add(text, workspace="webshop", allow_secret=True)
        plain = person.add("deploy notes for staging keep them handy", workspace="webshop")
        subject = git(person.vault.root, "log", "-2", "--format=%s")
    assert KEY.lower() not in added.path and KEY not in subject
    assert added.path.split("/")[-1].startswith("deploy-key-for-staging-is-keep")
    assert plain.path.split("/")[-1].startswith("deploy-notes-for-staging-keep-them")


def test_a_branch_removing_a_team_memory_needs_a_look(tmp_path: Path) -> None:
    acme = team_remote(tmp_path, "acme")
    with Store.open(machine(tmp_path, "a")) as person:
        team, _ = join(person, "acme", str(acme))
        settings = person.settings
    with Store.open(type(settings)(**{**vars(settings), "vault": team.path})) as clone:
        head = git(team.path, "rev-parse", "HEAD")
        path = next(p for p in clone.vault.scan() if p.startswith("webshop/"))
        memories = assess(clone, {path: None}, head)
    review = Review("acme", "by-hand", head, "", memories)
    assert memories[0].effect == "remove" and not review.is_clean
    assert "**Needs a look:** 1 removed team memory." in review_markdown(review)
