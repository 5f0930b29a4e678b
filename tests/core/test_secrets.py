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

from memstore.core.secret_mask import mask_secrets
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


# Found by held-out set 5 (tests/data/secrets/*-heldout5.json, thirteenth session), each a
# shape or a family: the values here are typed apart from the set's.
@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("cargo login cio7Qm2Rk9Xw4Lp8Zt3Vn6Bc1Hy5Jd0FsGa", "a crates.io token"),
        (
            "x-honeycomb-team: hcxik_01" + "k3m9p2q8r7s6t5v4w1x0y9z8a7b6c5d4e3f2g1h0j9k8m7n6p5q4",
            "a Honeycomb key",
        ),
        (
            "https://api.telegram.org/bot7261849305:AAE2kR9mQx7Lp4Zw8Vn3Bt6Hy1Jd5Fs0Gq/sendMessage",
            "a Telegram bot token",
        ),
    ],
)
def test_the_families_set_5_found_are_refused(text: str, kind: str) -> None:
    assert kind in find_secrets(text, full=True)
    assert kind in find_secrets(text)


@pytest.mark.parametrize(
    "text",
    [
        "ngrok config add-authtoken 3Kp9Zm2Xq7Rt4Vw8_Ln6Bc1Hy5Jd0FsGa2Qe",
        "tailscale up --authkey Zq8Wm3Kx9Rt2Vp7Ln4Bc6Hy1Jd",
        "botToken: 'Mx7Kq2Rp9Zt4Vw8Ln3Bc6Hy1Jd5Fs0Ga'",
    ],
)
def test_a_token_word_glued_to_another_still_labels_its_value(text: str) -> None:
    assert find_secrets(text, full=True) == find_secrets(text) != []


# "Password" in other languages, its value a clause away or glued to a copula.
@pytest.mark.parametrize(
    "text",
    [
        "a senha do servidor de homologação é Quartz8812!",
        "het wachtwoord van de nas is Quartz8812!",
        "hasło do bazy: Quartz8812!",
        "yönetici parolası: Quartz8812!",
        "lösenordet till routern är Quartz8812!",
        "heslo k serveru je Quartz8812!",
        "пароль от роутера: Quartz8812!",
        "サーバーのパスワードは Quartz8812! です",
        "数据库密码是Quartz8812!",
        "la password dell'utente admin sul server di test è Quartz8812!",
        "la contraseña del usuario de respaldo en el servidor antiguo es Quartz8812!",
    ],
)
def test_a_password_said_in_another_language_is_refused(text: str) -> None:
    assert find_secrets(text, full=True) == find_secrets(text) != []


@pytest.mark.parametrize(
    "text",
    [
        "a senha do servidor fica no cofre da equipe",
        "het wachtwoord staat in de kluis van het team",
        "пароль от роутера хранится в Vault",
        "サーバーのパスワードは 1Password に保存",
        "数据库密码是 保存在保险库里",
        "la contraseña del usuario de respaldo está en el gestor de secretos del equipo",
        "the password must be at least 14 characters and rotated every 90 days",
    ],
)
def test_a_password_said_to_be_kept_elsewhere_is_stored(text: str) -> None:
    assert find_secrets(text, full=True) == find_secrets(text) == []


@pytest.mark.parametrize(
    ("text", "stored"),
    [
        ("the grafana login is admin / Pelican7731#", False),
        ("Login: deploy / Pelican7731#", False),
        ("the login is admin / admin on the local emulator", True),
        ("login is via SSO / okta since 2024", True),
    ],
)
def test_a_login_said_to_be_user_slash_password(text: str, stored: bool) -> None:
    assert (find_secrets(text, full=True) == []) is stored
    assert find_secrets(text) == find_secrets(text, full=True)


@pytest.mark.parametrize(
    ("text", "stored"),
    [
        ("backup codes: 4k7m2 9x3q8 7d1f5 2w8n6 5b3c9", False),
        ("2FA recovery codes\n3hf8-k2m9\nq7x1-p4z6\nb9d3-n8w2\nt5v7-j1c4", False),
        ("backup codes are kept in 1Password under the org owner entry", True),
        ("backup codes for ledger-db: snapshots 2026-12-01, 2026-12-02, 2026-12-03", True),
        ("recovery codes rotated, ticket OPS-1234, OPS-1235, OPS-1236", True),
    ],
)
def test_recovery_codes_are_refused_and_talk_of_them_stored(text: str, stored: bool) -> None:
    assert (find_secrets(text, full=True) == []) is stored
    assert find_secrets(text) == find_secrets(text, full=True)


