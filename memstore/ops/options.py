"""The fast commands' options, declared once: typer and the lean parsers both read this table.

search, add, ingest, daemon and serve are parsed twice: by typer (their `--help`, errors and
completion) and, before typer is imported, by `parse` here (the launcher, memstore/ops/lean.py,
the daemon's and serve's entries), because typer costs ~160 ms of imports before it parses a
word. Each typer command builds these options from the table (memstore/ops/parameters.py) and a
test checks that a command's options are exactly its table's, so an option cannot be added to
one parser and forgotten in the other. An option marked `lean=False` is typer's alone: the lean
parser defers the whole command line to typer when it meets one.

Plain classes and tuples: the launcher imports this before it knows whether a daemon answers
(a dataclass would cost the client ~10 ms of imports).
"""

from __future__ import annotations

from collections.abc import Collection

Options = dict[str, list[str]]  # key → its values in order ("1" for a flag)


class Option:
    """One option of a fast command: its names, the key its values go under, whether it takes
    a value, whether the lean path runs it, and its help line."""

    __slots__ = ("help", "key", "lean", "names", "takes_value")

    def __init__(
        self,
        names: tuple[str, ...],
        key: str,
        *,
        value: bool = False,
        lean: bool = True,
        help: str = "",
    ) -> None:
        self.names = names
        self.key = key
        self.takes_value = value
        self.lean = lean
        self.help = help

    def __repr__(self) -> str:
        return f"Option({'/'.join(self.names)})"


VAULT = Option(
    ("--vault",), "vault", value=True, help="Vault folder (default: $MEMSTORE_VAULT or ~/memstore)."
)
JSON = Option(("--json",), "json", help="Print JSON instead of text.")
QUIET = Option(
    ("--quiet", "-q"),
    "quiet",
    help="No progress bar and no summary; problems and errors still print.",
)
WORKSPACE = Option(
    ("-w", "--workspace"),
    "workspace",
    value=True,
    help="Workspace (default: detected from the current git repository).",
)

SEARCH = (
    WORKSPACE,
    Option(("-k",), "k", value=True, help="How many hits at most."),
    Option(("--all",), "all", help="Search every workspace."),
    Option(
        ("--context",),
        "context",
        help="Compact lines for an agent's context; silent when nothing confident matches.",
    ),
    Option(("--archived",), "archived", lean=False, help="Include archived memories."),
    Option(
        ("--as-of",),
        "as_of",
        value=True,
        lean=False,
        help="Search the vault as it was then: a date (2026-11-01, its end), an age (7d, 12h, "
        "30m) or a time (2026-11-01T14:30, UTC unless it names a zone).",
    ),
    VAULT,
    JSON,
)
ADD = (
    WORKSPACE,
    Option(("--kind",), "kind", value=True),  # help: the kinds (memstore/core/model.py)
    Option(("-K", "--keyword"), "keyword", value=True, help="A keyword (repeatable)."),
    Option(
        ("--source",), "source", value=True, help="Who wrote it (default: $MEMSTORE_SOURCE or cli)."
    ),
    Option(
        ("--supersedes",),
        "supersedes",
        value=True,
        help="Id of a memory this one corrects (repeatable).",
    ),
    Option(
        ("--allow-secret",), "allow_secret", help="Store text that looks like a credential anyway."
    ),
    Option(
        ("--cite",),
        "cite",
        value=True,
        help="Code it is about: PATH, PATH:SYMBOL or PATH:START-END (repeatable).",
    ),
    VAULT,
    JSON,
)
INGEST = (  # the lean path only re-ingests a folder ingested before (the daemon's work)
    Option(
        ("-w", "--workspace"),
        "workspace",
        value=True,
        help="Workspace of its chunks (default: the one add picks in that folder).",
    ),
    Option(("--dry-run",), "dry_run", help="Say what would change; write nothing."),
    Option(
        ("--list",), "list", lean=False, help="List the ingested folders and their chunk counts."
    ),
    Option(
        ("--remove",),
        "remove",
        value=True,
        lean=False,
        help="Forget an ingested folder and drop its chunks.",
    ),
    VAULT,
    JSON,
    QUIET,
)
DAEMON = (
    VAULT,
    Option(
        ("--idle-exit",),
        "idle_exit",
        value=True,
        help="Exit after this long without a request (0: never; default 0 here, 1800 "
        "when a command starts it).",
    ),
    Option(("--stop",), "stop", help="Stop the vault's daemon and exit."),
    Option(("--background",), "background"),  # hidden: how a command starts one
)
SERVE = (
    WORKSPACE,
    Option(
        ("--source",),
        "source",
        value=True,
        help="Name written as the source of memories added here.",
    ),
    VAULT,
)
COMMANDS = {"search": SEARCH, "add": ADD, "ingest": INGEST, "daemon": DAEMON, "serve": SERVE}

