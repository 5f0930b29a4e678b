"""A generated corpus for the secret scan: credential forms that must be refused, look-alikes that must not.

Every value is made here from a seeded random generator in the shape a provider issues (never a
real secret). `forms()` spans the provider families a maintained rule set covers (gitleaks'
rule list, detect-secrets' plugins, read as facts) plus passwords in prose and on command
lines, key bodies without their BEGIN line, labelled hex and base64 of a token. `benign()`
holds what a memory of technical work is full of and looks like them: commit ids, UUIDs,
digests, base64 of text, AWS's documented EXAMPLE keys, identifiers, URLs, versions, code
that reads a secret from somewhere, prose about passwords, placeholders.
"""

from __future__ import annotations

import base64
import random
import string
from collections.abc import Callable
from dataclasses import dataclass

B62 = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
B32 = string.ascii_uppercase + "234567"
B64 = B62 + "+/"
URLSAFE = B62 + "-_"


@dataclass(frozen=True)
class Sample:
    family: str
    text: str


class _Gen:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def of(self, alphabet: str, n: int) -> str:
        while True:
            value = "".join(self.rng.choice(alphabet) for _ in range(n))
            # A generated key mixes its alphabet's classes; a draw without a digit is redrawn.
            if n < 8 or any(c.isdigit() for c in value) or not any(c.isdigit() for c in alphabet):
                return value

    def hex(self, n: int) -> str:
        return self.of(HEX, n)

    def b62(self, n: int) -> str:
        return self.of(B62, n)

    def uuid(self) -> str:
        h = self.hex(32)
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"

    def pick(self, *options: str) -> str:
        return self.rng.choice(options)

    def b64_of(self, data: bytes) -> str:
        return base64.b64encode(data).decode()


def _der_private_key(g: _Gen) -> str:
    """A PKCS#1 RSA key's base64 body: the DER header of a 2048-bit key, then random bytes."""
    header = bytes.fromhex("308204a40201000282010100")
    body = header + bytes(g.rng.randrange(256) for _ in range(1180))
    return base64.b64encode(body).decode()


def _lines(text: str, width: int = 64) -> str:
    return "\n".join(text[i : i + width] for i in range(0, len(text), width))


