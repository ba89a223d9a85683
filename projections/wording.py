"""Words for people: tiles, seats, patterns, kongs, ruling codes and transfer reasons in whole
Chinese (``zh``) or whole English (``en``) — never a mix (issue 13, "Read it").

Seats: one seat word per seat, the same on every line — 甲 乙 丙 for seats 0, 1, 2 in Chinese
(fixed seats; winds would suggest seat winds that turn with the dealer), "seat 0/1/2" in
English — always with the player's id: ``乙（bob）``, ``seat 1 (bob)``. Tiles: ``5筒``, ``4条``,
``中`` ``发`` ``白`` in Chinese; ``5 dots``, ``4 bamboo``, ``red dragon`` in English (the wire
names ``5p`` … stay in the structured fields). Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from domain.tiles import TILE_NAMES

LANGS = ("zh", "en")
SEAT_ZH = ("甲", "乙", "丙")

_DRAGON_ZH = {"C": "中", "F": "发", "P": "白"}
_DRAGON_EN = {"C": "red dragon", "F": "green dragon", "P": "white dragon"}

PATTERNS: dict[str, tuple[str, str]] = {  # id -> (中文名, English name), RULES.md §5
    "peng_peng_hu": ("碰碰胡", "all triplets"),
    "ming_si_gui_yi": ("明四归一", "exposed four-in-one"),
    "an_si_gui_yi": ("暗四归一", "concealed four-in-one"),
    "qi_dui": ("七对", "seven pairs"),
    "long_qi_dui": ("龙七对", "dragon seven pairs"),
    "shuang_long_qi_dui": ("双龙七对", "double dragon seven pairs"),
    "san_long_qi_dui": ("三龙七对", "triple dragon seven pairs"),
    "da_san_yuan": ("大三元", "big three dragons"),
    "xiao_san_yuan": ("小三元", "little three dragons"),
    "qing_yi_se": ("清一色", "one suit"),
    "shou_zhua_yi": ("手抓一", "single tile in hand"),
    "ka_wu_xing": ("卡五星", "closed five"),
    "gang_shang_kai_hua": ("杠上开花", "win on a kong draw"),
    "gang_shang_pao": ("杠上炮", "win on a discard after a kong"),
    "qiang_gang_hu": ("抢杠胡", "robbing a kong"),
    "hai_di_lao": ("海底捞", "last tile of the wall"),
    "liang_dao": ("亮倒", "declared ready"),
}

KONGS: dict[str, tuple[str, str]] = {
    "concealed": ("暗杠", "concealed kong"),
    "added": ("补杠", "added kong"),
    "exposed": ("直杠", "exposed kong"),
}

REASONS: dict[str, tuple[str, str]] = {  # CONTRACT.md §2 transfer reasons
    "hu": ("胡牌", "win"),
    "kong": ("杠钱", "kong money"),
    "exhausted": ("荒庄", "exhausted wall"),
    "piao": ("漂", "piao"),
    "fee": ("服务费", "service fee"),
}

# Every ruling code (domain/rulings.py) in a few words of each language.
CODES: dict[str, tuple[str, str]] = {
    "sequence": ("事件顺序不对", "event out of sequence"),
    "not_your_turn": ("不是该座位的回合", "not this seat's turn"),
    "tile_not_held": ("手里没有这张牌", "tile not held"),
    "tile_count": ("某种牌超过4张", "more than four of a tile"),
    "wall_mismatch": ("摸牌与牌墙不符", "draw does not match the wall"),
    "closed": ("牌桌已结束", "table closed"),
    "bad_rules": ("规则无法解析", "rules do not resolve"),
    "duplicate_player": ("同一玩家占两个座位", "one player in two seats"),
    "wrong_win_tile": ("胡的不是这张牌", "hu names another tile"),
    "not_a_winning_hand": ("不成胡牌牌型", "not a winning hand"),
    "below_min_multiplier": ("番数不够起胡", "below the minimum multiplier"),
    "lou_hu": ("漏胡后未摸牌前不能胡别人打的牌", "missed win: no discard win before the next draw"),
    "claim_on_last_discard": ("最后一张牌不能碰杠", "no claim on the last discard"),
    "kong_without_wall": ("牌墙已空不能杠", "no kong once the wall is empty"),
    "added_kong_not_immediate": ("补杠必须当时就杠", "an added kong only with the tile just drawn"),
    "peng_with_concealed_triplet": ("手里有暗刻不能碰", "no peng with a concealed triplet"),
    "liang_dao_not_ready": ("亮倒时未听牌", "declared ready without being ready"),
    "liang_dao_locked": ("亮倒后手牌不能改变", "the hand is locked after declaring"),
    "liang_dao_kong_changes_waits": ("亮倒后此杠会改变所听的牌", "this kong changes the declared waits"),
    "liang_dao_min_wall": ("牌墙剩余太少不能亮倒", "too few wall tiles left to declare"),
    "feeding_declared_wait": ("打出亮倒者所听的牌", "discarded a declared wait"),
    "rob_kong_disabled": ("本桌不许抢杠胡", "robbing a kong is off"),
    "multi_win_disabled": ("本桌不许一炮双响", "two winners on one discard is off"),
    "liang_dao_hidden": ("暗藏的不是暗刻", "tiles kept hidden are not concealed triplets"),
}

WALL_MODES: dict[str, tuple[str, str]] = {
    "known": ("牌墙已知，每次摸牌都核对", "wall known: every draw checked against it"),
    "committed": ("牌墙只给了哈希值，局后公布再核对", "wall committed by its hash, checked when revealed"),
    "count_only": ("未给出牌墙，只核对每种牌不超过4张", "wall not given: only tile counts checked"),
}
WALL_RESULTS: dict[str, tuple[str, str]] = {
    "ok": ("核对无误", "all checks passed"),
    "not_revealed": ("尚未公布牌墙", "not revealed yet"),
    "wall_mismatch": ("摸牌与牌墙不符", "a draw does not match the wall"),
    "tile_count": ("某种牌超过4张", "more than four of a tile"),
    "hash_mismatch": ("公布的牌墙与哈希值不符", "the revealed wall does not match its hash"),
}


def pattern_names(ids: Iterable[str]) -> dict[str, dict[str, str]]:
    """Each pattern id's name in Chinese and English (an id this build does not know: the id)."""
    return {i: dict(zip(("zh", "en"), PATTERNS.get(i, (i, i)), strict=True)) for i in ids}


