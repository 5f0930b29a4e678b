"""The request words' index terms, written out: a one-shot search analyses none of them.

`core.ranking.REQUEST_WORDS` ("show", "need", "please" ...) name no subject: a query term
that is one of them is worth less as evidence. Ranking compares index terms, so each word
is stemmed as the index stems it; analysing all ~150 costs a no-daemon search ~4 ms of
CPU (porter2 in Python) for a set that only changes with the words or the analyser.
tests/catalog/test_request_terms.py fails when this set is not what the analyser makes of
the words now, and prints the set to paste here.
"""

from __future__ import annotations

_TERMS = """
    across actual add after again all almost alreadi although alway anoth anymor anyth
    anyway anywher around asap ask bad becaus befor big bit both btw cant chang check come
    day didnt doesnt dont down each either enough even ever everi everyth fail find first
    fix get give go good hello help hey hi idea instead isnt issu ive keep know last late
    less let like look lot make mani mayb mean more most much need new next noth now off ok
    okay old one other out over per pls plz pretti problem put question quick quit rather
    realli recent remov run same say see seem set show sinc small somehow someon someth
    sometim somewher still stuff such sure take tell thank that there thing think though thx
    time today tomorrow too tri under until up use via want way week what whether while
    within without wont work yesterday
"""
REQUEST_TERMS = frozenset(_TERMS.split())
