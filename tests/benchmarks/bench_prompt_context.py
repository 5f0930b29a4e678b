"""Measure what the UserPromptSubmit hook puts in an agent's context, on the sample vault.

Each prompt is a sentence a developer might type. "answerable" prompts name a memory file
(by its id) that should appear; "off-topic" prompts share some words with the vault but are
not answered by it and should add nothing. For several coverage thresholds this prints how
many answerable prompts get their memory into the context, and how many off-topic prompts
stay silent. The hook puts the confident tier in context (memstore.core.ranking.confident,
docs/retrieval.md step 7); the other rows show simpler rules for comparison.

The natural-language set (tests/data/prompts-natural.json: chatty prompts and prompts with
typos, written for issue 13) is measured beside the original one; `-v` lists every prompt
the hook answers wrongly or not at all.

Run:  python tests/benchmarks/bench_prompt_context.py [-v]
      PYTHONPATH=<other checkout> python tests/benchmarks/bench_prompt_context.py  (before)
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path

from memstore.core.config import Settings
from memstore.core.model import Hit, SearchResult
from memstore.service.store import Store, init_vault
from memstore.vault.git import GitRepo, Trailers

SAMPLE = Path(__file__).resolve().parents[2] / "sample-vault"
NATURAL = Path(__file__).resolve().parents[1] / "data" / "prompts-natural.json"

ANSWERABLE = [
    ("why does upload fail with 413 in nginx?", "mfjscswv"),
    ("how do I deploy the webshop to staging", "ttyrydda"),
    ("the checkout spec is flaky again, any idea?", "wrjpxql3"),
    ("which port does local postgres use?", "4gygiocu"),
    ("how should I store money amounts", "6d5fqblr"),
    ("next build runs out of heap memory in CI", "epi3cwez"),
    ("prisma migrate fails with P3009", "jrb5xa2k"),
    ("stripe webhook signature verification fails", "tpa6kq55"),
    ("kafka consumer keeps rebalancing", "eazbqdsa"),
    ("pytest hangs with testcontainers", "5hphxpc5"),
    ("dbt says duplicate model name stg_orders", "2brrltk3"),
    ("how do I backfill the orders dag in airflow 3", "wsxcheyz"),
    ("cert-manager certificate stuck issuing", "7xs3vv32"),
    ("pod crashloops after the upgrade", "z5654i4j"),
    ("docker push to ECR says no basic auth credentials", "lbcir3nu"),
    ("pgbouncer pool saturated and latency spikes", "enpaip3g"),
    ("where is the terraform state for prod now", "4swkexl5"),
    ("android 14 crashes when starting a foreground service", "oas5l4jj"),
    ("ios build fails, signing certificates expired", "yymwfwom"),
    ("metro cannot resolve modules with pnpm", "3iy6qw5j"),
    ("gradle error class file version 65", "z6dl5ake"),
    ("pod install fails on apple silicon with ffi", "idwlhzrn"),
    ("docker build is really slow", "ovdkt3hk"),
    ("git commit fails: author identity unknown", "zzyy3qcu"),
    ("the venv broke after brew upgrade", "l6cvwt5v"),
    ("can I force push to main?", "6msigexx"),
    ("should I use npm or pnpm here", "fjhw3bbp"),
    ("how do I get secrets locally, 1password?", "hmbxir64"),
]
OFF_TOPIC = [
    "write a haiku about autumn leaves",
    "what is the capital of australia",
    "refactor this function to use a dataclass",
    "explain the difference between a process and a thread",
    "add a dark mode toggle to the settings page",
    "how do I center a div with flexbox",
    "translate this error message into french",
    "what does the upload button look like on mobile",
    "rename the variable count to total in this file",
    "why is the sky blue",
    "summarize the last meeting notes",
    "generate a regex for email addresses",
    "what time zone is the sprint review in",
    "how many tests are in this repository",
    "make the logo bigger on the landing page",
    # near-topic: they share words with stored memories, but no memory answers them
    "how do I publish the mobile app to the play store",
    "what port does redis use in production",
    "why does the kafka producer drop messages",
    "how do I upgrade postgres to version 16",
    "terraform module for a static s3 website",
    "stripe refund api rate limits",
    "docker compose network between two containers",
    "nginx rate limiting config for the api",
    "pytest fixture scope session vs module",
    "airflow sensor timeout for an external task",
    "gradle build cache on ci",
    "the ios app icon looks blurry",
]


def build_vault() -> Path:
    root = Path(tempfile.mkdtemp(prefix="memstore-context-")) / "vault"
    settings = Settings(vault=root, source="bench", session="bench", host="bench")
    init_vault(root, settings)
    for item in SAMPLE.iterdir():
        if item.is_dir():
            shutil.copytree(item, root / item.name)
    with Store.open(settings) as store:
        paths = tuple(sorted(store.vault.scan()))
    GitRepo.open(root).commit("import sample", Trailers("bench", "bench", "bench"), add=paths)
    return root


def shown(result: SearchResult, threshold: float | None) -> list[Hit]:
    """The hits that would enter the context: the confident tier (threshold None, what the
    hook uses), or, for comparison, strict hits plus weak hits of at least this coverage."""
    if threshold is None:
        return [h for h in result.hits if not h.weak]
    return [h for h in result.hits if h.view.startswith("lexical") or h.coverage >= threshold]


def natural_prompts(tag: str = "") -> tuple[list[tuple[str, str]], list[str]]:
    """Return the natural-language set's answerable (prompt, id) pairs and off-topic prompts,
    those with `tag` only when given."""
    data = json.loads(NATURAL.read_text(encoding="utf-8"))
    answerable = [
        (q["prompt"], q["want"]) for q in data["answerable"] if not tag or tag in q["tags"]
    ]
    off_topic = [q["prompt"] for q in data["off_topic"] if not tag or tag in q["tags"]]
    return answerable, off_topic


def measure(
    store: Store, name: str, answerable: list[tuple[str, str]], off_topic: list[str], verbose: bool
) -> None:
    """Print, for each rule, how many answerable prompts reach their memory and how many
    off-topic prompts stay silent."""
    answers = [(store.search(p, workspace=None, k=5), want) for p, want in answerable]
    noise = [store.search(p, workspace=None, k=5) for p in off_topic]
    print(f"\n{name}: {len(answerable)} answerable prompts, {len(off_topic)} off-topic prompts")
    print("rule                         answered-in-context  off-topic-silent")
    rules: list[tuple[str, float | None]] = [("confident tier (in use)", None)]
    rules += [(f"coverage >= {t:.1f}", t) for t in (0.4, 0.5, 0.6, 0.7, 0.8)]
    rules.append(("strict only", 1.01))
    for label, threshold in rules:
        answered = sum(any(h.id == want for h in shown(r, threshold)) for r, want in answers)
        silent = sum(not shown(r, threshold) for r in noise)
        print(
            f"{label:28s} {answered:3d}/{len(answerable)} ({answered / len(answerable):.0%})"
            f"        {silent:3d}/{len(off_topic)} ({silent / len(off_topic):.0%})"
        )
    if verbose:
        for (prompt, want), (result, _) in zip(answerable, answers, strict=True):
            ids = [h.id for h in shown(result, None)]
            if want not in ids:
                print(f"  missed  {prompt!r}: want {want}, context {ids}")
        for prompt, result in zip(off_topic, noise, strict=True):
            if shown(result, None):
                print(f"  noise   {prompt!r}: context {[h.id for h in shown(result, None)]}")


def arguments() -> argparse.Namespace:
    """Read the command line (`--help` prints the module's text)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("-v", action="store_true", help="list every prompt answered wrongly")
    return parser.parse_args()


def main() -> None:
    verbose = arguments().v
    root = build_vault()
    settings = Settings(vault=root, source="bench", session="bench", host="bench")
    with Store.open(settings) as store:
        measure(store, "benchmark (sample vault)", ANSWERABLE, OFF_TOPIC, verbose)
        for tag, name in (("", "natural-language set"), ("typo", "  of which with typos")):
            answerable, off_topic = natural_prompts(tag)
            measure(store, name, answerable, off_topic, verbose)
        answerable, off_topic = natural_prompts()
        measure(store, "both sets", ANSWERABLE + answerable, OFF_TOPIC + off_topic, verbose=False)
    shutil.rmtree(root.parent)


if __name__ == "__main__":
    main()