def _form_makers(g: _Gen) -> list[tuple[str, Callable[[], str]]]:
    ghp = lambda: "ghp_" + g.b62(36)  # noqa: E731
    return [
        ("aws", lambda: f"deploy bot uses AKIA{g.of(B32, 16)}"),
        ("aws", lambda: f"aws_secret_access_key = {g.of(B64, 40)}"),
        ("aws", lambda: f"temporary creds ASIA{g.of(B32, 16)} until noon"),
        ("github", lambda: f"use {ghp()} for the release job"),
        ("github", lambda: f"GITHUB_TOKEN=github_pat_11{g.b62(20)}_{g.b62(59)}"),
        ("github", lambda: f"oauth token gho_{g.b62(36)}"),
        ("gitlab", lambda: f"register with glrt-{g.of(URLSAFE, 20)}"),
        ("gitlab", lambda: f"runner token glrt-t1_{g.b62(27)}"),
        ("gitlab", lambda: f"clone with glpat-{g.of(URLSAFE, 20)}"),
        ("gitlab", lambda: f"deploy token gldt-{g.b62(20)}"),
        ("gitlab", lambda: f"trigger: glptt-{g.hex(40)}"),
        (
            "slack",
            lambda: (
                f"bot token xoxb-{g.of(string.digits, 12)}-{g.of(string.digits, 13)}-{g.b62(24)}"
            ),
        ),
        ("slack", lambda: f"xapp-1-A{g.of(B32, 10)}-{g.of(string.digits, 13)}-{g.hex(64)}"),
        (
            "slack webhook",
            lambda: (
                f"alerts: https://hooks.slack.com/services/T{g.of(B32, 8)}/B{g.of(B32, 10)}/{g.b62(24)}"
            ),
        ),
        (
            "discord webhook",
            lambda: (
                f"https://discord.com/api/webhooks/{g.of(string.digits, 18)}/{g.of(URLSAFE, 68)}"
            ),
        ),
        (
            "teams webhook",
            lambda: (
                f"https://contoso.webhook.office.com/webhookb2/{g.uuid()}@{g.uuid()}/IncomingWebhook/{g.hex(32)}/{g.uuid()}"
            ),
        ),
        ("openai", lambda: f"OPENAI_API_KEY=sk-proj-{g.of(URLSAFE, 48)}"),
        ("anthropic", lambda: f"key sk-ant-api03-{g.of(URLSAFE, 93)}AA"),
        ("stripe", lambda: f"stripe test key sk_test_{g.b62(24)}"),
        ("stripe", lambda: f"STRIPE_SECRET_KEY=sk_live_{g.b62(99)}"),
        ("stripe", lambda: f"restricted rk_live_{g.b62(24)}"),
        ("stripe", lambda: f"webhook signing secret whsec_{g.b62(32)}"),
        ("google", lambda: f"maps key AIza{g.of(URLSAFE, 35)}"),
        ("google", lambda: f'"client_secret": "GOCSPX-{g.of(URLSAFE, 28)}"'),
        ("google", lambda: f"access token ya29.{g.of(URLSAFE, 120)}"),
        ("twilio", lambda: f"twilio api key SK{g.hex(32)}"),
        ("twilio", lambda: f"TWILIO_AUTH_TOKEN={g.hex(32)}"),
        ("mailgun", lambda: f"mailgun key-{g.hex(32)}"),
        ("mailgun", lambda: f"MAILGUN_API_KEY={g.hex(32)}-{g.hex(8)}-{g.hex(8)}"),
        ("mailchimp", lambda: f"mailchimp {g.hex(32)}-us{g.rng.randrange(1, 21)}"),
        ("datadog", lambda: f"DD_API_KEY={g.hex(32)}"),
        ("datadog", lambda: f"datadog app key: {g.hex(40)}"),
        (
            "django",
            lambda: (
                f"SECRET_KEY = 'django-insecure-{g.of(string.ascii_lowercase + string.digits + '!@#$%^&*(-_=+)', 50)}'"
            ),
        ),
        (
            "django",
            lambda: (
                f"SECRET_KEY = '{g.of(string.ascii_lowercase + string.digits + '!@#$%^&*(-_=+)', 50)}'"
            ),
        ),
        ("vault", lambda: f"VAULT_TOKEN=hvs.{g.of(URLSAFE, 90)}"),
        ("vault", lambda: f"batch token hvb.{g.of(URLSAFE, 120)}"),
        ("docker", lambda: f"docker hub dckr_pat_{g.of(URLSAFE, 27)}"),
        ("telegram", lambda: f"bot {g.of(string.digits, 10)}:AA{g.of(URLSAFE, 33)}"),
        ("azure", lambda: f"AZURE_CLIENT_SECRET={g.of(B62, 3)}8Q~{g.of(URLSAFE + '~.', 31)}"),
        (
            "azure",
            lambda: (
                f"DefaultEndpointsProtocol=https;AccountName=prod;AccountKey={g.of(B64, 86)}==;EndpointSuffix=core.windows.net"
            ),
        ),
        (
            "azure",
            lambda: (
                f"Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccessKey={g.of(B64, 43)}="
            ),
        ),
        ("linear", lambda: f"linear lin_api_{g.b62(40)}"),
        ("notion", lambda: f"NOTION_TOKEN=secret_{g.b62(43)}"),
        ("notion", lambda: f"notion ntn_{g.of(string.digits, 11)}{g.b62(35)}"),
        ("atlassian", lambda: f"jira token ATATT3xFfGF0{g.of(URLSAFE, 170)}={g.hex(8).upper()}"),
        ("atlassian", lambda: f"CONFLUENCE_API_TOKEN={g.b62(24)}"),
        ("postman", lambda: f"postman PMAK-{g.hex(24)}-{g.hex(34)}"),
        (
            "terraform",
            lambda: (
                f'credentials "app.terraform.io" {{ token = "{g.b62(14)}.atlasv1.{g.of(URLSAFE, 67)}" }}'
            ),
        ),
        ("sentry", lambda: f"SENTRY_AUTH_TOKEN=sntrys_eyJ{g.of(URLSAFE, 150)}"),
        ("grafana", lambda: f"grafana glsa_{g.b62(32)}_{g.hex(8)}"),
        ("newrelic", lambda: f"NEW_RELIC_API_KEY=NRAK-{g.of(B32, 27)}"),
        ("databricks", lambda: f"databricks token dapi{g.hex(32)}"),
        ("figma", lambda: f"figma figd_{g.of(URLSAFE, 40)}"),
        ("heroku", lambda: f"HEROKU_API_KEY={g.uuid()}"),
        ("heroku", lambda: f"heroku HRKU-{g.of(URLSAFE, 60)}"),
        ("sendgrid", lambda: f"SG.{g.of(URLSAFE, 22)}.{g.of(URLSAFE, 43)}"),
        ("shopify", lambda: f"shopify shpat_{g.hex(32)}"),
        ("digitalocean", lambda: f"doctl token dop_v1_{g.hex(64)}"),
        ("square", lambda: f"square sq0atp-{g.of(URLSAFE, 22)}"),
        ("square", lambda: f"SQUARE_ACCESS_TOKEN=EAAA{g.of(URLSAFE, 60)}"),
        ("planetscale", lambda: f"pscale_tkn_{g.of(URLSAFE, 43)}"),
        ("npm", lambda: f"//registry.npmjs.org/:_authToken=npm_{g.b62(36)}"),
        ("pypi", lambda: f"pypi-AgEIcHlwaS5vcmc{g.of(URLSAFE, 70)}"),
        ("huggingface", lambda: f"HF_TOKEN=hf_{g.b62(34)}"),
        ("doppler", lambda: f"doppler dp.pt.{g.b62(43)}"),
        ("pulumi", lambda: f"PULUMI_ACCESS_TOKEN=pul-{g.hex(40)}"),
        ("sonar", lambda: f"sonar token squ_{g.hex(40)}"),
        (
            "jwt",
            lambda: (
                "eyJ" + g.of(URLSAFE, 30) + ".eyJ" + g.of(URLSAFE, 60) + "." + g.of(URLSAFE, 43)
            ),
        ),
        ("age", lambda: f"AGE-SECRET-KEY-1{g.of(B32, 58)}"),
        ("rubygems", lambda: f"GEM_HOST_API_KEY=rubygems_{g.hex(48)}"),
        ("1password", lambda: f"OP_SERVICE_ACCOUNT_TOKEN=ops_eyJ{g.of(URLSAFE, 300)}"),
        ("dropbox", lambda: f"dropbox sl.{g.of(URLSAFE, 138)}"),
        ("groq", lambda: f"GROQ_API_KEY=gsk_{g.b62(52)}"),
        ("okta", lambda: f"OKTA_API_TOKEN=00{g.of(URLSAFE, 40)}"),
        ("supabase", lambda: f"supabase sbp_{g.hex(40)}"),
        ("sendinblue", lambda: f"brevo xkeysib-{g.hex(64)}-{g.b62(16)}"),
        ("flyio", lambda: f"FLY_API_TOKEN=fo1_{g.of(URLSAFE, 43)}"),
        (
            "discord bot",
            lambda: f"bot token M{g.of(URLSAFE, 23)}.{g.of(URLSAFE, 6)}.{g.of(URLSAFE, 38)}",
        ),
        (
            "private key",
            lambda: (
                f"-----BEGIN RSA PRIVATE KEY-----\n{_lines(_der_private_key(g))}\n-----END RSA PRIVATE KEY-----"
            ),
        ),
        (
            "private key",
            lambda: (
                f"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA{g.of(B64, 46)}\n"
            ),
        ),
        ("pem body", lambda: f"the key (header lost):\n{_lines(_der_private_key(g))}"),
        ("pem body", lambda: f"{_lines(_der_private_key(g)[400:1000])}"),
        (
            "pem body",
            lambda: (
                f"b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW{g.of(B64, 40)}"
            ),
        ),
        (
            "pem body",
            lambda: "MHcCAQEEI" + g.of(B64, 55) + "oAoGCCqGSM49AwEHoUQDQgAE" + g.of(B64, 86),
        ),
        ("url password", lambda: f"DATABASE_URL=postgres://app:{g.b62(16)}@db.internal:5432/app"),
        ("url password", lambda: f"redis://:{g.b62(20)}@cache:6379/0"),
        ("cli password", lambda: f"curl -u admin:{g.b62(14)} https://jenkins.local/api/json"),
        (
            "cli password",
            lambda: (
                f"curl --user deploy:{g.pick('S3cure', 'hunter', 'Tr0ub4dor')}{g.of(string.digits, 3)}! https://x"
            ),
        ),
        ("cli password", lambda: f"sshpass -p '{g.b62(12)}' ssh root@10.0.0.5"),
        (
            "cli password",
            lambda: (
                f"sshpass -p {g.pick('Winter', 'Summer', 'Spring')}{g.of(string.digits, 4)} scp f host:"
            ),
        ),
        ("cli password", lambda: f"docker login -u ci -p {g.b62(16)} registry.local"),
        ("cli password", lambda: f"mysql -u root -p{g.b62(10)} app"),
        ("cli password", lambda: f"redis-cli -h cache -a {g.b62(18)} ping"),
        (
            "prose password",
            lambda: (
                f"the root password is {g.pick('hunter', 'dragon', 'Summer')}{g.of(string.digits, 2)}{g.pick('!', '#', '')}"
            ),
        ),
        ("prose password", lambda: f"admin password for the staging db: {g.b62(12)}"),
        (
            "prose password",
            lambda: (
                f"wifi passphrase is {g.pick('blue', 'green')}-{g.pick('cat', 'owl')}-{g.of(string.digits, 4)}"
            ),
        ),
        ("prose password", lambda: f"db password was changed to {g.b62(10)}"),
        ("prose password", lambda: f"login: deploy / password: {g.b62(12)}"),
        ("labelled hex", lambda: f'api_key = "{g.hex(32)}"'),
        ("labelled hex", lambda: f"the service token is {g.hex(64)}"),
        ("labelled hex", lambda: f"client_secret: {g.hex(40)}"),
        ("generic", lambda: f"SESSION_SECRET={g.b62(32)}"),
        ("generic", lambda: f'"signing_key": "{g.of(B64, 43)}="'),
        ("generic", lambda: f"APP_KEY=base64:{g.of(B64, 43)}="),
        ("generic", lambda: f"ENCRYPTION_KEY: {g.of(URLSAFE, 44)}"),
        ("auth header", lambda: f"Authorization: Bearer {g.of(URLSAFE, 40)}"),
        ("auth header", lambda: f"Authorization: Basic {g.b64_of(f'ci:{g.b62(14)}'.encode())}"),
        ("base64 token", lambda: f"token (base64): {g.b64_of(('ghp_' + g.b62(36)).encode())}"),
        ("base64 token", lambda: f"k8s secret data: {g.b64_of(('sk_test_' + g.b62(24)).encode())}"),
        (
            "base64 token",
            lambda: f"{g.b64_of(('AKIA' + g.of(B32, 16)).encode())} is the encoded id",
        ),
        (
            "base64 token",
            lambda: f"tls.key: {g.b64_of(b'-----BEGIN PRIVATE KEY-----' + bytes(40))}",
        ),
        ("netrc", lambda: f"machine api.heroku.com login me@x.io password {g.uuid()}"),
        ("camelcase label", lambda: f"const accessToken = '{g.b62(32)}';"),
        ("pgpass", lambda: f"~/.pgpass: db.internal:5432:app:app:{g.b62(16)}"),
        ("pagerduty", lambda: f"pagerduty integration key {g.hex(32)}"),
        ("api key header", lambda: f"X-API-Key: {g.hex(32)}"),
        (
            "prose password",
            lambda: f"the password for root on db-1 was set to W1nter{g.of(string.digits, 4)}!",
        ),
        (
            "docker config",
            lambda: (
                f'{{"auths": {{"ghcr.io": {{"auth": "{g.b64_of(f"ci:{g.b62(20)}".encode())}"}}}}}}'
            ),
        ),
        ("npm legacy", lambda: f"//registry.npmjs.org/:_authToken={g.uuid()}"),
        # a new user's trial after issue 36: logins, passphrases, other languages
        (
            "login pair",
            lambda: (
                f"log in to {g.pick('grafana', 'jenkins', 'the router')} with "
                f"{g.pick('admin', 'root', 'ops')} / {g.of(B62, 6)}{g.pick('!', '#', '%')}{g.of(B62, 2)}"
            ),
        ),
        ("login pair", lambda: f"sign in as deploy:{g.b62(10)} on the staging box"),
        (
            "passphrase",
            lambda: (
                f"the office wifi password is {'-'.join(g.rng.sample(_PASSPHRASE_WORDS, g.rng.randrange(3, 6)))}"
            ),
        ),
        ("passphrase", lambda: f"vault passphrase: {'-'.join(g.rng.sample(_PASSPHRASE_WORDS, 4))}"),
        ("other language", lambda: f"das Passwort für root ist {g.b62(8)}{g.pick('!', '#')}"),
        ("other language", lambda: f"le mot de passe du routeur est {g.b62(10)}"),
        ("other language", lambda: f"la contraseña de la base es {g.b62(9)}{g.pick('!', '$')}"),
        ("other language", lambda: f"Kennwort: {g.b62(12)}"),
        ("short label", lambda: f"pw: {g.b62(10)}"),
        ("short label", lambda: f"pwd: {g.b62(8)}{g.pick('!', '#')}"),
    ]


