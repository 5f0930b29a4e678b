"""The shapes of providers' credentials: one pattern per family, each with a fixed prefix. Pure.

The families follow what maintained scanners cover (gitleaks' rule list, detect-secrets'
plugins), read as facts; the patterns are memstore's own. A pattern here is exact enough
on its own: a fixed prefix or layout and a tail of key characters. Credentials without a
fixed shape (a Datadog key, a Twilio auth token) are left to the labelled rule in secrets.py.
"""

from __future__ import annotations

import re

# (kind, pattern): the value checked for stand-ins is the group `v` if the pattern has one.
_TAIL = r"(?![A-Za-z0-9_])"
PROVIDERS: tuple[tuple[str, str], ...] = (
    ("a GitHub token", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})"),
    (
        "a GitLab token",
        r"\b(?P<v>gl(?:pat|dt|ptt|rt|rtr|ft|soat|imt|agent|oas|cbt|ffct|wt)-[A-Za-z0-9_-]{20,})"
        r"|\bGR1348941[A-Za-z0-9_-]{20,}",
    ),
    ("a Slack token", r"\b(?P<v>xox[abposre]-[A-Za-z0-9-]{10,}|xapp-\d-[A-Za-z0-9-]{20,})"),
    (
        "a chat webhook",
        r"hooks\.slack\.com/(?:services|workflows|triggers)/T[A-Z0-9]+/[A-Z0-9]+/(?P<v>[A-Za-z0-9]{8,})"
        r"|discord(?:app)?\.com/api/webhooks/\d{5,}/(?P<w>[A-Za-z0-9_-]{20,})"
        r"|\.webhook\.office\.com/webhookb2/[0-9a-f-]{36}@"
        r"|outlook\.office(?:365)?\.com/webhook/[0-9a-f-]{36}@",
    ),
    (
        "an OpenAI or Anthropic API key",
        r"\b(?P<v>sk-(?:ant-|proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,})",
    ),
    (
        "an AI provider API key",
        r"\b(?P<v>gsk_[A-Za-z0-9]{40,}|pplx-[A-Za-z0-9]{40,}|r8_[A-Za-z0-9]{30,}|xai-[A-Za-z0-9]{50,}"
        r"|hf_[A-Za-z0-9]{30,}|api_org_[A-Za-z0-9]{30,}|lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10})",
    ),
    (
        "a Stripe secret key",
        r"\b(?P<v>(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{24,})",
    ),
    ("a Google API key", r"\bAIza[0-9A-Za-z_-]{35}"),
    (
        "a Google OAuth secret",
        r"\b(?P<v>GOCSPX-[A-Za-z0-9_-]{20,})|\bya29\.[0-9A-Za-z_-]{20,}|\b1//0[A-Za-z0-9_-]{40,}",
    ),
    ("a Twilio API key", r"\b(?P<v>SK[0-9a-f]{32})" + _TAIL),
    (
        "a Mailgun key",
        r"\b(?P<v>key-(?=[a-z]*\d)(?=\d*[a-z])[0-9a-z]{32})"
        + _TAIL
        + r"|\b[0-9a-f]{32}-[0-9a-f]{8}-[0-9a-f]{8}"
        + _TAIL,
    ),
    ("a Mailchimp API key", r"\b[0-9a-f]{32}-us\d{1,2}\b"),
    ("a Django secret key", r"\bdjango-insecure-(?P<v>[^\s'\"`]{20,})"),
    ("a Vault token", r"\b(?P<v>hv[sbr]\.[A-Za-z0-9_-]{24,})"),
    ("a Docker access token", r"\b(?P<v>dckr_(?:pat|oat)_[A-Za-z0-9_-]{20,})"),
    ("a Telegram bot token", r"(?<![\w:])\d{8,10}:(?P<v>[A-Za-z0-9_-]{33,40})" + _TAIL),
    (
        "an Azure client secret",
        r"(?<![A-Za-z0-9_~.-])(?P<v>[A-Za-z0-9_~.-]{3}\dQ~[A-Za-z0-9_~.-]{31,34})(?![A-Za-z0-9_~.-])",
    ),
    (
        "an Azure storage or service bus key",
        r"(?i:AccountKey|SharedAccessKey|SharedAccessSignature)=(?P<v>[A-Za-z0-9+/%]{30,}=*)",
    ),
    ("a Linear API key", r"\b(?P<v>lin_(?:api|oauth)_[A-Za-z0-9]{32,})"),
    ("a Notion token", r"\b(?P<v>secret_[A-Za-z0-9]{43}|ntn_[A-Za-z0-9]{40,})" + _TAIL),
    ("an Atlassian API token", r"\b(?P<v>AT(?:ATT|CTT)[A-Za-z0-9_=-]{60,})"),
    ("a Postman API key", r"\b(?P<v>PMAK-[A-Za-z0-9]{20,}-[A-Za-z0-9]{30,})"),
    ("a Terraform Cloud token", r"\b[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,}"),
    ("a Sentry token", r"\b(?P<v>sntry[su]_[A-Za-z0-9+/=_-]{30,})"),
    (
        "a Grafana token",
        r"\b(?P<v>glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/]{32,}={0,2})",
    ),
    ("a New Relic key", r"\b(?P<v>NR(?:AK|AA|II|JS)-[A-Za-z0-9]{19,})"),
    ("a Databricks token", r"\b(?P<v>dapi[a-f0-9]{32})(?:-\d)?" + _TAIL),
    ("a Figma token", r"\b(?P<v>fig[dou]_[A-Za-z0-9_-]{38,})"),
    ("a Heroku API key", r"\b(?P<v>HRKU-[A-Za-z0-9_-]{20,})"),
    ("a Brevo (Sendinblue) key", r"\bx(?:keysib|smtpsib)-[a-f0-9]{64}-[A-Za-z0-9]{16}"),
    ("a SendGrid API key", r"\bSG\.[\w-]{16,}\.[\w-]{16,}"),
    ("a Shopify token", r"\bshp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}"),
    ("a DigitalOcean token", r"\bdo[por]_v1_[a-f0-9]{64}"),
    ("a Square token", r"\b(?P<v>sq0(?:atp|csp|idp)-[A-Za-z0-9_-]{22,}|EAAA[A-Za-z0-9_-]{60})"),
    ("a PlanetScale token", r"\b(?P<v>pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_.=-]{32,})"),
    ("a Fly.io token", r"\b(?P<v>fo1_[A-Za-z0-9_-]{40,}|fm[12][ar]?_[A-Za-z0-9+/=_-]{60,})"),
    ("a Dropbox token", r"\bsl\.(?:u\.)?[A-Za-z0-9_-]{120,}"),
    (
        "a 1Password secret",
        r"\bops_eyJ[A-Za-z0-9+/=_-]{100,}|\bA3-[A-Z0-9]{6}-(?:[A-Z0-9]{5,6}-){4}[A-Z0-9]{5}\b",
    ),
    (
        "a package registry token",
        r"\b(?P<v>npm_[A-Za-z0-9]{36}|pypi-AgE[A-Za-z0-9_-]{50,}|rubygems_[a-f0-9]{48}|oy2[a-z0-9]{43}"
        r"|CLOJARS_[a-z0-9]{60}|AKCp[A-Za-z0-9]{60,}|cmVmd[A-Za-z0-9]{59})" + _TAIL,
    ),
    (
        "a developer service token",
        r"\b(?P<v>aio_[A-Za-z0-9]{28}|pat[A-Za-z0-9]{14}\.[a-f0-9]{64}|CFPAT-[A-Za-z0-9_-]{43}"
        r"|dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}|EZ[AT]K[A-Za-z0-9]{54}"
        r"|fio-u-[A-Za-z0-9_=-]{64}|pnu_[A-Za-z0-9]{36}|rdme_[a-z0-9]{70}|tk-us-[A-Za-z0-9_-]{48}"
        r"|shippo_(?:live|test)_[a-f0-9]{40}|sq[pua]_[a-f0-9]{40}|sgp_(?:[a-f0-9]{16}_)?[a-f0-9]{40}"
        r"|tfp_[A-Za-z0-9_.=-]{50,}|y0_[A-Za-z0-9_-]{50,}|pul-[a-f0-9]{40}|sbp_[a-f0-9]{40}"
        r"|sb_secret_[A-Za-z0-9_-]{30,}|ico-[A-Za-z0-9]{32}"
        r"|vercel_[A-Za-z0-9]{24,}|FLWSECK(?:_TEST)?-[a-h0-9]{32}-X|dt0[a-z]\d{2}\.[A-Z0-9]{24}\.[A-Z0-9]{64}"
        r"|pat\.[A-Za-z0-9_-]{22}\.[a-f0-9]{24}\.[A-Za-z0-9]{20}|LTAI[A-Za-z0-9]{12,20}"
        r"|AQVN[A-Za-z0-9_-]{35,38}|v1\.0-[a-f0-9]{24}-[a-f0-9]{146}|glpat_[A-Za-z0-9]{20,})"
        + _TAIL,
    ),
    (
        "a cloud service token",
        r"\bAGE-SECRET-KEY-1[0-9A-Z]{50,}|\bEAA[BCDG][A-Za-z0-9]{80,}"
        r"|\baccess-(?:sandbox|development|production)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
    ),
    ("a Beamer API key", r"\b(?P<v>b_[A-Za-z0-9=_-]{44})" + _TAIL),
    ("a Mapbox secret token", r"\bsk\.eyJ[A-Za-z0-9_-]{40,}\.[A-Za-z0-9_-]{20,}"),
    (
        "a Discord bot token",
        r"(?<![\w.-])(?P<v>[MNO][A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38})(?![\w.-])",
    ),
)

COMPILED: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern)) for kind, pattern in PROVIDERS
)
# Every shape in one pattern (groups unnamed), to tell in one pass whether any is there.
ANY: re.Pattern[str] = re.compile(
    "|".join(f"(?:{re.sub(r'[(][?]P<[a-z0-9]+>', '(?:', pattern)})" for _, pattern in PROVIDERS)
)
