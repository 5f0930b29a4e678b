"""The CLI's parameters in plain words: clean metavars in --help, plain value errors.

typer 0.29 shows a type label beside every parameter (`QUERY <list[str]>`, `-k <int range>`,
`--vault <path>`) and reports a bad value in pydantic's words ("Input should be a valid
integer, unable to parse string as an integer"). `tidy_parameters` gives each parameter of
a command a metavar a person reads (`PATH`, `N`, `NAME`) and plain error wording.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer
import typer.core

# A metavar for an option that names none, by its parameter name (else its type's).
NAMED_METAVARS = {
    "workspace": "NAME",
    "name": "NAME",
    "remote": "NAME",
    "kind": "KIND",
    "keyword": "WORD",
    "keywords": "WORD",
    "source": "AGENT",
    "install": "AGENT",
    "uninstall": "AGENT",
    "supersedes": "ID",
    "session": "ID",
    "since": "WHEN",
}

_PLAIN_ERRORS = (
    (re.compile(r"Input should be a valid integer.*"), "{value!r} is not a whole number"),
    (re.compile(r"Input should be a valid number.*"), "{value!r} is not a number"),
    (re.compile(r"Input should be greater than or equal to (\S+)"), "must be at least {0}"),
    (re.compile(r"Input should be less than or equal to (\S+)"), "must be at most {0}"),
    (re.compile(r"Input should be greater than (\S+)"), "must be more than {0}"),
    (re.compile(r"Input should be less than (\S+)"), "must be less than {0}"),
)


def plain_error(message: str, value: object) -> str:
    """Return a pydantic validation message in a person's words (others unchanged)."""
    for pattern, wording in _PLAIN_ERRORS:
        found = pattern.match(message)
        if found:
            return wording.format(*found.groups(), value=value)
    return message


def _metavar(param: Any) -> str:
    """Return the metavar of a parameter that names none."""
    if param.name in NAMED_METAVARS:
        return NAMED_METAVARS[param.name]
    annotation = param.type_descriptor.annotation
    inner = getattr(annotation, "__args__", (annotation,))[0]
    if annotation in (int, float) or inner in (int, float):
        return "N"
    if annotation is Path or inner is Path:
        return "PATH"
    return str(param.name).upper()


def plain_range(low: float | None, high: float | None) -> str | None:
    """Return an option's bounds as help shows them ("1 to 200", not "1<=x<=200")."""
    if low is None and high is None:
        return None
    if low is None:
        return f"at most {high}"
    return f"at least {low}" if high is None else f"{low} to {high}"


def _processed_plainly(process: Callable[[Any, Any], Any], ctx: Any, value: Any) -> Any:
    """Run a parameter's `process_value`, its bad-value message put in plain words.

    Shared by PlainOption and PlainArgument; not a mixin, because typer's parameters are
    swapped to those classes in place and a mixin base changes the object layout Python
    allows that for (their common base, typer.core._TyperParameter, is private).
    """
    try:
        return process(ctx, value)
    except typer.BadParameter as err:
        err.message = plain_error(err.message, value)
        raise


class PlainOption(typer.core.TyperOption):
    """An option shown with its metavar alone, whose bad values and bounds read plainly."""

    def _get_number_range_help_str(self) -> str | None:
        return plain_range(getattr(self, "min", None), getattr(self, "max", None))

    def process_value(self, ctx: Any, value: Any) -> Any:
        return _processed_plainly(super().process_value, ctx, value)


class PlainArgument(typer.core.TyperArgument):
    """An argument shown by its metavar (`ID`, `QUERY...`), without typer's type label."""

    def display_type_rich(self, ctx: Any) -> str | None:
        return None

    def _rich_display_name(self) -> str:
        name = str(self.display_name_raw)
        # a metavar of several words (`[NAME] URL`) spells out what it takes
        repeats = self.nargs != 1 and not name.endswith("...") and " " not in name
        return name + "..." if repeats else name

    def _usage_display_name(self) -> str:
        # typer wraps a required argument in braces (`{ID}`); click's usage shows it bare
        name = self._rich_display_name()
        return name if self.required else f"[{name}]"

    def process_value(self, ctx: Any, value: Any) -> Any:
        return _processed_plainly(super().process_value, ctx, value)


def tidy_parameters(command: Any) -> None:
    """Give `command`'s parameters plain metavars and error wording (idempotent)."""
    for param in command.params:
        if isinstance(param, typer.core.TyperOption):
            if not (param.is_flag or param.count) and param.metavar is None:
                param.metavar = _metavar(param)
            # typer offers no hook for a parameter's class: swap to a subclass that adds
            # no state, so help and errors change and parsing does not
            param.__class__ = PlainOption
        elif isinstance(param, typer.core.TyperArgument):
            if param.metavar is None:
                param.metavar = str(param.name).upper()
            param.__class__ = PlainArgument


def choices(*values: str) -> Any:
    """Return a shell-completion function offering `values` (an option's closed set)."""

    def complete(incomplete: str) -> list[str]:
        return [value for value in values if value.startswith(incomplete)]

    return complete
