"""The secret scan: the corpora's figures, evasions as properties, and audit over whole files.

Corpora: tests/data/secrets/secrets.json (forms that must be refused, all fake) and
benign.json (technical memories that must be stored). Figures: tests/data/secrets/measure.py.
"""

from __future__ import annotations

import base64
import json
import sys
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstore.core.secrets import find_secret_in_fields, find_secrets, is_dummy, normalize
from tests.cli.test_upkeep import cli
from tests.conftest import git, head

CORPORA = Path(__file__).parents[1] / "data" / "secrets"
AWS_KEY_ID = "AKIAQ3EGRJ5LTMWD7XZN"  # AWS's documented example
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCY7Q2LKM4V9Z"  # AWS's documented example
GITHUB_TOKEN = "ghp_EXAMPLE1a2B3c4D5e6F7g8H9i0JkLmNoPqRsT"
ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff"


def corpus(name: str) -> list[dict[str, object]]:
    return json.loads((CORPORA / name).read_text(encoding="utf-8"))


def refused(item: dict[str, object]) -> tuple[str, str] | None:
    return find_secret_in_fields({str(item["field"]): item["value"]})  # type: ignore[dict-item]


def test_every_secret_form_of_the_corpus_is_refused() -> None:
    items = corpus("secrets.json")
    stored = [item["form"] for item in items if refused(item) is None]
    assert len(items) >= 50
    assert stored == []


def test_benign_technical_memories_are_stored_with_at_most_two_false_refusals() -> None:
    items = corpus("benign.json")
    false_refusals = [(item["value"], refused(item)) for item in items if refused(item)]
    assert len(items) >= 200
    assert len(false_refusals) <= 2, false_refusals


@pytest.mark.parametrize(
    "text",
    [
        "postgres://user@host/db",
        "postgres://user:password@localhost/db",
        "postgres://user:<pass>@localhost/db",
        "postgres://user:${PASS}@localhost/db",
        "password=<your-password>",
        "commit 9fceb02d0ae598e95dc970b74767f19372d61af8 fixed it",
    ],
)
def test_placeholders_and_commit_ids_are_not_secrets(text: str) -> None:
    assert find_secrets(text) == []


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("postgres://admin:S3cr3t@host/db", "a password in a URL"),
        ("https://user:pass@example.com/x", "a password in a URL"),
        ("AKIA Q3EG RJ5L TMWD 7XZN", "an AWS access key id"),
        (f"aws_secret_access_key={AWS_SECRET}", "an AWS secret access key"),
        (f"the secret {AWS_SECRET} here", "an AWS-style 40-character secret"),
        ("-----BEGIN PGP PRIVATE KEY BLOCK-----", "a private key block"),
        (
            "https://hooks.slack.com/services/T00000000/B00000000/q7RmT2vLx9KpW4nZs8YbC3dF",
            "a chat webhook",
        ),
    ],
)
def test_the_forms_found_stored_are_named(text: str, kind: str) -> None:
    assert kind in find_secrets(text)


def test_every_field_is_scanned_and_the_first_holding_a_secret_is_named() -> None:
    clean = {"body": "use pnpm", "keywords": ["pnpm"], "source": "cli", "session": "s1"}
    assert find_secret_in_fields(clean) is None
    assert find_secret_in_fields(
        {**clean, "keywords": ["AKIA", "Q3EG", "RJ5L", "TMWD", "7XZN"]}
    ) == (
        "keywords",
        "an AWS access key id",
    )
    assert find_secret_in_fields({**clean, "source": GITHUB_TOKEN}) == ("source", "a GitHub token")
    assert find_secret_in_fields({**clean, "session": GITHUB_TOKEN, "body": AWS_KEY_ID}) == (
        "body",
        "an AWS access key id",
    )


def test_every_format_character_is_dropped_before_matching() -> None:
    format_characters = [
        chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Cf"
    ]
    missed = [
        f"U+{ord(ch):04X}"
        for ch in format_characters
        if not find_secrets(f"key {AWS_KEY_ID[:4]}{ch}{AWS_KEY_ID[4:]}")
    ]
    assert missed == []


# --- properties -----------------------------------------------------------------------

_SECRETS = [str(i["value"]) for i in corpus("secrets.json") if i["field"] == "body"]
_TEXT = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=80)


@given(
    st.sampled_from(_SECRETS) | _TEXT,
    st.lists(st.tuples(st.integers(0), st.sampled_from(ZERO_WIDTH))),
)
def test_zero_width_characters_change_nothing_the_scan_finds(
    text: str, inserts: list[tuple[int, str]]
) -> None:
    mutated = text
    for position, character in inserts:
        at = position % (len(mutated) + 1)
        mutated = mutated[:at] + character + mutated[at:]
    assert find_secrets(mutated) == find_secrets(text)


