"""memstore ingest: source trees chunked into the index, re-ingested at the cost of the change."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mcp import Client
from typer.testing import CliRunner

from memstore.catalog import sources
from memstore.catalog.code_manifest import CodeManifest
from memstore.catalog.codebase import CODE_DIR, ROOTS_FILE, distinct
from memstore.core.model import Hit
from memstore.core.ranking import HIT_OVERHEAD_TOKENS, estimate_tokens
from memstore.daemon.watcher import Watcher
from memstore.launcher import typer_app
from memstore.ops import client
from memstore.service.store import Store
from tests.conftest import (
    blocked_s,
    git,
    invoke_memstore,
    settings_at,
    vault_bytes,
    wait_until,
)
from tests.daemon import test_daemon
from tests.daemon.test_daemon import env as daemons_allowed  # noqa: F401 (a fixture)
from tests.daemon.test_daemon import make_vault, requests_served, status
from tests.mcp.test_mcp import stdio

app = typer_app()  # every shell's commands, as the executable has them


def run(
    env: dict[str, str], *args: str, stdin: str | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run a command in `env`: where no daemon may answer, the executable's `main` in this
    process; else the installed executable (which asks the daemon or starts one)."""
    if env.get("MEMSTORE_NO_DAEMON") == "1":
        return invoke_memstore(*args, env=env, stdin=stdin, cwd=cwd)
    return test_daemon.run(env, *args, stdin=stdin, cwd=cwd)


runner = CliRunner()

BILLING = '''"""Billing webhooks."""

import hmac


def validate_webhook_signature(payload: bytes, signature: str, secret: bytes) -> bool:
    """Check the provider's HMAC before trusting a webhook."""
    expected = hmac.new(secret, payload, "sha256").hexdigest()
    return hmac.compare_digest(expected, signature)


class InvoiceMailer:
    def send_invoice(self, invoice_id: str) -> None:
        print("mailing", invoice_id)
'''

SERVER_GO = """package server

// Handle answers one upload request.
func (s *Server) Handle(w http.ResponseWriter, r *http.Request) {
	limit := s.maxUploadBytes
	http.MaxBytesReader(w, r.Body, limit)
}
"""


def make_repo(path: Path, files: dict[str, str]) -> Path:
    path.mkdir(parents=True)
    for name, text in files.items():
        target = path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    git(path, "init", "-q")
    git(path, "add", "-A")
    git(path, "commit", "-qm", "code")
    for name in files:  # written long ago: not "racy" (changed too recently to trust a stat)
        os.utime(path / name, ns=(10**18, 10**18))
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(
        tmp_path / "webshop",
        {
            "billing/webhooks.py": BILLING,
            "server/upload.go": SERVER_GO,
            "README.md": "# webshop\n\nUploads and billing.\n",
            ".gitignore": "build/\n",
            "build/generated.py": "def generated_validate_webhook_signature(): pass\n",
        },
    )


def cli(vault: Path, *args: str) -> tuple[int, str]:
    """Run memstore in-process; a refusal (raised to the launcher, which prints it) is
    returned as the output."""
    result = runner.invoke(app, list(args), env={"MEMSTORE_VAULT": str(vault)})
    return result.exit_code, result.output + (str(result.exception) if result.exit_code else "")


def ingest(vault: Path, *args: str) -> dict[str, object]:
    code, output = cli(vault, "ingest", *args, "--json")
    assert code == 0, output
    data: dict[str, object] = json.loads(output)
    return data


def test_ingest_chunks_a_repository_and_search_shows_where(vault: Path, repo: Path) -> None:
    first = ingest(vault, str(repo), "-w", "webshop")
    assert first["files_scanned"] == 4  # git lists the tracked files; build/ is ignored
    # webhooks.py: its imports, the function, the class; upload.go: package line, method;
    # README.md and .gitignore: a window each
    assert (first["files_read"], first["created"]) == (4, 7)
    assert (first["updated"], first["unchanged"], first["removed"]) == (0, 0, 0)
    code, output = cli(vault, "search", "validate", "webhook", "signature", "-w", "webshop")
    assert code == 0, output
    first_line = output.splitlines()[0]
    assert first_line.startswith("billing/webhooks.py:6-9 function validate_webhook_signature")
    assert "webshop · code ·" in first_line
    assert "generated" not in output  # ignored by .gitignore, so never ingested
    # the vault itself is untouched: chunks are derived state under .memstore/
    assert not any("webhooks" in name for name in vault_bytes(vault))
    assert (vault / ".memstore" / CODE_DIR).is_dir()


TOKEN = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"  # a GitHub token's shape


def test_files_that_hold_credentials_are_skipped_and_their_old_chunks_removed(
    vault: Path, repo: Path
) -> None:
    """`memstore ingest` chunked `.mcp.json` (its servers' tokens) and `.env`, and search
    showed the token (trial 14). Such files are skipped by name, and a config file (by
    suffix) whose text holds a credential by its content; placeholders (`.env.example`)
    and code named after secrets (`secrets.py`) are still read. A file chunked before is
    dropped at the next ingest."""
    mcp_config = {"mcpServers": {"gh": {"command": "gh-mcp", "env": {"GITHUB_TOKEN": TOKEN}}}}
    files = {
        ".mcp.json": json.dumps(mcp_config),
        ".env": f"GITHUB_TOKEN={TOKEN}\n",
        "deploy/settings.yml": f"deploy:\n  token: {TOKEN}\n",
        ".env.example": "GITHUB_TOKEN=\n",
        "billing/secrets.py": "def rotate_keys():\n    return 'rotated'\n",
    }
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text, encoding="utf-8")
    summary = ingest(vault, str(repo), "-w", "webshop")
    assert summary["files_skipped"] == {"may hold credentials": 3}
    code, listed = cli(vault, "list", "--kind", "code", "-n", "0")
    assert code == 0 and ".env.example:" in listed and "billing/secrets.py:" in listed
    for searched in ("GITHUB_TOKEN", "mcpServers gh", "deploy token"):
        assert TOKEN not in cli(vault, "search", searched, "--all")[1]
    assert not any(f"{name}:" in listed for name in (".mcp.json", ".env ", "settings.yml"))
    # a file chunked before this rule (or before it held a token): gone at the next ingest
    (repo / "deploy" / "settings.yml").write_text("deploy:\n  region: eu\n", encoding="utf-8")
    ingest(vault, str(repo), "-w", "webshop")
    (repo / "deploy" / "settings.yml").write_text(f"token: {TOKEN}\n", encoding="utf-8")
    again = ingest(vault, str(repo), "-w", "webshop")
    assert again["removed"] == 1 and "settings.yml:" not in cli(vault, "list", "--kind", "code")[1]


