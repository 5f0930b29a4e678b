"""`memstore search`, `add` and `ingest` without typer: the paths agents and hooks run often.

typer imports pydantic (~90 ms) before it parses a single option. The options come from
the table both read (memstore/ops/options.py); anything else (help, a typo, a missing
value, an option only typer runs) returns a Reply with status None so the typer command
answers it, with its usual messages and exit codes. A test checks both paths print the
same thing.

A command is a function of its Request (arguments, working directory, environment, stdin)
and a way to open the store, returning a Reply: the launcher runs it in this process with
`open_in_process`, the daemon runs the very same function over its resident store. The
store and its output module are imported only when a command runs here, so asking the
daemon first costs none of them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Collection, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memstore.core.config import Settings
from memstore.core.errors import InvalidInputError, MemstoreError
from memstore.core.model import (
    ADDABLE_KINDS,
    ALL,
    GLOBAL,
    AddResult,
    SearchResult,
    check_new_text,
    check_workspace,
    is_kind,
)
from memstore.core.repo_name import add_target_at, workspace_at
from memstore.ops.client import Reply, Request, resolve_vault, will_start_daemon
from memstore.ops.options import (
    ADD,
    INGEST,
    SEARCH,
    Options,
    is_option_like,
    last,
    parse,
)
from memstore.ops.options import wants_stdin as wants_stdin  # the launcher's, imported alone

if TYPE_CHECKING:
    from memstore.core.citations import Cite
    from memstore.index import Query
    from memstore.ops.output import Elsewhere
    from memstore.service.store import Store

OpenStore = Callable[[Settings, bool], AbstractContextManager["Store"]]  # (settings, create)

DEFER = Reply(None)  # let the typer command answer (help, a typo, a missing value)


def words_last(
    argv: list[str], flags: Collection[str], values: Collection[str]
) -> tuple[list[str], list[str]]:
    """Return `argv` with its options first and its words after a `--` (so typer takes text
    that starts with a dash as text, as `parse` does), and the unknown options in it (left
    among the words, for a message that shows the text they belong to)."""
    front: list[str] = []
    words: list[str] = []
    unknown: list[str] = []
    rest = list(argv)
    while rest:
        arg = rest.pop(0)
        if arg == "--":
            words += rest
            break
        if arg in values:
            if not rest:  # a value is missing: typer says so
                return argv, []
            front += [arg, rest.pop(0)]
        elif arg in flags or _is_attached(arg, flags, values):
            front.append(arg)
        elif is_option_like(arg):
            unknown.append(arg)
            words.append(arg)
        else:
            words.append(arg)
    return [*front, "--", *words], unknown


def _is_attached(arg: str, flags: Collection[str], values: Collection[str]) -> bool:
    """`--kind=lesson`, `-k3`, `-wwebshop` (and `--all=1`, for typer to refuse): an option
    and a value in one argument."""
    if arg.startswith("--") and "=" in arg:
        name = arg.split("=", 1)[0]
        return name in values or name in flags
    return len(arg) > 2 and arg[:2] in values


def empty_workspace(options: Options) -> bool:
    """Return whether `-w ""` was given: an error, which the typer command says."""
    return "workspace" in options and not last(options, "workspace").strip()


def is_misused(options: Options, *, adding: bool = False) -> bool:
    """Return whether an option's value is one the typer command refuses as a usage error
    (exit 2, with the usage line): an empty or impossible -w, an unknown --kind. The lean
    path defers those to it, so both paths answer alike."""
    if empty_workspace(options):
        return True
    try:
        if "workspace" in options:
            check_workspace(last(options, "workspace"), for_add=adding)
    except InvalidInputError:
        return True
    return "kind" in options and not is_kind(last(options, "kind"), ADDABLE_KINDS)


def open_in_process(settings: Settings, create: bool) -> AbstractContextManager[Store]:
    """Open the vault in this process (the path without a daemon): a one-shot command, so
    git's index, if an add left it behind, is staged by a child after it answers."""
    from memstore.service.store import Store

    store = Store.open(settings, create=create)
    store.shared.one_shot = True
    return store


