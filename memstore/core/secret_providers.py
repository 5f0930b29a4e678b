"""The shapes of providers' credentials: one pattern per family, each with a fixed prefix. Pure.

The families follow what maintained scanners cover (gitleaks' rule list, detect-secrets'
plugins), read as facts; the patterns are memstore's own. A pattern here is exact enough
on its own: a fixed prefix or layout and a tail of key characters. Credentials without a
fixed shape (a Datadog key, a Twilio auth token) are left to the labelled rule in secrets.py.
"""

from __future__ import annotations

# An Authorization header's credential: Bearer, or any scheme the header names (Okta's SSWS,
# Token, ApiKey); secrets.py's rule checks that the value looks random.
AUTH = (
    r"(?i)(?:\bbearer|\bauthorization[\"']?[ \t]*[:=][ \t]*[\"']?(?!basic\b)[a-z][\w-]*)"
    r"[ \t]+(?P<v>[A-Za-z0-9._~+/-]{20,}=*)"
)

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
        r"|discord(?:app)?\.com/api/webhooks/\d{5,}/(?P<v2>[A-Za-z0-9_-]{20,})"
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
    (  # bare, or in the Bot API's URL (api.telegram.org/bot123…:AA…)
        "a Telegram bot token",
        r"(?:(?<![\w:])|(?<=bot))\d{8,10}:(?P<v>[A-Za-z0-9_-]{33,40})" + _TAIL,
    ),
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
        r"|dp\.(?:pt|st|sa|ct|scim|audit)\.(?:[a-z0-9_-]{1,30}\.)?[A-Za-z0-9]{40,}"
        r"|EZ[AT]K[A-Za-z0-9]{54}"
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
    ("a crates.io token", r"\b(?P<v>cio[A-Za-z0-9]{32})" + _TAIL),
    (  # Lob's, Mollie's, Checkout's: a live-mode key, letters and digits after its prefix
        "a live-mode API key",
        r"\b(?P<v>live_(?=[A-Za-z]*\d)(?=\d*[A-Za-z])[A-Za-z0-9]{30,})" + _TAIL,
    ),
    (  # app id . key id : secret
        "an Ably API key",
        r"(?<![\w.-])[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{6}:(?P<v>[A-Za-z0-9_-]{30,})(?![\w-])",
    ),
    ("a Honeycomb key", r"\b(?P<v>hc[a-z]{2}k_[a-z0-9]{50,70})" + _TAIL),
    ("a Beamer API key", r"\b(?P<v>b_[A-Za-z0-9=_-]{44})" + _TAIL),
    ("a Mapbox secret token", r"\bsk\.eyJ[A-Za-z0-9_-]{40,}\.[A-Za-z0-9_-]{20,}"),
    (
        "a Discord bot token",
        r"(?<![\w.-])(?P<v>[MNO][A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38})(?![\w.-])",
    ),
)

