"""What the prompt hook answers for prompts as people type them (issue 38, twelfth session).

Each rule runs on a small vault of its own through the real prompt hook (`hook`, the function
the `memstore hook prompt` process and the daemon run) and through a plain search, which
means every word and keeps what the vault measured: the rules apply to prompts typed to an
agent only (Query.chat). None of these prompts or memories comes from a held-out set.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memstore.catalog.pasted import distilled
from memstore.service.store import Store
from tests.catalog.test_confidence import UPLOAD_413, hook
from tests.conftest import invoke_memstore, settings_at


@pytest.fixture
def lake(tmp_path: Path) -> Iterator[tuple[Store, Path, dict[str, str]]]:
    """A data-lake vault: the backfill lesson, and a note holding part of its words."""
    vault = tmp_path / "vault"
    with Store.open(settings_at(vault), create=True) as opened:
        ids = {
            keywords[0]: opened.add(text, workspace="lake", keywords=keywords).id
            for text, keywords in (
                (
                    "Backfill the nightly_export job one day at a time: airflow dags backfill "
                    "nightly_export -s DAY -e DAY, never a whole month in one run",
                    ("backfill", "nightly_export"),
                ),
                (
                    "nightly_export writes parquet files to the lake bucket under "
                    "exports/YYYY/MM/DD",
                    ("nightly_export", "parquet"),
                ),
                ("The lake bucket keeps 90 days of raw events", ("lake",)),
                ("Airflow runs on the ops cluster; its UI is behind the VPN", ("airflow",)),
                ("Invoices are sent by Stripe, never by hand", ("invoices",)),
                ("Deploy the pipelines with make deploy from main", ("deploy",)),
                ("Staff log in with Google accounts only", ("login",)),
                ("Weather data comes from the Met Office API every hour", ("weather",)),
            )
        }
        yield opened, vault, ids


PROMPT = "backfill nightly_export for the first week of march, the grafana panel shows gaps"


def test_a_hit_holding_part_of_the_leads_words_is_no_rival(
    lake: tuple[Store, Path, dict[str, str]],
) -> None:
    """The parquet note holds "nightly_export" and nothing else of the prompt; the backfill
    lesson holds that and "backfill". The note finds the same words less well, it answers
    nothing else: it no longer keeps the lesson from leading in a prompt typed to an agent."""
    store, vault, ids = lake
    out = hook(vault, "lake", PROMPT)
    assert f"[{ids['backfill']}]" in out and f"[{ids['nightly_export']}]" not in out
    # A search means every word: there the note is still a rival, as before.
    found = store.search(PROMPT, workspace="lake")
    assert found.hits[0].id == ids["backfill"] and found.weak


def test_a_hit_holding_a_word_the_lead_lacks_is_still_a_rival(
    lake: tuple[Store, Path, dict[str, str]],
) -> None:
    """The parquet note holds "parquet", which the lesson lacks: two answers, so neither leads."""
    _, vault, _ = lake
    assert hook(vault, "lake", "nightly_export parquet backfill gaps in grafana, zookeeper") == ""


@pytest.fixture
def api(tmp_path: Path) -> Iterator[tuple[Store, Path, dict[str, str]]]:
    """An API team's vault: an nginx upload limit, a database lesson, and notes around them."""
    vault = tmp_path / "vault"
    with Store.open(settings_at(vault), create=True) as opened:
        ids = {
            keywords[0]: opened.add(text, workspace="atlas", keywords=keywords).id
            for text, keywords in (
                (
                    "Photo uploads over 2 MB came back with nginx's 413 Request Entity Too "
                    "Large: raise client_max_body_size in deploy/nginx/api.conf (now 25m)",
                    ("413", "nginx", "uploads"),
                ),
                (
                    "The order sync failed with psycopg2 'SSL SYSCALL error: EOF detected' when "
                    "pgbouncer closed idle connections: the engine needs pool_pre_ping=True",
                    ("eof", "pgbouncer", "sync"),
                ),
                ("Profile photos are resized to 512 px by the thumbnailer queue", ("photos",)),
                ("The nightly report is mailed to finance at 06:00 UTC", ("finance",)),
                ("Deploy the API with make release from main, after CI is green", ("deploy",)),
                (
                    "Gradle builds use the JDK 21 toolchain; never commit a local JAVA_HOME",
                    ("jdk",),
                ),
                ("Staff sign in through Okta; API keys are issued per partner", ("okta",)),
                ("The staging database is refreshed from prod every Sunday night", ("staging",)),
            )
        }
        yield opened, vault, ids


