"""The timeline renderer (projections/timeline.py), without a database: given a stream's events →
when one hand is rendered in zh / en → then one line per event with the engine's rulings inline,
in one language only."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from domain import engine
from domain.events import Event, HandStarted, TableClosed, convert
from projections import timeline, wording
from tests.paths import GOLDEN
from tests.projections.helpers import simulated
from tests.service.streams import load, stream_files

ASCII_WORD = re.compile(r"[A-Za-z]")
CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")


def hands_of(events: list[Event]) -> dict[int, tuple[Any, Any, list[Any]]]:
    """hand number -> (state after its hand_started, (v, hand_started, None), later events)."""
    out: dict[int, tuple[Any, Any, list[Any]]] = {}
    state = engine.initial()
    current: int | None = None
    for v, ev in enumerate(events, start=1):
        state = engine.replay(state, ev)
        if isinstance(ev, HandStarted):
            current = ev.hand
            out[ev.hand] = (state, (v, ev, None), [])
        elif isinstance(ev, TableClosed):
            current = None
        elif current is not None:
            out[current][2].append((v, ev, None))
    return out


def render(events: list[Event], hand: int, lang: str) -> dict[str, Any]:
    start, first, rest = hands_of(events)[hand]
    return timeline.render(engine, start, first, rest, lang)


def decoded(path: Path) -> list[Event]:
    return [convert(e) for e in load(path)]


def line(doc: dict[str, Any], version: int) -> dict[str, Any]:
    return next(x for x in doc["lines"] if x["version"] == version and x["kind"] not in ("transfer", "net"))


def test_a_passed_win_reads_as_the_issue_writes_it_in_both_languages() -> None:
    events = decoded(GOLDEN / "lou-hu-then-self-draw.jsonl")
    zh, en = render(events, 1, "zh"), render(events, 1, "en")
    assert (
        line(zh, 3)["text"]
        == "第3事件 甲（alice）打5筒 — 丙可胡（卡五星 ×2，应得2分），选择过 → 漏胡至丙下次摸牌（第6事件）"
    )
    assert line(en, 3)["text"] == (
        "event 3: seat 0 (alice) discards 5 dots — seat 2 could win (closed five ×2, would get 2 coins), "
        "passed → missed win: no discard win until seat 2's next draw (event 6)"
    )
    assert "lou_hu" in line(zh, 3)["codes"]
    # the restriction blocked the win on bob's 5p at event 5, and the draw at event 6 lifted it
    assert line(zh, 5)["candidates"][0]["outcome"] == "blocked_by_lou_hu"
    assert "漏胡" in line(zh, 6)["text"]
    (lou,) = zh["lou_hu"]
    assert lou["would_have_paid"] == {
        "patterns": [{"id": "ka_wu_xing", "x": 2}], "multiplier": 2, "payable": 2, "coins": 2,
    }  # fmt: skip
    assert lou["blocked_later_win"] is True and lou["blocked_wins"] == [5]
    assert lou["lifted_by"] == 6 and lou["passed"] == {"event": 3, "tile": "5p", "from": 0}
    assert "卡五星" in lou["text"] and "应得2分" in lou["text"]


def test_a_kong_chain_names_its_owner_and_the_discard_that_linked_it() -> None:
    doc = render(decoded(GOLDEN / "kong-chain.jsonl"), 1, "zh")
    second, third = line(doc, 5)["kong"], line(doc, 8)["kong"]
    assert second["k"] == 2 and second["linked_by"]["kind"] == "replacement_draw" and second["factor"] == 2
    assert third["k"] == 3 and third["chain_seat"] == 0 and third["factor"] == 4
    assert third["linked_by"] == {"event": 7, "kind": "discard", "seat": 0, "tile": "9s"}
    assert third["coins"] == [{"from": 0, "to": 1, "amount": 8}]
    assert "甲的杠上杠第3杠" in line(doc, 8)["text"] and "第7事件" in line(doc, 8)["text"]


def _accepted(paths: list[Path]) -> list[Path]:
    """The streams the engine accepts (the others end in an expected refusal: no timeline)."""
    out = []
    for path in paths:
        try:
            engine.fold(decoded(path))
        except engine.IllegalEvent:
            continue
        out.append(path)
    return out


@pytest.mark.parametrize("path", _accepted(stream_files()), ids=lambda p: p.name)
def test_every_hand_is_one_line_per_event_in_one_language(path: Path) -> None:
    check_every_hand(decoded(path))


def test_simulated_tables_of_every_preset_read_whole() -> None:
    markers: set[str] = set()
    for seed in range(21):
        events = [convert(e) for e in simulated(seed, hands=3)]
        check_every_hand(events)
        for hand in hands_of(events):
            markers |= {c for x in render(events, hand, "en")["lines"] for c in x["codes"]}
    assert {"kong", "kong_chain", "liang_dao", "lou_hu", "hu", "exhausted"} <= markers  # all were among them


def check_every_hand(events: list[Event]) -> None:
    players = list(engine.fold(events[:1]).players)
    for hand, (_, first, rest) in hands_of(events).items():
        zh, en = render(events, hand, "zh"), render(events, hand, "en")
        for doc in (zh, en):
            versions = [x["version"] for x in doc["lines"] if x["kind"] not in ("transfer", "net")]
            assert versions == [first[0], *(v for v, _, _ in rest)]
            assert doc["first_event"] == first[0]
        for x in zh["lines"] + zh["lou_hu"]:
            text = x["text"]
            for p in players:
                text = text.replace(p, "")
            assert not ASCII_WORD.search(text), x["text"]
            assert not ASCII_WORD.search(x.get("why", "")), x["why"]
        for x in en["lines"] + en["lou_hu"]:
            assert not CJK.search(x["text"]), x["text"]
            assert not CJK.search(x.get("why", "")), x["why"]
        for doc in (zh, en):  # a transfer line's why is its text's ending: the reason and what gave it
            for x in doc["lines"]:
                assert (x["kind"] == "transfer") == ("why" in x), x
                assert x["kind"] != "transfer" or (x["why"] and x["text"].endswith(x["why"])), x
        settled = [s for s in engine.fold(events).settlements if s.hand == hand]
        transfers = [x["transfer"] for x in zh["lines"] if x["kind"] == "transfer"]
        if settled:
            s = settled[-1]
            assert [(t["from"], t["to"], t["amount"]) for t in transfers] == [
                (t.from_, t.to, t.amount) for t in s.transfers
            ]
            assert zh["lines"][-1]["net"] == list(s.net)
            # each transfer's derivation in the answer's language, made whole as the settlement route's
            en_transfers = [x["transfer"] for x in en["lines"] if x["kind"] == "transfer"]
            for t, z, e in zip(s.transfers, transfers, en_transfers, strict=True):
                assert z["detail"] == wording.zh_whole(t.detail_zh)
                assert e["detail"] == wording.en_whole(t.detail)
                assert not CJK.search(e["detail"]), e["detail"]


def test_liang_dao_lines_give_the_engine_waits() -> None:
    found = 0
    for seed in range(40):
        events = [convert(e) for e in simulated(seed, hands=3)]
        final_by_hand = hands_of(events)
        for hand in final_by_hand:
            doc = render(events, hand, "zh")
            for x in doc["lines"]:
                if x["kind"] != "liang_dao":
                    continue
                found += 1
                state = engine.fold(events[: x["version"]])
                info = state.hand.liang_dao[x["seat"]]
                assert x["liang_dao"]["waits"] == [wording.TILE_NAMES[k] for k in info.waits]
                assert "亮倒" in x["text"] and "听" in x["text"]
                for tile in x["liang_dao"]["waits"]:
                    assert wording.tile(tile, "zh") in x["text"]
        if found >= 3:
            break
    assert found >= 1


def test_words() -> None:
    assert [wording.tile(t, "zh") for t in ("5p", "4s", "C", "F", "P")] == ["5筒", "4条", "中", "发", "白"]
    assert wording.tile("1p", "en") == "1 dot" and wording.tile("C", "en") == "red dragon"
    assert wording.seat(1, ["a", "bob", "c"], "zh") == "乙（bob）"
    assert wording.seat(1, ["a", "bob", "c"], "en") == "seat 1 (bob)"
    assert wording.patterns([], "zh") == "屁胡 ×1"
    assert wording.language("zh-CN,en;q=0.5") == "zh" and wording.language("en,zh;q=0.2") == "en"
    assert wording.language(None) == "en"
    from domain.rulings import ALL_CODES

    assert set(wording.CODES) >= ALL_CODES  # every ruling code has its words
    # the engine's notes on a win, in whole English: its sets as the pages read a hand, its rules' names
    assert wording.en_whole("under cap 8; 数坎 +2 after the cap: triplet 555p, kong PPPP") == (
        "under cap 8; shu kan +2 after the cap: triplet 555 dots, kong white dragon ×4"
    )
    assert wording.en_whole("every tile is 条 (s), melds included") == "every tile is bamboo, melds included"
    assert wording.en_whole("(pin_dao full, hand ×4 without 四归)") == (
        "(pin_dao full, hand ×4 without four-in-one)"
    )
    assert wording.en_whole("triplets or kongs of C and F, pair PP") == (
        "triplets or kongs of red dragon and green dragon, pair white dragon ×2"
    )


# (concealed, win, self-draw): 双龙七对, 三龙七对, 屁胡, 碰碰胡 with 4 concealed triplets, 卡五星, 清一色
CAP_HANDS = [
    ("1111p 2222p 33p 44p 5s", "5s", True),
    ("1111p 2222p 3333p 4s", "4s", True),
    ("123p 456p 789p 11s 55s", "5s", False),
    ("111p 222p 333p 444p 5s", "5s", True),
    ("46s 123p 789p 55p CCC", "5s", True),
    ("123p 456p 789p 11p 55p", "5p", True),
]
CAP_RULES = [
    {"preset": "default"},
    {"preset": "default", "cap": 2},
    {"preset": "uncapped"},
    {"preset": "default", "shu_kan": True},
]


def _cap_words(win: Any, rules: Any, lang: str) -> str:
    ids = [p.id for p in win.patterns]
    return wording.cap(win.multiplier, win.capped, win.shu_kan, ids, rules.cap, rules.cap_exempt, lang)


def _same_as_the_engines_note(mine: str, note: str, shu_kan: int) -> bool:
    # the engine's note, made whole (its 数坎 is "shu kan"), ends after a 数坎 with which sets gave it
    note = wording.en_whole(note)
    return note == mine or (shu_kan > 0 and note.startswith(mine + ":"))


def test_the_cap_in_words_is_the_engines_decision() -> None:
    """``wording.cap`` says again what ``domain.fan`` decided about the cap (the settlement's
    ``cap_zh``): its English form is the engine's own ``cap_note``, for every branch (no cap, an
    exempt pattern under and over its own cap, capped, under the cap, 数坎 after it) and for every
    win of simulated tables of every preset; the Chinese form has no ASCII word."""
    from domain.fan import score
    from domain.rules import resolve
    from domain.scoring import WinSituation
    from domain.tiles import parse, tile, to_counts

    seen: set[str] = set()
    for spec in CAP_RULES:
        rules = resolve(spec)
        for concealed, win_tile, self_draw in CAP_HANDS:
            k = tile(win_tile)
            sit = WinSituation(
                concealed=tuple(to_counts([*parse(concealed), k])), win_tile=k, self_draw=self_draw
            )
            got = score(sit, rules)
            assert got is not None, concealed
            en, zh = _cap_words(got, rules, "en"), _cap_words(got, rules, "zh")
            assert _same_as_the_engines_note(en, got.cap_note, got.shu_kan), (
                spec,
                concealed,
                en,
                got.cap_note,
            )
            assert not ASCII_WORD.search(zh), zh
            seen |= {x for x in ("不封顶", "例外", "→", "未超过", "数坎") if x in zh}
            if "→" in zh and "例外" not in zh:
                seen.add("capped")
    assert seen == {"不封顶", "例外", "→", "未超过", "数坎", "capped"}, seen
    wins = 0
    for seed in range(21):
        final = engine.fold([convert(e) for e in simulated(seed, hands=3)])
        for s in final.settlements:
            for w in s.wins:
                if w.multiplier == 0:  # a recorded non-win: the engine's note says so (read.py words it)
                    continue
                wins += 1
                en = _cap_words(w, final.rules, "en")
                assert _same_as_the_engines_note(en, w.cap_note, w.shu_kan), (seed, en, w.cap_note)
                assert not ASCII_WORD.search(_cap_words(w, final.rules, "zh"))
    assert wins > 20


def test_the_settlements_chinese_derivation_is_whole_chinese_for_every_preset() -> None:
    """Each transfer's ``detail_zh`` as the settlement route serves it (``read._derivation``: the
    engine's Chinese made whole) names tiles and seats in the timeline's words: no wire tile name
    (``5p``, ``C``), no seat number (``0号位``, ``座位0``), and its only ASCII words are the names
    and values of the rule options that decided it (``discarder_pays_double``); the numbers and the
    amount are the engine's. Simulated tables of every preset, 漂, 买码 and 杠上杠 among them."""
    from domain.rule_options import OPTIONS

    allowed = {o.name.split(".")[-1] for o in OPTIONS} | {c for o in OPTIONS for c in o.choices}
    reasons: set[str] = set()
    for t, raw in served_transfers():
        zh = t["detail_zh"]
        assert zh == wording.zh_whole(raw.detail_zh), zh
        assert not WIRE_TILE.search(zh) and "号位" not in zh and "座位" not in zh, zh
        assert set(re.findall(r"[A-Za-z_]+", zh)) <= allowed, zh
        assert zh.endswith(f"= {t['amount']}"), zh
        if t["reason"] == "piao":
            who = (wording.SEAT_ZH[raw.from_], wording.SEAT_ZH[raw.to])  # type: ignore[index]
            assert f"付方{who[0]}" in zh and f"收方{who[1]}" in zh, zh
        reasons.add(t["reason"] + ("_chain" if "杠上杠" in zh else ""))
    assert reasons >= {"hu", "kong", "kong_chain", "piao", "fee", "exhausted"}, reasons


