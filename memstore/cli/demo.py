"""The demo: a fresh vault made from the bundled sample vault, and one pass through the job."""

from __future__ import annotations

import shlex
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from memstore.core.config import Settings
from memstore.core.errors import VaultError
from memstore.core.model import summary
from memstore.ops.parameters import shell_settings
from memstore.service.store import Store, init_vault
from memstore.vault.git import Trailers

commands = typer.Typer()


def sample_vault() -> Path:
    """Return the sample vault shipped with memstore (in the wheel, or in a checkout)."""
    here = Path(__file__).resolve().parents[1]  # the memstore package
    for candidate in (here / "sample_vault", here.parent / "sample-vault"):
        if candidate.is_dir():
            return candidate
    raise VaultError("the sample vault is missing from this installation; reinstall memstore")


def run_demo(
    path: Path | None,
    settings: Settings,
    say: Callable[[str], None],
    program: str | None = None,
) -> Path:
    """Build a demo vault at `path` (or a temp folder) and show add, search, show and log.

    The closing hint names `program` (default: this memstore's absolute path), so it runs
    from a shell whose PATH does not hold memstore's folder."""
    root = path or Path(tempfile.mkdtemp(prefix="memstore-demo-"))
    if root.exists() and any(root.iterdir()):
        raise VaultError(f"{root} is not empty; pick a new folder for the demo vault")
    source = sample_vault()
    settings = Settings(
        vault=root.resolve(), source="demo", session=settings.session, host=settings.host
    )
    say(f"1. A vault is a git repository of markdown files: {root}")
    init_vault(settings.vault, settings)
    for item in sorted(source.iterdir()):
        if item.is_dir():
            shutil.copytree(item, settings.vault / item.name)
    with Store.open(settings) as store:
        copied = tuple(sorted(store.vault.scan()))
        store.git.commit(
            f"import: {len(copied)} {'memory' if len(copied) == 1 else 'memories'} from the sample vault",
            Trailers("demo", settings.session, settings.host),
            add=copied,
        )
        stats = store.stats()
        say(
            f"   {stats.memories} sample memories in "
            + ", ".join(f"{w} ({n})" for w, n in stats.by_workspace.items())
        )
        keywords = ("redis", "deploy", "502")
        options = " ".join(f"-K {word}" for word in keywords)
        say(
            f'\n2. memstore add "…" -w webshop --kind lesson {options}   (one new file, one commit)'
        )
        text = "Checkout returns 502 after deploy: the new pods fail readiness because REDIS_URL is unset; add it to the webshop secret."
        added = store.add(text, workspace="webshop", kind="lesson", keywords=keywords)
        say(f"   {added.status} {added.id} → {added.path}")
        again = store.add(text, workspace="webshop", keywords=("checkout",))
        say(f"   adding it again: {again.status}, seen {again.seen} (no second file)")
        searches = (
            ("checkout 502 after deploy", "webshop"),
            ("nginx upload limit", None),
            ("lỗi kết nối", None),
        )
        for step, (query, workspace) in enumerate(searches, 3):
            scope = f" -w {workspace}" if workspace else " --all"
            say(f"\n{step}. memstore search {query!r}{scope}")
            result = store.search(query, workspace=workspace, k=3)
            if result.weak:
                say("   (no memory has every word; weak matches)")
            for hit in result.hits:
                mark = "  (weak: might be related)" if hit.weak else ""
                say(f"   {hit.id}  {hit.workspace} · {hit.kind}  {summary(hit.content, 60)}{mark}")
        entry, _ = store.show(added.id[:4])
        step = 3 + len(searches)
        say(f"\n{step}. memstore show {added.id[:4]}   (any unique id prefix)\n")
        for line in store.vault.path(entry.path).read_text(encoding="utf-8").splitlines():
            say(f"   {line}")
        say(f"\n{step + 1}. git log: every change is one readable commit")
        for commit in reversed(store.log(limit=5)):
            say(f"   {commit.commit[:8]}  {commit.summary}")
    vault = shlex.quote(str(settings.vault))
    say(f'\nTry it yourself:  {program or this_program()} search "deploy" --all --vault {vault}')
    return root


def this_program() -> str:
    """Return a shell command that runs this memstore whatever PATH holds: its absolute path."""
    script = Path(sys.argv[0])
    if script.name == "memstore":  # the installed executable (a venv's bin, pipx's link)
        return shlex.quote(str(script.absolute()))
    return f"{shlex.quote(sys.executable)} -m memstore"


@commands.command()
def demo(
    path: Annotated[
        Path | None,
        typer.Argument(
            help="Where to create the demo vault (default: a new temp folder).", show_default=False
        ),
    ] = None,
) -> None:
    """Copy the bundled sample vault into a fresh vault and walk through add, search, show, log.

    Example:  memstore demo /tmp/memstore-demo
    """
    run_demo(path, shell_settings(None), typer.echo)
