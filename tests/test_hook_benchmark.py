"""tests/benchmarks/bench_hook.py: the prompt set, the judging, and the issue's examples through the real hook."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parent / "benchmarks" / "bench_hook.py"
NOT_YET = pytest.mark.xfail(
    strict=True,
    reason="issue 38: a port one digit off (5432 asked, 5433 stored) is no evidence yet",
)


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_hook", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_hook"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


bench = _load()


def _prompt(vault: str, workspace: str | None, text: str) -> Any:
    found = [
        p
        for p in bench.load_prompts()
        if (p.vault, p.workspace, p.text) == (vault, workspace, text)
    ]
    assert len(found) == 1, f"the set has no prompt {text!r} in {vault}/{workspace}"
    return found[0]


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Any, Path]]:
    where = tmp_path_factory.mktemp("bench-hook")
    with bench.sample_vault(where) as (store, vault):
        yield store, vault, where


# -- the set -----------------------------------------------------------------------------


def test_the_set_has_the_sizes_issue_38_asks_for() -> None:
    prompts = bench.load_prompts()
    answerable = [p for p in prompts if p.answerable]
    assert len(prompts) >= 150 and len(answerable) >= 100 and len(prompts) - len(answerable) >= 50
    for vault in bench.VAULTS:
        mine = [p for p in prompts if p.vault == vault]
        assert any(p.answerable for p in mine) and not all(p.answerable for p in mine)
    corpus = json.loads(bench.LARGE.read_text(encoding="utf-8"))["corpus"]
    assert 250 <= len(corpus) <= 400
    assert any(m.get("supersedes") for m in corpus)


def test_every_label_names_a_memory_the_prompts_workspace_can_see() -> None:
    prompts = bench.load_prompts()
    corpus = bench.load_fixture(bench.LARGE)["corpus"]
    bench.check_labels([p for p in prompts if p.vault == "large"], bench.read_large_vault(corpus))
    bench.check_labels([p for p in prompts if p.vault == "sample"], bench.read_sample_vault())


HELD_OUT = [  # (prompts, the vault they run over): each set nobody tuned on
    ("prompts-heldout2.json", "prompts-heldout2-vault.json"),
    ("prompts-heldout3.json", "prompts-heldout2-vault.json"),
    ("prompts-heldout4.json", "prompts-heldout4-vault.json"),
    ("prompts-heldout5.json", "prompts-heldout5-vault.json"),
    ("prompts-heldout6.json", "prompts-heldout6-vault.json"),
    ("prompts-heldout7.json", "prompts-heldout7-vault.json"),
    ("prompts-heldout8.json", "prompts-heldout8-vault.json"),
]


@pytest.mark.parametrize(("prompts", "vault"), HELD_OUT)
def test_every_held_out_label_names_a_memory_the_prompts_workspace_can_see(
    prompts: str, vault: str
) -> None:
    data = SCRIPT.parents[1] / "data"
    corpus = bench.load_fixture(data / vault)["corpus"]
    found = bench.load_prompts(data / prompts)
    assert found and all(p.vault == "large" for p in found)
    bench.check_labels(found, bench.read_large_vault(corpus))


def test_a_label_outside_the_prompts_workspace_is_refused() -> None:
    vault = bench.read_sample_vault()
    wrong = bench.Prompt("x", "sample", "mobile-app", "413 on upload", must="mfjscswv")
    with pytest.raises(ValueError, match="not visible from mobile-app"):
        bench.check_labels([wrong], vault)


# -- judging (pure) ----------------------------------------------------------------------

DEPLOY = {"old": frozenset({"new"})}  # "new" supersedes "old"


def test_a_superseded_memory_injected_without_its_correction_is_wrong() -> None:
    prompt = bench.Prompt("p", "sample", None, "deploy?", must="new", acceptable=frozenset({"old"}))
    outcome = bench.judge(prompt, ["old"], DEPLOY)
    assert outcome.stale == ["old"] and outcome.wrong == ["old"] and not outcome.answered


def test_a_superseded_memory_beside_its_correction_is_acceptable() -> None:
    prompt = bench.Prompt("p", "sample", None, "deploy?", must="new", acceptable=frozenset({"old"}))
    outcome = bench.judge(prompt, ["new", "old"], DEPLOY)
    assert outcome.stale == [] and outcome.wrong == [] and outcome.answered


def test_anything_injected_for_a_silent_prompt_is_wrong_and_precision_counts_it() -> None:
    silent = bench.Prompt("s", "sample", None, "make me a sandwich", must=None)
    asked = bench.Prompt("a", "sample", None, "413?", must="m", relevant=frozenset({"r"}))
    outcomes = [bench.judge(silent, ["m"], {}), bench.judge(asked, ["m", "r", "x"], {})]
    figures = bench.summarize(outcomes)
    assert figures["injected"] == 4 and figures["wrong"] == 2 and figures["precision"] == 0.5
    assert figures["answered"] == 1.0 and figures["silent"] == 0.0


# -- the real hook ---------------------------------------------------------------------


def test_the_benchmark_runs_every_sample_prompt_through_the_hook(
    sample: tuple[Any, Any, Path],
) -> None:
    store, vault, where = sample
    prompts = [p for p in bench.load_prompts() if p.vault == "sample"]
    outcomes = bench.run_prompts(store, vault, prompts, where)
    assert [o.prompt for o in outcomes] == prompts
    known = set(vault.labels.values())
    assert all(set(o.injected) <= known for o in outcomes)  # every injected id was read back
    figures = bench.summarize(outcomes)
    assert figures["prompts"] == len(prompts) and 0 <= figures["precision"] <= 1
    lines = bench.report_lines({"sample": outcomes}, verbose=True)
    assert lines[1].startswith("sample") and lines[2].startswith("overall")


OWN_TEXT = bench.SAMPLE / "webshop" / "deploy-staging-via-deploy-script-ttyrydda.md"


def test_a_prompt_that_is_a_memorys_own_text_injects_it(sample: tuple[Any, Any, Path]) -> None:
    store, vault, where = sample
    text = OWN_TEXT.read_text(encoding="utf-8").split("---\n")[2]
    prompt = bench.Prompt("own", "sample", "webshop", text, must="ttyrydda")
    (outcome,) = bench.run_prompts(store, vault, [prompt], where)
    assert outcome.answered


def test_the_workspace_limits_what_the_hook_sees(sample: tuple[Any, Any, Path]) -> None:
    store, vault, where = sample
    text = OWN_TEXT.read_text(encoding="utf-8").split("---\n")[2]
    prompt = bench.Prompt("elsewhere", "sample", "mobile-app", text, must=None)
    (outcome,) = bench.run_prompts(store, vault, [prompt], where)
    assert "ttyrydda" not in outcome.injected


ISSUE_EXAMPLES = [
    pytest.param("webshop", "file uploads over 1MB fail with 413, can you fix the upload limit?"),
    pytest.param("webshop", "why does make deploy ENV=staging fail"),
    pytest.param(
        "webshop",
        "deploy failed: Error: P3009 migrate found failed migrations in the target database",
    ),
    pytest.param(
        "data-pipeline",
        "pytest just hangs forever in CI, last thing in the log is something about ryuk",
    ),
    pytest.param("webshop", "checkout.spec.ts failed again on main, can you take a look"),
    pytest.param(
        "webshop",
        "psql -h localhost -p 5432 -U shop gives connection refused, is the db even running?",
        marks=NOT_YET,
    ),
    pytest.param("webshop", "the api can't connect to postgres at localhost:5432"),
    pytest.param("infra", "run terraform apply for prod"),
    pytest.param("webshop", "npm i lodash-es"),
    pytest.param("webshop", "make me a sandwich"),
    pytest.param("webshop", "who makes the coffee here?"),
    pytest.param(None, "who makes the coffee here?"),
    pytest.param("data-pipeline", "why do big uploads fail"),
]


@pytest.mark.parametrize(("workspace", "text"), ISSUE_EXAMPLES)
def test_the_issue_example_gets_its_memory_and_nothing_wrong(
    sample: tuple[Any, Any, Path], workspace: str | None, text: str
) -> None:
    store, vault, where = sample
    (outcome,) = bench.run_prompts(store, vault, [_prompt("sample", workspace, text)], where)
    assert outcome.wrong == []
    assert outcome.answered if outcome.prompt.answerable else outcome.silent


def test_the_readme_example_injects_the_413_lesson_and_not_the_s3_note(tmp_path: Path) -> None:
    prompt = _prompt(
        "large", "shop-web", "file uploads over 1MB fail with 413, can you fix the upload limit?"
    )
    # The README's lesson, the S3 note that shares "upload", and the global notes beside them.
    with bench.large_vault(tmp_path, only=("s001", "s002", "c001", "c002")) as (store, vault):
        (outcome,) = bench.run_prompts(store, vault, [prompt], tmp_path)
    assert "s001" in outcome.injected and "s002" not in outcome.injected
