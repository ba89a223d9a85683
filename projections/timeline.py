"""The timeline of one hand (``GET /v1/tables/{id}/hands/{n}/timeline``): one line per event a
person can read, in whole Chinese or whole English (projections/wording.py), with the rulings
inline and the structured fields beside the text.

Pure: :func:`render` folds the hand's events with the engine's own ``replay`` from the state right
after its ``hand_started`` and reads everything from what the engine recorded — the 漏胡
candidates it scored when a discard appeared (``HandState.candidates``) and the restrictions it
logged (``lou_hu_log``), whether a restriction blocked a later win (``domain.lou_hu.blocking``),
the kong records with their place in a 杠上杠 chain, the 亮倒 waits, the settlement with its
transfers (``domain.settle.settle_hand``; what a passed win would have paid is the same function
on that win alone). No rule is decided here. docs/timeline.md shows the lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from domain.engine import Replayer, TableState
from domain.events import (
    Event,
    HandAborted,
    HandExhausted,
    HandStarted,
    Hu,
    Kong,
    LiangDao,
    MaDrawn,
    Peng,
    SettlementReported,
    TileDiscarded,
    TileDrawn,
    WallRevealed,
)
from domain.facts import HandRecord, Settlement, WinRecord
from domain.lou_hu import blocking
from domain.settle import chain_factor, settle_hand
from domain.tiles import TILE_NAMES
from projections import wording as w
from projections.discrepancies import compare

Stored = tuple[int, Event, dict[str, Any] | None]  # (version, event, stored ruling JSON or None)


def _tag(ev: Event) -> str:
    return str(type(ev).__struct_config__.tag)


class _Hand:
    """What the whole hand left behind, for lines that need what came later (2nd pass)."""

    def __init__(self, final: TableState, hand: int) -> None:
        self.final = final
        self.players = list(final.players)
        self.rules = final.rules
        hs = final.hand if final.hand is not None and final.hand.hand == hand else None
        self.record: HandRecord | None = hs.record if hs is not None else None
        found = [s for s in final.settlements if s.hand == hand]
        self.settlement: Settlement | None = found[-1] if found else None
        logs = list(final.lou_hu_log) + (list(hs.lou_hu_log) if hs is not None else [])
        self.lou = {(x.event, x.seat): x for x in logs if x.hand == hand}
        self.blocked: dict[tuple[int, int], list[int]] = {}  # restriction -> events it blocked
        self.would: dict[tuple[int, int], dict[str, Any]] = {}  # restriction -> what the win would pay


def render(
    engine: Replayer, start: TableState, first: Stored, rest: Sequence[Stored], lang: str
) -> dict[str, Any]:
    """The timeline of the hand that ``first`` (its ``hand_started``) starts. ``start``: the table
    state right after ``first``; ``rest``: the hand's other events in order (up to the next
    ``hand_started`` / ``table_closed``)."""
    hand_no = first[1].hand if isinstance(first[1], HandStarted) else 0
    steps: list[tuple[Stored, TableState, TableState]] = [(first, start, start)]
    state = start
    for item in rest:
        before, state = state, engine.replay(state, item[1])
        steps.append((item, before, state))
    h = _Hand(state, hand_no)
    lines: list[dict[str, Any]] = []
    for i, (item, before, after) in enumerate(steps):
        nxt = steps[i + 1][0] if i + 1 < len(steps) else None
        lines.append(_line(h, item, before, after, nxt, lang, item[1].at))
    lines.extend(_settlement_lines(h, lang))
    return {
        "hand": hand_no,
        "lang": lang,
        "seat_words": list(w.SEAT_ZH) if lang == "zh" else ["seat 0", "seat 1", "seat 2"],
        "players": [
            {"seat": s, "player": p, "name": w.seat(s, h.players, lang)} for s, p in enumerate(h.players)
        ],
        "first_event": first[0],
        "last_event": steps[-1][0][0],
        "end": h.record.end if h.record is not None else None,
        "lines": lines,
        "lou_hu": _lou_summary(h, lang),
    }


# ------------------------------------------------------------------------------------- lines
def _base(item: Stored, at: str | None, seat: int | None, h: _Hand) -> dict[str, Any]:
    v, ev, _ = item
    return {"version": v, "at": at, "kind": _tag(ev), "seat": seat,
            "player": h.players[seat] if seat is not None and seat < len(h.players) else None,
            "tiles": [], "codes": []}  # fmt: skip


def _line(
    h: _Hand,
    item: Stored,
    before: TableState,
    after: TableState,
    nxt: Stored | None,
    lang: str,
    at: str | None,
) -> dict[str, Any]:
    v, ev, ruling = item
    zh = lang == "zh"
    seat = getattr(ev, "seat", None)
    out = _base(item, at, seat, h)
    who = w.seat(seat, h.players, lang) if seat is not None else ""
    parts: list[str] = []
    if isinstance(ev, HandStarted):
        hs = after.hand
        mode = "known" if ev.wall is not None else ("committed" if ev.wall_sha256 else "count_only")
        bits = [f"第{ev.hand}局开始，庄家{w.seat(ev.dealer, h.players, lang)}" if zh
                else f"hand {ev.hand} starts, dealer {w.seat(ev.dealer, h.players, lang)}",
                w.pick(lang, w.WALL_MODES[mode])]  # fmt: skip
        if hs is not None:
            bits.append(f"底分{hs.base}" if zh else f"base {hs.base}")
        if ev.dice:
            bits.append(f"骰子{ev.dice[0]}、{ev.dice[1]}" if zh else f"dice {ev.dice[0]} and {ev.dice[1]}")
        if ev.piao:
            bits.append(("漂" if zh else "piao ") + "/".join(str(p) for p in ev.piao))
        parts.append(("，" if zh else ", ").join(bits))
        out.update(seat=ev.dealer, player=h.players[ev.dealer] if ev.dealer < len(h.players) else None)
        out["wall"] = mode
    elif isinstance(ev, TileDrawn):
        out["tiles"] = [ev.tile]
        hs = after.hand
        back = hs is not None and hs.from_back
        verb = ("杠后补牌" if back else "摸") if zh else ("draws the replacement" if back else "draws")
        parts.append(f"{who}{verb}{w.tile(ev.tile, lang)}" if zh else f"{who} {verb} {w.tile(ev.tile, lang)}")
        for (event, s), x in sorted(h.lou.items()):
            if x.lifted_by == v:
                out["codes"].append("lou_hu")
                parts.append(
                    f"（第{event}事件的漏胡到此解除）"
                    if zh
                    else f" (the missed win of event {event} is lifted)"
                )
    elif isinstance(ev, TileDiscarded):
        out["tiles"] = [ev.tile]
        parts.append(f"{who}打{w.tile(ev.tile, lang)}" if zh else f"{who} discards {w.tile(ev.tile, lang)}")
    elif isinstance(ev, Peng):
        out["tiles"] = [ev.tile]
        parts.append(f"{who}碰{w.tile(ev.tile, lang)}" if zh else f"{who} pengs {w.tile(ev.tile, lang)}")
    elif isinstance(ev, Kong):
        out["tiles"] = [ev.tile]
        parts.append(_kong_text(h, out, ev, v, before, after, who, lang))
    elif isinstance(ev, LiangDao):
        out["tiles"] = [ev.discard]
        info = after.hand.liang_dao[ev.seat] if after.hand is not None else None
        waits = [TILE_NAMES[k] for k in info.waits] if info is not None else []
        hidden = [TILE_NAMES[k] for k in info.hidden] if info is not None else []
        out["liang_dao"] = {"discard": ev.discard, "waits": waits, "hidden": hidden}
        out["codes"].append("liang_dao")
        if zh:
            text = f"{who}亮倒，打{w.tile(ev.discard, lang)}，听{w.tiles(waits, lang) or '（无）'}"
            text += f"，暗藏刻子{w.tiles(hidden, lang)}" if hidden else ""
        else:
            text = f"{who} declares ready (liang dao) discarding {w.tile(ev.discard, lang)}, waiting on "
            text += (w.tiles(waits, lang) or "nothing") + (
                f", keeping {w.tiles(hidden, lang)} face down" if hidden else ""
            )
        parts.append(text)
    elif isinstance(ev, Hu):
        out["tiles"] = [ev.tile]
        out["seat"], out["player"] = None, None
        parts.append(_hu_text(h, out, ev, v, lang))
    elif isinstance(ev, HandExhausted):
        parts.append("荒庄：牌墙摸完，无人胡牌" if zh else "exhausted wall: nobody won the last discard")
    elif isinstance(ev, HandAborted):
        out["reason"] = ev.reason
        parts.append(
            "平台作废本局：不结算，庄家重打" if zh else "the platform voided the hand: nothing is settled"
        )
    elif isinstance(ev, MaDrawn):
        out["tiles"] = [ev.tile]
        value = 10 if ev.tile in ("C", "F", "P") else int(ev.tile[:-1])
        parts.append(f"买码翻出{w.tile(ev.tile, lang)}，加{value}番" if zh
                     else f"the ma tile is {w.tile(ev.tile, lang)}: +{value} to the multiplier")  # fmt: skip
    elif isinstance(ev, WallRevealed):
        new = [r for hand, e, r in after.wall_checks if e == v]
        result = new[0] if new else "ok"
        out["result"] = result
        text = w.pick(lang, w.WALL_RESULTS.get(result) or w.CODES.get(result, (result, result)))
        parts.append(f"公布牌墙：{text}" if zh else f"wall revealed: {text}")
    elif isinstance(ev, SettlementReported):
        parts.append(_reported_text(h, out, ev, lang))
    else:
        parts.append(w.pick(lang, ("其他事件", "other event")))
    parts.extend(_candidates_text(h, out, v, before, after, nxt, lang))
    if ruling is not None:
        code = str(ruling.get("rule", ""))
        out["codes"].append(code)
        out["ruling"] = {"code": code, "kind": ruling.get("kind"), "message": ruling.get("message"),
                         "message_zh": w.zh_whole(str(ruling.get("message_zh") or ""), h.players)}  # fmt: skip
        parts.append(
            f"（违规记录在案：{w.code(code, lang)}）"
            if zh
            else f" (recorded violation: {w.code(code, lang)})"
        )
    sep = " " if zh else ": "
    out["text"] = w.event_no(v, lang) + sep + "".join(parts)
    return out


def _kong_text(
    h: _Hand,
    out: dict[str, Any],
    ev: Kong,
    v: int,
    before: TableState,
    after: TableState,
    who: str,
    lang: str,
) -> str:
    zh = lang == "zh"
    rec = next((k for k in (h.record.kongs if h.record is not None else ()) if k.event == v), None)
    name = w.pick(lang, w.KONGS[ev.kind])
    article = "an" if ev.kind in ("exposed", "added") else "a"
    text = (
        f"{who}{name}{w.tile(ev.tile, lang)}"
        if zh
        else f"{who} makes {article} {name} of {w.tile(ev.tile, lang)}"
    )
    if rec is None:
        return text
    info: dict[str, Any] = {"kind": ev.kind, "k": rec.chain, "robbed": rec.robbed, "source": rec.source}
    out["codes"].append("kong_chain" if rec.chain > 1 else "kong")
    if rec.robbed:
        info["coins"] = []
        out["kong"] = info
        return text + ("，被抢杠：抢的杠不算杠，不付杠钱" if zh else ", robbed: a robbed kong pays nothing")
    bh = before.hand
    chain = bh.chain if bh is not None else None
    factor = chain_factor(rec.chain, h.rules.kong_chain_cap) if h.rules is not None else 1
    info["factor"] = factor
    if rec.chain > 1 and chain is not None and bh is not None:
        owner = chain.seat
        if ev.kind == "exposed":
            link = {"event": bh.last_event, "kind": "discard", "seat": owner,
                    "tile": TILE_NAMES[bh.last_tile] if bh.last_tile is not None else None}  # fmt: skip
            how = (f"接{w.short_seat(owner, lang)}第{bh.last_event}事件杠后打出的{w.tile(ev.tile, lang)}" if zh
                   else f"linked by {w.short_seat(owner, lang)}'s discard after the kong at event {bh.last_event}")  # fmt: skip
        else:
            link = {"event": bh.drawn_event, "kind": "replacement_draw", "seat": owner, "tile": None}
            how = (f"接第{bh.drawn_event}事件杠后补牌" if zh
                   else f"linked by the replacement draw at event {bh.drawn_event}")  # fmt: skip
        info.update(chain_seat=owner, linked_by=link)
        text += (f"（{w.short_seat(owner, lang)}的杠上杠第{rec.chain}杠，{how}，杠钱×{factor}）" if zh
                 else f" (kong {rec.chain} of {w.short_seat(owner, lang)}'s kong chain, {how}, money ×{factor})")  # fmt: skip
    transfers = [
        t
        for t in (h.settlement.transfers if h.settlement is not None else ())
        if t.reason == "kong" and t.event == v
    ]
    if transfers:
        info["coins"] = [{"from": t.from_, "to": t.to, "amount": t.amount} for t in transfers]
        pays = ("，" if zh else ", ").join(_pays(t.from_, t.to, t.amount, h, lang) for t in transfers)
    else:  # the hand is not settled yet: the engine's running kong money
        bm = bh.kong_money if bh is not None else (0, 0, 0)
        am = after.hand.kong_money if after.hand is not None else bm
        delta = [a - b for a, b in zip(am, bm, strict=True)]
        info["coins"] = None
        info["net"] = delta
        pays = ("，" if zh else ", ").join(
            f"{w.short_seat(s, lang)} {d:+d}" for s, d in enumerate(delta) if d
        )
    out["kong"] = info
    return text + (f"；杠钱：{pays}" if zh else f"; kong money: {pays}") if pays else text


def _pays(payer: Any, payee: Any, amount: int, h: _Hand, lang: str) -> str:
    if lang == "zh":
        return f"{w.seat(payer, h.players, lang)}付{w.seat(payee, h.players, lang)}{w.coins(amount, lang)}"
    return f"{w.seat(payer, h.players, lang)} pays {w.seat(payee, h.players, lang)} {w.coins(amount, lang)}"


def _win_kind(win: WinRecord | None, lang: str) -> str:
    if win is None:
        return ""
    if win.source is None:
        kind = ("杠上开花", "self-draw on a kong draw") if win.kong_draw else ("自摸", "self-draw")
    elif win.robbed_kong:
        kind = ("抢杠胡", "robbing the kong")
    elif win.after_kong_discard:
        kind = ("杠上炮", "on the discard after a kong")
    else:
        kind = ("点炮", "on the discard")
    return w.pick(lang, kind)


def _hu_text(h: _Hand, out: dict[str, Any], ev: Hu, v: int, lang: str) -> str:
    zh = lang == "zh"
    wins_out = [x for x in (h.settlement.wins if h.settlement is not None else ()) if x.event == v]
    recs = {x.seat: x for x in (h.record.wins if h.record is not None else ()) if x.event == v}
    texts, items = [], []
    for seat in ev.winners:
        rec = recs.get(seat)
        won = next((x for x in wins_out if x.seat == seat), None)
        who = w.seat(seat, h.players, lang)
        src = ev.from_
        head = f"{who}胡{w.tile(ev.tile, lang)}" if zh else f"{who} wins on {w.tile(ev.tile, lang)}"
        kind = _win_kind(rec, lang)
        if src is not None:
            head += (
                f"（{w.short_seat(src, lang)}{kind}）" if zh else f" ({kind} of {w.short_seat(src, lang)})"
            )
        elif kind:
            head += f"（{kind}）" if zh else f" ({kind})"
        item: dict[str, Any] = {"seat": seat, "from": src, "kind": kind}
        if won is None:
            texts.append(head)
            items.append(item)
            continue
        hits = [(p.id, p.x) for p in won.patterns]
        item.update(patterns=[{"id": p, "x": x, "name": w.pick(lang, w.PATTERNS.get(p, (p, p)))} for p, x in hits],
                    multiplier=won.multiplier, payable=won.payable, bao_hu=won.bao_hu)  # fmt: skip
        if rec is not None and rec.violation is not None and won.multiplier == 0:
            head += (
                "：不算胡（违规记录在案），不付分" if zh else ": not a win (recorded violation), pays nothing"
            )
        else:
            money = [
                t
                for t in h.settlement.transfers
                if t.event == v and t.to == seat and t.reason in ("hu", "piao")
            ]  # type: ignore[union-attr]
            item["coins"] = sum(t.amount for t in money)
            pays = ("，" if zh else ", ").join(_pays(t.from_, t.to, t.amount, h, lang) for t in money)
            if zh:
                head += f"：{w.patterns(hits, lang)}，共{won.multiplier}番，按{won.payable}番付"
                head += "，包胡" if won.bao_hu else ""
            else:
                head += f": {w.patterns(hits, lang)}, ×{won.multiplier} in all, paid at ×{won.payable}"
                head += ", the discarder pays for all (bao hu)" if won.bao_hu else ""
            head += (f"；{pays}" if zh else f"; {pays}") if pays else ""
        texts.append(head)
        items.append(item)
    out["wins"] = items
    return ("；" if zh else "; ").join(texts)


def _would_pay(hs: Any, rules: Any, seat: int, score: Any, robbed: bool) -> int:
    """Coins the passed win would have brought ``seat``: settle_hand on that win alone."""
    rec = hs.record
    win = WinRecord(seat=seat, source=hs.turn, tile=hs.last_tile, event=hs.last_event, score=score,
                    liang_dao=hs.liang_dao[seat] is not None, source_liang_dao=hs.liang_dao[hs.turn] is not None,
                    robbed_kong=robbed, after_kong_discard=hs.after_kong and not robbed)  # fmt: skip
    alone = HandRecord(hand=rec.hand, dealer=rec.dealer, base=rec.base, start_event=rec.start_event, piao=rec.piao,
                       end="hu", end_event=hs.last_event, wins=(win,), declarations=rec.declarations)  # fmt: skip
    s = settle_hand(alone, rules)
    return sum(t.amount for t in s.transfers if t.to == seat and t.reason in ("hu", "piao"))


def _candidates_text(
    h: _Hand,
    out: dict[str, Any],
    v: int,
    before: TableState,
    after: TableState,
    nxt: Stored | None,
    lang: str,
) -> list[str]:
    """Who could have won on this event's tile, and what became of it (漏胡 inline)."""
    hs = after.hand
    if hs is None or not hs.candidates or hs.last_event != v or h.rules is None:
        return []
    zh = lang == "zh"
    rules = h.rules
    robbed = hs.phase == "rob"
    texts: list[str] = []
    items: list[dict[str, Any]] = []
    for c in hs.candidates:
        if c.score is None:
            continue
        s = c.seat
        sw = w.short_seat(s, lang)
        hits = [(p.id, p.x) for p in c.score.patterns]
        coins = _would_pay(hs, rules, s, c.score, robbed) if c.score.allowed else 0
        item: dict[str, Any] = {"seat": s, "legal": c.legal, "multiplier": c.score.multiplier,
                                "patterns": [{"id": p, "x": x} for p, x in hits], "coins": coins}  # fmt: skip
        scored = (
            f"{w.patterns(hits, lang)}，应得{w.coins(coins, lang)}"
            if zh
            else f"{w.patterns(hits, lang)}, would get {w.coins(coins, lang)}"
        )  # noqa: E501
        won = nxt is not None and isinstance(nxt[1], Hu) and s in nxt[1].winners
        if c.legal and won:
            item["outcome"] = "won"
            texts.append(f"{sw}可胡（{scored}），胡了" if zh else f"{sw} could win ({scored}) and did")
        elif c.legal:
            x = h.lou.get((v, s))
            choice = _choice(nxt, s, h, lang)
            item["outcome"] = "passed"
            if x is not None:
                h.would[(v, s)] = {"patterns": item["patterns"], "multiplier": c.score.multiplier,
                                   "payable": c.score.payable, "coins": coins}  # fmt: skip
                out["codes"].append("lou_hu")
                item["lou_hu"] = {"since": x.since, "lifted_by": x.lifted_by}
                until = (f"至{sw}下次摸牌（第{x.lifted_by}事件）" if x.lifted_by is not None else f"至{sw}下次摸牌") if zh \
                    else (f"until {sw}'s next draw (event {x.lifted_by})" if x.lifted_by is not None else f"until {sw}'s next draw")  # fmt: skip  # noqa: E501
                texts.append(f"{sw}可胡（{scored}），{choice} → 漏胡{until}" if zh
                             else f"{sw} could win ({scored}), {choice} → missed win: no discard win {until}")  # fmt: skip
            else:
                texts.append(
                    f"{sw}可胡（{scored}），{choice}" if zh else f"{sw} could win ({scored}), {choice}"
                )
        else:
            r = blocking(hs, rules, s, c.score) if c.score.allowed else None
            if r is not None:
                item["outcome"] = "blocked_by_lou_hu"
                item["blocked_by"] = r.event
                h.blocked.setdefault((r.event, s), []).append(v)
                out["codes"].append("lou_hu")
                texts.append(f"{sw}本可胡（{scored}），但第{r.event}事件漏胡后尚未摸牌，不能胡" if zh
                             else f"{sw} could have won ({scored}) but is still restricted by the missed win of event {r.event}")  # fmt: skip  # noqa: E501
            elif robbed and not rules.rob_kong:
                item["outcome"] = "rob_kong_disabled"
                texts.append(f"{sw}听此牌，但{w.code('rob_kong_disabled', lang)}" if zh
                             else f"{sw} waits on it, but {w.code('rob_kong_disabled', lang)}")  # fmt: skip
            else:
                item["outcome"] = "below_min_multiplier"
                need = c.score.min_required
                texts.append(f"{sw}听此牌，但只有{c.score.multiplier}番，不够{need}番起胡" if zh
                             else f"{sw} waits on it, but ×{c.score.multiplier} is below the minimum ×{need}")  # fmt: skip
        items.append(item)
    if not items:
        return []
    out["candidates"] = items
    return [" — " + ("；" if zh else "; ").join(texts)]