MAIL_KEY = (
    "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"  # SendGrid's shape
)


def test_a_key_in_a_source_file_is_masked_in_the_index_and_every_hit(
    vault: Path, repo: Path
) -> None:
    """A source file is no credential file: it is chunked, but the key it holds was kept in
    the index and shown whole by search and recall (fifteenth session). The chunk's text is
    masked as the scanner reads it; the rest of the function is still found and shown."""
    source = (
        "def mail_settings():\n"
        '    """Return the settings of outgoing invoice mail."""\n'
        f'    api_key = "{MAIL_KEY}"\n'
        '    return {"key": api_key, "sender": "billing@example.org"}\n'
    )
    (repo / "billing" / "mail.py").write_text(source, encoding="utf-8")
    git(repo, "add", "-A")
    summary = ingest(vault, str(repo), "-w", "webshop")
    assert summary["files_skipped"] == {}  # chunked: a source file, not a credential file
    code, output = cli(vault, "search", "outgoing", "invoice", "mail", "settings", "-w", "webshop")
    assert code == 0 and output.startswith("billing/mail.py:1-4 function mail_settings"), output
    assert "[secret: a SendGrid API key]" in output and "billing@example.org" in output
    for searched in (MAIL_KEY, MAIL_KEY.split(".")[1], "api_key mail_settings"):
        found = json.loads(cli(vault, "search", searched, "--all", "--json")[1])["results"]
        assert MAIL_KEY.split(".")[1] not in json.dumps(found)
    assert any("mail_settings" in hit["content"] for hit in found)  # the last: found, masked
    again = ingest(vault, str(repo), "-w", "webshop")  # masked text: still unchanged
    assert (again["created"], again["updated"]) == (0, 0)


def test_reingest_costs_the_change(vault: Path, repo: Path) -> None:
    first = ingest(vault, str(repo), "-w", "webshop")
    total = int(str(first["created"]))
    # nothing changed: no file read, no chunk redone
    again = ingest(vault, str(repo), "-w", "webshop")
    assert (again["files_read"], again["created"], again["updated"], again["removed"]) == (
        0,
        0,
        0,
        0,
    )
    assert again["unchanged"] == total
    # one function edited: that chunk alone is new, its old text removed
    source = repo / "billing/webhooks.py"
    source.write_text(
        BILLING.replace('print("mailing", invoice_id)', 'log.info("mail %s", invoice_id)')
    )
    os.utime(source, ns=(10**18 + 1, 10**18 + 1))  # not racy: the next run trusts it
    edited = ingest(vault, str(repo), "-w", "webshop")
    assert (edited["files_read"], edited["created"], edited["removed"]) == (1, 1, 1)
    assert (edited["updated"], edited["unchanged"]) == (0, total - 1)
    # the function moved down two lines: a metadata-only update of the chunks that moved
    moved = source.read_text().replace("import hmac\n", "import hmac\nimport logging\n\n", 1)
    source.write_text(moved)
    os.utime(source, ns=(10**18 + 2, 10**18 + 2))
    shifted = ingest(vault, str(repo), "-w", "webshop")
    assert (shifted["created"], shifted["removed"]) == (1, 1)  # the import block's text changed
    assert shifted["updated"] == 2  # the function and the class, same text, other lines
    code, output = cli(vault, "search", "validate", "webhook", "signature", "-w", "webshop")
    assert "billing/webhooks.py:8-11 function validate_webhook_signature" in output
    # a deleted file: its chunks go
    (repo / "server/upload.go").unlink()
    gone = ingest(vault, str(repo), "-w", "webshop")
    assert (gone["files_removed"], gone["removed"], gone["created"]) == (1, 2, 0)
    code, output = cli(vault, "search", "MaxBytesReader", "-w", "webshop")
    assert code == 0 and "upload.go" not in output


def test_workspaces_keep_code_apart(vault: Path, repo: Path, tmp_path: Path) -> None:
    other = make_repo(
        tmp_path / "infra", {"deploy.py": "def validate_webhook_signature():\n    return True\n"}
    )
    ingest(vault, str(repo), "-w", "webshop")
    ingest(vault, str(other), "-w", "infra")
    with Store.open(settings_at(vault)) as store:
        for workspace, expected in (("webshop", "billing/webhooks.py"), ("infra", "deploy.py")):
            hits = store.search("validate webhook signature", workspace=workspace, k=10).hits
            code = [h for h in hits if h.kind == "code"]
            assert code and all(h.workspace == workspace for h in code)
            assert code[0].path.startswith(expected)
        every = store.search("validate webhook signature", workspace=None, k=10).hits
        assert {h.workspace for h in every if h.kind == "code"} == {"webshop", "infra"}


