"""The expected failures memstore reports to people and agents, one sentence each."""


class MemstoreError(Exception):
    """A failure the user can fix; its message names the thing and the fix."""


class InvalidInputError(MemstoreError):
    """Text, a name or an option that memstore refuses before changing anything."""


class SecretError(InvalidInputError):
    """A file memstore was about to commit holds what looks like a credential; not committed."""

    def __init__(self, message: str, *, path: str = "", kind: str = "") -> None:
        super().__init__(message)
        self.path = path  # the file refused ("": the text of an add, not a file)
        self.kind = kind  # what it looks like ("an AWS access key id")


class NotFoundError(MemstoreError):
    """No memory (or vault) matches what was asked for."""


class VaultError(MemstoreError):
    """The vault cannot be opened, created or written."""


class LockedError(VaultError):
    """Another process held the vault's write lock for too long."""


class SyncError(MemstoreError):
    """The remote could not be reached, refused us, or the sync could not finish."""


class UncommittedEditError(VaultError):
    """A file changed on disk while memstore was about to overwrite it; nothing moved."""


def no_vault_at(root: object) -> str:
    """Return the one sentence every command says of a folder holding no vault (a typo in
    --vault or MEMSTORE_VAULT); here so the lean paths (`daemon --stop`) need no service."""
    import shlex

    return (
        f"there is no vault at {root}; run 'memstore init {shlex.quote(str(root))}' "
        "to make one there, or fix MEMSTORE_VAULT / --vault"
    )