# What every match of a family holds, lowercased: a pattern runs only on a text that holds
# one of its family's needles (a substring test costs far less than a regex pass).
NEEDLES: dict[str, tuple[str, ...]] = {
    "a GitHub token": ("gh", "github_pat_"),
    "a GitLab token": ("gl", "gr1348941"),
    "a Slack token": ("xox", "xapp-"),
    "a chat webhook": ("hooks.slack.com", "discord", "webhook"),
    "an OpenAI or Anthropic API key": ("sk-",),
    "an AI provider API key": ("gsk_", "pplx-", "r8_", "xai-", "hf_", "api_org_", "lsv2_"),
    "a Stripe secret key": ("k_live_", "k_test_", "whsec_"),
    "a Google API key": ("aiza",),
    "a Google OAuth secret": ("gocspx-", "ya29.", "1//0"),
    "a Twilio API key": ("sk",),
    "a Mailgun key": ("key-", "-"),
    "a Mailchimp API key": ("-us",),
    "a Django secret key": ("django-insecure-",),
    "a Vault token": ("hvs.", "hvb.", "hvr."),
    "a Docker access token": ("dckr_",),
    "a Telegram bot token": (":",),
    "an Azure client secret": ("q~",),
    "an Azure storage or service bus key": ("accountkey=", "sharedaccess"),
    "a Linear API key": ("lin_",),
    "a Notion token": ("secret_", "ntn_"),
    "an Atlassian API token": ("atatt", "atctt"),
    "a Postman API key": ("pmak-",),
    "a Terraform Cloud token": (".atlasv1.",),
    "a Sentry token": ("sntry",),
    "a Grafana token": ("glsa_", "glc_"),
    "a New Relic key": ("nrak-", "nraa-", "nrii-", "nrjs-"),
    "a Databricks token": ("dapi",),
    "a Figma token": ("figd_", "figo_", "figu_"),
    "a Heroku API key": ("hrku-",),
    "a Brevo (Sendinblue) key": ("keysib-", "smtpsib-"),
    "a SendGrid API key": ("sg.",),
    "a Shopify token": ("shp",),
    "a DigitalOcean token": ("_v1_",),
    "a Square token": ("sq0", "eaaa"),
    "a PlanetScale token": ("pscale_",),
    "a Fly.io token": ("fo1_", "fm1", "fm2"),
    "a Dropbox token": ("sl.",),
    "a 1Password secret": ("ops_eyj", "a3-"),
    "a package registry token": ("npm_", "pypi-", "rubygems_", "oy2", "clojars_", "akcp", "cmvmd"),
    "a developer service token": (
        "aio_",
        "pat",
        "cfpat-",
        "dp.",
        "ezak",
        "eztk",
        "fio-u-",
        "pnu_",
        "rdme_",
        "tk-us-",
        "shippo_",
        "sqp_",
        "squ_",
        "sqa_",
        "sgp_",
        "tfp_",
        "y0_",
        "pul-",
        "sbp_",
        "sb_secret_",
        "ico-",
        "vercel_",
        "flwseck",
        "dt0",
        "ltai",
        "aqvn",
        "v1.0-",
        "glpat_",
    ),
    "a cloud service token": ("age-secret-key-1", "eaa", "access-"),
    "a crates.io token": ("cio",),
    "a live-mode API key": ("live_",),
    "an Ably API key": (":",),
    "a Honeycomb key": ("hc",),
    "a Beamer API key": ("b_",),
    "a Mapbox secret token": ("sk.eyj",),
    "a Discord bot token": (".",),
}

