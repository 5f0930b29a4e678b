"""git's merge driver for memory files, importing only the merge rules.

`memstore merge-file %O %A %B %P`: git runs it once per memory both sides changed, so a
`git pull` of many memories starts it many times: the launcher calls `merge_files` without typer, the store or the search engine (the
hidden typer command `merge-file` calls the same function).
"""

from __future__ import annotations

from pathlib import Path


def merge_files(base: Path, ours: Path, theirs: Path, path: str = "") -> None:
    """Merge base, ours and theirs with memstore's rules into `ours` (`path` names the file)."""
    from memstore.core.merge import merge_file

    def read(file: Path) -> bytes | None:
        data = file.read_bytes()
        return data or None  # git passes an empty base when both sides added the file

    merged = merge_file(path or ours.name, read(base), read(ours), read(theirs))
    ours.write_bytes(merged.data or b"")


def plain_arguments(argv: list[str]) -> tuple[Path, Path, Path, str] | None:
    """Return git's three or four file arguments; None for anything else (an option such as
    --help, too few or too many), which the typer command answers."""
    if len(argv) not in (3, 4) or any(arg.startswith("-") for arg in argv):
        return None
    path = argv[3] if len(argv) == 4 else ""
    return Path(argv[0]), Path(argv[1]), Path(argv[2]), path
