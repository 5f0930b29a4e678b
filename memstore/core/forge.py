"""Proposals on git hosts: a remote URL read as host and repository, and the page that opens a pull request.

Pure: strings in, strings out. A host is recognised by its name: the public ones exactly
(github.com, gitlab.com, bitbucket.org, codeberg.org, gitea.com), a self-hosted one by a
label of its name (`gitlab.acme.com`, `git.gitea.acme.io`, `github.acme.com` for GitHub
Enterprise, `bitbucket.acme.com` for Bitbucket Server); any other host is named by the
person (`git config memstore.<host>.forge gitlab`). A host nobody named gets no URL: the
caller prints the branch instead of guessing a page that may not exist.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Literal, get_args
from urllib.parse import quote, urlsplit

Forge = Literal["github", "gitlab", "gitea", "bitbucket", "bitbucket-server"]
FORGES: tuple[Forge, ...] = get_args(Forge)
PUBLIC: dict[str, Forge] = {
    "github.com": "github",
    "ssh.github.com": "github",  # GitHub's SSH over port 443
    "gitlab.com": "gitlab",
    "altssh.gitlab.com": "gitlab",
    "bitbucket.org": "bitbucket",
    "codeberg.org": "gitea",  # Forgejo
    "gitea.com": "gitea",
}
# A label of a self-hosted host's name that says which software it runs.
_LABELS: dict[str, Forge] = {
    "github": "github",
    "gitlab": "gitlab",
    "gitea": "gitea",
    "forgejo": "gitea",
    "codeberg": "gitea",
    "bitbucket": "bitbucket-server",
}
_WEB_HOSTS = {"ssh.github.com": "github.com", "altssh.gitlab.com": "gitlab.com"}
_SCP_LIKE = re.compile(r"^(?:(?P<user>[^@/]+)@)?(?P<host>[^:/]+):(?P<path>(?!//).+)$")
_USER_PART = re.compile(r"[^a-z0-9._-]+")


@dataclass(frozen=True)
class Repository:
    """Where a remote URL points: the web scheme, host (with a web port) and repository path."""

    scheme: str  # https, or http when the remote itself is plain http
    host: str  # lowercased; with ":port" only for an http(s) remote on a port of its own
    path: str  # owner/name, group/subgroup/name … without .git

    @property
    def hostname(self) -> str:
        return self.host.split(":")[0]

    @property
    def web(self) -> str:
        return f"{self.scheme}://{self.host}/{self.path}"


def parse_remote(url: str) -> Repository | None:
    """Read a git remote URL (https, ssh://, git://, scp-like `git@host:org/repo.git`);
    None for a local path or file:// URL (no web page to open). Credentials in the URL
    are dropped: they must never reach a printed link."""
    url = url.strip()
    if "://" in url:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https", "ssh", "git", "git+ssh", "ssh+git"):
            return None
        host = (parts.hostname or "").lower()
        try:
            port = parts.port if parts.scheme in ("http", "https") else None
        except ValueError:  # not a number: no URL of a host
            return None
        path = parts.path
        scheme = "http" if parts.scheme == "http" else "https"
        if port and port not in (80, 443):
            host = f"{host}:{port}"
    else:
        match = _SCP_LIKE.match(url)
        if match is None or "/" in match.group("host"):
            return None
        host, path, scheme = match.group("host").lower(), match.group("path"), "https"
    path = path.strip("/").removesuffix(".git").strip("/")
    if path.startswith("~"):  # ssh://host/~user/repo: a home folder, not a hosted repository
        return None
    if not host or not path or "/" not in path:
        return None
    host = _WEB_HOSTS.get(host, host)
    return Repository(scheme, host, path)


def forge_of(hostname: str, named: str = "") -> Forge | None:
    """Return the host's software: what the person named (`memstore.<host>.forge`), else
    a public host's, else a self-hosted one's by a label of its name; None if unknown."""
    chosen = named.strip().lower()
    if chosen:
        return next((forge for forge in FORGES if forge == chosen), None)
    hostname = hostname.lower()
    if hostname in PUBLIC:
        return PUBLIC[hostname]
    labels = hostname.split(".")[:-1]  # the top-level domain names no software
    for label in labels:
        if label in _LABELS:
            return _LABELS[label]
    return None


def proposal_url(remote: str, branch: str, target: str, named: str = "") -> str:
    """Return the page that opens a pull (merge) request of `branch` into `target` on the
    host `remote` points at; '' when the host is unknown or the URL is not a host's."""
    repository = parse_remote(remote)
    if repository is None:
        return ""
    forge = forge_of(repository.hostname, named)
    if forge is None:
        return ""
    web, source, into = repository.web, quote(branch, safe="/"), quote(target, safe="/")
    if forge in ("github", "gitea"):
        suffix = "?expand=1" if forge == "github" else ""
        return f"{web}/compare/{into}...{source}{suffix}"
    if forge == "gitlab":
        return (
            f"{web}/-/merge_requests/new?merge_request%5Bsource_branch%5D={quote(branch, safe='')}"
            f"&merge_request%5Btarget_branch%5D={quote(target, safe='')}"
        )
    if forge == "bitbucket":
        return (
            f"{web}/pull-requests/new?source={quote(branch, safe='')}&dest={quote(target, safe='')}"
        )
    # Bitbucket Server / Data Center: /projects/KEY/repos/NAME, clone URLs under /scm/.
    project, _, name = repository.path.removeprefix("scm/").partition("/")
    if not name or "/" in name:
        return ""
    return (
        f"{repository.scheme}://{repository.host}/projects/{project.upper()}/repos/{name}"
        f"/pull-requests?create&sourceBranch={quote('refs/heads/' + branch, safe='')}"
        f"&targetBranch={quote('refs/heads/' + target, safe='')}"
    )


def branch_user(email: str, name: str, host: str) -> str:
    """Return who a proposal branch is by: the git identity's email before the @ (GitHub's
    `123+alice@users.noreply.github.com` gives alice), else the name, else the host name."""
    local = email.strip().lower().partition("@")[0].rpartition("+")[2]
    for candidate in (local, name.strip().lower(), host.strip().lower()):
        cleaned = _USER_PART.sub("-", candidate).strip("-.")[:40].strip("-.")
        if cleaned:
            return cleaned
    return "someone"


def proposal_branch(user: str, ids: list[str]) -> str:
    """Return the branch that proposes memories `ids`: `memstore/<user>/<first id>`, with
    a short hash of all of them when there are several (another set, another branch)."""
    ordered = sorted(dict.fromkeys(ids))
    if len(ordered) == 1:
        return f"memstore/{user}/{ordered[0]}"
    digest = hashlib.sha256(" ".join(ordered).encode("utf-8")).hexdigest()[:6]
    return f"memstore/{user}/{ordered[0]}-{digest}"
