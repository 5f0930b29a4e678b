#!/usr/bin/env python
"""Code evidence benchmark: does evidence of what code does tell a right first code hit from
a wrong one?

A standalone script, not a pytest module (issue 38, fourteenth session):

    python tests/benchmarks/bench_code_evidence.py --vault DIR [--json out.json]

It asks bench_code_confidence.py's question sets in that benchmark's vault (`--vault` as
there: kept and reused, the trees it lacks ingested) and reads, for every answerable
question's first code hit, evidence the rank score does not hold, from the ingested trees'
files (each tree scanned once, never from the index):

  * `callers`: how many other files of the tree call or import the hit's name (`name(`,
    `from x import name`): the canonical definition against a copy nobody calls;
  * `importers`: how many other files import the hit's module;
  * `vendored`: the hit's file is under a vendored, legacy or compatibility folder
    (`_vendor/`, `third_party/`, `legacy/`, `compat/`, `backports/`) or is a `_py*` twin;
  * `tests`: the weighted share of the question held by the names of the test functions
    that call the hit's name (`test_parses_quoted_headers` calling `parse_header`), and its
    lead over the best other hit shown (`tests_lead`);
  * `summary`: the share held by the hit's docstring's (or leading comments') first
    sentence (code_semantic.summary's sentence), and its lead (`summary_lead`);
  * `body_calls`: the share held by the names its body calls;
  * `constructor`: the hit is an `__init__`; `bare_class`: a class chunk with no method.

For each signal and each group (tuning sets: own + bench_code; held-out: the seven others;
confident first hits, weak ones), it prints the right and wrong first hits' mean and the
AUC: the chance that a right first hit has more of the signal than a wrong one (0.5: the
signal does not tell them apart; a tie counts one half). A signal worth a confidence rule
has an AUC far from 0.5 on the weak first hits of both groups.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_code_confidence as bcc

from memstore.catalog import codebase
from memstore.catalog.code_evidence import Question, holding
from memstore.catalog.code_semantic import summary
from memstore.core.config import Settings
from memstore.core.model import Hit
from memstore.service.store import Store

TUNING = ("own", "bench_code")
HELD_OUT = ("pip", "rich", "starlette", "markdown", "uvicorn", "watchdog", "tqdm")
_CALL = re.compile(r"(?<![\w])([A-Za-z_]\w{2,})\s*\(")
_FROM_IMPORT = re.compile(r"^\s*from\s+([\w.]+)\s+import\s+\(?([^)\n]+)", re.M)
_IMPORT = re.compile(r"^\s*import\s+([\w., ]+)", re.M)
_TEST_DEF = re.compile(r"^[ \t]*(?:async\s+)?def (test_\w+)\s*\(", re.M)
_VENDORED = re.compile(
    r"(^|/)(_?vendor(ed)?|third_party|thirdparty|externals?|legacy|_?compat|backports?)(/|\.py$)"
    r"|(^|/)_py\w+\.py$"
)
MAX_TESTS = 200  # a name more tests call than this is a utility (`len`, `open`): no description


class Tree:
    """What a tree's files say about its definitions: who calls or imports each name, who
    imports each module, and the names of the tests that call each name."""

    def __init__(self, root: Path) -> None:
        self.callers: dict[str, set[str]] = {}
        self.importers: dict[str, set[str]] = {}
        self.tests: dict[str, list[str]] = {}
        for path in sorted(root.rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            text = path.read_text(encoding="utf-8", errors="replace")
            self._read(rel, text)

    def _read(self, rel: str, text: str) -> None:
        names = set(_CALL.findall(text))
        for module, imported in _FROM_IMPORT.findall(text):
            names.update(part.strip().split(" as ")[0] for part in imported.split(","))
            for part in [*module.split("."), *(n.strip() for n in imported.split(","))]:
                self.importers.setdefault(part.lower(), set()).add(rel)
        for modules in _IMPORT.findall(text):
            for dotted in modules.split(","):
                for part in dotted.strip().split(" as ")[0].split("."):
                    self.importers.setdefault(part.lower(), set()).add(rel)
        for name in names:
            self.callers.setdefault(name.lower(), set()).add(rel)
        if not bcc_is_test(rel):
            return
        found = list(_TEST_DEF.finditer(text))
        for at, match in enumerate(found):
            end = found[at + 1].start() if at + 1 < len(found) else len(text)
            words = match.group(1).removeprefix("test_").replace("_", " ")
            for name in set(_CALL.findall(text[match.end() : end])):
                self.tests.setdefault(name.lower(), []).append(words)

    def test_words(self, leaf: str) -> str:
        said = self.tests.get(leaf.lower(), [])
        return "" if len(said) > MAX_TESTS else "\n".join(said)


def bcc_is_test(rel: str) -> bool:
    parts = rel.split("/")
    return bool({"test", "tests"} & set(parts[:-1])) or parts[-1].startswith("test_")


def _leaf(hit: Hit) -> str:
    return hit.keywords[-1].rpartition(".")[2] if len(hit.keywords) > 1 else ""


def _file(hit: Hit) -> str:
    return hit.path.rpartition(":")[0]


def _sentence(hit: Hit) -> str:
    said = summary(hit.content)
    return said.partition(": ")[2]


def signals(hit: Hit, others: Sequence[Hit], question: Question, tree: Tree) -> dict[str, float]:
    """The evidence of `hit` (a first hit) against the other hits shown (`others`)."""
    leaf, file = _leaf(hit), _file(hit)
    stem = PurePosixPath(file).stem.lower()
    if stem == "__init__":
        stem = PurePosixPath(file).parent.name.lower()
    rivals = [other for other in others if _leaf(other) != leaf]

    def lead(read: Callable[[Hit], float]) -> float:
        own = read(hit)
        return own - max((read(other) for other in rivals), default=0.0)

    def tests(of: Hit) -> float:
        return holding(question, tree.test_words(_leaf(of)))[0] if _leaf(of) else 0.0

    def sentence(of: Hit) -> float:
        return holding(question, _sentence(of))[0]

    body = hit.content.partition("\n")[2]
    calls = " ".join(name.replace("_", " ") for name in set(_CALL.findall(body)))
    return {
        "callers": float(len(tree.callers.get(leaf.lower(), set()) - {file})) if leaf else 0.0,
        "importers": float(len(tree.importers.get(stem, set()) - {file})),
        "vendored": float(bool(_VENDORED.search(file))),
        "tests": tests(hit),
        "tests_lead": lead(tests),
        "summary": sentence(hit),
        "summary_lead": lead(sentence),
        "body_calls": holding(question, calls)[0],
        "constructor": float(leaf == "__init__"),
        "bare_class": float(
            hit.content.partition("\n")[0].split(" ")[1:2] == ["class"] and "def " not in body
        ),
    }


def auc(right: Sequence[float], wrong: Sequence[float]) -> float | None:
    """The chance that a right first hit's value exceeds a wrong one's (ties: one half)."""
    if not right or not wrong:
        return None
    wins = sum((r > w) + 0.5 * (r == w) for r in right for w in wrong)
    return round(wins / (len(right) * len(wrong)), 3)


def collect(vault: Path) -> list[dict[str, Any]]:
    """Ask every question; return each answerable one's first hit, right or not, confident or
    not, and its signals."""
    roots = {ws: vault.parent / f"tree-{ws}" for ws in bcc.trees()}
    trees: dict[str, Tree] = {}
    asked: list[Question] = []
    real = codebase.ranked

    def spy(found: Any, text: str, limit: int, question: Question, *rest: Any) -> list[Hit]:
        asked.append(question)  # the question's weights, as the ranking read them
        return real(found, text, limit, question, *rest)

    codebase.ranked = spy  # type: ignore[assignment]  # a benchmark's probe, never the product
    settings = Settings(vault=vault, source="bench", session="bench", host="bench", semantic="")
    out = []
    try:
        with Store.open(settings) as store:
            for q in bcc.load_questions():
                if not q["answers"] or q["set"] not in (*TUNING, *HELD_OUT):
                    continue
                root = roots[q["workspace"]]
                spans = bcc.spans_of(root, q["answers"])
                asked.clear()
                found = store.search(
                    q["question"], workspace=q["workspace"], k=bcc.K, catch_up=False
                )
                hits = [hit for hit in found.hits if hit.kind == "code"]
                if not spans or not hits or not asked:
                    continue
                if q["workspace"] not in trees:
                    trees[q["workspace"]] = Tree(root)
                out.append(
                    {
                        "set": q["set"],
                        "question": q["question"],
                        "right": bcc.answers(hits[0], spans),
                        "confident": not hits[0].weak,
                        **signals(hits[0], hits[1:], asked[0], trees[q["workspace"]]),
                    }
                )
    finally:
        codebase.ranked = real
    return out


def table(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per signal and group: right and wrong first hits' means and the AUC."""
    names = [key for key in rows[0] if key not in ("set", "question", "right", "confident")]
    result: dict[str, Any] = {}
    for group, sets in (("tuning", TUNING), ("held-out", HELD_OUT)):
        for confident in (True, False):
            chosen = [r for r in rows if r["set"] in sets and r["confident"] == confident]
            label = f"{group} {'confident' if confident else 'weak'}"
            right = [r for r in chosen if r["right"]]
            wrong = [r for r in chosen if not r["right"]]
            entry: dict[str, Any] = {"right": len(right), "wrong": len(wrong)}
            for name in names:
                r_values = [float(r[name]) for r in right]
                w_values = [float(r[name]) for r in wrong]
                entry[name] = {
                    "right_mean": round(sum(r_values) / len(r_values), 3) if r_values else None,
                    "wrong_mean": round(sum(w_values) / len(w_values), 3) if w_values else None,
                    "auc": auc(r_values, w_values),
                }
            result[label] = entry
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vault", type=Path, required=True, help="bench_code_confidence's vault")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args(argv)
    vault = args.vault.resolve()
    bcc.build_vault(vault)  # the trees a kept vault lacks
    result = table(collect(vault))
    for label, entry in result.items():
        print(f"{label}: {entry['right']} right, {entry['wrong']} wrong first hits")
        for name, figures in entry.items():
            if isinstance(figures, dict):
                print(
                    f"  {name:13} right {figures['right_mean']}  wrong {figures['wrong_mean']}"
                    f"  AUC {figures['auc']}"
                )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