@given(st.sampled_from(_SECRETS) | _TEXT)
def test_fullwidth_letters_change_nothing_the_scan_finds(text: str) -> None:
    fullwidth = "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)
    assert normalize(fullwidth) == normalize(text)
    assert find_secrets(fullwidth) == find_secrets(text)


_BASE32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
_BASE62 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def _varied(value: str) -> bool:
    """A generated key, not one typed to be replaced (AKIA2222…, ghp_xxxx…): see is_dummy."""
    return not is_dummy(value)


def _mixed(value: str) -> bool:
    return (
        any(c.isdigit() for c in value)
        and any(c.isupper() for c in value)
        and any(c.islower() for c in value)
    )


@given(
    st.sampled_from(
        [
            AWS_KEY_ID,
            AWS_SECRET,
            GITHUB_TOKEN,
        ]
    )
    | st.text(_BASE32, min_size=16, max_size=16).filter(_varied).map(lambda tail: "AKIA" + tail)
    | st.text(_BASE62, min_size=36, max_size=36)
    .filter(_mixed)
    .filter(_varied)
    .map(lambda tail: "ghp_" + tail),
    st.integers(1, 10),
    st.sampled_from([" ", "  ", "\u00a0", "\u3000", "\n", "-", "."]),
)
def test_a_key_split_into_equal_groups_is_still_found(key: str, size: int, gap: str) -> None:
    groups = [key[i : i + size] for i in range(0, len(key), size)]
    assert find_secrets(f"the key is {gap.join(groups)} (ci)")


@given(st.binary(min_size=20, max_size=32), st.sampled_from(["commit", "sha", "digest", "id"]))
def test_hex_digests_and_commit_ids_are_never_refused(raw: bytes, label: str) -> None:
    digest = raw.hex()
    assert find_secrets(f"{label} {digest} fixed it; short {digest[:7]}") == []
    assert find_secrets(f"SHA {digest.upper()}") == []


@given(st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), min_size=30, max_size=30))
def test_forty_base64_characters_of_plain_text_are_not_a_secret(text: str) -> None:
    encoded = base64.b64encode(text.encode()).decode()
    assert len(encoded) == 40
    assert "an AWS-style 40-character secret" not in find_secrets(f"fixture {encoded} ok")


@given(st.uuids())
def test_uuids_are_never_refused(value: object) -> None:
    assert find_secrets(f"tenant {value} and job {str(value).upper()}") == []


# --- the write lane and audit ---------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (["-K", "aws", "-K", AWS_KEY_ID], {}),
        (["-K", "AKIA", "-K", "Q3EG", "-K", "RJ5L", "-K", "TMWD", "-K", "7XZN"], {}),
        (["--source", GITHUB_TOKEN], {}),
        ([], {"MEMSTORE_SESSION": "xoxp-1234567890-FAKEaBcDeFgHiJ"}),
        (["-K", "AKIA,Q3EG,RJ5L,TMWD,7XZN"], {}),
        ([], {"MEMSTORE_SOURCE": "glpat-EXAMPLEa1b2c3d4e5f6g"}),
    ],
)
def test_add_refuses_a_secret_in_any_field_it_writes(
    vault: Path, args: list[str], env: dict[str, str]
) -> None:
    before = head(vault)
    done = cli(vault, "add", "deploy notes for the build bot", *args, env=env)
    assert done.returncode == 1, done.stdout
    assert "looks like" in done.stderr and "--allow-secret" in done.stderr
    assert head(vault) == before


def test_add_refuses_a_split_key_in_the_text(vault: Path) -> None:
    before = head(vault)
    for text in ("key AKIA Q3EG RJ5L TMWD 7XZN", f"key {AWS_KEY_ID[:4]}\u200b{AWS_KEY_ID[4:]}"):
        done = cli(vault, "add", text)
        assert done.returncode == 1 and "looks like" in done.stderr, done.stderr
    assert head(vault) == before


