#!/usr/bin/env python
"""The view page in a real browser: file size, render time, time to interactive, DOM size.

A standalone script, not a pytest module:

    nice -n 10 python tests/benchmarks/bench_view_page.py --sizes 1000 10000 100000 [--page FILE]

For each size it renders tests/ops/view_synthetic.py's view dict of that many memories
(render_page's CPU time and the file's size), loads the file in headless chromium from disk
(tests/browser.py: no network) `--repeat` times and prints the page's own clock at the end
of its script (parsing the file and the data, drawing the timeline), the number of DOM
elements, the time to draw the vault tab (its graph layout included) and a search as typed.
`--page FILE` measures a page `memstore view` wrote instead.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from memstore.ops.view_page import render_page
from tests.browser import Browser
from tests.ops.view_synthetic import synthetic_view

SEARCH = (
    "(() => { const s = document.getElementById('search'); const t = performance.now();"
    " s.value = 'deploy redis'; s.dispatchEvent(new Event('input'));"
    " return new Promise(r => setTimeout(() => r(performance.now() - t), 0)); })()"
)
VAULT_TAB = (
    "(() => { const t = performance.now(); location.hash = '#vault';"
    " return new Promise(r => setTimeout(() => r(performance.now() - t), 0)); })()"
)


def measure(page: Path, repeat: int) -> dict[str, float]:
    runs: dict[str, list[float]] = {"interactive": [], "elements": [], "vault": [], "search": []}
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as profile, Browser(Path(profile)) as browser:
            browser.load(page.as_uri())
            runs["interactive"].append(
                float(browser.evaluate("document.documentElement.dataset.interactiveMs"))
            )
            runs["elements"].append(browser.evaluate("document.querySelectorAll('*').length"))
            runs["vault"].append(browser.evaluate(VAULT_TAB))
            runs["search"].append(browser.evaluate(SEARCH))
            assert browser.requests() == [page.as_uri()], browser.requests()
    return {name: statistics.median(values) for name, values in runs.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--page", type=Path, help="measure this page instead")
    args = parser.parse_args()
    print("memories  file MB  render s (CPU)  interactive ms  elements  vault tab ms  search ms")
    with tempfile.TemporaryDirectory() as folder:
        pages: list[tuple[str, Path, float]] = []
        if args.page:
            pages.append(("(page)", args.page, 0.0))
        else:
            for size in args.sizes:
                data = synthetic_view(size)
                started = time.process_time()
                text = render_page(data)
                cpu = time.process_time() - started
                path = Path(folder) / f"view-{size}.html"
                path.write_text(text, encoding="utf-8")
                pages.append((str(size), path, cpu))
        for label, path, cpu in pages:
            got = measure(path, args.repeat)
            print(
                f"{label:>8}  {path.stat().st_size / 1e6:7.1f}  {cpu:14.2f}  "
                f"{got['interactive']:14.0f}  {got['elements']:8.0f}  {got['vault']:12.0f}  "
                f"{got['search']:9.0f}"
            )


if __name__ == "__main__":
    main()