# A cheap search that finds something in every text the family's pattern matches (a literal
# prefix mostly, so the regex engine skips ahead): the pattern runs only where it does.
ANCHORS: dict[str, str] = {
    "a GitHub token": r"g(?:h[pousr]_|ithub_pat_)",
    "a GitLab token": r"gl[a-z]{2,5}-|GR1348941",
    "a Slack token": r"x(?:ox[abposre]|app)-",
    "a chat webhook": r"hooks\.slack\.com/|discord|\.com/webhook",
    "an OpenAI or Anthropic API key": r"sk-",
    "an AI provider API key": r"gsk_|pplx-|r8_|xai-|hf_|api_org_|lsv2_",
    "a Stripe secret key": r"k_(?:live|test)_|whsec_",
    "a Google API key": r"AIza",
    "a Google OAuth secret": r"GOCSPX-|ya29\.|1//0",
    "a Twilio API key": r"SK[0-9a-f]{32}",
    "a Mailgun key": r"key-|-[0-9a-f]{8}-[0-9a-f]{8}",
    "a Mailchimp API key": r"-us\d",
    "a Django secret key": r"django-insecure-",
    "a Vault token": r"hv[sbr]\.",
    "a Docker access token": r"dckr_",
    "a Telegram bot token": r"\d:[A-Za-z0-9_-]{33}",
    "an Azure client secret": r"Q~",
    "an Azure storage or service bus key": r"=[A-Za-z0-9+/%]{30}",
    "a Linear API key": r"lin_(?:api|oauth)_",
    "a Notion token": r"secret_|ntn_",
    "an Atlassian API token": r"AT(?:ATT|CTT)",
    "a Postman API key": r"PMAK-",
    "a Terraform Cloud token": r"\.atlasv1\.",
    "a Sentry token": r"sntry[su]_",
    "a Grafana token": r"gl(?:sa|c)_",
    "a New Relic key": r"NR(?:AK|AA|II|JS)-",
    "a Databricks token": r"dapi[a-f0-9]{32}",
    "a Figma token": r"fig[dou]_",
    "a Heroku API key": r"HRKU-",
    "a Brevo (Sendinblue) key": r"x(?:keysib|smtpsib)-",
    "a SendGrid API key": r"SG\.",
    "a Shopify token": r"shp(?:at|ss|ca|pa)_",
    "a DigitalOcean token": r"do[por]_v1_",
    "a Square token": r"sq0(?:atp|csp|idp)-|EAAA",
    "a PlanetScale token": r"pscale_",
    "a Fly.io token": r"fo1_|fm[12]",
    "a Dropbox token": r"sl\.(?:u\.)?[A-Za-z0-9_-]{120}",
    "a 1Password secret": r"ops_eyJ|A3-[A-Z0-9]{6}-",
    "a package registry token": r"npm_|pypi-AgE|rubygems_|oy2[a-z0-9]{43}|CLOJARS_|AKCp|cmVmd",
    "a developer service token": (
        r"aio_|pat[A-Za-z0-9]{14}\.|CFPAT-|dp\.|EZ[AT]K|fio-u-|pnu_|rdme_|tk-us-|shippo_"
        r"|sq[pua]_|sgp_|tfp_|y0_|pul-|sbp_|sb_secret_|ico-|vercel_|FLWSECK|dt0[a-z]\d\d\."
        r"|pat\.|LTAI|AQVN|v1\.0-|glpat_"
    ),
    "a cloud service token": r"AGE-SECRET-KEY-1|EAA[BCDG]|access-(?:sandbox|development|production)-",
    "a crates.io token": r"cio[A-Za-z0-9]{32}",
    "a live-mode API key": r"live_",
    "an Ably API key": r"\.[A-Za-z0-9_-]{6}:[A-Za-z0-9_-]{30}",
    "a Honeycomb key": r"hc[a-z]{2}k_",
    "a Beamer API key": r"b_[A-Za-z0-9=_-]{44}",
    "a Mapbox secret token": r"sk\.eyJ",
    "a Discord bot token": r"[MNO][A-Za-z0-9_-]{23,25}\.",
}