PAGE_413 = (
    "<html>\r\n<head><title>413 Request Entity Too Large</title></head>\r\n<body>\r\n"
    "<center><h1>413 Request Entity Too Large</h1></center>\r\n<hr><center>nginx/1.25.3"
    "</center>\r\n</body>\r\n</html>\r\n"
    + "<!-- a padding to disable MSIE and Chrome friendly error page -->\r\n"
    * 6
    + "\nusers see this page when they add a profile photo "
    "from their phone, what should we change?"
)
FRAMES = "".join(
    f'  File "/srv/atlas/.venv/lib/python3.12/site-packages/{path}", line {line}, in {name}\n'
    f"    {source}\n"
    for path, line, name, source in (
        ("celery/app/trace.py", 453, "trace_task", "R = retval = fun(*args, **kwargs)"),
        ("atlas/tasks/sync.py", 88, "sync_orders", "for row in session.execute(query):"),
        ("sqlalchemy/orm/session.py", 2351, "execute", "return self._execute_internal("),
        ("sqlalchemy/engine/base.py", 1418, "execute", "return meth(self, distilled_params)"),
        (
            "sqlalchemy/engine/base.py",
            1640,
            "_execute_clauseelement",
            "ret = self._execute_context(",
        ),
        ("sqlalchemy/engine/base.py", 1967, "_exec_single_context", "self.dialect.do_execute("),
        (
            "sqlalchemy/engine/default.py",
            924,
            "do_execute",
            "cursor.execute(statement, parameters)",
        ),
    )
)
TRACE_SSL = (
    "[2026-12-07 02:14:09,331: ERROR/ForkPoolWorker-3] Task atlas.tasks.sync_orders raised\n"
    f"Traceback (most recent call last):\n{FRAMES}"
    "psycopg2.OperationalError: SSL SYSCALL error: EOF detected\n\n"
    "The above exception was the direct cause of the following exception:\n\n"
    "sqlalchemy.exc.OperationalError: (psycopg2.OperationalError) SSL SYSCALL error: EOF detected\n"
    "(Background on this error at: https://sqlalche.me/e/20/e3q8)\n\n"
    "the sync blew up again last night, what is going on?"
)
TRACE_UNRELATED = (
    'Exception in thread "main" java.lang.NullPointerException: Cannot invoke '
    '"com.acme.billing.Invoice.total()" because "invoice" is null\n'
    "\tat com.acme.billing.InvoiceMailer.send(InvoiceMailer.java:58)\n"
    "\tat com.acme.billing.InvoiceMailer.main(InvoiceMailer.java:21)\n\nwhy?"
)


@pytest.mark.parametrize(("prompt", "answer"), [(PAGE_413, "413"), (TRACE_SSL, "eof")])
def test_a_pasted_page_or_stack_trace_is_read_as_its_question_and_error_lines(
    api: tuple[Store, Path, dict[str, str]], prompt: str, answer: str
) -> None:
    """Searched whole, every frame, path, tag and timestamp of a paste was a word no memory
    holds, each counting against every hit; the page's title and heading, the trace's
    exception and the person's question say what it is about."""
    _, vault, ids = api
    out = hook(vault, "atlas", prompt)
    assert f"[{ids[answer]}]" in out and out.count("\n- [") == 1


def test_a_pasted_trace_of_a_failure_the_vault_does_not_hold_stays_silent(
    api: tuple[Store, Path, dict[str, str]],
) -> None:
    _, vault, _ = api
    assert hook(vault, "atlas", TRACE_UNRELATED) == ""


def test_what_a_paste_is_read_as() -> None:
    # A status page: its code (the reason phrase is the code's fixed name) and its server's
    # name (not its version), then the question; the markup and the padding comments go.
    assert distilled(PAGE_413).splitlines() == [
        "413",
        "nginx",
        "users see this page when they add a profile photo from their phone, what should we change?",
    ]
    # A traceback: the lines naming the failure and the question; frames and source go.
    trace = distilled(TRACE_SSL).splitlines()
    assert trace[-1] == "the sync blew up again last night, what is going on?"
    assert any("EOF detected" in line for line in trace)
    assert not any("File" in line or "execute" in line for line in trace)
    # JSON log records: the one naming a failure, then the question.
    records = "".join(
        f'{{"ts":"2026-12-07T02:14:0{n}Z","level":"{level}","msg":"{msg}","req":"r{n}"}}\n'
        for n, (level, msg) in enumerate(
            [("info", "listening on :8080"), ("error", "dial tcp 10.0.0.7:6379: i/o timeout")]
        )
    )
    assert distilled(records + "why can't the api reach redis?").splitlines() == [
        '{"ts":"2026-12-07T02:14:01Z","level":"error","msg":"dial tcp 10.0.0.7:6379: i/o'
        ' timeout","req":"r1"}',
        "why can't the api reach redis?",
    ]
    # A prompt typed in a line or two is read as it is, whatever it holds.
    for typed in ("why does the report job die at 2am?", "413 on upload\nwhat do we change"):
        assert distilled(typed) == typed


def test_the_readmes_413_lesson_answers_the_pasted_nginx_page(sample_vault: Path) -> None:
    """h-trial11's finding: the nginx page pasted whole got nothing, though the sample vault
    holds the README's 413 lesson. Read as its code, its server and the question, it is."""
    page = PAGE_413.replace("a profile photo", "a product image")
    assert f"[{UPLOAD_413}]" in hook(sample_vault, "webshop", page)


