"""memstore's copy of PyYAML's implicit resolvers reads every plain scalar as PyYAML does.

Reading memstore's own front matter and rendering a scalar use the table in
memstore/core/yaml_values.py instead of importing PyYAML (issue 39: a no-daemon add).
"""

from __future__ import annotations

import re

import yaml
from hypothesis import example, given
from hypothesis import strategies as st

from memstore.core import yaml_values
from memstore.core.yaml_values import RESOLVERS, load_yaml, render_scalar

TIMESTAMP = "tag:yaml.org,2002:timestamp"


def _squeezed(pattern: str, flags: int) -> str:
    """A verbose pattern without its layout (none of these has a space in a class)."""
    return re.sub(r"\s+", "", pattern) if flags & re.X else pattern


def _table(resolvers: dict[object, list[tuple[str, re.Pattern[str]]]]) -> dict[object, list]:
    return {
        first: [
            (tag, _squeezed(rx.pattern, rx.flags), rx.flags & ~re.U)
            for tag, rx in found
            if tag != TIMESTAMP
        ]
        for first, found in resolvers.items()
    }


def test_the_copied_resolvers_are_pyyamls_in_its_order_without_timestamps():
    ours: dict[object, list[tuple[str, re.Pattern[str]]]] = {}
    for tag, pattern, flags, firsts in RESOLVERS:
        for first in firsts:
            ours.setdefault(first, []).append((tag, re.compile(pattern, flags)))
    theirs = {f: rs for f, rs in _table(yaml.SafeLoader.yaml_implicit_resolvers).items() if rs}
    assert _table(ours) == theirs


def _pyyaml_tag(value: str) -> str:
    """The tag memstore's loader (PyYAML's, timestamps kept as strings) gives `value`."""
    loader = yaml_values._yaml()[1]
    resolvers = loader.yaml_implicit_resolvers
    for tag, pattern in [*resolvers.get(value[0], []), *resolvers.get(None, [])]:
        if pattern.match(value):
            return str(tag)
    return "tag:yaml.org,2002:str"


SCALARS = st.text(alphabet="0123456789_.:-+eExXbBoO abcnNulLyYsStTrRfFiI~<=!&*@/", min_size=1)


@given(SCALARS)
@example("0x1F")
@example("1_000")
@example("190:20:30")
@example(".inf")
@example("~")
@example("<<")
@example("2026-11-29T14:12:23Z")
@example("2026-11-29")
@example("On")
@example("NULL")
def test_a_plain_scalar_gets_the_tag_pyyaml_gives_it(value: str):
    assert yaml_values._implicit_tag(value) == _pyyaml_tag(value)


@given(SCALARS)
@example("yes")
@example("3.11")
@example("2026-11-29 14:12:23")
@example("redis-7.2")
def test_a_rendered_scalar_reads_back_as_the_same_string_and_plain_when_pyyaml_agrees(
    value: str,
):
    rendered = render_scalar(value)
    yaml_module, loader = yaml_values._yaml()
    assert yaml_module.load(f"k: {rendered}", Loader=loader) == {"k": value}
    if rendered == value:  # left plain: PyYAML itself reads it as this very string
        assert yaml_module.load(value, Loader=loader) == value


def test_memstores_own_front_matter_reads_without_importing_pyyaml():
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from memstore.core.yaml_values import load_yaml, render_scalar\n"
        "text = 'id: abc12345\\nkind: note\\nkeywords: [redis, cache]\\nseen: 2\\n"
        "created: 2026-11-29T14:12:23Z'\n"
        "assert load_yaml(text) == {'id': 'abc12345', 'kind': 'note',"
        " 'keywords': ['redis', 'cache'], 'seen': 2, 'created': '2026-11-29T14:12:23Z'}\n"
        "assert render_scalar('on') == '\"on\"' and render_scalar('redis') == 'redis'\n"
        "assert 'yaml' not in sys.modules, 'PyYAML was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_load_yaml_still_reads_what_only_pyyaml_reads():
    assert load_yaml("a:\n  nested: [1, {b: 2}]\n# a comment\n") == {"a": {"nested": [1, {"b": 2}]}}