def _choice(nxt: Stored | None, seat: int, h: _Hand, lang: str) -> str:
    zh = lang == "zh"
    if nxt is None:
        return "尚未决定" if zh else "not decided yet"
    ev = nxt[1]
    actor = getattr(ev, "seat", None)
    if isinstance(ev, Peng):
        if actor == seat:
            return "选择碰" if zh else "chose peng"
        return (
            f"未胡，{w.short_seat(ev.seat, lang)}碰"
            if zh
            else f"did not win; {w.short_seat(ev.seat, lang)} pengs"
        )
    if isinstance(ev, Kong):
        if actor == seat:
            return "选择杠" if zh else "chose kong"
        return (
            f"未胡，{w.short_seat(ev.seat, lang)}杠"
            if zh
            else f"did not win; {w.short_seat(ev.seat, lang)} kongs"
        )
    if isinstance(ev, Hu):
        others = (
            "、".join(w.short_seat(s, lang) for s in ev.winners)
            if zh
            else " and ".join(w.short_seat(s, lang) for s in ev.winners)
        )  # noqa: E501
        return f"未胡，{others}胡" if zh else f"did not win; {others} won"
    if isinstance(ev, HandExhausted):
        return "未胡，荒庄" if zh else "did not win; the wall was exhausted"
    return "选择过" if zh else "passed"