@contextmanager
def open_one_shot(settings: Settings, create: bool) -> Iterator[Store]:
    """open_in_process for a process that runs this one command and exits (the launcher's
    path without a daemon): its searches score in plain Python (index/plain.py, the same
    floats), so it never imports numpy, which costs more than the scoring it speeds; its
    commits start at libgit2's C level (vault/git_lean.py), before pygit2's package.
    Afterwards as before (a caller that goes on, such as a test calling the launcher, opens
    others as usual)."""
    from memstore.index import scoring
    from memstore.vault import git_lean

    plain = scoring.PLAIN
    scoring.use_plain_scoring()
    c_level = git_lean.use_c_level()
    try:
        with open_in_process(settings, create) as store:
            yield store
    finally:
        scoring.use_plain_scoring(plain)
        git_lean.use_c_level(c_level)


def before_daemon(open_store: OpenStore) -> OpenStore:
    """Return `open_store` for a command that starts a daemon when it is done: its search
    leaves the 5-minute comparison of every file to that daemon's watcher, which makes it
    at its start, and compares only its own hits' files (docs/search.md, rule 1). At
    100,000 memories the comparison is ~1 s of CPU, a session's first search almost always
    meets it, and the prompt hook waits for that search."""

    @contextmanager
    def opened(settings: Settings, create: bool) -> Iterator[Store]:
        with open_store(settings, create) as store:
            store.indexer.defer_timed_full = True
            yield store

    return opened


def opener_for(vault: Path | str | None, open_store: OpenStore) -> OpenStore:
    """Return `open_store`, or `before_daemon(open_store)` when the command will start a
    daemon for `vault` once it has answered (None: it starts none)."""
    if vault is not None and will_start_daemon(vault):
        return before_daemon(open_store)
    return open_store


def settings_for(request: Request, options: Options) -> Settings:
    """Return the caller's settings: its environment, with paths relative to its directory."""
    vault = resolve_vault(last(options, "vault") or None, request.env, request.cwd)
    home = Path(request.env.get("HOME") or "/")
    return Settings.from_env(request.env, home=home, vault=vault)


def detected_workspace(vault: Path) -> str | None:
    """Return the workspace of the current directory's git repository, if it has one."""
    return workspace_at(vault, Path.cwd())


def add_workspace(vault: Path, cwd: Path | None, given: str | None) -> str:
    """Return the workspace an add from `cwd` writes to: the one given, else the folder's
    repository's, else global.

    Raises:
        InvalidInputError: not given one, and `cwd` is in another vault: the add meant that
            vault, not `vault` (it made a workspace named after the other vault there).
    """
    if given:
        return given
    if cwd is None:
        return GLOBAL
    other, workspace = add_target_at(vault, cwd)
    if other is not None:
        raise InvalidInputError(
            f"this folder is in the vault {other}, but memstore uses {vault}; pass --vault "
            f"{other} (or export MEMSTORE_VAULT={other}) to add there, or -w WORKSPACE to "
            f"add to {vault}"
        )
    return workspace or GLOBAL


def other_vault_note(vault: Path, cwd: Path) -> str:
    """Return a note when a search from `cwd` (given no workspace) is in another vault's
    folder ('' otherwise): it read `vault`, in a workspace named after the other vault,
    where an add from there is refused (add_workspace)."""
    other, _ = add_target_at(vault, cwd)
    if other is None:
        return ""
    from memstore.ops.output import printable

    return printable(
        f"note: this folder is in the vault {other}, but memstore searched {vault}; pass "
        f"--vault {other} (or export MEMSTORE_VAULT={other}) to search there\n"
    )


def cites_here(vault: Path, specs: Collection[str], text: str) -> tuple[Cite, ...]:
    """Return the citations an add from the current directory records (ops/add_cites.py)."""
    from memstore.ops.add_cites import add_cites

    return add_cites(vault, Path.cwd(), list(specs), text)


def checkout_here(vault: Path) -> tuple[Path, str] | None:
    """Return the repository of the current directory (root, name), if any."""
    from memstore.ops.add_cites import checkout_at

    return checkout_at(vault, Path.cwd())


def _workspace_of(request: Request, vault: Path) -> str | None:
    return workspace_at(vault, Path(request.cwd)) if request.cwd else None