def test_memories_and_code_rank_together(vault: Path, repo: Path) -> None:
    ingest(vault, str(repo), "-w", "webshop")
    code, output = cli(
        vault,
        "add",
        "Webhook signature checks must use hmac.compare_digest, never ==",
        "-w",
        "webshop",
    )
    assert code == 0, output
    with Store.open(settings_at(vault)) as store:
        hits = store.recall("webhook signature", workspace="webshop", k=5, record_usage=True).hits
    kinds = [h.kind for h in hits]
    assert "code" in kinds and "note" in kinds
    assert kinds[0] == "note"  # a tie in rank goes to the memory


def test_list_remove_and_dry_run(vault: Path, repo: Path) -> None:
    dry = ingest(vault, str(repo), "--dry-run", "-w", "webshop")
    assert dry["dry_run"] and int(str(dry["created"])) > 0
    code, said = cli(vault, "ingest", str(repo), "--dry-run", "-w", "webshop")
    # it said "would change <path> into webshop" (issue 36)
    assert code == 0 and said.startswith(
        f"would ingest {repo.resolve()} into workspace webshop (dry run, nothing written; looked in "
    )
    code, output = cli(vault, "ingest", "--list")
    assert "No source tree ingested" in output  # a dry run registers nothing
    ingest(vault, str(repo), "-w", "webshop")
    code, output = cli(vault, "ingest", "--list", "--json")
    listed = json.loads(output)
    assert [(r["path"], r["workspace"]) for r in listed] == [(str(repo.resolve()), "webshop")]
    assert listed[0]["chunks"] == int(str(dry["created"]))
    code, output = cli(vault, "ingest", "--remove", str(repo))
    assert code == 0 and "dropped" in output
    code, output = cli(vault, "search", "validate", "webhook", "-w", "webshop")
    assert "webhooks.py" not in output
    code, output = cli(vault, "ingest", "--remove", str(repo))
    assert code != 0 and "is not an ingested root" in output


def test_ingest_refuses_bad_input_in_one_line(vault: Path, repo: Path, tmp_path: Path) -> None:
    code, output = cli(vault, "ingest", str(tmp_path / "nowhere"))
    assert code != 0 and "is not a folder" in output
    code, output = cli(vault, "ingest")
    assert code != 0 and "give one of PATH, --list or --remove PATH" in output
    ingest(vault, str(repo), "-w", "webshop")
    code, output = cli(vault, "ingest", str(repo), "-w", "infra")
    assert code != 0 and "ingest --remove" in output


def test_reindex_chunks_registered_roots_again(vault: Path, repo: Path) -> None:
    first = ingest(vault, str(repo), "-w", "webshop")
    shutil.rmtree(vault / ".memstore" / CODE_DIR)  # the index is a cache …
    assert (vault / ".memstore" / ROOTS_FILE).is_file()  # … registrations are kept
    code, output = cli(vault, "reindex")
    assert code == 0, output
    code, output = cli(vault, "ingest", "--list", "--json")
    assert json.loads(output)[0]["chunks"] == first["created"]
    code, output = cli(vault, "search", "validate", "webhook", "signature", "-w", "webshop")
    assert "billing/webhooks.py:6-9" in output


def test_a_saved_file_is_chunked_again_live(vault: Path, repo: Path) -> None:
    ingest(vault, str(repo), "-w", "webshop")
    with Store.open(settings_at(vault)) as store, Watcher(store):

        def found(words: str) -> list[str]:
            hits = store.search(words, workspace="webshop", k=5, catch_up=False).hits
            return [h.path for h in hits if h.kind == "code" and not h.weak]

        started = time.monotonic()
        (repo / "billing/refunds.py").write_text(
            "def issue_refund_credit_note(order_id: str) -> None:\n    pass\n", encoding="utf-8"
        )
        wait_until(lambda: bool(found("refund credit note")), 10, "the new file's chunk")
        assert found("refund credit note") == ["billing/refunds.py:1-2"]
        assert time.monotonic() - started < 5  # the target is 1 s: see the benchmark
        (repo / "billing/refunds.py").unlink()
        wait_until(lambda: not found("refund credit note"), 10, "the deleted file's chunk to go")


def test_memory_recall_over_mcp_gives_code_hits_their_ref(vault: Path, repo: Path) -> None:
    ingest(vault, str(repo), "-w", "webshop")

    async def go() -> dict[str, object]:
        async with Client(stdio(vault, cwd=repo)) as client:  # the repository's own workspace
            result = await client.call_tool(
                "memory_recall", {"query": "validate webhook signature", "workspace": "webshop"}
            )
            assert not result.is_error, result
            return dict(result.structured_content or {})

    out = asyncio.run(go())
    first = out["results"][0]  # type: ignore[index]
    assert first["kind"] == "code"
    assert first["ref"] == "billing/webhooks.py:6-9"
    assert "def validate_webhook_signature" in first["content"]
    # a chunk's id is no memory's: no recall counters, no commit for it at shutdown
    assert git(vault, "log", "-1", "--format=%s").startswith("init")


def test_a_store_follows_a_code_index_another_process_rebuilt(vault: Path, repo: Path) -> None:
    ingest(vault, str(repo), "-w", "webshop")
    with Store.open(settings_at(vault)) as resident:  # as the daemon holds it
        assert resident.search("MaxBytesReader", workspace="webshop").hits
        shutil.rmtree(vault / ".memstore" / CODE_DIR)  # deleted, as a cache may be …
        assert not resident.search("MaxBytesReader", workspace="webshop").hits  # … never
        # chunked by a reader; the next writer chunks every registered root again
        (repo / "server/limits.go").write_text("package server\n\nfunc UploadQuotaGuard() {}\n")
        summary = resident.refresh_source(str(repo.resolve()))
        assert summary is not None and summary.unchanged == 9  # refilled into the new index …
        assert resident.search("MaxBytesReader", workspace="webshop").hits
    _code, output = cli(vault, "search", "upload", "quota", "guard", "-w", "webshop")
    assert "server/limits.go:3-3 function UploadQuotaGuard" in output  # … that others read