WIRE_TILE = re.compile(r"(?<![A-Za-z0-9_])([1-9]+[ps]|[CFP])(?![A-Za-z0-9_])")


def served_settlements() -> Any:
    """Each settlement as the settlement route serves it (``read._derivation``) beside the engine's,
    over simulated tables of every preset (漂, 买码 and 杠上杠 among them) and two with a fee."""
    from domain.rules import PRESETS
    from services.api.read import _derivation

    runs = [(preset, seed, None) for preset in PRESETS for seed in range(8)]
    runs += [("default", seed, {"service_fee": 2}) for seed in range(2)]  # no preset takes a fee
    runs += [("default", seed, {"pin_dao": "full", "shu_kan": True}) for seed in range(6)]  # 四归, 数坎
    for preset, seed, override in runs:
        final = engine.fold([convert(e) for e in simulated(seed, 3, preset=preset)], rules_override=override)
        for s in final.settlements:
            yield _derivation(s, {}, final.rules, final.rulings, final.players), s


def served_transfers() -> Any:
    """Each transfer as the settlement route serves it beside the engine's (``served_settlements``)."""
    for body, s in served_settlements():
        yield from zip(body["transfers"], s.transfers, strict=True)


def test_a_wins_english_derivation_is_whole_english_for_every_preset() -> None:
    """Each win as the settlement route serves it says its patterns in English as ``patterns_zh``
    says them in Chinese — by name with the factor (``declared ready ×2``), then the engine's note
    made whole (``the winner had declared ready``, not ``… 亮倒``) — and a plain win's product as
    ``plain win ×1`` (``屁胡 ×1`` only in ``multiplier_zh``): no Chinese in an English field."""
    plain = named = 0
    said: set[str] = set()
    for body, s in served_settlements():
        for w, raw in zip(body["wins"], s.wins, strict=True):
            d = w["derivation"]
            lines = zip(w["patterns"], d["patterns"], d["patterns_zh"], raw.patterns, strict=True)
            for p, line, zh, hit in lines:
                assert p["detail"] == wording.en_whole(hit.detail), p
                note = f" ({p['detail']})" if p["detail"] else ""
                assert line == wording.pattern(p["id"], p["x"], "en") + note
                assert zh == wording.pattern(p["id"], p["x"], "zh")
                named += 1
                said |= {w for w in ("declared ready", "four-in-one", "dots", "bamboo") if w in p["detail"]}
            if "shu kan" in d["cap"]:
                said.add("shu kan")
            for text in (*d["patterns"], d["multiplier"], d["cap"], *(p["detail"] for p in w["patterns"])):
                assert not CJK.search(text), (text, raw)
            if not raw.patterns and (d["violation"] is None or d["violation"]["counts_as_win"]):
                assert (d["multiplier"], d["multiplier_zh"]) == ("plain win ×1", "屁胡 ×1")
                plain += 1
    assert plain > 0 and named > 0, (plain, named)
    assert said >= {"declared ready", "dots", "bamboo", "shu kan"}, said