def run_search(request: Request, open_store: OpenStore = open_in_process) -> Reply:
    """Run `memstore search`; a None status defers to the typer command."""
    options = parse(request.argv, SEARCH, "query")
    k = last(options or {}, "k", "5")
    if options is None or not k.isdigit() or not 1 <= int(k) <= 200 or is_misused(options):
        return DEFER
    query = last(options, "query")
    if not query.strip() and "context" not in options:
        return DEFER  # an error: the typer command says it
    settings = settings_for(request, options)
    every = "all" in options or last(options, "workspace") == ALL  # -w all: as --all
    scope = (
        None if every else (last(options, "workspace") or _workspace_of(request, settings.vault))
    )
    context = "context" in options
    note = ""
    try:
        with open_store(settings, False) as store:
            here = Path(request.cwd) if request.cwd else None  # its citations are checked
            asked: str | Query = query
            if context:  # a prompt for an agent's context: words used in passing weigh less
                from memstore.catalog.pasted import chat_query  # (a paste: its question)

                asked = chat_query(query)
            result = store.search(asked, workspace=scope, k=int(k), tiers=True, cwd=here)
            elsewhere = None
            if not context:
                vault = settings.vault if "vault" in options else None
                elsewhere = look_elsewhere(store, result, query, scope, vault=vault)
                if elsewhere is None or not elsewhere.matches:
                    archived = look_archived(store, result, query, scope, vault=vault)
                    elsewhere = archived or elsewhere
                named = None if every else last(options, "workspace") or None
                note = unknown_workspace(store, named)
                if not every and named is None and request.cwd:
                    note += other_vault_note(settings.vault, Path(request.cwd))
    except MemstoreError as err:
        return _error(err)
    text = search_text(
        result, query, scope, as_json="json" in options, context=context, elsewhere=elsewhere
    )
    return Reply(0, text, note)


def unknown_workspace(store: Store, named: str | None, read: str = "searched it and global") -> str:
    """Return a note when a workspace given with -w is none of the vault's ('' otherwise):
    the search then read only `global` (`list`: nothing), and a typo should not pass for
    "no match". `read`: what the command read, for the note."""
    from memstore.ops.output import printable

    if named is None:
        return ""
    known = store.workspaces()
    if named in known:
        return ""
    from memstore.service.tiers import tier_stores

    if any(named in team.workspaces() for team in tier_stores(store).values()):
        return ""  # a followed team vault's workspace
    return printable(
        f"note: no workspace {named!r} in this vault ({read}); known: {', '.join(known)}\n"
    )


def look_elsewhere(
    store: Store,
    result: SearchResult,
    query: str,
    scope: str | None,
    *,
    vault: Path | None = None,
    archived: bool = False,
) -> Elsewhere | None:
    """Return what other workspaces hold for `query` when its search in `scope` found
    nothing, or only weak hits (then only what is no weak hit elsewhere counts: a strict
    match in another workspace is worth pointing at, another guess is not); one more
    search, capped. None when there was no scope or it found a confident hit.

    `vault` (when the command line named one) and `archived` go into the command that
    shows them.
    """
    unsure = bool(result.hits) and all(hit.weak for hit in result.hits)
    if scope is None or (result.hits and not unsure):
        return None  # what count_elsewhere answers too, without importing the MCP tools
    from memstore.ops.tools import look_elsewhere as count_elsewhere

    command = search_command(query, None, archived=archived, vault=vault)
    found = count_elsewhere(
        store, None, query, scope, command=command, archived=archived, confident=unsure
    )
    return None if unsure and found is not None and not found.matches else found


def look_archived(
    store: Store, result: SearchResult, query: str, scope: str | None, *, vault: Path | None
) -> Elsewhere | None:
    """Return what archived memories of `scope` hold for `query` when its search found
    nothing at all (one more search, capped); None when it found something or they hold
    nothing. `vault` (when the command line named one) goes into the command that shows them.
    """
    if result.hits:
        return None
    from memstore.ops.output import Elsewhere
    from memstore.ops.tools import ELSEWHERE_LIMIT

    found = store.search(
        query, workspace=scope, k=ELSEWHERE_LIMIT, catch_up=False, archived=True, tiers=True
    )
    if not found.hits:
        return None
    command = search_command(query, scope, archived=True, vault=vault)
    weak = all(hit.weak for hit in found.hits)
    capped = len(found.hits) >= ELSEWHERE_LIMIT
    return Elsewhere(len(found.hits), weak, capped, command, archived=True)