def pick(lang: str, pair: tuple[str, str]) -> str:
    return pair[0] if lang == "zh" else pair[1]


def a_kong(kind: str, lang: str) -> str:
    """A kong said by its kind, as the timeline and the report say it: 直杠 / "an exposed kong"."""
    name = pick(lang, KONGS[kind])
    return name if lang == "zh" else ("an " if kind in ("exposed", "added") else "a ") + name


def tile(name: str, lang: str) -> str:
    """``tile("5p", "zh") == "5筒"``; ``tile("C", "en") == "red dragon"``."""
    if name in _DRAGON_ZH:
        return _DRAGON_ZH[name] if lang == "zh" else _DRAGON_EN[name]
    number, suit = name[:-1], name[-1]
    if lang == "zh":
        return number + ("筒" if suit == "p" else "条")
    return f"{number} {('dot' if number == '1' else 'dots') if suit == 'p' else 'bamboo'}"


def tile_kind(kind: int, lang: str) -> str:
    return tile(TILE_NAMES[kind], lang)


def tiles(names: Sequence[str], lang: str) -> str:
    return ("、" if lang == "zh" else ", ").join(tile(n, lang) for n in names)


def seat(s: int | str | None, players: Sequence[str], lang: str) -> str:
    """``乙（bob）`` / ``seat 1 (bob)``; the house is 平台 / the house."""
    if s == "house":
        return "平台" if lang == "zh" else "the house"
    if not isinstance(s, int):
        return "？" if lang == "zh" else "?"
    who = players[s] if 0 <= s < len(players) else ""
    if lang == "zh":
        return SEAT_ZH[s] + (f"（{who}）" if who else "")
    return f"seat {s}" + (f" ({who})" if who else "")


def short_seat(s: int, lang: str) -> str:
    """The seat word alone, for a seat already named on the line: 丙 / seat 2."""
    return SEAT_ZH[s] if lang == "zh" else f"seat {s}"


def pattern(pid: str, x: int, lang: str) -> str:
    zh, en = PATTERNS.get(pid, (pid, pid))
    return f"{zh if lang == 'zh' else en} ×{x}"


def patterns(hits: Sequence[tuple[str, int]], lang: str) -> str:
    if not hits:
        return "屁胡 ×1" if lang == "zh" else "plain win ×1"
    return ("，" if lang == "zh" else ", ").join(pattern(p, x, lang) for p, x in hits)


