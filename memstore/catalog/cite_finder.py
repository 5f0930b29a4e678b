"""Find the code a memory's text names: files that exist in the repository, symbols they define.

An add from inside a repository records these citations by itself. A false citation would
later mark a sound memory stale, so only what is certainly there is cited: a path the text
names that is a file of the repository (read from the caller's folder or the root, never
searched for), and a code-like name (snake_case, camelCase, `quoted`, called(), Dotted.name)
that one of those files defines. The cost is a regular expression, a stat per named path and
one parse per named file that a code-like name may be in: no walk of the repository.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from memstore.core.errors import InvalidInputError

if TYPE_CHECKING:
    from memstore.core.citations import Cite

MAX_FILES = 5  # named files looked at: a memory naming more is a list, not a lesson about them
MAX_PARSE_BYTES = 512 * 1024  # a file larger than this is cited whole, never parsed here
# A named file larger than this is data (a dump, a model, a log), not code to cite: reading
# it for its blob id would make the add cost follow its size. The largest source file of
# CPython 3.11's standard library is 0.76 MB (pydoc_data/topics.py).
MAX_CITE_BYTES = 2 * 1024 * 1024

# a path with a file extension (src/upload.py, ./lib/x.ts, README.md), optionally followed
# by :SYMBOL or :START-END as --cite takes them
_PATH = re.compile(
    r"(?<![\w/.@:-])((?:\.{1,2}/)*[\w@+-][\w.@+-]*(?:/[\w.@+-]+)*\.[A-Za-z]\w{0,7})"
    r"(?::([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*|[1-9]\d*(?:-[1-9]\d*)?))?(?![\w/])"
)
_NAME = re.compile(r"`([A-Za-z_$][\w$.]*)(?:\(\))?`|([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*)(\()?")
_CODE_LIKE = re.compile(r"_|[a-z][A-Z]|\.")


def names_a_file(text: str) -> bool:
    """Say whether `text` holds anything written like a file's path (a regular expression:
    an add whose text does not pays nothing more)."""
    return _PATH.search(text) is not None


def find_cites(root: Path, repo: str, cwd: Path, text: str, now: str) -> tuple[Cite, ...]:
    """Return citations of the files `text` names in the repository at `root`, and of the
    symbols it names that those files define (read from `cwd` or `root`)."""
    named: dict[str, list[str]] = {}  # repository path -> the :SYMBOL or :LINES written after it
    spans = []  # where the text names them: no symbol is read from a file's own name
    for match in _PATH.finditer(text):
        path = _inside(root, cwd, match.group(1))
        if path is not None:
            spans.append(match.span())
            suffixes = named.setdefault(path, [])
            if match.group(2) and match.group(2) not in suffixes:
                suffixes.append(match.group(2))
            if len(named) == MAX_FILES:
                break
    if not named:
        return ()
    from memstore.catalog.citing import anchor  # the chunker: only for a file named

    names = _code_names(text, spans)
    cites: dict[object, Cite] = {}
    for path, suffixes in named.items():
        specs = [f"{path}:{suffix}" for suffix in suffixes] + _symbol_specs(root, path, names)
        for spec in specs or [path]:
            try:
                cite = anchor(root, repo, spec, now)
            except InvalidInputError:  # a suffix that is not there: the file itself is
                cite = anchor(root, repo, path, now)
            cites.setdefault(cite.key, cite)
    return tuple(cites.values())


def _inside(root: Path, cwd: Path, written: str) -> str | None:
    """Return the repository path of a file `written` names, if it is one (cwd, then root)."""
    for base in (cwd, root):
        full = os.path.normpath(base / written)
        relative = os.path.relpath(full, root)
        if relative.startswith("..") or ".git" in Path(relative).parts:
            continue
        try:
            size = os.stat(full).st_size
        except OSError:
            continue
        if os.path.isfile(full) and size <= MAX_CITE_BYTES:
            return Path(relative).as_posix()
    return None


def _code_names(text: str, paths: list[tuple[int, int]]) -> set[str]:
    """Return the words of `text` that read as code (quoted, called, snake, camel or
    dotted), outside the spans of `paths` (file-format.md names no symbol)."""
    names = set()
    for match in _NAME.finditer(text):
        if any(start <= match.start() < end for start, end in paths):
            continue
        quoted, word, call = match.groups()
        if quoted:
            names.add(quoted.strip("."))
        elif word and (call or _CODE_LIKE.search(word.strip("."))):
            names.add(word.strip("."))
    return names


def _symbol_specs(root: Path, path: str, names: set[str]) -> list[str]:
    """Return `path:SYMBOL` for each code-like name the file defines (a unique last part
    stands for its qualified name)."""
    if not names:
        return []
    from memstore.catalog.chunking import language_of
    from memstore.catalog.citing import definitions

    if language_of(path) is None:
        return []
    full = root / path
    if full.stat().st_size > MAX_PARSE_BYTES:
        return []
    text = full.read_text(encoding="utf-8", errors="replace")
    names = {name for name in names if name.rsplit(".", 1)[-1] in text}
    if not names:
        return []  # none of the names is in the file: no need to parse it
    found = definitions(path, text)
    qualified = {name for name, _, _ in found}
    by_last: dict[str, set[str]] = {}
    for name in qualified:
        by_last.setdefault(name.rsplit(".", 1)[-1], set()).add(name)
    specs = []
    for name in sorted(names):
        if name in qualified:
            specs.append(f"{path}:{name}")
        elif len(by_last.get(name, ())) == 1:
            specs.append(f"{path}:{next(iter(by_last[name]))}")
    return specs