def search_command(query: str, scope: str | None, *, archived: bool, vault: Path | None) -> str:
    """Return the command line that searches `query` in `scope` (None: every workspace), in
    the archived memories too with `archived`, in `vault` when the command line named one."""
    from shlex import quote

    command = f"memstore search {quote(query)} " + (
        "--all" if scope is None else f"-w {quote(scope)}"
    )
    command += " --archived" if archived else ""
    return command + (f" --vault {quote(str(vault))}" if vault else "")


def search_text(
    result: SearchResult,
    query: str,
    scope: str | None,
    *,
    as_json: bool,
    context: bool,
    elsewhere: Elsewhere | None = None,
) -> str:
    """Return a search result as JSON, as agent context (empty when nothing), or as text."""
    from memstore.ops.output import context_lines, render_json, search_json, search_lines

    if as_json:
        return render_json(search_json(result, query, scope, elsewhere)) + "\n"
    if context:
        from memstore.catalog.pasted import chat_query
        from memstore.catalog.retrieval import names_one_topic

        lines = context_lines(result, one_topic=names_one_topic(chat_query(query)))
        return "\n".join(lines) + "\n" if lines else ""
    return "\n".join(search_lines(result, query, scope, elsewhere)) + "\n"


def print_search(
    result: SearchResult,
    query: str,
    scope: str | None,
    *,
    as_json: bool,
    context: bool,
    elsewhere: Elsewhere | None = None,
) -> None:
    """Print a search result as JSON, as agent context (silent when nothing), or as text."""
    text = search_text(result, query, scope, as_json=as_json, context=context, elsewhere=elsewhere)
    sys.stdout.write(text)


def run_add(request: Request, open_store: OpenStore = open_in_process) -> Reply:
    """Run `memstore add`; a None status defers to the typer command."""
    options = parse(request.argv, ADD, "text")
    if options is None or is_misused(options, adding=True):
        return DEFER
    text = last(options, "text")
    if not text.strip() or (text != "-" and not _is_long_enough(text)):
        return DEFER  # a usage error: the typer command says it
    settings = settings_for(request, options)
    try:
        cwd = Path(request.cwd) if request.cwd else None
        workspace = add_workspace(settings.vault, cwd, last(options, "workspace"))
        if text == "-":
            text = check_new_text(decode_stdin(request.stdin))
        from memstore.ops.add_cites import add_cites

        cites = add_cites(settings.vault, request.cwd, options.get("cite", ()), text)
        made = made_vault_line(settings)
        with open_store(settings, True) as store:
            result = store.add(
                text,
                workspace=workspace,
                kind=last(options, "kind", "note"),
                keywords=tuple(options.get("keyword", ())),
                source=last(options, "source") or None,
                supersedes=tuple(options.get("supersedes", ())),
                allow_secret="allow_secret" in options,
                cites=cites,
            )
            result = store.hint(result, text)  # the add returned: its vault lock is released
    except MemstoreError as err:
        return _error(err)
    vault = str(settings.vault) if "vault" in options else None
    return Reply(0, add_text(result, as_json="json" in options, text=text, vault=vault), made)


def _is_long_enough(text: str) -> bool:
    try:
        check_new_text(text)
    except InvalidInputError:
        return False
    return True


def made_vault_line(settings: Settings) -> str:
    """Return the line an add prints on stderr when it is about to make the default vault
    (none there yet), else ''. A person who never ran `memstore init` learns where their
    memories went, and where the snippet for their agent's instructions is."""
    from memstore.service.vault_init import is_unmade

    if not (settings.may_create_vault and is_unmade(settings.vault)):
        return ""
    return (
        f"made the vault {settings.vault} (a git repository of your memories); "
        "'memstore init' prints the lines to paste into CLAUDE.md or AGENTS.md\n"
    )


def run_ingest(request: Request, open_store: OpenStore) -> Reply:
    """Run `memstore ingest PATH` again over a folder ingested before: the daemon's path,
    where the index is warm and its watcher has usually caught up already.

    A None status defers to the typer command: a first ingest (which can take minutes and
    shows a progress bar), --list, --remove, help.
    """
    options = parse(request.argv, INGEST, "path")
    if options is None:
        return DEFER
    settings = settings_for(request, options)
    target = _caller_path(last(options, "path"), request)
    try:
        with open_store(settings, False) as store:
            known = [root for root, _ in store.source_roots() if root.path == str(target)]
            if not known:
                return DEFER
            summary = store.ingest(
                target,
                last(options, "workspace") or known[0].workspace,
                dry_run="dry_run" in options,
            )
    except MemstoreError as err:
        return _error(err)
    from memstore.ops.output import ingest_text

    return Reply(0, ingest_text(summary, as_json="json" in options, quiet="quiet" in options))