# Names people try for an option that has another: a command with the option suggests it
# ("No such option: --at. Did you mean --as-of?"), where difflib would name a closer one
# (--vault). A suggestion, not an alias: each option keeps one name.
TRIED = {"--at": "--as-of"}


def meant(tried: str, known: Collection[str]) -> str:
    """Return the option of `known` someone giving `tried` (`--at`, `--at=DATE`) means, or ''."""
    option = TRIED.get(tried.split("=", 1)[0], "")
    return option if option in known else ""


def find(table: tuple[Option, ...], key: str) -> Option:
    """Return the option of `table` whose values go under `key`."""
    return next(option for option in table if option.key == key)


def parse(argv: list[str], table: tuple[Option, ...], positional: str = "") -> Options | None:
    """Return the options in `argv` and, under `positional`, its words joined by spaces; None
    to defer to typer (help, an unknown or typer-only option, a missing value, a word where
    the command takes none, no word where it needs one)."""
    flags = {name: o for o in table if not o.takes_value for name in o.names}
    values = {name: o for o in table if o.takes_value for name in o.names}
    options: Options = {}
    words: list[str] = []
    rest = list(argv)
    while rest:
        arg = rest.pop(0)
        name, equals, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        option = values.get(name) if name in values else flags.get(arg)
        if arg == "--" and positional:
            words += rest
            break
        if option is not None and option.takes_value and (equals or rest):
            value = value if equals else rest.pop(0)
        elif option is not None and option.takes_value:
            return None  # a missing value: typer says so
        elif option is not None:
            value = "1"
        elif positional and not is_option_like(arg):
            words.append(arg)  # "- staging deploys …", "---", "-5 °C": text, not an option
            continue
        else:
            return None
        if not option.lean:
            return None
        options.setdefault(option.key, []).append(value)
    if positional:
        if not words:
            return None
        options[positional] = [" ".join(words)]
    return options


def is_option_like(arg: str) -> bool:
    """Return whether `arg` reads as an option (dashes, then a letter, no space before any
    '='), not as text such as '- a pasted bullet', '---' or '-5 °C in the morning'."""
    head = arg.split("=", 1)[0]
    name = head[2:] if head.startswith("--") else head[1:] if head.startswith("-") else ""
    return name[:1].isalpha() and not any(c.isspace() for c in head)


def last(options: Options, key: str, default: str = "") -> str:
    """Return the last value given for `key` (an option given twice: the last one wins)."""
    return options[key][-1] if key in options else default


def wants_stdin(op: str, argv: list[str]) -> bool:
    """Return whether command `op` reads its text from standard input (`memstore add -`).

    Here, not in lean.py: the launcher asks before it knows whether a daemon answers, and
    lean.py imports the settings and the model (~27 ms) that only an in-process add needs.
    """
    options = parse(argv, ADD, "text") if op == "add" else None
    return options is not None and last(options, "text") == "-"