def test_recovery_codes_are_masked_whole_not_some_left_showing() -> None:
    text = "recovery codes for the root account:\n" + "\n".join(
        ["3hf8-k2m9", "q7x1-p4z6", "b9d3-n8w2", "t5v7-j1c4", "m2k8-x4q1", "c6n3-w9b5"]
    )
    masked = mask_secrets(text)
    assert find_secrets(masked) == []
    assert not any(code in masked for code in ("3hf8-k2m9", "m2k8-x4q1", "c6n3-w9b5"))


@pytest.mark.parametrize(
    ("text", "stored"),
    [
        ("curl -b 'x' -H 'Cookie: _session_id=7f3a9c2e5b8d1f4a6c0e9b2d5f8a1c4e' $URL", False),
        ("Cookie: remember_token=Vq8Km3Zx9Rt2Wp7Ln4Bc6Hy1Jd5Fs0Ga", False),
        ("Cookie: theme=dark; lang=en-GB; tz=Europe/Lisbon", True),
        ("Set-Cookie: csrftoken=aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY; SameSite=Lax", True),
        ('curl -H "Cookie: sessionid=$SESSION" https://admin.example.dev/', True),
    ],
)
def test_a_session_cookie_is_refused_a_preference_or_csrf_cookie_stored(
    text: str, stored: bool
) -> None:
    assert (find_secrets(text, full=True) == []) is stored
    assert find_secrets(text) == find_secrets(text, full=True)


@pytest.mark.parametrize(
    "text",
    [
        "DATABASE_URL=postgres://user:password@localhost:5432/app  # the README's default",
        "arn:aws:secretsmanager:us-east-2:210987654321:secret:staging/api/stripe-Xy7Qp2",
        "password: ENC[AES256_GCM,data:Zq8Wm3Kx9Rt2,iv:Vp7Ln4Bc6Hy1Jd5Fs0GaQe3Wr8Ty=,type:str]",
        "db_password: !vault |\n  $ANSIBLE_VAULT;1.1;AES256\n  6231383764363034613133",
        "spec:\n  encryptedData:\n    password: AgCx7Vm2Kq9Rt4Zw8Ln3Bc6Hy1Jd5Fs0GaQe3Wr8Ty2Ui5Op9"
        + "Kl4Mn7Bv1Cx6Zs3Ad8Fg0Hj2Kl5Qw9Er4Ty7Ui1Op",
        "password = (see 1Password: staging db)",
        "docs' example pair: AKIAQ9ZR2SFEX7EXAMPLE / Wz3Kq8Rm2Xv7Ln4Bc6Hy1Jd5Fs0GaEXAMPLEKEY",
    ],
)
def test_names_ciphertext_and_documented_pairs_beside_a_credential_word_are_stored(
    text: str,
) -> None:
    assert find_secrets(text, full=True) == find_secrets(text) == []


# Found probing past set 5 (not in it): a flag that names a password, CLIs' own password
# flags, SQL's IDENTIFIED BY and a Wi-Fi QR code's P: field.
@pytest.mark.parametrize(
    ("text", "stored"),
    [
        ("keytool -importkeystore -srcstorepass Rw7!nK2qZx -deststorepass Rw7!nK2qZx", False),
        ("mongosh -u admin -p Rw7nK2qZx9Lm --authenticationDatabase admin", False),
        ("sqlcmd -S db01 -U sa -P Rw7nK2qZx9Lm -Q 'select 1'", False),
        ("ssh-keygen -t ed25519 -N 'Rw7nK2qZx9Lm' -f deploy_key", False),
        ("ALTER USER 'app'@'%' IDENTIFIED WITH caching_sha2_password BY 'Rw7!nK2qZx';", False),
        ("WIFI:S:lab-5g;T:WPA;P:Rw7!nK2qZx;;", False),
        ("app --password-file ~/.config/app/pw --bypass cache-01", True),
        ("vsftpd --passive-ports 30000-30009", True),
        ("ssh-keygen -t ed25519 -N '' -f deploy_key", True),
        ("keytool -list -storepass $STOREPASS", True),
        ("CREATE USER app IDENTIFIED BY '<password>';", True),
        ("psql -h db01 -p 5432 -U app", True),
    ],
)
def test_a_password_given_to_a_command_or_in_sql(text: str, stored: bool) -> None:
    assert (find_secrets(text, full=True) == []) is stored
    assert find_secrets(text) == find_secrets(text, full=True)