def test_the_settlements_english_derivation_is_whole_english_for_every_preset() -> None:
    """Each transfer's ``detail`` as the settlement route serves it (``read._derivation``: the
    engine's English made whole by ``wording.en_whole``) says the rules' Chinese names and the
    tiles in English words (``discard of 8 bamboo, bao hu: …``, ``kong chain``, ``the ma tile``):
    no Chinese character and no wire tile name left; the numbers are the engine's, all of them, and
    the rule options' names stay. Simulated tables of every preset, 漂, 买码 and 杠上杠 among them."""
    from domain.rule_options import OPTIONS

    options = {o.name.split(".")[-1] for o in OPTIONS} | {c for o in OPTIONS for c in o.choices}
    said: set[str] = set()
    for t, raw in served_transfers():
        en = t["detail"]
        assert en == wording.en_whole(raw.detail), en
        assert not CJK.search(en) and not WIRE_TILE.search(en), en
        assert sorted(re.findall(r"\d+", en)) == sorted(re.findall(r"\d+", raw.detail)), (raw.detail, en)
        kept = {w for w in re.findall(r"[a-z_]+", raw.detail) if "_" in w and w in options}
        assert all(w in en for w in kept), (raw.detail, en)
        assert en.endswith(f"= {t['amount']}"), en
        said |= {w for w in ("bao hu", "kong chain", "the ma tile", "piao", "exhausted wall") if w in en}
    assert said == {"bao hu", "kong chain", "the ma tile", "piao", "exhausted wall"}, said


