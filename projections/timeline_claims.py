"""The timeline's claims (projections/timeline.py): who could have won on a discard or a kong's
tile, what it would have paid (``settle_hand`` on that win alone), what became of it, and each 漏胡
with the later wins it blocked (``domain.lou_hu.blocking``).
"""

from __future__ import annotations

from typing import Any

from domain.engine import TableState
from domain.events import HandExhausted, Hu, Kong, Peng
from domain.facts import HandRecord, WinRecord
from domain.lou_hu import blocking
from domain.settle import settle_hand
from domain.tiles import TILE_NAMES
from projections import wording as w
from projections.timeline_money import Hand, Stored


def would_pay(hs: Any, rules: Any, seat: int, score: Any, robbed: bool) -> int:
    """Coins the passed win would have brought ``seat``: settle_hand on that win alone."""
    rec = hs.record
    win = WinRecord(
        seat=seat,
        source=hs.turn,
        tile=hs.last_tile,
        event=hs.last_event,
        score=score,
        liang_dao=hs.liang_dao[seat] is not None,
        source_liang_dao=hs.liang_dao[hs.turn] is not None,
        robbed_kong=robbed,
        after_kong_discard=hs.after_kong and not robbed,
    )
    alone = HandRecord(
        hand=rec.hand,
        dealer=rec.dealer,
        base=rec.base,
        start_event=rec.start_event,
        piao=rec.piao,
        end="hu",
        end_event=hs.last_event,
        wins=(win,),
        declarations=rec.declarations,
    )
    s = settle_hand(alone, rules)
    return sum(t.amount for t in s.transfers if t.to == seat and t.reason in ("hu", "piao"))


def candidates_text(
    h: Hand,
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
        coins = would_pay(hs, rules, s, c.score, robbed) if c.score.allowed else 0
        item: dict[str, Any] = {
            "seat": s,
            "legal": c.legal,
            "multiplier": c.score.multiplier,
            "patterns": [{"id": p, "x": x} for p, x in hits],
            "coins": coins,
        }
        scored = (
            f"{w.patterns(hits, lang)}，应得{w.coins(coins, lang)}"
            if zh
            else f"{w.patterns(hits, lang)}, would get {w.coins(coins, lang)}"
        )
        won = nxt is not None and isinstance(nxt[1], Hu) and s in nxt[1].winners
        if c.legal and won:
            item["outcome"] = "won"
            texts.append(f"{sw}可胡（{scored}），胡了" if zh else f"{sw} could win ({scored}) and did")
        elif c.legal:
            x = h.lou.get((v, s))
            choice = _choice(nxt, s, h, lang)
            item["outcome"] = "passed"
            if x is not None:
                h.would[(v, s)] = {
                    "patterns": item["patterns"],
                    "multiplier": c.score.multiplier,
                    "payable": c.score.payable,
                    "coins": coins,
                }
                out["codes"].append("lou_hu")
                item["lou_hu"] = {"since": x.since, "lifted_by": x.lifted_by}
                until = (
                    (
                        f"至{sw}下次摸牌（第{x.lifted_by}事件）"
                        if x.lifted_by is not None
                        else f"至{sw}下次摸牌"
                    )
                    if zh
                    else (
                        f"until {sw}'s next draw (event {x.lifted_by})"
                        if x.lifted_by is not None
                        else f"until {sw}'s next draw"
                    )
                )
                texts.append(
                    f"{sw}可胡（{scored}），{choice} → 漏胡{until}"
                    if zh
                    else f"{sw} could win ({scored}), {choice} → missed win: no discard win {until}"
                )
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
                texts.append(
                    f"{sw}本可胡（{scored}），但第{r.event}事件漏胡后尚未摸牌，不能胡"
                    if zh
                    else f"{sw} could have won ({scored}) but is still restricted by the missed win "
                    f"of event {r.event}"
                )
            elif robbed and not rules.rob_kong:
                item["outcome"] = "rob_kong_disabled"
                texts.append(
                    f"{sw}听此牌，但{w.code('rob_kong_disabled', lang)}"
                    if zh
                    else f"{sw} waits on it, but {w.code('rob_kong_disabled', lang)}"
                )
            else:
                item["outcome"] = "below_min_multiplier"
                need = c.score.min_required
                texts.append(
                    f"{sw}听此牌，但只有{c.score.multiplier}番，不够{need}番起胡"
                    if zh
                    else f"{sw} waits on it, but ×{c.score.multiplier} is below the minimum ×{need}"
                )
        items.append(item)
    if not items:
        return []
    out["candidates"] = items
    return [" — " + ("；" if zh else "; ").join(texts)]


def _choice(nxt: Stored | None, seat: int, h: Hand, lang: str) -> str:
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
        )
        return f"未胡，{others}胡" if zh else f"did not win; {others} won"
    if isinstance(ev, HandExhausted):
        return "未胡，荒庄" if zh else "did not win; the wall was exhausted"
    return "选择过" if zh else "passed"


def lou_summary(h: Hand, lang: str) -> list[dict[str, Any]]:
    zh = lang == "zh"
    out = []
    for (event, seat), x in sorted(h.lou.items()):
        blocked = h.blocked.get((event, seat), [])
        sw = w.seat(seat, h.players, lang)
        until = (
            (f"第{x.lifted_by}事件摸牌解除" if x.lifted_by is not None else "尚未解除")
            if zh
            else (
                f"lifted by the draw at event {x.lifted_by}" if x.lifted_by is not None else "not lifted yet"
            )
        )
        would = h.would.get((event, seat))
        hits = [(p["id"], p["x"]) for p in would["patterns"]] if would is not None else []
        paid = w.coins(would["coins"], lang) if would is not None else ""
        if zh:
            text = f"{sw}第{event}事件漏胡{w.tile_kind(x.tile, lang)}"
            text += f"（{w.patterns(hits, lang)}，共{x.multiplier}番"
            text += f"，应得{paid}）" if paid else "）"
            text += f"，{until}"
            text += (
                f"；此后挡住了第{'、'.join(map(str, blocked))}事件的胡牌" if blocked else "；此后没有挡住胡牌"
            )
        else:
            text = f"{sw} passed a win on {w.tile_kind(x.tile, lang)} at event {event}"
            text += f" ({w.patterns(hits, lang)}, ×{x.multiplier}"
            text += f", would have got {paid}), {until}" if paid else f"), {until}"
            text += (
                f"; it later blocked a win at event {', '.join(map(str, blocked))}"
                if blocked
                else "; it blocked no later win"
            )
        out.append(
            {
                "seat": seat,
                "player": h.players[seat] if seat < len(h.players) else None,
                "passed": {"event": event, "tile": TILE_NAMES[x.tile], "from": x.source},
                "would_have_paid": h.would.get((event, seat), {"multiplier": x.multiplier}),
                "blocked_later_win": bool(blocked),
                "multiplier": x.multiplier,
                "since": x.since,
                "lifted_by": x.lifted_by,
                "blocked_wins": blocked,
                "text": text,
            }
        )
    return out