# Found by held-out set 6 (tests/data/secrets/*-heldout6.json, fifteenth session); each case is
# typed apart from the set (other sentences, other values) and fails on main.
@pytest.mark.parametrize(
    "text",
    [
        "a router jelszava: Kv9@mLq2Zt",  # Hungarian
        "mật khẩu wifi văn phòng là Hx4@pQ8zLm",  # Vietnamese
        "kata sandi database staging adalah Mb7@wQ2kRz",  # Indonesian
        "kata laluan pangkalan data ialah Qe2@rT6yUi",  # Malay
        "डेटाबेस का पासवर्ड Rq5@tY8wNp है",  # Hindi: the copula after the value
        "كلمة السر لقاعدة البيانات هي Wz3@kP9mQx",  # Arabic
        "הסיסמה של הראוטר היא Jd8@vN2qLs",  # Hebrew
        "รหัสผ่านเราเตอร์คือ Pf6@zK3wTm",  # Thai: no spaces, the copula glued
        "رمز عبور پایگاه داده Yt2@qM7xVb است",  # Persian
        "паролата на рутера е Gn4@wR8kZp",  # Bulgarian
        "лозинка за рутер је Bc9@mT4qXw",  # Serbian
        "la contrasenya de la base de dades és Lk3@pV7zQr",  # Catalan
        "nenosiri la ruta ni Dm8@xK2wPq",  # Swahili
        "ο κωδικός πρόσβασης του router είναι Hs5@nQ9vKt",  # Greek, a clause away
        "maršrutizatoriaus slaptažodis: Zx7@bM3qWp",  # Lithuanian
    ],
)
def test_a_password_said_in_set_6s_languages_is_refused(text: str) -> None:
    assert find_secrets(text, full=True) == find_secrets(text) != []


@pytest.mark.parametrize(
    "text",
    [
        "รหัสผ่านต้องมีอย่างน้อย 12 ตัวอักษรและเปลี่ยนทุก 90 วัน",  # Thai: marks are not symbols
        "पासवर्ड कम से कम 14 अक्षरों का होना चाहिए",
        "يجب أن تكون كلمة المرور 14 حرفًا على الأقل",
        "mật khẩu phải có ít nhất 14 ký tự",
        "the password reset mail goes to Ops.Team1@example.org",  # an email is no password
    ],
)
def test_talk_of_passwords_in_set_6s_languages_is_stored(text: str) -> None:
    assert find_secrets(text, full=True) == find_secrets(text) == []


@pytest.mark.parametrize(
    ("text", "stored"),
    [
        ('var signingKey = []byte("q7Wm2Zr9Kx4Tp8Ln3Vb6Hy1Jd5Fs0Ga")', False),
        ('const hmacSecret = Buffer.from("q7Wm2Zr9Kx4Tp8Ln3Vb6Hy1Jd5Fs0Ga")', False),
        ('API_TOKEN = b"q7Wm2Zr9Kx4Tp8Ln3Vb6Hy1Jd5Fs0Ga"', False),
        ('var cacheKey = []byte("user-profile")', True),
        ("token = jwt.encode(payload, signing_key)", True),
        ("the env var SIGNING_KEY = 32 random bytes, made by openssl rand", True),
    ],
)
def test_a_key_wrapped_in_code_beside_its_label(text: str, stored: bool) -> None:
    assert (find_secrets(text, full=True) == []) is stored
    assert find_secrets(text) == find_secrets(text, full=True)


