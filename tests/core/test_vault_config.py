"""memstore.toml: read, written in one layout, merged by key whichever machine merges."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstore.core.errors import InvalidInputError
from memstore.core.merge import merge_file
from memstore.core.vault_config import (
    VAULT_CONFIG_NAME,
    VaultConfig,
    check_team_name,
    format_vault_config,
    merge_vault_config,
    parse_vault_config,
    read_vault_config,
)
from memstore.vault.files import first_stranger

names = st.from_regex(r"[a-z0-9][a-z0-9-]{0,39}", fullmatch=True)
urls = st.text(
    st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), min_size=1
).filter(lambda url: url.strip() == url)
configs = st.builds(
    VaultConfig,
    teams=st.dictionaries(names, urls, max_size=4),
    review=st.sampled_from(["pull-request", "none"]),
)


@given(configs)
def test_a_written_config_reads_back_the_same(config: VaultConfig) -> None:
    assert parse_vault_config(format_vault_config(config)) == config


@given(st.none() | configs, configs, configs)
def test_merge_does_not_depend_on_which_side_is_ours(
    base: VaultConfig | None, ours: VaultConfig, theirs: VaultConfig
) -> None:
    assert merge_vault_config(base, ours, theirs) == merge_vault_config(base, theirs, ours)


def test_two_machines_that_joined_other_teams_keep_both() -> None:
    base = VaultConfig(teams={"old": "u0", "gone": "u1"})
    ours = VaultConfig(teams={"old": "u0", "gone": "u1", "acme": "u2"})
    theirs = VaultConfig(teams={"old": "u0", "infra": "u3"})  # left `gone`, joined infra
    merged = merge_vault_config(base, ours, theirs)
    assert merged.teams == {"acme": "u2", "infra": "u3", "old": "u0"}
    texts = [format_vault_config(c).encode() for c in (base, ours, theirs)]
    result = merge_file(VAULT_CONFIG_NAME, *texts)
    assert result.note == "" and result.data == format_vault_config(merged).encode()


def test_a_missing_file_is_the_defaults(tmp_path: Path) -> None:
    assert read_vault_config(tmp_path) == VaultConfig({}, "pull-request")


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("teams = [", "is not valid TOML"),
        ('review = "maybe"', 'set it to "pull-request" or "none"'),
        ("[teams.acme]\nurl = 3", "needs url"),
        ('[teams.Acme]\nurl = "x"', "invalid team name 'Acme'"),
        ('teams = "acme"', "teams must be tables"),
    ],
)
def test_a_malformed_file_is_one_line_naming_it_and_the_fix(
    tmp_path: Path, text: str, said: str
) -> None:
    (tmp_path / VAULT_CONFIG_NAME).write_text(text, encoding="utf-8")
    with pytest.raises(InvalidInputError) as caught:
        read_vault_config(tmp_path)
    message = str(caught.value)
    assert said in message and str(tmp_path / VAULT_CONFIG_NAME) in message
    assert "\n" not in message


def test_unknown_keys_of_a_newer_memstore_are_ignored() -> None:
    text = 'colour = "blue"\n[teams.acme]\nurl = "u"\nmirror = "m"\n'
    assert parse_vault_config(text) == VaultConfig({"acme": "u"})


@pytest.mark.parametrize("name", ["", "-acme", "Acme", "a" * 41, "ac me", "acme/x"])
def test_team_names_are_checked(name: str) -> None:
    with pytest.raises(InvalidInputError, match="invalid team name"):
        check_team_name(name)


def test_memstore_toml_at_the_top_is_not_a_stranger() -> None:
    heads = {VAULT_CONFIG_NAME: b"[teams.acme]\n", "webshop/memstore.toml": b"x"}
    assert first_stranger([VAULT_CONFIG_NAME], heads.__getitem__) == ""
    assert first_stranger(sorted(heads), heads.__getitem__) == "webshop/memstore.toml"