def _reported_text(h: _Hand, out: dict[str, Any], ev: SettlementReported, lang: str) -> str:
    zh = lang == "zh"
    s = h.settlement
    computed = [(t.from_, t.to, t.amount) for t in s.transfers] if s is not None else []
    lines = compare(computed, [(t.from_, t.to, t.amount) for t in ev.transfers])
    out["differences"] = lines
    if s is None:
        return (
            "平台上报结算，但本局尚未结算"
            if zh
            else "the platform reported a payout; the hand is not settled"
        )
    if not lines:
        return "平台上报结算：与计算一致" if zh else "the platform reported a payout: it matches"
    return (
        f"平台上报结算：有{len(lines)}处与计算不一致"
        if zh
        else f"the platform reported a payout: {len(lines)} line(s) differ"
    )


# ----------------------------------------------------------------------------- the hand's end
def _reason_text(h: _Hand, t: Any, lang: str) -> str:
    zh = lang == "zh"
    rec = h.record
    if t.reason == "hu" and rec is not None:
        win = next((x for x in rec.wins if x.event == t.event and x.seat == t.to), None)
        out = next(
            (x for x in (h.settlement.wins if h.settlement else ()) if x.event == t.event and x.seat == t.to),
            None,
        )
        kind = _win_kind(win, lang)
        hits = [(p.id, p.x) for p in out.patterns] if out is not None else []
        bao = ("，包胡" if zh else ", bao hu") if out is not None and out.bao_hu else ""
        tile = w.tile(out.tile, lang) if out is not None else ""
        return (
            f"{kind}{tile}，{w.patterns(hits, lang)}{bao}"
            if zh
            else f"{tile}, {kind}, {w.patterns(hits, lang)}{bao}"
        )
    if t.reason == "kong" and rec is not None:
        k = next((x for x in rec.kongs if x.event == t.event), None)
        if k is None:
            return ""
        name = (
            f"{w.pick(lang, w.KONGS[k.kind])}{w.tile_kind(k.tile, lang)}"
            if zh
            else f"{w.pick(lang, w.KONGS[k.kind])} of {w.tile_kind(k.tile, lang)}"
        )  # noqa: E501
        if k.chain > 1:
            name += f"，杠上杠第{k.chain}杠" if zh else f", kong {k.chain} of a chain"
        return name
    if t.reason == "exhausted" and h.rules is not None:
        mode = h.rules.exhausted_liang_dao
        return w.pick(lang, {
            "first_declarer_pays_each": ("第一个亮倒的赔每家", "the first declarer pays each other player"),
            "declarers_pay_undeclared": ("亮倒者赔未亮倒者", "each declarer pays each non-declarer"),
        }.get(mode, (mode, mode)))  # fmt: skip
    if (
        t.reason == "piao"
        and rec is not None
        and rec.piao is not None
        and isinstance(t.from_, int)
        and isinstance(t.to, int)
    ):
        return (
            f"付方漂{rec.piao[t.from_]}加收方漂{rec.piao[t.to]}"
            if zh
            else f"payer's piao {rec.piao[t.from_]} + payee's {rec.piao[t.to]}"
        )  # noqa: E501
    if t.reason == "fee":
        return "开局服务费" if zh else "at the hand's start"
    return ""


