"""`memstore eval`: measure recall on a fixture, through the real write and recall paths.

The fixture is loaded into a throwaway vault with Store.add and every query runs through
Store.recall, with the clock pinned so decay and recency are the same on every run.

Fixture (JSON): {corpus: [{id, content, kind, keywords, age_days, seen_count?, supersedes?,
workspace?}],
queries: [{id, text, relevant: [ids], tags?}]}; an empty `relevant` marks an off-corpus query.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from memstore.core.config import SEMANTIC_ON, Settings
from memstore.core.errors import InvalidInputError
from memstore.core.model import ADDABLE_KINDS, Caller
from memstore.ops.output import count
from memstore.ops.parameters import JsonOption, emit_json, shell_settings
from memstore.service.store import Store

EPOCH = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)  # "now" for every evaluation run
WORKSPACE = "eval"
Tier = Literal["confident", "weak"]  # how a ranked hit was judged
DEFAULT_FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "recall-eval.json"
commands = typer.Typer()


@dataclass
class QueryResult:
    id: str
    text: str
    relevant: list[str]
    ranked: list[str]  # fixture ids, best first
    tiers: list[Tier]  # per ranked hit
    views: list[str]  # which view found each hit
    tags: list[str] = field(default_factory=list)

    @property
    def rank(self) -> int | None:
        """1-based rank of the first relevant hit, None if none is in the results."""
        return next((n for n, hit in enumerate(self.ranked, 1) if hit in self.relevant), None)


@dataclass
class Report:
    memories: int
    answerable: int
    off_corpus: int
    recall_at_1: float
    recall_at_3: float
    recall_at_5: float
    mrr_at_5: float
    confident_correct_first: float  # answerable queries whose first hit is relevant and confident
    off_corpus_empty: float  # off-corpus queries with no result at all
    off_corpus_no_confident: float  # off-corpus queries with no confident result
    first_hit_views: dict[str, int]
    queries: list[QueryResult]
    views_run: list[str] = field(default_factory=list)  # the views recall ran with


class _Clock:
    def __init__(self) -> None:
        self.now = EPOCH

    def __call__(self) -> datetime:
        return self.now


def load_fixture(path: Path) -> dict[str, Any]:
    """Read and check a fixture; a malformed one is a one-line error naming the problem."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise InvalidInputError(f"cannot read fixture {path}: {err}") from err
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("corpus"), list)
        or not isinstance(data.get("queries"), list)
    ):
        raise InvalidInputError(
            f"fixture {path} needs 'corpus' and 'queries' lists; see docs/retrieval.md"
        )
    ids = {m.get("id") for m in data["corpus"]}
    for item in data["corpus"]:
        if (
            not item.get("id")
            or not item.get("content")
            or item.get("kind", "note") not in ADDABLE_KINDS
        ):
            raise InvalidInputError(
                f"fixture memory {item.get('id')!r} needs an id, content and a kind of {ADDABLE_KINDS}"
            )
        if set(item.get("supersedes", [])) - ids:
            raise InvalidInputError(
                f"fixture memory {item['id']!r} supersedes an id not in the corpus"
            )
    for query in data["queries"]:
        if not query.get("id") or not query.get("text") or set(query.get("relevant", [])) - ids:
            raise InvalidInputError(
                f"fixture query {query.get('id')!r} needs an id, text and relevant ids from the corpus"
            )
    return data


def evaluate(fixture: dict[str, Any], *, k: int = 5, semantic: str = "") -> Report:
    """Run the fixture in a throwaway vault and return the measurements.

    `semantic` is Settings.semantic: "" lexical only, SEMANTIC_ON or a model folder for the
    semantic view (as MEMSTORE_SEMANTIC / MEMSTORE_SEMANTIC_MODEL set it for recall).
    """
    root = Path(tempfile.mkdtemp(prefix="memstore-eval-")) / "vault"
    clock = _Clock()
    settings = Settings(vault=root, source="eval", session="eval", host="eval", semantic=semantic)
    try:
        with Store.open(settings, create=True, clock=clock) as store:
            to_fixture = _load_corpus(store, fixture["corpus"], clock)
            clock.now = EPOCH
            results = [_run_query(store, query, to_fixture, k) for query in fixture["queries"]]
    finally:
        shutil.rmtree(root.parent, ignore_errors=True)
    report = _report(len(fixture["corpus"]), results)
    report.views_run = views_run(semantic)
    return report


def views_run(semantic: str) -> list[str]:
    """Name the views recall runs with the semantic setting `semantic`."""
    views = ["lexical", "any-word", "entity"]
    if semantic:
        views.append("semantic" if semantic == SEMANTIC_ON else f"semantic ({semantic})")
    return views


def _load_corpus(store: Store, corpus: list[dict[str, Any]], clock: _Clock) -> dict[str, str]:
    """Add every memory through Store.add (oldest corrections first); return id → fixture id.

    A fixture's memories were written over months by many sessions: each records the
    session its `session` names, else one of its own (one session for the whole corpus
    would make memories a year apart each other's context: catalog/sessions.py)."""
    by_fixture: dict[str, str] = {}
    pending = sorted(corpus, key=lambda m: -int(m.get("age_days", 0)))
    while pending:
        ready = [m for m in pending if set(m.get("supersedes", [])) <= set(by_fixture)]
        if not ready:
            raise InvalidInputError("fixture supersedes links form a cycle")
        for item in ready:
            clock.now = EPOCH - timedelta(days=int(item.get("age_days", 0)))
            for _ in range(max(int(item.get("seen_count", 1)), 1)):
                added = store.add(
                    item["content"],
                    workspace=item.get("workspace", WORKSPACE),
                    kind=item.get("kind", "note"),
                    keywords=tuple(item.get("keywords", ())),
                    supersedes=tuple(by_fixture[s] for s in item.get("supersedes", [])),
                    caller=Caller("eval", str(item.get("session") or f"eval-{item['id']}"), "eval"),
                )
            by_fixture[item["id"]] = added.id
            pending.remove(item)
    return {memory_id: fixture_id for fixture_id, memory_id in by_fixture.items()}


