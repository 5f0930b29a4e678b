"""Code words: the other words code uses for what a question says (released → unlock, free).

A question says what code does in a person's words ("how is a mailbox lock file released")
and the code says it in its own (`_unlock_file`, "Unlock the mailbox"); a name's part or a
docstring's word that stands for a question's word is evidence as the word itself is. The
groups are general vocabulary of code, not of any one question set: verbs of what code does
(create/make/build, remove/delete/discard, release/unlock/free) and the short forms names
use that are not a start of the word (`tmp` for temporary, `msg` for message; a start such
as `addr` already matches, code_evidence.py). Each word of a group stands for every other.
"""

from __future__ import annotations

import functools

from memstore.index import terms

# Each line is a group: any of its words stands for the others. Verbs of what code does,
# then nouns, then short forms that are not a start of their word.
_GROUPS = """
release unlock free
remove delete discard erase purge unlink drop
create make build construct generate new
start begin launch spawn
stop halt terminate kill abort shutdown
close shut
read load fetch
write save dump store persist
find search lookup seek
check validate verify ensure
convert transform translate coerce
format render
print display echo emit
split tokenize tokenise separate
join concatenate concat combine merge
copy clone duplicate
move rename
compare cmp
count tally
encode serialize serialise marshal
decode deserialize deserialise unmarshal
escape quote
unescape unquote
wait block
send transmit
receive recv
directory folder
temporary tmp temp
configuration config cfg settings
message msg
password passwd pwd
source src
destination dest dst target
index idx
exception exc
callback hook
terminal tty console
color colour
hide mask conceal
execute exec invoke
iterate iter loop
sort order
random rand
unique uniq
previous prev
""".strip().splitlines()


@functools.cache
def _by_term() -> dict[str, tuple[str, ...]]:
    """Each group word's index term → the other words of its groups (a stop word, which has
    no term, stands for nothing and is stood for by nothing)."""
    found: dict[str, dict[str, None]] = {}
    for line in _GROUPS:
        words = [word for word in line.split() if terms(word)]
        for word in words:
            for term in terms(word):
                others = found.setdefault(term, {})
                others.update((other, None) for other in words if other != word)
    return {term: tuple(others) for term, others in found.items()}


def alternatives(term: str) -> tuple[str, ...]:
    """Return the words code may use for a question's index `term` (none when it has none)."""
    return _by_term().get(term, ())
