"""What damaged index files raise, turned into one `SearchIndexError` naming the index."""

from __future__ import annotations

import contextlib
import pickle
import sqlite3
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path

from whoosh import index as whoosh_index
from whoosh.filedb.filestore import StorageError
from whoosh.filedb.filetables import FileFormatError
from whoosh.reading import TermNotFound


class SearchIndexError(Exception):
    """The index cannot be opened, read or written (it may be damaged or locked)."""


# Anything Whoosh raises when its files are damaged: a crash mid-commit or stray bytes
# leave any of these (and a bare Exception, see is_damage).
DAMAGE = (
    whoosh_index.IndexError,
    OSError,
    EOFError,
    ValueError,
    KeyError,
    IndexError,
    AttributeError,
    TypeError,
    OverflowError,
    struct.error,
    zlib.error,
    pickle.UnpicklingError,
    FileFormatError,
    StorageError,
    TermNotFound,
)


def is_damage(err: BaseException) -> bool:
    """Say whether `err` is what damaged files make Whoosh or sqlite raise."""
    # Whoosh raises a bare Exception for some damaged blocks ("Block tag error"): that exact
    # type counts as damage, a subclass of it not (it is a bug of ours, and stays loud).
    return isinstance(err, (*DAMAGE, sqlite3.DatabaseError)) or type(err) is Exception


def describe(err: BaseException) -> str:
    """Return an error as 'Type: message'."""
    return f"{type(err).__name__}: {err}"


def raise_if_damage(err: BaseException, root: Path, action: str = "read") -> None:
    """Raise SearchIndexError from `err` when it is what damaged files raise."""
    if isinstance(err, SearchIndexError):
        raise err
    if is_damage(err):
        raise SearchIndexError(f"index at {root} cannot be {action} ({describe(err)})") from err


@contextlib.contextmanager
def guard(root: Path, action: str) -> Iterator[None]:
    """Turn what damaged files make Whoosh or sqlite raise into SearchIndexError."""
    try:
        yield
    except Exception as err:  # narrowed by raise_if_damage; anything else is re-raised
        raise_if_damage(err, root, action)
        raise