def test_search_context_reads_a_paste_as_the_hook_does(sample_vault: Path) -> None:
    """`memstore search --context` is the hook's search for a prompt typed to an agent."""
    page = PAGE_413.replace("a profile photo", "a product image")
    found = invoke_memstore("search", page, "-w", "webshop", "--context", vault=sample_vault)
    assert found.returncode == 0 and f"[{UPLOAD_413}]" in found.stdout


def test_a_tag_a_question_is_about_is_no_paste() -> None:
    """Markup goes only from a page pasted whole: a question about a tag keeps it."""
    for typed in (
        "why does my <div class='card'> overflow on mobile",
        "<p> tags lose their margin",
    ):
        assert distilled(typed) == typed


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[tuple[Store, Path, dict[str, str]]]:
    """A home lab's vault: its own tools' names (borgmatic, traefik), and everyday words."""
    vault = tmp_path / "vault"
    with Store.open(settings_at(vault), create=True) as opened:
        ids = {
            keywords[0]: opened.add(text, workspace="lab", keywords=keywords).id
            for text, keywords in (
                (
                    "Nightly backups of the photo library run with borgmatic at 02:00; the "
                    "repository passphrase is in the team password manager",
                    ("borgmatic", "backups"),
                ),
                (
                    "Traefik routes every lab service by host name; a new container needs the "
                    "traefik.enable label",
                    ("traefik", "routing"),
                ),
                (
                    "The media server runs on the old desktop in the cupboard; it sleeps after "
                    "an hour idle",
                    ("media",),
                ),
                (
                    "Home Assistant talks to the zigbee sensors through a USB stick on the "
                    "kitchen pi",
                    ("zigbee", "sensors"),
                ),
                ("Guests get the second wifi network; its password is on the fridge", ("wifi",)),
                ("The garden lights switch on at sunset from the hallway switch", ("garden",)),
                ("Deploy the lab stack with make up from the main branch", ("deploy",)),
                ("The printer in the study only prints from the laptop over USB", ("printer",)),
            )
        }
        yield opened, vault, ids


BORGMATIC = "borgmatic stopped working after the os upgrade, any idea"


def test_a_word_english_lacks_that_one_memory_holds_weighs_as_a_name(
    lab: tuple[Store, Path, dict[str, str]],
) -> None:
    """ "borgmatic" is the vault's name for its backup tool: one memory holds it and English
    does not. Beside four everyday words no memory holds it held 1.5 units, short of a lead's
    2, and the hook stayed silent; weighed as a name, as an identifier is, it leads."""
    store, vault, ids = lab
    out = hook(vault, "lab", BORGMATIC)
    assert f"[{ids['borgmatic']}]" in out and out.count("\n- [") == 1
    found = invoke_memstore("search", BORGMATIC, "-w", "lab", "--context", vault=vault)
    assert found.returncode == 0 and f"[{ids['borgmatic']}]" in found.stdout
    # A search means every word and keeps what the vault measured: as before.
    plain = store.search(BORGMATIC, workspace="lab")
    assert plain.hits[0].id == ids["borgmatic"] and plain.weak


@pytest.mark.parametrize(
    "prompt",
    [
        "why is the study so cold",
        "cupboard is a mess",
        "the study smells of smoke after the storm, any idea",
        "what should i plant in the garden this spring",
    ],
)
def test_an_everyday_word_the_vault_happens_to_hold_is_no_name(
    lab: tuple[Store, Path, dict[str, str]], prompt: str
) -> None:
    """ "study", "cupboard" and "garden" are each held by one memory but English knows them:
    they keep the vault's weight, and a prompt about the room, not the printer in it, stays
    silent (as a name, "study" would inject the printer note)."""
    _, vault, _ = lab
    assert hook(vault, "lab", prompt) == ""


def test_a_typo_of_an_everyday_word_is_no_name(lab: tuple[Store, Path, dict[str, str]]) -> None:
    """English lacks "prnter", but the vault's word it stands in for, "printer", is English:
    the prompt is answered as the one spelt right is."""
    _, vault, _ = lab
    typed = "the prnter stopped working after the os upgrade, any idea"
    assert hook(vault, "lab", typed) == hook(vault, "lab", typed.replace("prnter", "printer"))
    assert hook(vault, "lab", typed) == ""


def test_a_prompt_longer_than_chat_chars_is_read_as_its_beginning_and_its_end() -> None:
    from memstore.catalog.pasted import CHAT_CHARS, bounded, chat_query

    words = [f"word{n}" for n in range(20_000)]
    text = " ".join(["deploy", *words, "nginx"])
    read = bounded(text)
    assert (
        len(read) <= CHAT_CHARS + 1 and read.split()[0] == "deploy" and read.split()[-1] == "nginx"
    )
    assert set(read.split()) <= set(text.split())  # cut between words, never inside one
    assert {"deploy", "nginx"} <= set(chat_query(text).terms)
    assert bounded("a short prompt") == "a short prompt"
