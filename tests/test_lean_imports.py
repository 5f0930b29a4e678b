"""What a session's first command imports: only what answering it needs (issue 39)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from memstore.service.store import Store
from tests.conftest import settings_at

# Run `memstore search` in a fresh interpreter, in-process (no daemon), and report what
# was imported and whether the secret rules were compiled.
SEARCH = """
import json, os, sys
sys.argv = ["memstore", "search", "upload", "--vault", sys.argv[1]]
from memstore.launcher import main
try:
    main()
except SystemExit:
    pass
from memstore.core import secret_rules
print(json.dumps({
    "modules": sorted(sys.modules),
    "secret_rules_compiled": sum("pattern" in vars(rule) for rule in secret_rules.RULES),
}), file=sys.stderr)
"""


def _imported_by_a_search(vault: Path) -> dict[str, object]:
    env = {**os.environ, "MEMSTORE_NO_DAEMON": "1"}
    done = subprocess.run(
        [sys.executable, "-c", SEARCH, str(vault)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "upload" in done.stdout  # it did search
    return dict(json.loads(done.stderr.strip().splitlines()[-1]))


def test_a_search_without_a_daemon_imports_no_network_asyncio_or_secret_rules(vault: Path):
    with Store.open(settings_at(vault)) as store:
        store.add(
            "the upload limit is 10 MB behind nginx", workspace="global", keywords=("upload",)
        )
    found = _imported_by_a_search(vault)
    modules = set(found["modules"])  # type: ignore[arg-type]
    assert "whoosh.reading" in modules
    assert not modules & {"asyncio", "urllib.request", "http.client", "ssl", "email.parser"}
    assert "whoosh.lang.morph_en" not in modules  # Variations' word forms: never searched with
    assert not modules & {"whoosh.query", "html"}  # every query class; highlighting's escape
    assert "_hashlib" not in modules  # OpenSSL: Whoosh's term tables hash with Python's MD5
    assert found["secret_rules_compiled"] == 0


def test_whoosh_stand_ins_do_not_outlive_its_import():
    code = (
        "import sys, memstore.index, whoosh.reading\n"
        "assert 'cached_property' not in sys.modules and 'urllib.request' not in sys.modules\n"
        "import urllib.request, cached_property\n"
        "assert hasattr(urllib.request, 'urlopen') and cached_property.__file__\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_whoosh_query_is_imported_when_first_asked_for_with_its_stand_in():
    code = (
        "import sys, memstore.index, whoosh.reading\n"
        "assert 'whoosh.query' not in sys.modules and 'html' not in sys.modules\n"
        "from whoosh.searching import Searcher  # imports whoosh.query\n"
        "from whoosh.query import Term, Variations\n"
        "assert 'whoosh.lang.morph_en' not in sys.modules  # the stand-in, gone again\n"
        "assert memstore.index._QueryFinder not in sys.meta_path  # once\n"
        "import whoosh.compat\n"
        "assert whoosh.compat.htmlescape('<a href=\"x\">', quote=False) == '&lt;a href=\"x\"&gt;'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_whoosh_hashes_terms_as_openssl_does_when_hashlib_was_not_run_before_it():
    code = (
        "import sys\n"
        "from memstore.core.deferred_modules import defer, is_deferred\n"
        "defer(('hashlib',))\n"
        "import memstore.index\n"
        "from whoosh.filedb import filetables\n"
        "assert is_deferred(sys.modules['hashlib']) and '_hashlib' not in sys.modules\n"
        "keys = [b'', b'\\x00\\x03upload', 'caf\u00e9 \u65e5\u672c'.encode(), bytes(range(256)) * 9]\n"
        "ours = [filetables.md5_hash(k) for k in keys]\n"
        "import hashlib\n"
        "theirs = [int(hashlib.md5(k).hexdigest(), 16) & 0xFFFFFFFF for k in keys]\n"
        "assert filetables.md5 is not hashlib.md5 and ours == theirs, (ours, theirs)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_whoosh_variations_import_their_word_forms_on_first_use():
    code = (
        "import sys, memstore.index, whoosh.query.terms\n"
        "assert 'whoosh.lang.morph_en' not in sys.modules\n"
        "forms = whoosh.query.terms.variations('rendering')  # what Variations asks\n"
        "from whoosh.lang.morph_en import variations\n"
        "assert set(forms) == set(variations('rendering')) and 'render' in forms\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_segments_deleted_set_is_computed_once_per_reader(tmp_path: Path):
    from memstore.index import Document, SearchIndex

    index = SearchIndex.open(tmp_path / "ix", create=True)
    docs = [
        Document(key=f"k{n}", id=f"i{n}", workspace="w", kind="note", content=f"word {n}")
        for n in range(3)
    ]
    index.apply(docs, new={d.key for d in docs})
    index.apply([], ["k1"])
    with index._ix.searcher() as searcher:  # the reader Whoosh hands out, as scoring uses it
        (segment, _), *_ = searcher.reader().leaf_readers()
        first = segment.deleted_docs_set
        assert first == frozenset({1}) and segment.deleted_docs_set is first
    index.close()


def test_the_secret_rules_compile_on_their_first_use():
    code = (
        "from memstore.core import secret_rules as r, secrets as s\n"
        "compiled = lambda: sum('pattern' in vars(rule) for rule in r.RULES)\n"
        "assert compiled() == 0\n"
        "assert s.find_secrets('key AKIAIOSFODNN7EXAMPLF in the config')\n"
        "assert compiled() > 0\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


SERVE_HELP = """
import json, sys
sys.argv = ["memstore", "serve", "--help"]
from memstore.launcher import main
try:
    main()
except SystemExit as stop:
    assert stop.code == 0, stop.code
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def test_serve_help_prints_without_importing_mcp():
    # `memstore serve --help` cost ~2.4 s of CPU against ~0.8 s for any other command's help:
    # the lean serve path imported the MCP SDK before typer answered the help
    done = subprocess.run(
        [sys.executable, "-c", SERVE_HELP], capture_output=True, text=True, check=True
    )
    assert "Run the MCP server" in done.stdout
    modules = set(json.loads(done.stderr.strip().splitlines()[-1]))
    assert "memstore.cli.app" in modules  # typer answered
    assert not {m for m in modules if m == "mcp" or m.startswith("mcp.")}