def test_a_run_killed_between_index_and_table_is_repaired(
    vault: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ingest(vault, str(repo), "-w", "webshop")
    source = repo / "billing/webhooks.py"
    source.write_text(BILLING + "\n\ndef refund_webhook_event(event):\n    return event\n")
    os.utime(source, ns=(10**18 + 5, 10**18 + 5))
    real = CodeManifest.transaction
    calls = []

    def dies_after_the_index_commit(self: CodeManifest) -> object:
        calls.append(1)
        if len(calls) == 2:  # the first marks the file dirty; the second would record it
            raise KeyboardInterrupt("killed")
        return real(self)

    monkeypatch.setattr(CodeManifest, "transaction", dies_after_the_index_commit)
    with Store.open(settings_at(vault)) as store, pytest.raises(KeyboardInterrupt):
        store.ingest(repo, "webshop")
    monkeypatch.setattr(CodeManifest, "transaction", real)
    again = ingest(vault, str(repo), "-w", "webshop")  # the dirty file is read and checked
    assert again["files_read"] == 1
    with Store.open(settings_at(vault)) as store:
        code = store.code_index()
        assert code is not None
        keys = code.search.keys_with_prefix("")
        rows = [r[0] for r in code._db.execute("SELECT key FROM chunks")]
        assert sorted(rows) == keys  # the index and the table agree, no orphan, no twin
        hits = store.search("refund webhook event", workspace="webshop").hits
        assert next(h.path for h in hits if h.kind == "code") == "billing/webhooks.py:17-18"
    source.unlink()  # and a file a killed run left dirty goes whole
    gone = ingest(vault, str(repo), "-w", "webshop")
    assert gone["files_removed"] == 1


def test_a_deleted_code_index_is_refilled_by_the_next_writer(
    vault: Path, repo: Path, tmp_path: Path
) -> None:
    other = make_repo(tmp_path / "infra", {"deploy.py": "def rollout_canary():\n    pass\n"})
    ingest(vault, str(repo), "-w", "webshop")
    shutil.rmtree(vault / ".memstore" / CODE_DIR)
    ingest(vault, str(other), "-w", "infra")  # also chunks webshop again: it was lost
    _code, output = cli(vault, "ingest", "--list", "--json")
    assert {r["workspace"]: r["chunks"] for r in json.loads(output)} == {"webshop": 7, "infra": 1}


def test_code_writes_and_memory_writes_never_wait_for_each_other(vault: Path, repo: Path) -> None:
    ingest(vault, str(repo), "-w", "webshop")
    with Store.open(settings_at(vault)) as store:
        code = store.code_index()
        assert code is not None
        with code.writing():  # as a long ingest holds it
            started = blocked_s()
            result, output = cli(vault, "add", "The canary runs for 10 minutes", "-w", "webshop")
            assert result == 0, output
            result, output = cli(vault, "search", "validate", "webhook", "-w", "webshop")
            assert result == 0 and "webhooks.py" in output
            # no lock wait (10 s) ran out: time asleep, which a busy machine does not grow
            # (its wall time did: 8.9 s at load 39)
            assert blocked_s() - started < 8
            result, output = cli(vault, "ingest", str(repo), "-w", "webshop")
            assert result != 0 and "another memstore is writing the code index" in output
        with store.vault.lock(5):  # a memory writer holds the vault: code reads and writes go on
            assert store.search("validate webhook", workspace="webshop").hits
            assert store.ingest(repo, "webshop").files_scanned == 4


def test_ingest_refuses_the_vault_overlaps_and_reserved_names(
    vault: Path, repo: Path, tmp_path: Path
) -> None:
    for target, message in (
        (vault, "holds or is inside the vault"),
        (vault / ".memstore", "holds or is inside the vault"),
        (tmp_path, "holds or is inside the vault"),
    ):
        code, output = cli(vault, "ingest", str(target), "-w", "x")
        assert code != 0 and message in output, target
    ingest(vault, str(repo), "-w", "webshop")
    code, output = cli(vault, "ingest", str(repo / "billing"), "-w", "webshop")
    assert code != 0 and "overlaps the ingested folder" in output
    code, output = cli(vault, "ingest", str(repo), "-w", "all")
    assert code != 0 and "all" in output
    again = ingest(vault, str(repo))  # no -w: the workspace it was ingested into
    assert again["workspace"] == "webshop"


def test_a_memory_that_names_code_points_at_it(vault: Path, repo: Path) -> None:
    ingest(vault, str(repo), "-w", "webshop")
    text = "Never compare signatures with ==: validate_webhook_signature in billing/webhooks.py"
    code, output = cli(vault, "add", text, "-w", "webshop")
    assert code == 0, output
    code, output = cli(vault, "search", "compare", "signatures", "-w", "webshop")
    assert "    code: billing/webhooks.py:6-9, billing/webhooks.py" in output
    with Store.open(settings_at(vault)) as store:
        hits = store.search("compare signatures", workspace="webshop").hits
        memory = next(h for h in hits if h.kind == "note")
        assert memory.code == ("billing/webhooks.py:6-9", "billing/webhooks.py")
        # another workspace's code is never pointed at
        assert store.search("compare signatures", workspace="infra").hits == ()


def test_recall_drops_the_same_code_found_twice(vault: Path, tmp_path: Path) -> None:
    body = "\n".join(
        f"    total = apply_refund_rule_{i}(total, ledger, currency)" for i in range(30)
    )
    function = f"def reconcile_refund_ledger(total, ledger, currency):\n{body}\n    return total\n"
    near = function.replace("apply_refund_rule_7(", "apply_refund_policy_7(")
    repo = make_repo(
        tmp_path / "shop",
        {
            "refunds.py": function,
            "vendor/refunds_copy.py": function,  # byte-identical
            "legacy/refunds_old.py": near,  # one word changed: near-identical
            "other.py": "def reconcile_refund_totals():\n    return 0\n",
        },
    )
    ingest(vault, str(repo), "-w", "shop")
    with Store.open(settings_at(vault)) as store:
        hits = store.search("reconcile refund ledger", workspace="shop", k=5).hits
    paths = [h.path.rpartition(":")[0] for h in hits if h.kind == "code"]
    assert len([p for p in paths if "refunds" in p]) == 1, paths  # one of the three copies
    assert "other.py" in paths  # different code still comes


def test_distinct_keeps_rank_order_and_drops_overlapping_ranges() -> None:
    def chunk(ref: str, text: str) -> Hit:
        return Hit(ref, "w", "code", ref, f"{ref}\n{text}", (), "", "", 1, 1.0, False)

    hits = [
        chunk("a.py:1-60", "alpha beta gamma delta"),
        chunk("a.py:51-110", "epsilon zeta eta theta"),  # overlaps the first: dropped
        chunk("a.py:101-160", "iota kappa lambda mu"),  # does not overlap it: kept
        chunk("b.py:1-60", "alpha beta gamma delta"),  # the first one's text: dropped
    ]
    assert [h.path for h in distinct(hits)] == ["a.py:1-60", "a.py:101-160"]
    assert [h.path for h in distinct(hits, 1)] == ["a.py:1-60"]  # stops once it has enough
    words = [f"w{n}" for n in range(40)]
    near = [
        chunk("c.py:1-40", " ".join(words)),
        chunk("d.py:1-40", " ".join([*words[:-1], "changed"])),  # 37 of 39 shingles shared
        chunk("e.py:1-40", " ".join(words[:30])),  # a part of it: 28 of 38, below 0.85
    ]
    assert [h.path for h in distinct(near)] == ["c.py:1-40", "e.py:1-40"]


def test_list_kind_code_shows_chunks_where_they_are(vault: Path, repo: Path) -> None:
    code, output = cli(vault, "list", "--kind", "code")
    assert code == 0 and "No code ingested" in output
    ingest(vault, str(repo), "-w", "webshop")
    code, output = cli(vault, "list", "--kind", "code", "-n", "3")
    assert code == 0, output
    assert output.splitlines() == [
        ".gitignore:1-1 window  webshop",
        "README.md:1-3 window  webshop",
        "billing/webhooks.py:1-3 module  webshop",
        "3 of 7 chunks (--limit 0 lists all 7)",
    ]
    code, output = cli(vault, "list", "--kind", "code", "--json", "-w", "webshop", "-n", "0")
    data = json.loads(output)
    assert (data["total"], data["shown"]) == (7, 7)
    handle = next(c for c in data["chunks"] if c["name"] == "Server.Handle")
    assert (handle["ref"], handle["kind"], handle["workspace"]) == (
        "server/upload.go:3-7",
        "method",
        "webshop",
    )


def test_sixty_queries_across_two_workspaces_never_leak(vault: Path, tmp_path: Path) -> None:
    # both projects define the same thirty names (different bodies): every query matches both
    nouns = ["invoice", "refund", "ledger", "token", "webhook", "session", "upload", "cart"]
    verbs = ["validate", "render", "sync", "parse"]
    names = [f"{v}_{n}_{i}" for i, (v, n) in enumerate(zip(verbs * 8, nouns * 4, strict=False))]
    names = names[:30]

    def project(flavour: str) -> dict[str, str]:
        return {
            f"{flavour}/{name}.py": f"def {name}(value):\n    return {flavour!r}, value\n"
            for name in names
        }

    shop = make_repo(tmp_path / "shop", project("shop"))
    billing = make_repo(tmp_path / "billing", project("billing"))
    ingest(vault, str(shop), "-w", "shop")
    ingest(vault, str(billing), "-w", "billing")
    leaks = asked = 0
    with Store.open(settings_at(vault)) as store:
        for workspace in ("shop", "billing"):
            for name in names:
                hits = store.search(name.replace("_", " "), workspace=workspace, k=5).hits
                asked += 1
                assert hits, name
                leaks += sum(1 for h in hits if h.workspace != workspace)
    assert (asked, leaks) == (60, 0)


def test_max_tokens_bounds_a_recall_with_code(vault: Path, repo: Path) -> None:
    ingest(vault, str(repo), "-w", "webshop")
    cli(vault, "add", "Webhook signature checks use hmac.compare_digest", "-w", "webshop")
    with Store.open(settings_at(vault)) as store:
        whole = store.recall("webhook signature invoice", workspace="webshop", k=5)
        assert len(whole.hits) >= 2 and {h.kind for h in whole.hits} >= {"code", "note"}
        budget = estimate_tokens(whole.hits[0].content) + HIT_OVERHEAD_TOKENS
        fitted = store.recall("webhook signature invoice", workspace="webshop", max_tokens=budget)
    # whole hits only, in rank order, within the budget
    assert [h.id for h in fitted.hits] == [whole.hits[0].id]
    used = sum(estimate_tokens(h.content) + HIT_OVERHEAD_TOKENS for h in fitted.hits)
    assert used <= budget


def test_a_no_op_reingest_opens_no_file(
    vault: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ingest(vault, str(repo), "-w", "webshop")
    opened: list[str] = []
    real_open = os.open

    def spy(path: object, *args: object, **kwargs: object) -> int:
        if str(repo) in str(path):
            opened.append(str(path))
        return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(sources.os, "open", spy)
    with Store.open(settings_at(vault)) as store:
        summary = store.ingest(repo, "webshop")
    assert (summary.files_read, summary.unchanged, opened) == (0, 7, [])


def test_a_minified_line_is_cut_in_search_output(vault: Path, tmp_path: Path) -> None:
    minified = "function quotaGuard(a){" + "a=a+1;" * 5000 + "return a}\n"
    repo = make_repo(tmp_path / "site", {"dist/app.min.js": minified})
    ingest(vault, str(repo), "-w", "site")
    code, output = cli(vault, "search", "quotaGuard", "-w", "site")
    assert code == 0 and "dist/app.min.js:1-1" in output
    assert max(len(line) for line in output.splitlines()) < 200


def test_code_hits_put_tests_below_the_code_unless_tests_are_asked_for(
    vault: Path, tmp_path: Path
) -> None:
    repo = make_repo(
        tmp_path / "shop",
        {
            "tests/test_refunds.py": (
                "def test_refund_ledger_rounding_rounding_rounding():\n"
                "    assert refund_ledger_rounding(1) == 1  # refund ledger rounding\n"
            ),
            "refunds.py": "def refund_ledger_rounding(amount):\n    return round(amount)\n",
        },
    )
    ingest(vault, str(repo), "-w", "shop")
    with Store.open(settings_at(vault)) as store:
        code = store.code_index()
        assert code is not None
        hits = code.find("refund ledger rounding", {"shop"}, 5)
        assert [h.path for h in hits] == ["refunds.py:1-2", "tests/test_refunds.py:1-2"]
        asked = code.find("test for refund ledger rounding", {"shop"}, 5)
        assert asked[0].path == "tests/test_refunds.py:1-2"


def test_a_reingest_is_the_running_daemons_and_prints_what_it_prints_here(
    tmp_path: Path,
    daemons_allowed: dict[str, str],  # noqa: F811
) -> None:
    vault = make_vault(tmp_path / "vault")
    repo = make_repo(tmp_path / "webshop", {"billing/webhooks.py": BILLING})
    env = {**daemons_allowed, "MEMSTORE_VAULT": str(vault)}
    spawned = vault / ".memstore" / client.SPAWN_MARK  # written before a daemon is started
    # Neither an ingest with daemons turned off nor a dry run starts one.
    first = run({**env, "MEMSTORE_NO_DAEMON": "1"}, "ingest", str(repo), "--json")
    assert first.returncode == 0 and json.loads(first.stdout)["created"] == 3, first.stderr
    assert run(env, "ingest", str(repo), "--dry-run", "-q").returncode == 0
    assert not spawned.exists()
    here = run(env, "ingest", str(repo), "--json")  # no daemon yet: this process ingests
    assert here.returncode == 0 and json.loads(here.stdout)["unchanged"] == 3, here.stderr
    # … then starts the daemon, as a search or an add without one does
    wait_until(lambda: bool(status(vault)), 30, "the daemon an ingest started answers")
    served = requests_served(vault)
    again = {
        form: run(env, "ingest", "webshop", *form, cwd=tmp_path)  # relative to the caller
        for form in ((), ("--json",), ("--dry-run", "-q"))
    }
    assert requests_served(vault) == served + 3  # every re-ingest was the daemon's
    alone = {
        form: run({**env, "MEMSTORE_NO_DAEMON": "1"}, "ingest", str(repo), *form) for form in again
    }

    def same(text: str) -> str:  # the seconds it took differ
        return re.sub(r'(in |"seconds": )[0-9.]+', r"\1S", text)

    for form in again:
        assert again[form].returncode == alone[form].returncode == 0, again[form].stderr
        assert same(again[form].stdout) == same(alone[form].stdout)
        assert again[form].stderr == alone[form].stderr == ""
    assert "chunks: 0 created, 0 moved, 3 unchanged, 0 removed" in again[()].stdout
    assert again[("--dry-run", "-q")].stdout == ""
    # a first ingest stays in the caller's process (minutes, with a progress bar)
    other = make_repo(tmp_path / "shop2", {"server/upload.go": SERVER_GO})
    served = requests_served(vault)
    fresh = run(env, "ingest", str(other), "-w", "shop2")
    assert fresh.returncode == 0 and "ingested" in fresh.stdout, fresh.stderr
    assert requests_served(vault) == served
    assert run(env, "ingest", str(tmp_path / "nowhere")).returncode == 1  # typer's refusal


@pytest.mark.parametrize("helper", ["works", "/bin/true", "/nonexistent/python"])
def test_a_cold_ingest_shared_with_helper_processes_answers_the_same(
    vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, helper: str
) -> None:
    """A cold ingest's many chunks are indexed by this process and helpers, each into a
    segment the commit adopts; a helper that exits early or never starts leaves its
    chunks to this process. Either way search answers as an unshared ingest does."""
    verbs = ["validate", "render", "sync", "parse", "refund", "retry"]
    nouns = ["invoice", "ledger", "token", "webhook", "session", "upload", "cart"]
    files = {
        f"pkg/{verb}_{noun}.py": "".join(
            f"def {verb}_{noun}_{n}(value):\n    return {noun!r}, value * {n}\n\n\n"
            for n in range(6)
        )
        for verb in verbs
        for noun in nouns
    }
    ingest(vault, str(make_repo(tmp_path / "shop", files)), "-w", "shop")
    queries = [f"{v} {n}" for v in verbs for n in nouns[:3]] + ["value", "zzz"]

    def answers() -> tuple[list[list[tuple[str, float]]], int]:
        with Store.open(settings_at(vault)) as store:
            found = [
                [(h.path, round(h.score, 9)) for h in store.search(q, workspace="shop", k=8).hits]
                for q in queries
            ]
            code = store.code_index()
            assert code is not None
            return found, code.search.segment_count()

    alone, segments = answers()
    assert segments == 1
    monkeypatch.setattr("memstore.catalog.codebase.SHARE_MIN", 40)
    monkeypatch.setattr("memstore.index.parts.usable_cores", lambda: 3)
    if helper != "works":
        monkeypatch.setattr(sys, "executable", helper)
    shutil.rmtree(vault / ".memstore" / CODE_DIR)
    ingest(vault, str(tmp_path / "shop"), "-w", "shop")  # the whole root again, cold
    found, segments = answers()
    assert found == alone
    assert sum(len(hits) for hits in found) > len(queries)
    assert segments == (3 if helper == "works" else 1)
    assert not (vault / ".memstore" / CODE_DIR / "search" / "parts").exists()
    code, output = cli(vault, "reindex")  # every registered root chunked again, cold
    assert code == 0, output
    assert answers()[0] == alone


def test_a_question_finds_the_function_its_docstring_answers(vault: Path, tmp_path: Path) -> None:
    """Questions are worded as docstrings and comments are, not as code: a function whose
    docstring answers ranks above a longer chunk that happens to hold every word, and a
    hit shows its path and name, not the prose it was found by."""
    answer = (
        "def split(text):\n"
        '    """Split a shell line into words, keeping quoted words whole."""\n'
        "    lexer = Lexer(text)\n"
        "    return list(lexer)\n"
    )
    decoy = "def run_batch(jobs):\n" + "".join(
        f"    job_{n} = jobs.get('line {n}') or default_shell_command(quoted=True, words=[])\n"
        f"    split_{n} = job_{n}.partition(' ')\n"
        for n in range(12)
    )
    repo = make_repo(tmp_path / "tools", {"shell.py": answer, "batch.py": decoy})
    ingest(vault, str(repo), "-w", "webshop")
    question = "where do we split a shell command line into quoted words"
    with Store.open(settings_at(vault)) as store:
        hits = [h for h in store.search(question, workspace="webshop", k=5).hits]
    assert [h.path for h in hits] == ["shell.py:1-4", "batch.py:1-25"]
    assert hits[1].weak  # holding every word makes no chunk confident (test_code_confidence.py)
    assert hits[0].keywords == ("shell.py", "split")


def test_code_edited_while_no_daemon_ran_is_found_by_the_first_search_and_ingest_says_so(
    tmp_path: Path,
    daemons_allowed: dict[str, str],  # noqa: F811
) -> None:
    from tests.daemon.test_daemon import start_daemon

    vault = make_vault(tmp_path / "vault")
    repo = make_repo(tmp_path / "webshop", {"billing/webhooks.py": BILLING})
    env = {**daemons_allowed, "MEMSTORE_VAULT": str(vault)}
    alone = {**env, "MEMSTORE_NO_DAEMON": "1"}
    assert run(alone, "ingest", str(repo)).returncode == 0
    source = repo / "billing" / "webhooks.py"

    def edit(name: str) -> None:
        with source.open("a", encoding="utf-8") as out:
            out.write(f"\n\ndef {name}(amount):\n    return round(amount, 2)\n")

    # a daemon started after the edit answers its first search with the new function
    edit("reconcile_refund_ledger_qx")
    start_daemon(env, vault)
    served = requests_served(vault)
    found = run(env, "search", "reconcile_refund_ledger_qx")
    assert requests_served(vault) == served + 1  # the daemon answered
    assert "function reconcile_refund_ledger_qx" in found.stdout, found.stdout
    ingested = run(env, "ingest", str(repo))
    assert ingested.returncode == 0, ingested.stderr
    assert "chunks: 0 created" in ingested.stdout  # the daemon chunked it already …
    assert (  # … and the ingest still says the file changed
        "changed since the last ingest, already chunked by a running memstore: "
        "1 file (billing/webhooks.py)" in ingested.stdout
    )
    assert "already chunked" not in run(env, "ingest", str(repo)).stdout  # said once
    assert run(env, "daemon", "--stop").returncode == 0
    wait_until(lambda: not client.is_running(vault), 30, "the daemon stopped")

    # with no daemon at all, a search chunks the changed code itself before answering
    edit("settle_chargeback_batch_qx")
    here = run(alone, "search", "settle_chargeback_batch_qx")
    assert "function settle_chargeback_batch_qx" in here.stdout, here.stdout
    again = run(alone, "ingest", str(repo), "--json")
    summary = json.loads(again.stdout)
    assert (summary["already_chunked"], summary["already_chunked_paths"]) == (
        1,
        ["billing/webhooks.py"],
    )


def test_a_watcher_chunks_code_changed_while_nothing_watched_before_it_starts_answering(
    vault: Path, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "webshop", {"billing/webhooks.py": BILLING})
    with Store.open(settings_at(vault)) as store:
        store.ingest(repo, "webshop")
    with (repo / "billing" / "webhooks.py").open("a", encoding="utf-8") as out:
        out.write("\n\ndef reconcile_refund_ledger_qx(amount):\n    return amount\n")
    with Store.open(settings_at(vault)) as store:
        watcher = Watcher(store).start(wait=True)  # what the daemon does before it listens
        try:
            hits = store.search("reconcile_refund_ledger_qx", catch_up=False).hits
            assert [h.path for h in hits][:1] == ["billing/webhooks.py:17-18"]
        finally:
            watcher.stop()


def test_searches_in_a_row_with_no_watcher_walk_the_ingested_trees_once(
    vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search with no watcher chunks changed code itself, but a walk stats every file of
    every tree: the first search of a process walks, the next ones within a few seconds
    do not (they cost what a search costs, not what the tree's size costs)."""
    from memstore.catalog import codebase
    from memstore.service import sources as store_module

    repo = make_repo(tmp_path / "webshop", {"billing/webhooks.py": BILLING})
    walks: list[Path] = []
    real_walk = codebase.walk_sources

    def counted(root: Path, **kwargs: object) -> sources.Walk:
        walks.append(root)
        return real_walk(root, **kwargs)  # type: ignore[arg-type]

    with Store.open(settings_at(vault)) as store:
        store.ingest(repo, "webshop")
        monkeypatch.setattr(codebase, "walk_sources", counted)
        source = repo / "billing" / "webhooks.py"
        with source.open("a", encoding="utf-8") as out:
            out.write("\n\ndef reconcile_refund_ledger_qx(amount):\n    return amount\n")
        assert store.search("reconcile_refund_ledger_qx").hits  # the first search walks
        for _ in range(5):
            store.search("reconcile_refund_ledger_qx")
        assert len(walks) == 1
        with source.open("a", encoding="utf-8") as out:
            out.write("\n\ndef settle_chargeback_batch_qx(amount):\n    return amount\n")
        # some seconds later, the next search walks again and finds the new code
        assert store.shared.sources_refreshed is not None
        store.shared.sources_refreshed -= store_module.SOURCES_REFRESH_S
        hits = store.search("settle_chargeback_batch_qx").hits
        assert len(walks) == 2
        assert "settle_chargeback_batch_qx" in hits[0].content


def test_a_source_name_not_utf8_is_warned_about_once_per_process(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    tree = tmp_path / "src"
    tree.mkdir()
    (tree / "good.py").write_text("def frobnicate_widget():\n    return 42\n", encoding="utf-8")
    with open(os.path.join(os.fsencode(tree), b"bad-\xff.py"), "w", encoding="utf-8") as out:
        out.write("def badly_named():\n    pass\n")
    with caplog.at_level("WARNING", logger="memstore.catalog.sources"):
        for _ in range(3):
            walk = sources.walk_sources(tree)
            assert walk.skipped == {sources.NOT_UTF8: 1}
    assert [r.getMessage() for r in caplog.records] == [
        f"skipped {tree.resolve()}/bad-\\xff.py: its name is not UTF-8"
    ]


def children_running(word: str) -> list[int]:
    """The pids of this process's children whose command line holds `word`."""
    found = []
    for task in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{task}/children", encoding="ascii") as handle:
            for pid in map(int, handle.read().split()):
                with contextlib.suppress(OSError), open(f"/proc/{pid}/cmdline", "rb") as cmd:
                    if word.encode() in cmd.read().split(b"\0"):
                        found.append(pid)
    return found


def slept_s(pid: int) -> float:
    """The seconds the main thread of process `pid` has spent asleep since it started:
    neither running nor waiting for a CPU (the kernel's schedstat), whatever the load."""
    with open(f"/proc/{pid}/stat", "rb") as handle:
        ticks = int(handle.read().rsplit(b")", 1)[1].split()[19])  # starttime, since boot
    with open(f"/proc/{pid}/task/{pid}/schedstat", "rb") as handle:
        running, waiting = (int(n) for n in handle.read().split()[:2])
    with open("/proc/uptime", "rb") as handle:
        now = float(handle.read().split()[0])
    return now - ticks / os.sysconf("SC_CLK_TCK") - (running + waiting) / 1e9


def test_serve_answers_initialize_at_once_and_chunks_code_changed_while_down_behind_it(
    vault: Path, tmp_path: Path
) -> None:
    """`serve` starts from an agent with a start-up timeout: the catch-up of code edited
    while nothing watched (up to CATCH_UP_WAIT_S per root waiting for another writer, or
    minutes re-chunking a lost index) runs behind `initialize`, not before it."""
    from memstore.catalog.codebase import LOCK_FILE
    from memstore.daemon.source_watcher import CATCH_UP_WAIT_S
    from memstore.vault.locks import try_flock

    repo = make_repo(tmp_path / "webshop", {"billing/webhooks.py": BILLING})
    ingest(vault, str(repo), "-w", "webshop")
    with (repo / "billing" / "webhooks.py").open("a", encoding="utf-8") as out:
        out.write("\n\ndef reconcile_refund_ledger_qx(amount):\n    return amount\n")
    held = (vault / ".memstore" / LOCK_FILE).open("a+b")  # another process writing code
    assert try_flock(held)

    async def go() -> list[dict[str, object]]:
        async with Client(stdio(vault, cwd=repo)) as client:
            # Behind the catch-up, `initialize` would wait CATCH_UP_WAIT_S for the lock held
            # here: time the server slept, not the seconds a loaded machine takes to start
            # a process (13 s at load 36), which are spent running or waiting for a CPU.
            (server,) = children_running("serve")
            assert slept_s(server) < CATCH_UP_WAIT_S / 2
            held.close()  # the other writer is done: the catch-up goes on behind

            async def recall() -> list[dict[str, object]]:
                result = await client.call_tool(
                    "memory_recall", {"query": "reconcile_refund_ledger_qx", "workspace": "webshop"}
                )
                return list((result.structured_content or {}).get("results", []))

            deadline = time.monotonic() + 30
            while not (found := await recall()) and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            return found

    try:
        found = asyncio.run(go())
    finally:
        held.close()
    assert found and found[0]["ref"] == "billing/webhooks.py:17-18", found
