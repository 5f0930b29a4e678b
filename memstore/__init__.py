"""memstore: local-first memory for coding agents, kept as markdown files in git.

The names in `__all__` are the library API a program may use: open a `Store` on a vault
with `Settings`, add and search, and catch `MemstoreError`. Everything else is internal and
may move. They are imported on first use, so `import memstore` stays cheap for the shells.

    from memstore import Settings, Store
    settings = Settings.from_env(env, home=home, vault=Path("/path/to/vault"))  # yours
    with Store.open(settings, create=True) as store:
        store.add("Run make lint before committing", workspace="global")
        hits = store.search("lint", k=3).hits
"""

from __future__ import annotations

# Not `typing.TYPE_CHECKING`: the lean client imports this package, and typing (with re and
# enum) costs it ~1 MiB and a few ms. Type checkers treat this name as true all the same.
TYPE_CHECKING = False

__version__ = "0.1.0"

# name -> the module that defines it
_API = {
    "Store": "memstore.service.store",
    "init_vault": "memstore.service.store",
    "Settings": "memstore.core.config",
    "Memory": "memstore.core.model",
    "Hit": "memstore.core.model",
    "SearchResult": "memstore.core.model",
    "Recall": "memstore.core.model",
    "AddResult": "memstore.core.model",
    "CoreMemory": "memstore.core.model",
    "Contradiction": "memstore.core.model",
    "MemstoreError": "memstore.core.errors",
    "InvalidInputError": "memstore.core.errors",
    "SecretError": "memstore.core.errors",
    "NotFoundError": "memstore.core.errors",
    "VaultError": "memstore.core.errors",
    "LockedError": "memstore.core.errors",
    "SyncError": "memstore.core.errors",
    "UncommittedEditError": "memstore.core.errors",
}

__all__ = [
    "AddResult",
    "Contradiction",
    "CoreMemory",
    "Hit",
    "InvalidInputError",
    "LockedError",
    "Memory",
    "MemstoreError",
    "NotFoundError",
    "Recall",
    "SearchResult",
    "SecretError",
    "Settings",
    "Store",
    "SyncError",
    "UncommittedEditError",
    "VaultError",
    "__version__",
    "init_vault",
]

if TYPE_CHECKING:
    from typing import Any

    from memstore.core.config import Settings
    from memstore.core.errors import (
        InvalidInputError,
        LockedError,
        MemstoreError,
        NotFoundError,
        SecretError,
        SyncError,
        UncommittedEditError,
        VaultError,
    )
    from memstore.core.model import (
        AddResult,
        Contradiction,
        CoreMemory,
        Hit,
        Memory,
        Recall,
        SearchResult,
    )
    from memstore.service.store import Store, init_vault


def __getattr__(name: str) -> Any:
    """Import an API name on first use (PEP 562)."""
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'memstore' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
