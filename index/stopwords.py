"""Function words of the languages recall reads, dropped before accents are folded.

Each list holds a language's articles, pronouns, prepositions, conjunctions, auxiliaries,
negation and question words, lowercase and as written (NFC): a word is checked before its
accents are folded, so Vietnamese "đâu" (where) is dropped while "dấu" (a diacritic mark),
which folds to the same "dau", is kept. No language is detected: a word any list holds is
dropped, except the words in KEPT, which are content words in English or in code.

Negation goes as English's "not" goes (Whoosh's English list drops it): "nicht", "pas",
"não", "nie", "không" are dropped too. "Without" is kept in English, and so are "ohne",
"sans", "sin", "sem", "bez" (left out of the lists).
"""

from __future__ import annotations


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


VIETNAMESE = _words(
    # pronouns, demonstratives, question words
    "tôi tớ mình chúng ta bạn nó họ này đó đấy đây kia ấy gì nào đâu sao"
    " nhiêu ai"
    # conjunctions, prepositions
    " và hoặc hay nhưng mà thì nếu vì nên để cho của với trong trên dưới từ đến tới"
    " về ở tại vào khi lúc như"
    # auxiliaries, particles, plural and classifier words, degree
    " là có được bị đã đang sẽ vẫn cũng đều rồi chưa không chẳng phải hãy làm thể"
    " những các mọi mỗi một cái con rất quá lắm thế vậy nhé ạ à ơi nhỉ hả"
    # typed without accents, where the bare form is hardly another word: "khong" can only
    # be "không"; "dau" (dấu), "ma" (mã, code), "tai" (tải, load), "da" (đa, multi-),
    # "dang" (dạng, format), "chua" (chứa, contain), "vi" (the editor) are not here
    " khong duoc nhung cac mot voi gi"
)

GERMAN = _words(
    "der die das den dem des ein eine einen einem einer eines"
    " ich du er sie es wir ihr mich mir dich dir sich uns euch ihn ihm ihnen"
    " mein meine meinen dein deine sein seine seinen unser unsere euer ihre ihren"
    " und oder aber doch sondern denn weil dass daß ob wenn als wie wo was warum wieso"
    " weshalb wann wer wen wem wessen welche welcher welches"
    " in an auf aus bei mit nach von vom zu zum zur für über unter vor hinter neben"
    " zwischen durch gegen um bis seit ab im ins am"
    " ist sind bin bist war waren hat habe hast haben hatte hatten wird werden wurde"
    " wurden kann können konnte muss müssen soll sollte sollen darf will möchte würde"
    " nicht kein keine keinen auch noch schon nur sehr so dann da hier dort jetzt mal"
    " bitte ja"
)

FRENCH = _words(
    "le la les un une des du de au aux à"
    " je tu il elle on nous vous ils elles me te se lui leur leurs y en"
    " mon ma mes ton ta tes son sa ses notre nos votre vos ce cet cette ces ça cela ceci"
    " qui que quoi quel quelle quels quelles où quand comment pourquoi combien"
    " et ou mais donc or ni car si comme dans par pour sur sous avec chez entre vers"
    " est sont suis es être été était avoir ai as a avons avez ont avait peut peux doit"
    " faut va vais ne pas plus aussi très déjà encore ici là alors puis"
)

SPANISH = _words(
    "el la los las un una unos unas lo al del de en a con por para entre hasta desde"
    " hacia y e o u ni pero sino que qué como cómo cuando cuándo donde dónde porque"
    " cuál cuáles quién quiénes cuánto cuánta"
    " es son fue era ser estar está están estoy hay ha han he has tiene tienen tengo"
    " puede pueden debe"
    " yo tú tu él ella ellos ellas nosotros usted ustedes me te se le les nos mi mis su"
    " sus este esta esto estos estas ese esa eso esos muy más mas ya también solo sólo"
    " aquí allí sí"
)

PORTUGUESE = _words(
    "o a os as um uma uns umas de do da dos das em no na nos nas por pelo pela pelos"
    " pelas para com ao aos à às num numa e ou mas que se como quando onde porque porquê"
    " qual quais quem não é são foi ser estar está estão era tem têm ter há vai"
    " eu tu ele ela nós eles elas você vocês me te lhe meu minha seu sua isso isto este"
    " esta esse essa aquele aquela muito mais já também só"
)

# Polish "ty" (you) is left out: it is the second syllable of Vietnamese "công ty" (company).
POLISH = _words(
    "i w we z ze na do o od po za przez dla przy pod nad u a ale lub albo czy że bo"
    " więc jak jaki jaka jakie gdzie kiedy dlaczego czemu co kto który która które"
    " którego nie tak to ten ta te tego tej tym tu tam jest są był była było były być"
    " będzie może można trzeba mam ma ja on ona ono my wy oni one mnie mi się mój"
    " twój jego jej ich nas was już jeszcze też także tylko bardzo oraz"
)

# Function words in some list that are content words in English or in code: never dropped.
#   die   an English verb ("the worker dies"); dropping the bare word would also make
#         "dies" and "died", stemmed to "die", miss a memory that says "die"
#   mit   the MIT license           war   a Java web archive (.war)
#   os    operating system, Python's os module          no    "no-cache", "no such file"
#   du    the disk usage command    su    the switch-user command
#   ai    AI                        jest  the Jest test runner
#   pod   a Kubernetes pod          car   an English noun
#   hat   Red Hat                   one   an English word
#   bin   a bin/ folder, binaries   dir   a directory
#   em    the CSS unit              num   num_retries and its kind
#   eu    the EU, eu-west-1         nas   network storage
#   dos   DoS attacks               comment  a code comment
#   er    the ER (a LoCoMo question: "When was Sam in the ER?"), ER diagrams
#   plus, son, ton, ten, solo, era, par, mon (Monday in a schedule): English words that
#         personal notes use (LoCoMo's conversations hold 67 "plus", 31 "son", 16 "ton")
KEPT = _words(
    "die mit war os no du su ai jest pod car hat one bin dir em num eu nas dos comment"
    " er plus son ton ten solo era par mon"
)

LANGUAGES = {
    "vi": VIETNAMESE,
    "de": GERMAN,
    "fr": FRENCH,
    "es": SPANISH,
    "pt": PORTUGUESE,
    "pl": POLISH,
}

FUNCTION_WORDS = frozenset().union(*LANGUAGES.values()) - KEPT