# Found in every text any family's anchor is found in, and searched for at once: each
# alternative starts at a capital or a mark (_ - . : = ~ /), rare in prose, with what must
# stand before it as a look-behind. A text without one needs no family's anchor searched.
TRIGGERS: tuple[str, ...] = (
    r"_(?:(?<=gh[pousr]_)|(?<=github_pat_)|(?<=gsk_)|(?<=r8_)|(?<=hf_)|(?<=api_org_)|(?<=lsv2_)"
    r"|(?<=k_live_)|(?<=k_test_)|(?<=whsec_)|(?<=dckr_)|(?<=lin_)|(?<=secret_)|(?<=ntn_)"
    r"|(?<=sntry[su]_)|(?<=glsa_)|(?<=glc_)|(?<=fig[dou]_)|(?<=shp[a-z]{2}_)|(?<=_v1_)"
    r"|(?<=pscale_)|(?<=fo1_)|(?<=fm[12]_)|(?<=fm[12][ar]_)|(?<=ops_)|(?<=npm_)|(?<=rubygems_)"
    r"|(?<=aio_)|(?<=pnu_)|(?<=rdme_)|(?<=shippo_)|(?<=sq[pua]_)|(?<=sgp_)|(?<=tfp_)|(?<=y0_)"
    r"|(?<=sbp_)|(?<=sb_)|(?<=vercel_)|(?<=glpat_)|(?<=b_)|(?<=hc[a-z]{2}k_)|(?<=live_))",
    r"-(?:(?<=gl[a-z]{2}-)|(?<=gl[a-z]{3}-)|(?<=gl[a-z]{4}-)|(?<=gl[a-z]{5}-)|(?<=xox[abposre]-)"
    r"|(?<=xapp-)|(?<=sk-)|(?<=pplx-)|(?<=xai-)|(?<=key-)|(?<=django-)|(?<=xkeysib-)"
    r"|(?<=xsmtpsib-)|(?<=sq0[a-z]{3}-)|(?<=pypi-)|(?<=fio-)|(?<=tk-)|(?<=pul-)|(?<=ico-)"
    r"|(?<=access-)|[0-9a-f]{8}-|us\d)",
    r"\.(?:(?<=hooks\.)|(?<=discord\.)|(?<=discordapp\.)|webhook|com/webhook|(?<=ya29\.)"
    r"|(?<=hv[sbr]\.)|atlasv1\.|(?<=sl\.)|(?<=dp\.)|(?<=pat[A-Za-z0-9]{14}\.)|(?<=pat\.)"
    r"|(?<=dt0[a-z]\d\d\.)|(?<=v1\.)|(?<=sk\.)|(?<=[MNO][A-Za-z0-9_-]{23}\.)"
    r"|(?<=[MNO][A-Za-z0-9_-]{24}\.)|(?<=[MNO][A-Za-z0-9_-]{25}\.))",
    r"AIza|AT(?:ATT|CTT)|A3-|AKCp|AQVN|AGE-SECRET-KEY-1|GOCSPX-|GR1348941|SK[0-9a-f]{32}|SG\."
    r"|PMAK-|NR(?:AK|AA|II|JS)-|HRKU-|EAA[ABCDG]|EZ[AT]K|CFPAT-|CLOJARS_|FLWSECK|LTAI|V(?<=cmV)",
    r"/(?<=1//)",
    r":(?:(?<=\d:)[A-Za-z0-9_-]{33}|(?<=\.[A-Za-z0-9_-]{6}:)[A-Za-z0-9_-]{30})",
    r"~(?<=Q~)",
    r"=[A-Za-z0-9+/%]{30}",
    r"2(?<=oy2)",
    r"cio[A-Za-z0-9]{32}",
)
# Families with no capital or mark to start from (dapi and hex): their anchor is always searched.
UNTRIGGERED = frozenset({"a Databricks token"})

# The exact shape a provider issues, where it has one (its documentation or its tokens'
# checksum layout): a value of that shape is a credential whatever its letters, so a run in
# order (ghp_abcd…0123…) is not read as typed to be replaced. Only a repeated character
# (ghp_xxxx…) or a word (your, example) says a stand-in there.
ISSUED: dict[str, str] = {
    "a GitHub token": r"gh[pousr]_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}",
    "a GitLab token": r"glpat-[A-Za-z0-9_-]{20}",
    "a Google API key": r"AIza[0-9A-Za-z_-]{35}",
    "a Slack token": (
        r"xox[bp]-\d{10,13}-\d{10,13}-[A-Za-z0-9-]{24,34}"
        r"|xoxp-\d{10,13}-\d{10,13}-\d{10,13}-[a-f0-9]{32}"
    ),
    "an AI provider API key": r"hf_[A-Za-z0-9]{34}|gsk_[A-Za-z0-9]{52}",
    "a Linear API key": r"lin_api_[A-Za-z0-9]{40}",
    "a Databricks token": r"dapi[a-f0-9]{32}",
    "a Twilio API key": r"SK[0-9a-f]{32}",
    "a Docker access token": r"dckr_pat_[A-Za-z0-9_-]{27}",
}
