"""Settings for one run: which vault, who is writing, and from where."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from memstore.core.errors import InvalidInputError

DEFAULT_VAULT_NAME = "memstore"
LOCK_TIMEOUT_S = 10.0
SEMANTIC_ON = "on"  # Settings.semantic for the model the semantic extra ships
_YES = ("1", "on", "true", "yes")
_NO = ("", "0", "off", "false", "no")


@dataclass(frozen=True)
class Settings:
    """Everything the service needs to know about its environment, passed in by a shell."""

    vault: Path
    source: str = "cli"
    session: str = ""
    host: str = ""
    lock_timeout: float = LOCK_TIMEOUT_S
    # The environment git runs with when it talks to the remote (SSH agent, credentials).
    env: Mapping[str, str] = field(default_factory=dict)
    # The absolute path of the running memstore executable ('' if unknown): what git's
    # merge driver entry should run.
    executable: str = ""
    # Whether Store.open(create=True) may make the vault when it is missing: only at the
    # default path, so a typo in MEMSTORE_VAULT or --vault is not silently a new vault.
    may_create_vault: bool = True
    # The optional semantic view (docs/retrieval.md): "" off, SEMANTIC_ON for the model the
    # extra ships, else the folder of a model the person gave.
    semantic: str = ""

    @classmethod
    def from_env(
        cls, env: Mapping[str, str], *, home: Path, vault: Path | None = None, source: str = "cli"
    ) -> Settings:
        """Build settings from environment variables; explicit arguments win."""
        chosen = vault or Path(env.get("MEMSTORE_VAULT") or home / DEFAULT_VAULT_NAME)
        path = os.path.abspath(Path(chosen).expanduser())
        default = os.path.abspath(home / DEFAULT_VAULT_NAME)
        return cls(
            vault=Path(path),
            source=env.get("MEMSTORE_SOURCE", source) or source,
            session=env.get("MEMSTORE_SESSION") or os.urandom(6).hex(),  # secrets.token_hex(6)
            host=env.get("MEMSTORE_HOST") or re.sub(r"[^A-Za-z0-9._-]+", "-", _host_name()),
            env=dict(env),
            executable=env.get("MEMSTORE_EXECUTABLE", ""),
            may_create_vault=path == default or os.path.realpath(path) == os.path.realpath(default),
            semantic=semantic_choice(env, home=home),
        )


def _host_name() -> str:
    """socket.gethostname() (which reads uname's node name where there is uname), without
    importing socket: a one-shot search builds settings once and uses no socket."""
    if hasattr(os, "uname"):
        return os.uname().nodename
    import socket

    return socket.gethostname()


def semantic_choice(env: Mapping[str, str], *, home: Path) -> str:
    """Read MEMSTORE_SEMANTIC (on/off) and MEMSTORE_SEMANTIC_MODEL (a model folder; on).

    Raises:
        InvalidInputError: MEMSTORE_SEMANTIC is neither on nor off, or the model folder is
            a relative path (the vault's daemon, in another folder, would read another).
    """
    model = env.get("MEMSTORE_SEMANTIC_MODEL", "")
    switch = env.get("MEMSTORE_SEMANTIC", "").strip().lower()
    if switch not in _YES + _NO:
        raise InvalidInputError(
            f"MEMSTORE_SEMANTIC is {env['MEMSTORE_SEMANTIC']!r}; set it to on or off"
        )
    if switch in _NO and (switch or not model):
        return ""  # off, even with a model named
    if not model:
        return SEMANTIC_ON
    folder = home / model[2:] if model == "~" or model.startswith("~/") else Path(model)
    if not folder.is_absolute():
        raise InvalidInputError(
            f"MEMSTORE_SEMANTIC_MODEL is {model!r}; give the model folder's absolute path"
        )
    return os.path.normpath(folder)