def test_a_recorded_rulings_english_is_whole_english() -> None:
    """A rule ruling recorded on a ``violations: "record"`` table, as the reads serve it
    (``read._ruling_out``, the audit, the timeline: ``wording.en_whole``), says the rules' Chinese
    names in English (``declared ready``, ``peng``, ``kong``) and the tiles in words, leaves out the
    seeds' Chinese quoted after the English that says it (an option's name kept: ``(…_triplet)``),
    and keeps the players' ids and the numbers it does say."""
    from services.api.read import _ruling_out
    from tests.projections.helpers import violating

    codes: set[str] = set()
    for seed in range(400):
        events, _ = violating(9000 + seed, 3)
        final = engine.fold([convert(e) for e in events])
        for ruling in final.rulings:
            en = _ruling_out(ruling, final.players)["message"]
            assert en == wording.en_whole(ruling.message, final.players)
            assert not CJK.search(en) and not WIRE_TILE.search(en), (ruling.message, en)
            numbers = re.findall(r"\d+", en)
            raw = re.findall(r"\d+", ruling.message)
            assert all(numbers.count(n) <= raw.count(n) for n in numbers), (ruling.message, en)
            assert any(f"({p})" in en for p in final.players), en  # the player it names, by id
            options = {w for w in re.findall(r"[a-z]+_[a-z_]+", ruling.message)}
            assert all(w in en for w in options), (ruling.message, en)
            codes.add(ruling.code)
    assert {
        "liang_dao_not_ready",
        "liang_dao_locked",
        "not_a_winning_hand",
        "peng_with_concealed_triplet",
    } <= codes