@pytest.mark.parametrize(
    ("text", "stored"),
    [
        ("mysql://report:Wq#8zLp2Kx@db.internal:3306/sales", False),
        ("redis://:Tz8?mQ2wLx9@cache:6379/0", False),
        ("see http://intranet:8080?user=bob@acme.io for the form", True),
        ('network={\n  ssid="lab"\n  psk="Vn4kR8pZx2Lq"\n}', False),
        ("ipsec_psk: Vn4kR8pZx2Lq", False),
        ("psk=<your wifi password>", True),
        ("wpa_psk: ${WIFI_PSK}", True),
    ],
)
def test_a_url_password_with_a_hash_and_a_pre_shared_key(text: str, stored: bool) -> None:
    assert (find_secrets(text, full=True) == []) is stored
    assert find_secrets(text) == find_secrets(text, full=True)


def test_a_certificates_forty_character_line_is_not_an_aws_secret() -> None:
    line = "Zq8Wm3Kx9Rt2Vp7Ln4Bc6Hy1Jd5Fs0GaQe3Wr8Ty"  # 40 characters
    body = "\n".join(["MIIDdzCCAl+gAwIBAgIEbC9oIjANBgkqhkiG9w0BAQsFADBsMRAwDgYDVQQGEwdV"] * 3)
    for kind in ("CERTIFICATE", "PUBLIC KEY"):
        block = f"-----BEGIN {kind}-----\n{body}\n{line}\n-----END {kind}-----"
        assert find_secrets(block, full=True) == find_secrets(block) == []
        assert find_secrets(f"{block}\nand the secret {line}") != []  # past the block: read


@pytest.mark.parametrize(
    ("text", "stored"),
    [
        ("$t = 'npm_Q2wErTyUiOp' . 'AsDfGhJkLzXcVbNm7QwErTy12';", False),  # PHP
        ('x = "glpat-Ab3dEf6h" & "IjKlMnOp5q9z"', False),  # VB
        ('String t = "ghp_R8mQ2wLx9Tz4Kp7" +\n    "Vn3Bc6Hy1Jd5Fs0GaQe";', False),  # Java
        ("pulled with hf_PbXkRmTqWzNvLsJd HgFcYtBnMwQeKaZuXo", False),  # letters only: issued
        # the first line alone ends in what reads as a stand-in (40 000 …); whole, the shape
        # Slack issues, its hex lowercase
        (
            "pasted:\n  xoxp-514203968417-730251849630-400507030\n  6514-c7d2e9f4a1b8c3d6e0f5a2b7c4d9e1f3",
            False,
        ),
        (
            "hf_ is the prefix Hugging Face puts on its access tokens so that scanners can find them",
            True,
        ),
        ('"a" + "b" and "xoxp-" + "token" in the docs', True),
    ],
)
def test_a_token_split_into_joined_literals_or_lines(text: str, stored: bool) -> None:
    assert (find_secrets(text, full=True) == []) is stored
    assert find_secrets(text) == find_secrets(text, full=True)


@pytest.mark.parametrize(
    ("text", "stored"),
    [
        ('client = Lob("live_7c1e9a3f5b2d8e6c4a0f9b7d5e3c1a2b4d6")', False),
        ('new Ably.Rest("Xy12Ab.Cd34Ef:Gh56IjKl78MnOp90QrSt12UvWx34YzAb56Cd")', False),
        ("the topic live_stream_events_for_the_checkout_service_v2", True),
        ("handler pkg_v1.sub_v2:handle_the_webhook_events_from_the_queue", True),
    ],
)
def test_live_mode_keys_and_ably_keys(text: str, stored: bool) -> None:
    assert (find_secrets(text, full=True) == []) is stored
    assert find_secrets(text) == find_secrets(text, full=True)


# Found reading what ingest would mask in the standard library's code (not in set 6): a
# parameter's default and a constant that names a password were refused as one.
@pytest.mark.parametrize(
    ("text", "stored"),
    [
        ("def connect(host: str, password=None):", True),
        ("def open_db(dsn, password=DEFAULT_DB_PASSWORD):", True),
        ("def connect(host: str, password=Wq7mZ2kL9x):", False),
    ],
)
def test_a_parameters_default_or_a_constant_is_no_password(text: str, stored: bool) -> None:
    assert (find_secrets(text, full=True) == []) is stored
    assert find_secrets(text) == find_secrets(text, full=True)