def _settlement_lines(h: _Hand, lang: str) -> list[dict[str, Any]]:
    s = h.settlement
    if s is None:
        return []
    zh = lang == "zh"
    out: list[dict[str, Any]] = []
    end = h.record.end_event if h.record is not None else None
    for t in s.transfers:
        reason = w.pick(lang, w.REASONS[t.reason])
        why = _reason_text(h, t, lang)
        text = (f"结算（第{t.event}事件）：{_pays(t.from_, t.to, t.amount, h, lang)}，{reason}" + (f"：{why}" if why else "")) if zh \
            else (f"settlement (event {t.event}): {_pays(t.from_, t.to, t.amount, h, lang)}, {reason}" + (f": {why}" if why else ""))  # fmt: skip  # noqa: E501
        out.append({"version": t.event, "at": None, "kind": "transfer", "seat": t.to if isinstance(t.to, int) else None,
                    "player": None, "tiles": [], "codes": [t.reason], "reason": t.reason,
                    "transfer": {"from": t.from_, "to": t.to, "amount": t.amount, "reason": t.reason, "event": t.event,
                                 "detail": t.detail},
                    "text": text})  # fmt: skip
    nets = ("，" if zh else ", ").join(f"{w.seat(i, h.players, lang)} {n:+d}" for i, n in enumerate(s.net))
    nd = w.seat(s.next_dealer, h.players, lang)
    out.append({"version": end, "at": None, "kind": "net", "seat": None, "player": None, "tiles": [], "codes": [],
                "net": list(s.net), "next_dealer": s.next_dealer,
                "text": f"本局净输赢：{nets}；下局庄家{nd}" if zh else f"net for the hand: {nets}; next dealer {nd}"})  # fmt: skip
    return out


