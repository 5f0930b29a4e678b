"""The words contradictions are read by, per language: negations, antonyms, units.

memstore.core.contradictions reads them: negations and contrasts, antonyms, function and
neutral words, and the units of durations and sizes.

Lowercase as written (accents kept: Vietnamese "đừng" is "don't", "dùng" is "use").
"""

from __future__ import annotations


def _words_of(text: str) -> tuple[str, ...]:
    return tuple(text.split())


NEGATIONS = frozenset(
    _words_of(
        "not never no nor cannot without avoid avoids avoiding forbidden prohibited disallowed"
        " nicht kein keine keinen keinem keiner keines nie niemals ohne statt anstatt verboten"
        " untersagt"  # de
        " pas jamais aucun aucune rien sans interdit interdite interdits interdiction"  # fr
        " nunca jamás ningún ninguna ninguno sin prohibido prohibida"  # es
        " não jamais nenhum nenhuma sem proibido proibida"  # pt ("no" is "in the")
        " không chưa đừng chẳng chả cấm"  # vi
    )
)
NEGATIONPHRASES = tuple(
    tuple(p.split())
    for p in (
        "no longer",
        "instead of",
        "rather than",
        "nicht mehr",
        "au lieu de",
        "en lugar de",
        "en vez de",
        "ya no",
        "em vez de",
        "ao invés de",
        "já não",
        "không bao giờ",
        "chưa bao giờ",
        "đừng bao giờ",
        "thay vì",
    )
)
CONTRASTS = frozenset(  # negations whose clause holds what they negate and its rival
    tuple(p.split())
    for p in (
        "instead of",
        "rather than",
        "statt",
        "anstatt",
        "au lieu de",
        "en lugar de",
        "en vez de",
        "em vez de",
        "ao invés de",
        "thay vì",
    )
)
PHRASES: dict[str, list[tuple[str, ...]]] = {}
for _phrase in NEGATIONPHRASES:
    PHRASES.setdefault(_phrase[0], []).append(_phrase)