def _run_query(
    store: Store, query: dict[str, Any], to_fixture: dict[str, str], k: int
) -> QueryResult:
    found = store.recall(query["text"], workspace=WORKSPACE, k=k)
    return QueryResult(
        id=query["id"],
        text=query["text"],
        relevant=list(query.get("relevant", [])),
        ranked=[to_fixture.get(hit.id, hit.id) for hit in found.hits],
        tiers=[_tier(hit.weak) for hit in found.hits],
        views=[hit.view for hit in found.hits],
        tags=list(query.get("tags", [])),
    )


def _report(memories: int, results: list[QueryResult]) -> Report:
    answerable = [r for r in results if r.relevant]
    off = [r for r in results if not r.relevant]

    def share(items: list[QueryResult], test: Any) -> float:
        return round(sum(1 for r in items if test(r)) / len(items), 4) if items else 0.0

    views: dict[str, int] = {}
    for r in answerable:
        view = r.views[0] if r.views else "none"
        views[view] = views.get(view, 0) + 1
    return Report(
        memories=memories,
        answerable=len(answerable),
        off_corpus=len(off),
        recall_at_1=share(answerable, lambda r: r.rank is not None and r.rank <= 1),
        recall_at_3=share(answerable, lambda r: r.rank is not None and r.rank <= 3),
        recall_at_5=share(answerable, lambda r: r.rank is not None and r.rank <= 5),
        mrr_at_5=round(sum(1 / r.rank for r in answerable if r.rank) / len(answerable), 4)
        if answerable
        else 0.0,
        confident_correct_first=share(
            answerable, lambda r: r.rank == 1 and r.tiers[0] == "confident"
        ),
        off_corpus_empty=share(off, lambda r: not r.ranked),
        off_corpus_no_confident=share(off, lambda r: "confident" not in r.tiers),
        first_hit_views=dict(sorted(views.items())),
        queries=results,
    )


def report_json(report: Report) -> dict[str, Any]:
    data = asdict(report)
    for query, result in zip(data["queries"], report.queries, strict=True):
        query["rank"] = result.rank
        query["hits"] = [
            {"id": hit, "tier": tier, "view": view}
            for hit, tier, view in zip(result.ranked, result.tiers, result.views, strict=True)
        ]
        for key in ("ranked", "tiers", "views"):
            del query[key]
    return data


def report_lines(report: Report) -> list[str]:
    lines = [
        "views: "
        + ", ".join(report.views_run)
        + ("" if any(v.startswith("semantic") for v in report.views_run) else " (semantic off)"),
        f"{count(report.memories, 'memory', 'memories')}, "
        f"{count(report.answerable, 'answerable query', 'answerable queries')}, "
        f"{report.off_corpus} off-corpus",
        f"recall@1 {report.recall_at_1:.3f}   recall@3 {report.recall_at_3:.3f}   recall@5 {report.recall_at_5:.3f}   MRR@5 {report.mrr_at_5:.3f}",
        f"answerable with a confident, correct first hit: {report.confident_correct_first:.1%}",
        f"off-corpus with no result: {report.off_corpus_empty:.1%}; with no confident result: {report.off_corpus_no_confident:.1%}",
        "first hit found by: "
        + ", ".join(f"{view} {n}" for view, n in report.first_hit_views.items()),
    ]
    misses = [r for r in report.queries if r.relevant and r.rank != 1]
    if misses:
        lines.append(f"answerable queries without the right first hit ({len(misses)}):")
        lines += [f"  {r.id} {r.text!r}: want {r.relevant}, got {r.ranked[:3]}" for r in misses]
    noisy = [r for r in report.queries if not r.relevant and "confident" in r.tiers]
    if noisy:
        lines.append(f"off-corpus queries with a confident hit ({len(noisy)}):")
        lines += [
            f"  {r.id} {r.text!r}: {r.ranked[: r.tiers.index('confident') + 1]}" for r in noisy
        ]
    return lines


@commands.command("eval")
def eval_command(
    fixture: Annotated[
        Path | None,
        typer.Option(
            "--fixture",
            help="Fixture JSON (default: the shipped recall-eval.json).",
            show_default=False,
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Measure recall on a fixture in a throwaway vault: recall@k, MRR, off-corpus silence.

    Recall runs as MEMSTORE_SEMANTIC (and MEMSTORE_SEMANTIC_MODEL) set it, and the report
    names the views that ran.

    Example:  MEMSTORE_SEMANTIC=on memstore eval --json > eval.json
    """
    semantic = shell_settings(None).semantic  # MEMSTORE_SEMANTIC, as search reads it
    report = evaluate(load_fixture(fixture or DEFAULT_FIXTURE), semantic=semantic)
    if as_json:
        emit_json(report_json(report))
    else:
        typer.echo("\n".join(report_lines(report)))


def _tier(weak: bool) -> Tier:
    return "weak" if weak else "confident"
