"""A token of the exact shape its provider issues is a credential whatever its letters: a
run in order (abcd…0123…) is no stand-in there; a repeated character or a word still is."""

from __future__ import annotations

import pytest

from memstore.core.secrets import find_secrets

# Built from parts, so no scanner reading this file takes them for credentials.
ALPHABET = "abcdefghijklmnopqrstuvwxyz"
DIGITS = "0123456789"


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("ghp_" + ALPHABET + DIGITS, "a GitHub token"),
        ("export GITHUB_TOKEN=gho_" + DIGITS + ALPHABET, "a GitHub token"),
        ("AKIA" + ALPHABET[:16].upper(), "an AWS access key id"),
        ("AIza" + ALPHABET + DIGITS[:9], "a Google API key"),
        ("glpat-" + ALPHABET[:20], "a GitLab token"),
        ("hf_" + ALPHABET + DIGITS[:8], "an AI provider API key"),
        ("dapi" + (DIGITS + "abcdef") * 2, "a Databricks token"),
        ("lin_api_" + ALPHABET + DIGITS + "ABCD", "a Linear API key"),
    ],
)
def test_an_issued_shape_with_letters_in_order_is_a_credential(text: str, kind: str) -> None:
    assert kind in find_secrets(text)


@pytest.mark.parametrize(
    "text",
    [
        "GITHUB_TOKEN=ghp_" + "x" * 36,
        "ghp_" + "0" * 36,
        "AKIA" + "X" * 16,
        "AKIAIOSFODNN7" + "EXAMPLE",  # AWS's documented key id
        "token: ghp_your" + "_token_here",
        "Authorization: Bearer <token>",
        "glpat-" + "x" * 20,
        # a run in order where the length is not what the provider issues: typed by hand
        "sk_test_" + DIGITS + ALPHABET[:14],
        "ghp_" + ALPHABET + DIGITS + ALPHABET,
    ],
)
def test_stand_ins_stay_stand_ins(text: str) -> None:
    assert find_secrets(text) == []