def _lou_summary(h: _Hand, lang: str) -> list[dict[str, Any]]:
    zh = lang == "zh"
    out = []
    for (event, seat), x in sorted(h.lou.items()):
        blocked = h.blocked.get((event, seat), [])
        sw = w.seat(seat, h.players, lang)
        until = (f"第{x.lifted_by}事件摸牌解除" if x.lifted_by is not None else "尚未解除") if zh \
            else (f"lifted by the draw at event {x.lifted_by}" if x.lifted_by is not None else "not lifted yet")  # fmt: skip
        would = h.would.get((event, seat))
        hits = [(p["id"], p["x"]) for p in would["patterns"]] if would is not None else []
        paid = w.coins(would["coins"], lang) if would is not None else ""
        if zh:
            text = f"{sw}第{event}事件漏胡{w.tile_kind(x.tile, lang)}（{w.patterns(hits, lang)}，共{x.multiplier}番"
            text += f"，应得{paid}）" if paid else "）"
            text += f"，{until}"
            text += (
                f"；此后挡住了第{'、'.join(map(str, blocked))}事件的胡牌" if blocked else "；此后没有挡住胡牌"
            )
        else:
            text = f"{sw} passed a win on {w.tile_kind(x.tile, lang)} at event {event} ({w.patterns(hits, lang)}, ×{x.multiplier}"
            text += f", would have got {paid}), {until}" if paid else f"), {until}"
            text += (
                f"; it later blocked a win at event {', '.join(map(str, blocked))}"
                if blocked
                else "; it blocked no later win"
            )
        out.append({"seat": seat, "player": h.players[seat] if seat < len(h.players) else None,
                    "passed": {"event": event, "tile": TILE_NAMES[x.tile], "from": x.source},
                    "would_have_paid": h.would.get((event, seat), {"multiplier": x.multiplier}),
                    "blocked_later_win": bool(blocked),
                    "multiplier": x.multiplier, "since": x.since, "lifted_by": x.lifted_by,
                    "blocked_wins": blocked, "text": text})  # fmt: skip
    return out
