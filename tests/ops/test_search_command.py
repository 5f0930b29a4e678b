"""The command a search's hint suggests: one builder for other workspaces and archived matches."""

from __future__ import annotations

import shlex
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from memstore.ops.lean import search_command

_WORDS = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1)


@settings(max_examples=40)
@given(
    query=_WORDS,
    scope=st.none() | _WORDS,
    archived=st.booleans(),
    vault=st.none() | _WORDS.map(lambda name: Path("/tmp") / name.replace("\0", "")),
)
def test_the_suggested_command_reads_back_as_the_search_it_names(
    query: str, scope: str | None, archived: bool, vault: Path | None
) -> None:
    words = shlex.split(search_command(query, scope, archived=archived, vault=vault))
    expected = ["memstore", "search", query, *(["--all"] if scope is None else ["-w", scope])]
    expected += ["--archived"] if archived else []
    expected += ["--vault", str(vault)] if vault else []
    assert words == expected
