"""What a prompt with a pasted log, stack trace or error page asks: its question and its error lines.

A person pastes 40 lines of a stack trace, a `kubectl describe` or an nginx error page and
types a question under it. Searched whole, every frame, path, timestamp and tag is a word
the prompt seems to be about, most of them words no memory holds: each counts against
every hit and nothing is confident, even where the vault holds the lesson. What says what
the prompt is about is the person's own words and the lines that name the failure (the
exception, "Reason: OOMKilled", the page's title); the rest is noise.

`chat_query` reads a prompt typed to an agent (the prompt hook) as its prose lines and its
error lines, in order; a prompt that is not pasted (under PASTED_LINES lines, no markup) is
left as it is. A recall or a search of the same text means every word and is not changed.
"""

from __future__ import annotations

import html
import re

from memstore.index import Query

PASTED_LINES = 3  # a prompt of this many lines or more may hold a paste
ERROR_LINES = 3  # at most this many error lines are kept (the first ones: the cause)
LINE_CHARS = 200  # an error line is cut here (a minified one-line page or log)
# A prompt read longer than this (a whole file or log pasted without a question under it)
# is read as its first and last halves: a query's cost grows with its distinct words, and
# 100,000 of them (a 1 MB paste) took ~10 s of CPU, in the daemon every agent shares.
CHAT_CHARS = 16_000

# A page pasted whole (an nginx or Apache error page, a proxy's HTML), not a tag a question
# is about ("why does my <div> overflow"): its markup goes.
_MARKUP = re.compile(r"<(?:!doctype\s+html|html|head|body|title)\b", re.I)
_TAG = re.compile(r"<[^<>]{0,2000}>")
# An HTTP status headline: "413 Request Entity Too Large", "502 Bad Gateway".
_STATUS = re.compile(r"\s*([1-5]\d\d)\s+[A-Za-z][A-Za-z' -]{0,60}")
_HEADLINE = re.compile(r"<(title|h[1-6])\b[^<>]{0,200}>([^<>]{1,300})</\1\s*>", re.I)
# A line a program wrote, not a person: indented, a frame, a caret, a JSON record, a
# timestamp, a level, a path with a line number, an address, a `key:   value` of a describe.
_LOGGED = re.compile(
    r"^(?:\s|\||\^|\{\"|-->|#\d|at\s|File\s\"|Traceback|goroutine\s|Caused by"
    r"|The above exception|During handling|\d{4}-\d\d-\d\d|\[\w|[A-Z]\d{4}\s"
    r"|(?:INFO|WARN|WARNING|ERROR|DEBUG|TRACE|FATAL|CRITICAL)\b|\d+\s*\|)"
    r"|\w\.\w{1,5}:\d+|0x[0-9a-f]{4,}|^[\w .-]{1,30}:\s{2,}\S",
    re.I,
)
# A line that names a failure: the line to weigh over the log's noise.
_FAILURE = re.compile(
    r"error|exception|fail|fatal|panic|refused|denied|killed|oom|timeout|timed out|exceeded"
    r"|cannot|can't|could not|couldn't|not found|invalid|unable|reason:|too large|forbidden"
    r"|unauthori[sz]ed|deprecated|warning|missing|no such|not set|tampered|reject",
    re.I,
)


def chat_query(text: str) -> Query:
    """Return the query of a prompt typed to an agent (Query.chat): for a pasted log or page
    its prose and error lines (`distilled`), else the prompt as it is; of a longer one than
    CHAT_CHARS, its beginning and its end (`bounded`)."""
    return Query.of(bounded(distilled(text)), chat=True)


def bounded(text: str) -> str:
    """Return `text`, or of one longer than CHAT_CHARS its first and last CHAT_CHARS / 2
    characters, cut between words: where a person's question stands, above a paste or below it."""
    if len(text) <= CHAT_CHARS:
        return text
    half = CHAT_CHARS // 2
    head, tail = text[:half], text[-half:]
    head = head.rsplit(None, 1)[0] if not text[half].isspace() and head.strip() else head
    tail = tail.split(None, 1)[-1] if not text[-half - 1].isspace() and tail.strip() else tail
    return f"{head}\n{tail}"


def distilled(text: str) -> str:
    """Return the lines of `text` that say what it asks: the lines a person wrote and up to
    ERROR_LINES lines naming a failure, in order, each once (a page's title and heading are
    its error lines; its other markup goes). A text without markup and under PASTED_LINES
    lines is returned as it is, as is one where nothing is left."""
    markup = _MARKUP.search(text) is not None
    if not markup and text.count("\n") < PASTED_LINES - 1:
        return text
    titles = [html.unescape(m.group(2)).strip() for m in _HEADLINE.finditer(text)]
    kept = list(dict.fromkeys(_status(title) for title in titles))
    if markup:
        text = html.unescape(_TAG.sub("\n", text))
    errors = 0
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped in kept or stripped in titles:
            continue
        server = _server(stripped) if markup else ""
        if server:
            kept.append(server)  # which server answered ("nginx"), not its version
        elif _LOGGED.search(line) is None:
            kept.append(stripped)  # a person's words (a log's one plain line is kept too)
        elif errors < ERROR_LINES and _FAILURE.search(line):
            kept.append(stripped[:LINE_CHARS])
            errors += 1
    return "\n".join(kept) if kept else text


def _status(headline: str) -> str:
    """Return an HTTP status headline as its code ("413 Request Entity Too Large" → "413":
    the reason phrase is the code's fixed name, its words are no evidence), else as it is."""
    found = _STATUS.fullmatch(headline)
    return found.group(1) if found else headline.strip()


def _server(line: str) -> str:
    """Return the server's name of a pasted page's signature line ("nginx/1.24.0",
    "Apache/2.4.57 Server at localhost Port 80"), or "" for another line."""
    first = line.split(maxsplit=1)[0]
    name, _, version = first.partition("/")
    return name if name.isalpha() and version[:1].isdigit() else ""