CUE_STARTS = NEGATIONS | set(PHRASES) | {"ne", "n"}
FR_PARTNERS = frozenset(_words_of("pas plus jamais aucun aucune rien personne guère point nulle"))
NOT_ONLY = frozenset(_words_of("only just nur seulement solo sólo só apenas chỉ những"))
VI_COMPOUND = frozenset(_words_of("gian khí chỉ những"))  # không gian: space; không chỉ: not only
PT_MARKERS = frozenset(
    _words_of("não são é em uma na ao pelo pela você também então isso esse essa")
)
COPULAS = frozenset(_words_of("is are was were ist sind beträgt est sont es son é são là"))
VALUE_SKIP = frozenset(_words_of("called named set genannt appelée appelé llamada chamada gọi"))
ADJECTIVES = frozenset(
    _words_of(
        "slow fast flaky broken stable unstable ready done safe unsafe fine ok okay good bad big"
        " small large huge old new quick easy hard simple complex expensive cheap noisy empty"
        " full important deprecated obsolete outdated better worse correct wrong reliable"
        " unreliable busy idle down up green red"
    )
)
ADJECTIVE_ENDINGS = (
    *("ed", "ing", "ly", "ous", "ful", "ive", "able", "ible", "less"),
    *("iert", "ado", "ada", "ido", "ida", "é", "ée", "és", "ées"),
)
ANTONYMS = tuple(
    (x, y)
    for pair in _words_of(
        "enabled/disabled enable/disable true/false required/optional mandatory/optional"
        " allowed/forbidden sync/async synchronous/asynchronous public/private"
        " aktiviert/deaktiviert aktivieren/deaktivieren erlaubt/verboten"
        " eingeschaltet/ausgeschaltet"  # de
        " activé/désactivé activée/désactivée activés/désactivés activées/désactivées"
        " activer/désactiver obligatoire/facultatif"  # fr
        " activado/desactivado activada/desactivada activados/desactivados"
        " activadas/desactivadas habilitado/deshabilitado habilitada/deshabilitada"
        " obligatorio/opcional obligatoria/opcional"  # es
        " ativado/desativado ativada/desativada habilitado/desabilitado"
        " habilitada/desabilitada obrigatório/opcional obrigatória/opcional"  # pt
        " bật/tắt"  # vi
    )
    for x, y in [pair.split("/")]
)
FUNCTION_WORDS = _words_of(
    "always via"  # en, beyond the index's stop words
    " der die das den dem des ein eine einen einem einer eines und oder in im ins ist sind"
    " war wird werden wurde mit für auf aus bei beim vom zum zur von zu am als es wir ihr sie"
    " man sich auch noch dass wenn hier immer bitte"  # de
    " le la les un une des du de et ou en est sont pour par sur dans avec au aux ce cet"
    " cette ces se il elle on nous vous ils elles qui que être avoir toujours y"  # fr
    " el los las unos unas del y o es son para por con al lo su sus hay siempre"
    " está están"  # es
    " os as um uma do da dos das e em no na nos nas é são pelo pela seu sua sempre"  # pt
    " là của cho và được ở trong trên với các những một có thì mà này đó khi nếu bị bởi"
    " sẽ đang rồi cũng luôn bao giờ lên vào từ theo không chưa nữa để"  # vi
)
# Verbs of use, need and change, and words of time: "uses Node 18" and "moved to Node 20"
# are about the same key, so a value compared across them is compared on its subject.
NEUTRAL_WORDS = _words_of(
    "use uses used using run runs running need needs needed do does done make makes made"
    " set now currently already still move moved switch switched upgrade upgraded bump"
    " bumped change changed"  # en
    " verwenden verwendet nutzen nutzt benutzen benutzt läuft laufen brauchen braucht"
    " gebraucht machen macht gemacht jetzt inzwischen mittlerweile"  # de
    " utilise utilisent utiliser utilisons utilisé passé passer passe fait faire faisons"
    " tourne tournent maintenant désormais"  # fr
    " usa usan usar usamos uso usado hace hacer hacemos hecho corre corren ya ahora"  # es
    " usam usado faz fazer fazemos feito roda rodam rodar agora já"  # pt
    " dùng sử dụng chạy làm đã chuyển"  # vi
)
_MINUTE, _HOUR, _DAY = 60.0, 3600.0, 86400.0
_DURATIONS = {
    **dict.fromkeys(_words_of("ms msec millisecond milliseconds"), 0.001),
    **dict.fromkeys(
        _words_of("s sec secs second seconds sekunde sekunden seconde secondes segundo segundos"),
        1.0,
    ),
    **dict.fromkeys(_words_of("giay"), 1.0),
    **dict.fromkeys(_words_of("min mins minute minutes minuten minuto minutos phut"), _MINUTE),
    **dict.fromkeys(
        _words_of("h hr hrs hour hours stunde stunden std heure heures hora horas gio"), _HOUR
    ),
    **dict.fromkeys(_words_of("d day days tag tage tagen jour jours dia dias ngay"), _DAY),
    **dict.fromkeys(
        _words_of("week weeks woche wochen semaine semaines semana semanas tuan"), 7 * _DAY
    ),
}
_SIZES = {
    **dict.fromkeys(_words_of("b byte bytes"), 1.0),
    **dict.fromkeys(_words_of("k kb kib"), 1024.0),
    **dict.fromkeys(_words_of("mb mib"), 1024.0**2),
    **dict.fromkeys(_words_of("g gb gib"), 1024.0**3),
    **dict.fromkeys(_words_of("t tb tib"), 1024.0**4),
}
# Folded unit → its readings; a bare "m" is minutes or (nginx's "10m") megabytes.
UNITS: dict[str, tuple[tuple[str, float], ...]] = {
    **{u: (("duration", f),) for u, f in _DURATIONS.items()},
    **{u: (("size", f),) for u, f in _SIZES.items()},
    "m": (("duration", _MINUTE), ("size", 1024.0**2)),
}
