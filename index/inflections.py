"""Irregular English forms read as their base word before stemming ("took" → take).

Porter2 joins a verb's regular forms ("deploys", "deployed", "deploying" → deploy) but not
its irregular ones: a question asks "when did the build break?" or "did we write that
down?" in the base form a question's auxiliary takes, while what happened is written in the
past ("the build broke", "we wrote it up"), and no word of the two matched. Each form below
is read as its verb at indexing and in queries alike, so both become the same term. The
irregular plurals of nouns are read the same way ("children" → child, "indices" → index).

Left out: forms that are common words of other meanings in a developer's text, where the
verb would cost more than it finds — `bit` (64-bit), `bound` (upper bound), `left` (the
left panel), `led`, `lay`, `lain`, `ground`, `wound`, `rose`, `shot` (screenshot),
`made` (`make`, the build tool), `stuck`, `found` ("not found", an error's words, is not the
request verb "find"), and forms spelled like their base (`cut`, `put`,
`set`, `read`).
The stop words (`was`, `were`, `been`, `had`, `did`) are dropped before this is read.
"""

from __future__ import annotations

# base verb, then its irregular forms (past, past participle) that are not also other words
_GROUPS = """
arise arose arisen|awake awoke awoken|bear bore borne|become became|begin began begun
|bend bent|bite bitten|bleed bled|blow blew blown|break broke broken|breed bred
|bring brought|build built|burn burnt|buy bought|catch caught|choose chose chosen
|come came|creep crept|deal dealt|dig dug|draw drew drawn|dream dreamt|drink drank drunk
|drive drove driven|eat ate eaten|feed fed|feel felt|fight fought|flee fled|fly flew flown
|forbid forbade forbidden|forget forgot forgotten|forgive forgave forgiven
|freeze froze frozen|get got gotten|give gave given|go went gone|grow grew grown
|hang hung|hear heard|hide hid hidden|hold held|keep kept|kneel knelt|know knew known
|lean leant|leap leapt|learn learnt|lend lent|lose lost|mean meant|meet met
|overcome overcame|pay paid|ride rode ridden|ring rang rung|rise risen|run ran|say said
|see seen|seek sought|sell sold|send sent|shake shook shaken|shine shone|show shown
|shrink shrank shrunk|sing sang sung|sink sank sunk|sit sat|sleep slept|slide slid
|speak spoke spoken|spend spent|spin spun|stand stood|steal stole stolen|sting stung
|strike struck|strive strove striven|swear swore sworn|sweep swept|swim swam swum
|swing swung|take took taken|teach taught|tear tore torn|tell told|think thought
|throw threw thrown|understand understood|undertake undertook undertaken|wake woke woken
|wear wore worn|weave wove woven|weep wept|win won|withdraw withdrew withdrawn
|write wrote written|rebuild rebuilt|rewrite rewrote rewritten|rerun reran
|mislead misled|undergo underwent undergone|uphold upheld|withhold withheld
|foresee foresaw foreseen|outgrow outgrew outgrown|overtake overtook overtaken
|oversee oversaw overseen|partake partook partaken|override overrode overridden
|forego forewent foregone|fall fell fallen|see saw
"""

# base noun, then its irregular plurals ("lives" is left out: "where the config lives")
_NOUNS = """
child children|person people|man men|woman women|foot feet|tooth teeth|mouse mice
|goose geese|wife wives|knife knives|index indices|vertex vertices|matrix matrices
|appendix appendices|analysis analyses|hypothesis hypotheses|crisis crises
|criterion criteria|thesis theses|axis axes
"""

# each irregular form → its base word (lowercase, as the analysis chain has it then)
IRREGULAR: dict[str, str] = {
    form: words[0]
    for group in (_GROUPS + "|" + _NOUNS).replace("\n", "").split("|")
    if (words := group.split())
    for form in words[1:]
}


def base_form(word: str) -> str:
    """Return the base word of an irregular form (`took` → take), else `word` itself."""
    return IRREGULAR.get(word, word)