def cap(
    multiplier: int,
    capped: int,
    shu_kan: int,
    ids: Sequence[str],
    rules_cap: int | None,
    cap_exempt: Mapping[str, int] | None,
    lang: str,
) -> str:
    """What the cap did to a win, in words: the decision of ``domain.fan._settle`` (which the
    engine records in English as the win's ``cap_note``) said again from the win's numbers and the
    table's rules, so that it can be said in Chinese too. The English form is the engine's note
    without its 数坎 detail (``tests/projections/test_timeline_render.py`` holds the two equal over
    every preset's simulated wins). ``ids``: the win's pattern ids."""
    zh = lang == "zh"
    if rules_cap is None:
        text = "不封顶" if zh else "no cap"
    else:
        exempt = [(cap_exempt[i], i) for i in ids if i in cap_exempt] if cap_exempt else []
        if exempt:
            value, pid = max(exempt)
            limit = max(rules_cap, value)
            name = PATTERNS.get(pid, (pid, pid))[0]
            text = (
                f"封顶{rules_cap}番，{name}例外封顶{limit}番"
                if zh
                else f"cap {rules_cap} replaced by {limit} for {pid} (cap_exempt)"
            )
            if capped < multiplier:
                text += f"：{multiplier}番 → {capped}番" if zh else f": {multiplier} → {capped}"
        elif capped < multiplier:
            text = (
                f"封顶{rules_cap}番：{multiplier}番 → {capped}番"
                if zh
                else f"cap {rules_cap}: {multiplier} → {capped}"
            )
        else:
            text = f"未超过封顶{rules_cap}番" if zh else f"under cap {rules_cap}"
    if shu_kan:
        text += f"；封顶后另加数坎{shu_kan}番" if zh else f"; shu kan +{shu_kan} after the cap"
    return text


def code(c: str, lang: str) -> str:
    return pick(lang, CODES.get(c, (c, c)))


def coins(n: int, lang: str) -> str:
    return f"{n}分" if lang == "zh" else f"{n} coin{'s' if n != 1 else ''}"


def event_no(v: int, lang: str) -> str:
    return f"第{v}事件" if lang == "zh" else f"event {v}"


def language(accept_language: str | None) -> str:
    """``zh`` when Chinese is preferred over English in ``Accept-Language``, else ``en``."""
    if not accept_language:
        return "en"
    best, best_q = "en", -1.0
    for part in accept_language.split(","):
        bits = part.strip().split(";")
        tag = bits[0].strip().lower()
        q = 1.0
        for b in bits[1:]:
            if b.strip().startswith("q="):
                try:
                    q = float(b.strip()[2:])
                except ValueError:
                    q = 0.0
        lang = "zh" if tag.startswith("zh") else ("en" if tag.startswith("en") or tag == "*" else None)
        if lang is not None and q > best_q:
            best, best_q = lang, q
    return best


_TILE_RUN = re.compile(r"(?<![A-Za-z0-9_])([1-9]+)([ps])(?![A-Za-z0-9_])")
_DRAGON_RUN = re.compile(r"(?<![A-Za-z0-9_])([CFP]+)(?![A-Za-z0-9_])")
_SEAT_NO = re.compile(r"([0-2])号位")


# The engine's English names a rule by its Chinese name (``点炮 8s, 包胡: …``, docs/settlement.md;
# ``declared 亮倒``) and quotes the seeds' Chinese (``(少于12张不能亮)``): what each says in whole
# English, as the timeline says it. A name before a tile reads "… of TILE".
_EN_BEFORE_TILE = {
    "自摸": "self-draw of",
    "点炮": "discard of",
    "杠上炮": "discard after a kong of",
    "抢杠胡": "robbed kong of",
    "暗杠": "concealed kong of",
    "补杠": "added kong of",
    "直杠": "exposed kong of",
}
_EN_TERMS = (  # in this order: the longer phrase first
    (" (not 听牌)", ""),  # "the 13 tiles left are not ready (not 听牌)"
    ("after 亮倒", "after declaring ready"),
    ("杠上杠 chain", "kong chain"),
    ("杠上杠", "kong chain"),
    ("一炮双响", "two winners on one discard"),
    ("抢杠胡", "robbing a kong"),
    ("漏胡", "missed win"),
    ("包胡", "bao hu"),
    ("亮倒", "ready"),
    ("听牌", "ready"),
    ("荒庄", "exhausted wall"),
    ("自摸", "self-draw"),
    ("买码", "ma tile"),
    ("a 补杠", "an added kong"),
    ("暗杠", "concealed kong"),
    ("补杠", "added kong"),
    ("直杠", "exposed kong"),
    ("碰", "peng"),
    ("杠", "kong"),
    ("胡", "hu"),
    ("漂", "piao"),
    ("数坎", "shu kan"),
    ("四归", "four-in-one"),  # "(pin_dao full, hand ×4 without 四归)"
    ("筒 (p)", "dots"),  # "every tile is 筒 (p), melds included"
    ("条 (s)", "bamboo"),
)
# a claim as a verb: "may not 碰 5p", "they may 直杠 it", "may not 暗杠 (concealed kong) 7p"
_EN_VERB = re.compile(
    r"\b(may not|cannot|may|not) (碰|直杠|暗杠|补杠|杠)(?: \((?:peng|exposed kong|concealed kong)\))?"
)
_EN_NAMED_TILE = re.compile(
    "(" + "|".join(sorted(map(re.escape, _EN_BEFORE_TILE), key=len, reverse=True)) + r") "
    r"([1-9][ps]|[CFP])(?![A-Za-z0-9_])"
)
_EN_TILE = re.compile(r"(?<![A-Za-z0-9_])([1-9][ps]|[CFP])(?![A-Za-z0-9_])")
# a set in notation, as the pages read a hand in English: "555p" → "555 dots", "PPPP" → "white dragon ×4"
_EN_RUN = re.compile(r"(?<![A-Za-z0-9_])(?:([1-9]{2,})([ps])|([CFP]{2,}))(?![A-Za-z0-9_])")
_EN_MA = re.compile(r"买码 ([1-9][ps]|[CFP]) (\d+)")  # "payable 2 + 买码 1s 1 = 3": the 1 is the ma tile's
_CJK = "\u3400-\u9fff\uff00-\uffef\u3000-\u303f"
# "(no_peng_with_concealed_triplet: 不能碰后再杠)", "(…, nor on the last discard: 摸到最后一张牌…)"
_EN_COLON_QUOTE = re.compile(f"(?:: |：)[^()A-Za-z]*[{_CJK}][^()]*\\)")
_EN_QUOTE = re.compile(f" ?\\([^()A-Za-z]*[{_CJK}][^()A-Za-z]*\\)")  # (少于12张不能亮): no English inside