def forms(seed: int = 36) -> list[Sample]:
    """Credential forms that must be refused: each maker drawn once."""
    g = _Gen(seed)
    return [Sample(family, make()) for family, make in _form_makers(g)]


_PASSPHRASE_WORDS = [
    "correct",
    "horse",
    "battery",
    "staple",
    "orange",
    "rocket",
    "violin",
    "marble",
    "tiger",
    "canyon",
    "pepper",
    "lantern",
    "harbor",
    "meadow",
    "copper",
    "window",
    "falcon",
]

_AWS_EXAMPLES = (
    "AKIAIOSFODNN7EXAMPLE",
    "AKIAI44QH8DHBEXAMPLE",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY",
)

_WORDS = [
    "deploy",
    "staging",
    "build",
    "cache",
    "index",
    "merge",
    "review",
    "release",
    "rollback",
    "tests",
    "docs",
    "config",
    "lint",
    "format",
    "upload",
    "nginx",
    "postgres",
    "redis",
    "worker",
    "queue",
    "schema",
    "migration",
    "feature",
    "branch",
    "sync",
]


def _benign_makers(g: _Gen) -> list[Callable[[], str]]:
    sentence = lambda: " ".join(g.rng.choice(_WORDS) for _ in range(g.rng.randrange(4, 12)))  # noqa: E731
    return [
        lambda: f"commit {g.hex(40)} fixed the flaky test",
        lambda: f"reverted {g.hex(7)} and {g.hex(12)}; see {g.hex(40)}",
        lambda: f"git cherry-pick {g.hex(40)}",
        lambda: f"request id {g.uuid()} in the nginx log",
        lambda: f"tenant {g.uuid().upper()} owns the bucket",
        lambda: f"image: ghcr.io/org/app@sha256:{g.hex(64)}",
        lambda: f"sha256 of the tarball is {g.hex(64)}",
        lambda: f"md5 checksum {g.hex(32)} matches the mirror",
        lambda: f'ETag: "{g.hex(32)}"',
        lambda: f"fixture {g.b64_of(sentence().encode())} decodes to the sample text",
        lambda: f"the header value is {g.b64_of(sentence().encode())}",
        lambda: f"aws_access_key_id = {g.pick(*_AWS_EXAMPLES[:2])}",
        lambda: f"aws_secret_access_key = {g.pick(*_AWS_EXAMPLES[2:])}",
        lambda: f"the docs use {g.pick(*_AWS_EXAMPLES)} as the example key",
        lambda: "class AbstractSingletonProxyFactoryBeanDefinitionRegistryPostProcessor",
        lambda: (
            "CI gets AWS access through OIDC (configure-aws-credentials@v4 with role-to-assume: "
            f"arn:aws:iam::{g.rng.randrange(10**11, 10**12)}:role/{g.rng.choice(_WORDS)}-deploy)"
        ),
        lambda: f"test_{'_'.join(g.rng.choice(_WORDS) for _ in range(6))}",
        lambda: (
            f"{g.pick('get', 'set', 'use')}{''.join(w.title() for w in g.rng.sample(_WORDS, 5))}"
        ),
        lambda: f"MEMSTORE_{'_'.join(g.rng.choice(_WORDS).upper() for _ in range(3))}=1",
        lambda: (
            f"https://github.com/org/repo/blob/main/src/{g.rng.choice(_WORDS)}/{g.rng.choice(_WORDS)}.py#L{g.rng.randrange(1, 900)}"
        ),
        lambda: (
            f"https://example.com/api/v2/{g.rng.choice(_WORDS)}?page={g.rng.randrange(9)}&per_page=100"
        ),
        lambda: f"git clone https://{g.rng.choice(_WORDS)}@git.example.com/team/repo.git",
        lambda: (
            f"bump to v{g.rng.randrange(9)}.{g.rng.randrange(30)}.{g.rng.randrange(30)}-rc.{g.rng.randrange(5)}+build.{g.of(string.digits, 8)}"
        ),
        lambda: (
            f"python 3.11.{g.rng.randrange(12)} and node v20.{g.rng.randrange(20)}.{g.rng.randrange(9)}"
        ),
        lambda: (
            f"memory {g.of('abcdefghijklmnopqrstuvwxyz234567', 8)} supersedes {g.of('abcdefghijklmnopqrstuvwxyz234567', 8)}"
        ),
        lambda: f"global/use-pnpm-not-npm-{g.of('abcdefghijklmnopqrstuvwxyz234567', 8)}.md",
        lambda: g.pick(
            'token = os.environ["GITHUB_TOKEN"]',
            "password = getpass.getpass()",
            "api_key = settings.STRIPE_API_KEY",
            "const secret = process.env.JWT_SECRET;",
            'headers = {"Authorization": f"Bearer {token}"}',
            "client_secret: ${{ secrets.CLIENT_SECRET }}",
            'password: "{{ vault_db_password }}"',
            "PGPASSWORD=$DB_PASS psql -h db -U app",
            'curl -u "$USER:$TOKEN" https://api.example.com',
            'sshpass -p "$SSHPASS" ssh deploy@host',
            "docker login -u ci --password-stdin < token.txt",
            "mysql -u root -p app",
            "password_hash = bcrypt.hashpw(password, bcrypt.gensalt())",
            "if token is None: raise AuthError('missing token')",
            "secret_name = f'{env}-db-credentials'",
            "api_key: str = Field(default='', repr=False)",
            "redis-cli -a $REDIS_PASSWORD ping",
            "token_url = 'https://oauth2.googleapis.com/token'",
            "jwt.decode(token, key, algorithms=['HS256'])",
            "csrfToken = request.cookies.get('csrftoken')",
            "accessTokenExpiry: 3600",
            "secretKeyRef: {name: db, key: password}",
            "docker run -e MYSQL_ROOT_PASSWORD=my-secret-pw mysql",
            "kubectl create secret generic db --from-literal=password=$(openssl rand -base64 24)",
            "SECRET_KEY is generated with secrets.token_urlsafe(50)",
            "key_terms = frozenset().union(*(words[k].terms for k in key))",
            "X-Hub-Signature-256: sha256=HMAC(secret, body)",
            "vault kv get -field=password secret/prod/db",
            "api key: stored as a sha256 hash, never in plain text",
        ),
        lambda: g.pick(
            "the password is stored in 1Password under 'prod db'",
            "rotate the api key every 90 days",
            "the token expires after 1 hour; refresh it with the refresh token",
            "password must be at least 12 characters and include a digit",
            "reset the root password with mysqladmin when it expires",
            "the secret lives in vault under kv/prod/db, never in the repo",
            "we keep the api key in the macOS keychain",
            "tokens are counted with tiktoken before the call",
            "max_tokens: 4096 for the summariser",
            "secret name: prod-db-credentials",
            "the password was reset on 2024-01-05 by the on-call",
            "ask Sam for the staging password; it is not written down",
            "password is required for sudo on the build host",
            "the token is passed in the Authorization header",
            "use a personal access token, not your password, for git over https",
            "Password: the field is optional in the form",
            "private key stays on the laptop; only the public key goes to the server",
            "the api key field is masked in the UI",
            "password reset emails go through postmark",
            "the password is in 1Password",
            "the password is stored in Vault",
            "the wifi password is on the fridge",
            "reset the password is-a-known-issue",
            "the password is end-to-end encrypted",
            "das Passwort ist im Tresor",
            "le mot de passe est incorrect",
            "la contraseña es obligatoria",
            "log in with username / password",
            "sign in with email/password, or with Google / GitHub",
            "log in to grafana with admin / admin the first time",
            "login with the API key from 1Password",
            "log in as deploy@10.0.0.5:2222",
            "logon with DOMAIN/user",
            "pwd: /home/ci/builds/app",
            "PW: see vault",
        ),
        lambda: g.pick(
            "api_key: <your-token>",
            "password: xxxx",
            "SECRET_KEY=changeme",
            "token=<redacted>",
            "password: ********",
            "STRIPE_KEY=sk_live_xxxxxxxxxxxxxxxxxxxxxxxx",
            "GITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
            "api_key: YOUR_API_KEY_HERE",
            "aws_access_key_id = AKIAXXXXXXXXXXXXXXXX",
            "OPENAI_API_KEY=sk-...",
            "password=${DB_PASSWORD}",
            "token: '{{ .Values.token }}'",
            "DATABASE_URL=postgres://user:password@localhost/db",
            "DATABASE_URL=postgres://postgres:postgres@localhost:5432/test",
            "Authorization: Bearer <token>",
            "glpat-xxxxxxxxxxxxxxxxxxxx",
            "SLACK_WEBHOOK=https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
            "sk_test_1234567890abcdefghijklmn",
        ),
        lambda: f"publishable key pk_test_{g.b62(24)} goes in the frontend",
        lambda: f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{g.of(B64, 43)} me@laptop",
        lambda: f"ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ{g.of(B64, 300)} ci@runner",
        lambda: f"host key fingerprint SHA256:{g.of(B64, 43)}",
        lambda: (
            f"-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIE{_lines(g.of(B64, 300))}\n-----END CERTIFICATE-----"
        ),
        lambda: (
            f"-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA{g.of(B64, 20)}\n{_lines(g.of(B64, 192))}\n-----END PUBLIC KEY-----"
        ),
        lambda: f"gpg signing key {g.hex(16).upper()}, fingerprint {g.hex(40).upper()}",
        lambda: f"brand colour #{g.hex(6)} and #{g.hex(6).upper()}",
        lambda: (
            f"ipv6 2001:db8:{g.hex(4)}:{g.hex(4)}::{g.hex(4)} and mac {':'.join(g.hex(2) for _ in range(6))}"
        ),
        lambda: f'"integrity": "sha512-{g.of(B64, 86)}=="',
        lambda: f"golang.org/x/net v0.{g.rng.randrange(30)}.0 h1:{g.of(B64, 43)}=",
        lambda: f"ulid {g.of('0123456789ABCDEFGHJKMNPQRSTVWXYZ', 26)} orders the events",
        lambda: f"pod web-{g.hex(10)}-{g.of('bcdfghjklmnpqrstvwxz2456789', 5)} restarted",
        lambda: f"twilio account sid AC{g.hex(32)} (not secret: it names the account)",
        lambda: (
            f"client id {g.of(string.digits, 12)}-{g.of(string.ascii_lowercase + string.digits, 32)}.apps.googleusercontent.com"
        ),
        lambda: "set GITHUB_TOKEN, NPM_TOKEN and AWS_SECRET_ACCESS_KEY as repository secrets in CI",
        lambda: f"the token's sha256 is {g.hex(64)}",
        lambda: f"password hash: $2b$12${g.of(B62 + './', 53)}",
        lambda: f"secret_id: {g.uuid()} (the approle's id, the secret itself is in vault)",
        lambda: f"key id {g.hex(16)} rotates on the first of the month",
        lambda: f"cache key {g.pick('linux', 'macos')}-pnpm-{g.hex(64)}",
        lambda: f"{sentence()}.",
        lambda: (
            f"perf: p50 {g.rng.randrange(1, 99)} ms, p95 {g.rng.randrange(100, 400)} ms at {g.rng.randrange(1, 100)}k memories"
        ),
        lambda: (
            f"build {g.of(string.digits, 10)} on runner {g.hex(8)} took {g.rng.randrange(60, 600)} s"
        ),
        lambda: (
            f"s3://{g.rng.choice(_WORDS)}-artifacts/{g.of(string.digits, 8)}/{g.hex(12)}.tar.gz"
        ),
        lambda: f"npm_config_cache=/tmp/npm-{g.of(string.digits, 6)}",
        lambda: (
            f"the token {g.pick('budget', 'limit', 'count')} is {g.rng.randrange(1000, 200000)}"
        ),
        lambda: f"idempotency key {g.uuid()} prevents double charges",
        lambda: f"primary key ({g.rng.choice(_WORDS)}_id, created_at)",
        lambda: f"X-Request-Id: {g.b62(20)}",
        lambda: f"trace {g.hex(32)} span {g.hex(16)}",
    ]


def benign(seed: int = 36, count: int = 360) -> list[Sample]:
    """Look-alikes that must be stored: each maker drawn in turn until `count` samples."""
    g = _Gen(seed + 1)
    makers = _benign_makers(g)
    return [Sample("benign", makers[i % len(makers)]()) for i in range(count)]