def _caller_path(typed: str, request: Request) -> Path:
    """Return the folder `typed` names for the caller: its `~` and its working directory."""
    home = request.env.get("HOME") or "/"
    if typed == "~" or typed.startswith("~/"):
        typed = home + typed[1:]
    return Path(os.path.abspath(Path(request.cwd or "/", typed))).resolve()


def _error(err: MemstoreError) -> Reply:
    from memstore.ops.output import printable

    return Reply(1, "", printable(f"Error: {err}") + "\n")


def decode_stdin(data: bytes) -> str:
    """Return stdin's bytes as text, less a leading byte order mark (what Windows tools and
    PowerShell's pipes write: it is no part of the text, and kept it would make a duplicate
    typed without it a second memory); raise InvalidInputError when they are not UTF-8."""
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as err:
        raise InvalidInputError(
            f"standard input is not valid UTF-8 (byte {err.start}: 0x{data[err.start]:02x}); "
            "convert it first, e.g. iconv -f latin1 -t utf-8"
        ) from err


def read_stdin() -> str:
    """Return standard input as text; raise InvalidInputError when it is not UTF-8."""
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:  # a text-only stream (an embedding program's): already decoded
        return sys.stdin.read().removeprefix("\ufeff")
    return decode_stdin(stream.read())


def add_text(result: AddResult, *, as_json: bool, text: str = "", vault: str | None = None) -> str:
    """Return what `memstore add` prints (`text`, `vault`: the command's, for its hints)."""
    from memstore.ops.output import add_json, add_line, render_json

    if as_json:
        return render_json(add_json(result, text, vault)) + "\n"
    return add_line(result, text, vault) + "\n"


def print_add(
    result: AddResult, *, as_json: bool, text: str = "", vault: str | None = None
) -> None:
    sys.stdout.write(add_text(result, as_json=as_json, text=text, vault=vault))


# --- shell completion (typer calls these while a person presses Tab) ---------------------
# Cheap reads only: a folder listing and one read-only query of the index's manifest. No
# index open, no catch-up, no vault created; any failure completes nothing.

COMPLETIONS = 100


def complete_workspace(ctx: Any, incomplete: str) -> list[str]:
    """Return the vault's workspaces (its top folders, and `global`) that start with
    `incomplete`."""
    names = {GLOBAL}
    try:
        with os.scandir(_completion_vault(ctx)) as entries:
            names.update(e.name for e in entries if e.is_dir(follow_symlinks=False))
    except (OSError, MemstoreError, ValueError):
        return []
    return sorted(n for n in names if n.startswith(incomplete) and _is_valid(check_workspace, n))


def complete_id(ctx: Any, incomplete: str) -> list[str]:
    """Return up to COMPLETIONS memory ids that start with `incomplete`, from the manifest."""
    import sqlite3

    from memstore.catalog.indexer import INDEX_DIR
    from memstore.vault.files import Vault

    prefix = incomplete.lower()
    try:
        manifest = Vault(_completion_vault(ctx)).state_dir / INDEX_DIR / "manifest.sqlite"
        if not manifest.is_file():
            return []
        db = sqlite3.connect(f"{manifest.resolve().as_uri()}?mode=ro", uri=True, timeout=0.2)
        try:
            # The manifest's `files` table (memstore/catalog/indexer.py): one row per memory file.
            rows = db.execute(
                "SELECT DISTINCT id FROM files WHERE id >= ? AND id < ? ORDER BY id LIMIT ?",
                [prefix, prefix + "\U0010ffff", COMPLETIONS],
            ).fetchall()
        finally:
            db.close()
    except (OSError, MemstoreError, ValueError, sqlite3.Error):
        return []
    return [str(row[0]) for row in rows]


def _completion_vault(ctx: Any) -> Path:
    """Return the vault a command line being completed names (--vault, else the environment)."""
    typed = getattr(ctx, "params", {}).get("vault")
    return resolve_vault(str(typed) if typed else None, os.environ, os.getcwd())


def _is_valid(check: Callable[[str], str], name: str) -> bool:
    try:
        check(name)
    except MemstoreError:
        return False
    return True
