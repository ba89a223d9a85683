"""The timeline's money and wins (projections/timeline.py): kong lines with their place in a 杠上杠
chain and the discard or draw that linked it, wins with their patterns, the platform's reported
payout, and the hand's transfers with their reasons, read from the engine's records and settlement.
"""

from __future__ import annotations

from typing import Any

from domain.engine import TableState
from domain.events import Event, Hu, Kong, SettlementReported
from domain.facts import HandRecord, Settlement, WinRecord
from domain.settle import chain_factor
from domain.tiles import TILE_NAMES
from projections import wording as w
from projections.discrepancies import compare

Stored = tuple[int, Event, dict[str, Any] | None]  # (version, event, stored ruling JSON or None)


class Hand:
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


def kong_text(
    h: Hand,
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
    kong = w.a_kong(ev.kind, lang)
    text = f"{who}{kong}{w.tile(ev.tile, lang)}" if zh else f"{who} makes {kong} of {w.tile(ev.tile, lang)}"
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
            link = {
                "event": bh.last_event,
                "kind": "discard",
                "seat": owner,
                "tile": TILE_NAMES[bh.last_tile] if bh.last_tile is not None else None,
            }
            how = (
                f"接{w.short_seat(owner, lang)}第{bh.last_event}事件杠后打出的{w.tile(ev.tile, lang)}"
                if zh
                else f"linked by {w.short_seat(owner, lang)}'s discard after the kong "
                f"at event {bh.last_event}"
            )
        else:
            link = {"event": bh.drawn_event, "kind": "replacement_draw", "seat": owner, "tile": None}
            how = (
                f"接第{bh.drawn_event}事件杠后补牌"
                if zh
                else f"linked by the replacement draw at event {bh.drawn_event}"
            )
        info.update(chain_seat=owner, linked_by=link)
        text += (
            f"（{w.short_seat(owner, lang)}的杠上杠第{rec.chain}杠，{how}，杠钱×{factor}）"
            if zh
            else f" (kong {rec.chain} of {w.short_seat(owner, lang)}'s kong chain, {how}, money ×{factor})"
        )
    transfers = [
        t
        for t in (h.settlement.transfers if h.settlement is not None else ())
        if t.reason == "kong" and t.event == v
    ]
    if transfers:
        info["coins"] = [{"from": t.from_, "to": t.to, "amount": t.amount} for t in transfers]
        pays = ("，" if zh else ", ").join(pay_text(t.from_, t.to, t.amount, h, lang) for t in transfers)
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


def pay_text(payer: Any, payee: Any, amount: int, h: Hand, lang: str) -> str:
    if lang == "zh":
        return f"{w.seat(payer, h.players, lang)}付{w.seat(payee, h.players, lang)}{w.coins(amount, lang)}"
    return f"{w.seat(payer, h.players, lang)} pays {w.seat(payee, h.players, lang)} {w.coins(amount, lang)}"


def win_kind(win: WinRecord | None, lang: str) -> str:
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


def hu_text(h: Hand, out: dict[str, Any], ev: Hu, v: int, lang: str) -> str:
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
        kind = win_kind(rec, lang)
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
        item.update(
            patterns=[{"id": p, "x": x, "name": w.pick(lang, w.PATTERNS.get(p, (p, p)))} for p, x in hits],
            multiplier=won.multiplier,
            payable=won.payable,
            bao_hu=won.bao_hu,
        )
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
            pays = ("，" if zh else ", ").join(pay_text(t.from_, t.to, t.amount, h, lang) for t in money)
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


def reported_text(h: Hand, out: dict[str, Any], ev: SettlementReported, lang: str) -> str:
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
def reason_text(h: Hand, t: Any, lang: str) -> str:
    zh = lang == "zh"
    rec = h.record
    if t.reason == "hu" and rec is not None:
        win = next((x for x in rec.wins if x.event == t.event and x.seat == t.to), None)
        out = next(
            (x for x in (h.settlement.wins if h.settlement else ()) if x.event == t.event and x.seat == t.to),
            None,
        )
        kind = win_kind(win, lang)
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
        )
        if k.chain > 1:
            name += f"，杠上杠第{k.chain}杠" if zh else f", kong {k.chain} of a chain"
        return name
    if t.reason == "exhausted" and h.rules is not None:
        mode = h.rules.exhausted_liang_dao
        return w.pick(
            lang,
            {
                "first_declarer_pays_each": (
                    "第一个亮倒的赔每家",
                    "the first declarer pays each other player",
                ),
                "declarers_pay_undeclared": ("亮倒者赔未亮倒者", "each declarer pays each non-declarer"),
            }.get(mode, (mode, mode)),
        )
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
        )
    if t.reason == "fee":
        return "开局服务费" if zh else "at the hand's start"
    return ""


def settlement_lines(h: Hand, lang: str) -> list[dict[str, Any]]:
    s = h.settlement
    if s is None:
        return []
    zh = lang == "zh"
    out: list[dict[str, Any]] = []
    end = h.record.end_event if h.record is not None else None
    for t in s.transfers:
        reason = w.pick(lang, w.REASONS[t.reason])
        why = reason_text(h, t, lang)
        if why:
            reason += f"：{why}" if zh else f": {why}"
        text = (
            f"结算（第{t.event}事件）：{pay_text(t.from_, t.to, t.amount, h, lang)}，{reason}"
            if zh
            else f"settlement (event {t.event}): {pay_text(t.from_, t.to, t.amount, h, lang)}, {reason}"
        )
        out.append(
            {
                "version": t.event,
                "at": None,
                "kind": "transfer",
                "seat": t.to if isinstance(t.to, int) else None,
                "player": None,
                "tiles": [],
                "codes": [t.reason],
                "reason": t.reason,
                "transfer": {
                    "from": t.from_,
                    "to": t.to,
                    "amount": t.amount,
                    "reason": t.reason,
                    "event": t.event,
                    # the settlement's own derivation, in the answer's language, made whole
                    "detail": w.zh_whole(t.detail_zh) if zh else w.en_whole(t.detail),
                },
                "why": reason,
                "text": text,
            }
        )
    nets = ("，" if zh else ", ").join(f"{w.seat(i, h.players, lang)} {n:+d}" for i, n in enumerate(s.net))
    nd = w.seat(s.next_dealer, h.players, lang)
    out.append(
        {
            "version": end,
            "at": None,
            "kind": "net",
            "seat": None,
            "player": None,
            "tiles": [],
            "codes": [],
            "net": list(s.net),
            "next_dealer": s.next_dealer,
            "text": f"本局净输赢：{nets}；下局庄家{nd}"
            if zh
            else f"net for the hand: {nets}; next dealer {nd}",
        }
    )
    return out
