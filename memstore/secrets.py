"""Spotting credentials in memory text: private keys, cloud keys, tokens, passwords. Pure."""

from __future__ import annotations

import re

# (what it is, pattern). Placeholders such as password=<your-password> or ${SECRET} are not
# credentials, so the password rule wants a literal value.
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a private key block", re.compile(r"-----BEGIN (?:[A-Z]+ )*PRIVATE KEY-----")),
    ("an AWS access key id", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    (
        "a GitHub token",
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})\b"),
    ),
    ("a GitLab token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}\b")),
    ("a Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b")),
    ("an OpenAI or Anthropic API key", re.compile(r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}\b")),
    ("a Stripe secret key", re.compile(r"\b[rs]k_live_[A-Za-z0-9]{16,}\b")),
    ("a Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    (
        "a JSON web token",
        re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"),
    ),
    (
        "a password assignment",
        re.compile(
            r"(?i)\b(?:password|passwd|pwd|secret|api_?key|token)\s*[:=]\s*"
            r"(?![<${\[(]|\*+|x{3,}|changeme\b|your)['\"]?[^\s'\"<>]{6,}"
        ),
    ),
)


def find_secrets(text: str) -> list[str]:
    """Return what kinds of credential `text` seems to contain (empty: none found)."""
    return [name for name, pattern in _PATTERNS if pattern.search(text)]