def test_audit_scans_whole_files_front_matter_included(vault: Path) -> None:
    memories = {
        "keyword": "---\nid: kwsecret\nkeywords: [deploy, 'AKIA Q3EG RJ5L TMWD 7XZN']\n---\nbuild bot\n",
        "source": f"---\nid: srcsecret\nsource: {GITHUB_TOKEN}\n---\nci notes\n",
        "unknown": (
            "---\nid: extsecret\nwebhook: https://hooks.slack.com/services/T0FAKE123/"
            "B0FAKE456/aBcDeFgHiJkLmNoPqRsTuVwX\n---\nalerts channel\n"
        ),
        "malformed": f"---\nid: [broken\ndb: postgres://admin:S3cr3t@db/app\n---\n{AWS_SECRET}\n",
        "clean": "---\nid: cleanone\nkeywords: [pnpm]\n---\nuse pnpm, commit 9fceb02d0ae5\n",
    }
    (vault / "global").mkdir(exist_ok=True)
    for name, text in memories.items():
        (vault / "global" / f"{name}.md").write_text(text, encoding="utf-8")
    git(vault, "add", "-A")
    git(vault, "commit", "-qm", "hand-written memories")
    done = cli(vault, "audit", "--json")
    assert done.returncode == 0, done.stderr
    found = {}
    for memory_id, kind in json.loads(done.stdout)["secrets"]:
        found.setdefault(memory_id, []).append(kind)
    assert found.pop("kwsecret") == ["an AWS access key id"]
    assert found.pop("srcsecret") == ["a GitHub token"]
    assert found.pop("extsecret") == ["a chat webhook"]
    assert len(found) == 1 and "a password in a URL" in next(iter(found.values()))


def test_resource_names_beside_a_credential_word_are_stored() -> None:
    # The shipped eval fixture held this and `memstore eval` failed: an ARN names a role, it
    # holds no secret (found when issue 36's scanner met the full suite).
    text = (
        "CI authenticates to AWS via GitHub OIDC (`aws-actions/configure-aws-credentials@v4` "
        "with `role-to-assume: arn:aws:iam::123456789012:role/gha-deploy`)."
    )
    assert find_secrets(text) == []
    assert find_secrets("the token for urn:example:service:deploy-bot rotates weekly") == []


# Found by the held-out set 2 (tests/data/secrets/*-heldout2.json, tenth session).
@pytest.mark.parametrize(
    "text",
    [
        "Authorization: SSWS 00bUzlF_Y8808HfGeoDh5RhY4Xy1Jhdacea4fvxru5",  # Okta
        'headers = {"Authorization": "ApiKey Zk3Jq9LmP0xR7tYv2WnB5cE8"}',
        "curl -H 'authorization: Token 9f8e7d6c5b4a39281706f5e4d3c2b1a0f9e8d7c6' $API",
    ],
)
def test_any_authorization_scheme_with_a_random_value_is_refused(text: str) -> None:
    assert "an Authorization header" in find_secrets(text, full=True)
    assert find_secret_in_fields({"body": text}) is not None


# Found by held-out set 3 (written after the fixes above), fixed after it was measured.
@pytest.mark.parametrize(
    "text",
    [
        "doppler dp.st.prd.gRN6SqxXIuillAolRw6xeOGjyxkynmYZXS3EGr0R8BP",  # an environment slug
        "DOPPLER_TOKEN=dp.st.dev_eu.Q7mZk2Lx9Pw4Rt8Vb3Nc6Hy1Jd5Fg0Ks2Ae7Uo9Wi",
        "SG.XR4QnrPAwQ239P5BlDaX0f\n.R1lsBjVLqGx8YM2nL1rxkSAKZPIOQnOGzbJdBSQRxof",  # split
        "sendgrid SG.XR4QnrPAwQ239P5BlDaX0f .R1lsBjVLqGx8YM2nL1rxkSAKZPIOQnOGzbJdBSQRxof",
    ],
)
def test_a_doppler_token_with_its_environment_and_a_split_sendgrid_key_are_refused(
    text: str,
) -> None:
    assert find_secrets(text, full=True) and find_secrets(text)  # the full scan and the fast one
    assert find_secret_in_fields({"body": text}) is not None


@pytest.mark.parametrize(
    "text",
    [
        "password=<your-password-here>",
        "set password: your-db-password-here in .env.local",
        "S3 key exports/2026/12/07/d4d78d4d94055606b17d14103ee6a8af.csv",
        "the cache key is builds/linux/3f9a0c1e7b2d4e6f8a0b1c2d3e4f5a6b.tar.zst",
        "Authorization: Basic dXNlcjpwYXNzd29yZA==",  # user:password, a stand-in
        "Authorization: Bearer <token>",
        "the authorization header carries the session for every request",
    ],
)
def test_stand_ins_and_file_paths_beside_a_credential_word_are_stored(text: str) -> None:
    assert find_secrets(text, full=True) == []