def en_whole(text: str, players: Sequence[str] = ()) -> str:
    """An engine text in English made whole: a rule's Chinese name in English (``点炮 8s`` →
    ``discard of 8 bamboo``, ``包胡`` → ``bao hu``, ``declared 亮倒`` → ``declared ready``,
    ``杠上杠`` → ``kong chain``, ``买码 1s 1`` → ``1 (the ma tile, 1 bamboo)``), a quotation of the
    seeds' Chinese after the English that says it left out (an option's name kept), a tile in
    notation in words (``5 dots``, ``white dragon``). Numbers, option names and values stay, and
    so do the ``players``' ids (``(P)``)."""
    kept: dict[str, str] = {}
    for i, p in enumerate(sorted(set(players), key=len, reverse=True)):
        if p and f"({p})" in text:
            kept[f"\x00{i}\x00"] = p
            text = text.replace(f"({p})", f"(\x00{i}\x00)")
    text = _EN_COLON_QUOTE.sub(")", text)
    text = _EN_QUOTE.sub("", text)
    text = _EN_VERB.sub(lambda m: f"{m[1]} {'peng' if m[2] == '碰' else 'kong'}", text)
    text = _EN_MA.sub(lambda m: f"{m[2]} (the ma tile, {tile(m[1], 'en')})", text)
    text = _EN_NAMED_TILE.sub(lambda m: f"{_EN_BEFORE_TILE[m[1]]} {tile(m[2], 'en')}", text)
    for zh, en in _EN_TERMS:
        text = text.replace(zh, en)
    text = _EN_RUN.sub(_en_run, text)
    text = _EN_TILE.sub(lambda m: tile(m[1], "en"), text)
    for mark, p in kept.items():
        text = text.replace(mark, p)
    return text


def _en_run(m: re.Match[str]) -> str:
    if m[1]:
        return tile(m[1] + m[2], "en")  # "555 dots", as one tile is said
    if len(set(m[3])) == 1:
        return f"{tile(m[3][0], 'en')} ×{len(m[3])}"
    return ", ".join(tile(c, "en") for c in m[3])


def zh_whole(text: str, players: Sequence[str] = ()) -> str:
    """An engine message in Chinese made whole: tiles in notation (``5p``, ``4556p``, ``CCC``) as
    Chinese (``5筒``, ``4556筒``, ``中中中``), ``2号位`` as the seat word ``丙``. Codes and option
    names (``liang_dao_min_wall``) stay as they are, and so do the ``players``' ids (``（P）``)."""
    kept: dict[str, str] = {}
    for i, p in enumerate(sorted(set(players), key=len, reverse=True)):
        if p and f"（{p}）" in text:
            kept[f"\x00{i}\x00"] = p
            text = text.replace(f"（{p}）", f"（\x00{i}\x00）")
    text = _TILE_RUN.sub(lambda m: m[1] + ("筒" if m[2] == "p" else "条"), text)
    text = _DRAGON_RUN.sub(lambda m: "".join(_DRAGON_ZH[c] for c in m[1]), text)
    text = _SEAT_NO.sub(lambda m: SEAT_ZH[int(m[1])], text)
    for mark, p in kept.items():
        text = text.replace(mark, p)
    return text
