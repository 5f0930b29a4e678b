"""The citations an add records: its --cite specs anchored from the caller's folder, and the code its text names."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from memstore.core.citations import Cite
from memstore.core.errors import InvalidInputError
from memstore.core.repo_name import find_enclosing_repository, workspace_at


def checkout_at(vault: Path, cwd: str | Path | None) -> tuple[Path, str] | None:
    """Return the repository `cwd` is in, as (root, name citations use); None outside one
    (or inside the vault)."""
    where = Path(cwd).resolve() if cwd else None
    root = find_enclosing_repository(where) if where else None
    repo = workspace_at(vault, where) if where and root else None
    return None if root is None or repo is None else (root, repo)


def add_cites(
    vault: Path, cwd: str | Path | None, specs: Sequence[str], text: str, *, auto: bool = True
) -> tuple[Cite, ...]:
    """Return the citations an add from `cwd` records: each spec (PATH, PATH:SYMBOL,
    PATH:START-END, relative to `cwd`) anchored to the working tree, then (`auto`) the
    files and symbols `text` names that exist there. Outside any repository (or inside the
    vault) there is nothing to cite: a spec is an error, the text cites nothing.
    """
    from memstore.catalog.cite_finder import find_cites, names_a_file

    specs = [spec for spec in specs if spec.strip()]
    auto = auto and names_a_file(text)
    if not (specs or auto):
        return ()
    checkout = checkout_at(vault, cwd)
    if checkout is None or not cwd:
        if specs:
            raise InvalidInputError(
                f"cannot cite {specs[0]}: run the add from inside the git repository the "
                "code is in (not the vault); nothing was stored"
            )
        return ()
    root, repo = checkout
    where = Path(cwd).resolve()

    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    cites: dict[object, Cite] = {}
    for spec in specs:
        from memstore.catalog.citing import anchor, relative_spec

        cite = anchor(root, repo, relative_spec(root, where, spec), now)
        cites.setdefault(cite.key, cite)
    if auto:
        for cite in find_cites(root, repo, where, text, now):
            cites.setdefault(cite.key, cite)
    return tuple(cites.values())
