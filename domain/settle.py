"""Settlement of one finished hand (RULES.md §7, next dealer §2) into CONTRACT.md §2.

``settle_hand(record, rules)`` is pure: the same :class:`~domain.facts.HandRecord` and
:class:`~domain.rules.Rules` always give the same :class:`~domain.facts.Settlement`, transfers in
the same order. Every rule and decision is written down in ``docs/settlement.md``; in short:

* hand payment (胡): 自摸 each other seat pays ``base × M``; a discard (incl. 杠上炮) or a robbed
  kong: the discarder / robbed konger pays ``base × M``; 包胡 (winner declared 亮倒, discarder had
  not, robbed kongs included) per ``liang_dao_feed``; 一炮双响: each win paid on its own.
  ``M`` = ``Score.payable`` (capped, plus 数坎) plus 买码 after a self-draw.
* kong money (喜钱) at the kong's event: ``kong_points[kind] × 2^(k−1)`` (capped by
  ``kong_chain_cap``) × base, never capped by the hand cap, never ×亮倒; a robbed kong pays nothing.
* 荒庄: kong money stands; ``exhausted_liang_dao`` compensation at the ``hand_exhausted`` event.
* 漂 (piao): one extra line per hand-payment line, ``(payer's + payee's piao) × base``.
* service fee: ``service_fee × base`` from each seat to ``"house"`` at the ``hand_started`` event.
* ``hand_aborted``: nothing is settled, no transfer at all; the dealer deals again.
"""

from __future__ import annotations

from typing import Literal

from domain.facts import (
    HandRecord,
    KongRecord,
    Party,
    PatternOut,
    Settlement,
    Transfer,
    WinOut,
    WinRecord,
)
from domain.rules import Rules
from domain.tiles import is_dragon, name, number

SEATS = (0, 1, 2)

Reason = Literal["hu", "kong", "exhausted", "piao", "fee"]

# Within one event, transfers come in this order of reason (then in the order generated:
# kongs / wins as recorded, payers by seat).
_REASON_ORDER: dict[str, int] = {"fee": 0, "kong": 1, "hu": 2, "piao": 3, "exhausted": 4}

_KONG_NAMES = {"concealed": "暗杠", "added": "补杠", "exposed": "直杠"}


class SettlementError(ValueError):
    """A hand record that cannot be settled (not finished, or inconsistent)."""


def _ordinal(k: int) -> str:
    suffix = "th" if 10 <= k % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
    return f"{k}{suffix}"


def others(seat: int) -> tuple[int, int]:
    a, b = (s for s in SEATS if s != seat)
    return a, b


def ma_value(tile: int) -> int:
    """买码: the ma tile's number is added to the multiplier; a dragon adds 10."""
    return 10 if is_dragon(tile) else number(tile)


def chain_factor(chain: int, cap: int | None) -> int:
    """杠上杠: the k-th kong of a chain pays ``2^(k−1)`` times its points, capped by ``kong_chain_cap``."""
    factor: int = 2 ** (max(chain, 1) - 1)
    if cap is not None:
        factor = min(factor, cap)
    return factor


def _declared(record: HandRecord, seat: int, before_event: int) -> bool:
    return any(d.seat == seat and d.event < before_event for d in record.declarations)


def next_dealer(record: HandRecord, rules: Rules) -> int:
    """RULES.md §2: the winner; the discarder after 一炮双响; after 荒庄 the dealer stays, or with
    ``exhausted_dealer: first_declarer`` the first 亮倒 declarer (the dealer when nobody declared);
    an aborted hand is dealt again by the same dealer."""
    if record.end == "hu":
        winners = {w.seat for w in record.wins}
        if len(winners) == 1:
            return record.wins[0].seat
        source = record.wins[0].source
        if source is None:
            raise SettlementError(f"hand {record.hand}: several winners on a self-draw")
        return source
    if record.end == "exhausted" and rules.exhausted_dealer == "first_declarer" and record.declarations:
        return min(record.declarations, key=lambda d: d.event).seat
    return record.dealer


class _Ledger:
    def __init__(self, base: int) -> None:
        self.base = base
        self.lines: list[Transfer] = []

    def pay(
        self,
        payer: Party,
        payee: Party,
        units: int,
        reason: Reason,
        event: int,
        detail: tuple[str, str],
        note: tuple[str, str] = ("", ""),
    ) -> None:
        """``units`` × base coins from ``payer`` to ``payee``; nothing for zero units. ``detail``
        (English, Chinese) ends with the units' derivation; `` × base B = amount`` is appended,
        then ``note``."""
        amount = units * self.base
        if amount == 0:
            return
        en = f"{detail[0]} × base {self.base} = {amount}{note[0]}"
        zh = f"{detail[1]} × 底分 {self.base} = {amount}{note[1]}"
        self.lines.append(
            Transfer(
                from_=payer, to=payee, amount=amount, reason=reason, event=event, detail=en, detail_zh=zh
            )
        )


def _kong_money(ledger: _Ledger, kong: KongRecord, rules: Rules) -> None:
    label = f"{_KONG_NAMES[kong.kind]} {name(kong.tile)}"
    if kong.robbed:
        return  # 抢的杠不算杠: the robbed added kong pays nothing
    points: int = getattr(rules.kong_points, kong.kind)
    factor = chain_factor(kong.chain, rules.kong_chain_cap)
    units = points * factor
    if kong.chain > 1:
        raw = 2 ** (kong.chain - 1)
        capped = f", capped by kong_chain_cap {rules.kong_chain_cap}" if factor != raw else ""
        capped_zh = f"（kong_chain_cap 封顶 {rules.kong_chain_cap}）" if factor != raw else ""
        product = f"{points} × 2^{kong.chain - 1} = {units}"
        how = f"{_ordinal(kong.chain)} kong of a 杠上杠 chain{capped}: {product}"
        how_zh = f"杠上杠第{kong.chain}杠{capped_zh}：{product}"
    else:
        how, how_zh = f"{points} points", f"杠分 {points}"
    if kong.kind == "exposed":
        if kong.source is None:
            raise SettlementError(f"直杠 at event {kong.event} has no discarder")
        payers: tuple[int, ...] = (kong.source,)
        who, who_zh = "the discarder pays", "点杠者付"
    else:
        payers = others(kong.seat)
        who, who_zh = "each other player pays", "其他两家各付"
    detail = (f"{label}, {who}; {how}", f"{label}，{who_zh}；{how_zh}")
    for payer in payers:
        ledger.pay(payer, kong.seat, units, "kong", kong.event, detail)


def _win_out(win: WinRecord, ma: int, bao_hu: str | None) -> WinOut:
    s = win.score
    return WinOut(
        seat=win.seat,
        from_=win.source,
        tile=name(win.tile),
        patterns=tuple(PatternOut(id=p.id, x=p.x, detail=p.detail) for p in s.patterns),
        multiplier=s.multiplier,
        payable=s.payable + ma,
        capped=s.capped,
        shu_kan=s.shu_kan,
        ma=ma,
        event=win.event,
        decomposition=s.decomposition,
        cap_note=s.cap_note,
        bao_hu=bao_hu,
    )


def _hand_payment(
    ledger: _Ledger, record: HandRecord, win: WinRecord, rules: Rules
) -> tuple[WinOut, list[tuple[int, int]]]:
    """The 胡 lines of one win; returns the WinOut and the (payer, units) lines for 漂."""
    ma = 0
    if rules.maima and win.source is None and record.ma_tile is not None:
        ma = ma_value(record.ma_tile)
    m = win.score.payable + ma
    how, how_zh = f"payable {m}", f"{m}番"
    if ma:
        ma_tile = name(record.ma_tile or 0)
        how = f"payable {win.score.payable} + 买码 {ma_tile} {ma} = {m}"
        how_zh = f"{win.score.payable}番 + 买码 {ma_tile} {ma}番 = {m}番"
    note = (
        (f" (recorded with violation {win.violation})", f"（违规记录在案：{win.violation}）")
        if win.violation
        else ("", "")
    )
    lines: list[tuple[int, int, tuple[str, str]]] = []  # payer, units, detail (en, zh)
    bao_hu: str | None = None
    tile = name(win.tile)
    if win.source is None:
        detail = (f"自摸 {tile}, each other player pays: {how}", f"自摸 {tile}，其他两家各付：{how_zh}")
        for payer in others(win.seat):
            lines.append((payer, m, detail))
    else:
        kind = "抢杠胡" if win.robbed_kong else ("杠上炮" if win.after_kong_discard else "点炮")
        winner_declared = win.liang_dao or _declared(record, win.seat, win.event)
        source_declared = win.source_liang_dao or _declared(record, win.source, win.event)
        if winner_declared and not source_declared and rules.liang_dao_feed != "normal":
            bao_hu = rules.liang_dao_feed
            if rules.liang_dao_feed == "discarder_pays_double":
                detail = (
                    f"{kind} {tile}, 包胡: discarder_pays_double, the discarder pays: 2 × {how}",
                    f"{kind} {tile}，包胡（discarder_pays_double）：放炮者付双倍：2 × {how_zh}",
                )
                lines.append((win.source, 2 * m, detail))
            else:  # both_pay: like a self-draw
                detail = (
                    f"{kind} {tile}, 包胡: both_pay (like a self-draw), each other pays: {how}",
                    f"{kind} {tile}，包胡（both_pay，如自摸）：其他两家各付：{how_zh}",
                )
                for payer in others(win.seat):
                    lines.append((payer, m, detail))
        elif winner_declared and rules.liang_dao_feed == "both_pay":
            # docs/decisions.md R9 (3D): 当两家亮倒时…导致另一名亮倒的玩家胡牌，则放炮者需包赔，另一家无需赔付
            bao_hu = rules.liang_dao_feed
            detail = (
                f"{kind} {tile}, 包胡: both_pay, the discarder had declared 亮倒 too and pays "
                f"alone what both would (放炮者需包赔，另一家无需赔付): 2 × {how}",
                f"{kind} {tile}，包胡（both_pay）：放炮者也已亮倒，放炮者需包赔，另一家无需赔付："
                f"2 × {how_zh}",
            )
            lines.append((win.source, 2 * m, detail))
        else:
            if winner_declared and not source_declared:
                why, why_zh = ", 包胡: normal", "，包胡：normal（照常付）"
            elif winner_declared:
                why, why_zh = (
                    ", the discarder had declared 亮倒 too: normal payment",
                    "，放炮者也已亮倒：照常付",
                )
            else:
                why, why_zh = "", ""
            detail = (
                f"{kind} {tile}{why}, the discarder pays: {how}",
                f"{kind} {tile}{why_zh}，放炮者付：{how_zh}",
            )
            lines.append((win.source, m, detail))
    for payer, units, detail in lines:
        ledger.pay(payer, win.seat, units, "hu", win.event, detail, note)
    return _win_out(win, ma, bao_hu), [(payer, units) for payer, units, _ in lines]


def _piao(ledger: _Ledger, record: HandRecord, win: WinRecord, payers: list[tuple[int, int]]) -> None:
    piao = record.piao
    if piao is None:
        return
    for payer, _ in payers:
        units = piao[payer] + piao[win.seat]
        ledger.pay(
            payer,
            win.seat,
            units,
            "piao",
            win.event,
            (
                f"漂: payer seat {payer} piao {piao[payer]} + payee seat {win.seat} piao {piao[win.seat]}"
                f" = {units}",
                f"漂：付方{payer}号位漂{piao[payer]} + 收方{win.seat}号位漂{piao[win.seat]} = {units}",
            ),
        )


def _exhausted(ledger: _Ledger, record: HandRecord, rules: Rules) -> None:
    mode = rules.exhausted_liang_dao
    decl = sorted(record.declarations, key=lambda d: d.event)
    if mode == "none" or not decl:
        return
    event = record.end_event
    if mode == "first_declarer_pays_each":
        first = decl[0].seat
        detail = (
            "荒庄, first_declarer_pays_each: the first 亮倒 declarer pays each other player 1",
            "荒庄（first_declarer_pays_each）：最先亮倒者付另两家各 1",
        )
        for payee in others(first):
            ledger.pay(first, payee, 1, "exhausted", event, detail)
        return
    declarers = {d.seat for d in decl}
    for payer in sorted(declarers):
        for payee in SEATS:
            if payee not in declarers:
                ledger.pay(
                    payer,
                    payee,
                    1,
                    "exhausted",
                    event,
                    (
                        "荒庄, declarers_pay_undeclared: each 亮倒 declarer pays each non-declarer 1",
                        "荒庄（declarers_pay_undeclared）：每个亮倒者付每个未亮倒者 1",
                    ),
                )


def _transfer_order(t: Transfer) -> tuple[int, int]:
    return (t.event, _REASON_ORDER[t.reason])


def settle_hand(record: HandRecord, rules: Rules) -> Settlement:
    """The CONTRACT.md §2 settlement of a finished hand."""
    if record.end is None:
        raise SettlementError(f"hand {record.hand} is not finished")
    ledger = _Ledger(record.base)
    wins: list[WinOut] = []
    if record.end != "aborted":  # an aborted hand: nothing of it is settled
        if rules.service_fee:
            for seat in SEATS:
                ledger.pay(
                    seat,
                    "house",
                    rules.service_fee,
                    "fee",
                    record.start_event,
                    (
                        f"service fee at the hand's start: {rules.service_fee}",
                        f"开局服务费：{rules.service_fee}",
                    ),
                )
        for kong in record.kongs:
            _kong_money(ledger, kong, rules)
        if record.end == "hu":
            if not record.wins:
                raise SettlementError(f"hand {record.hand} ended in hu without a win")
            for win in record.wins:
                out, payers = _hand_payment(ledger, record, win, rules)
                wins.append(out)
                if rules.piao:
                    _piao(ledger, record, win, payers)
        elif record.end == "exhausted":
            _exhausted(ledger, record, rules)
    transfers = tuple(sorted(ledger.lines, key=_transfer_order))  # stable: ties keep their order
    net = [0, 0, 0]
    house = 0
    for t in transfers:
        if t.from_ == "house":
            house -= t.amount
        else:
            net[t.from_] -= t.amount
        if t.to == "house":
            house += t.amount
        else:
            net[t.to] += t.amount
    return Settlement(
        hand=record.hand,
        end=record.end,
        dealer=record.dealer,
        next_dealer=next_dealer(record, rules),
        wins=tuple(wins),
        transfers=transfers,
        net=(net[0], net[1], net[2]),
        house=house,
        base=record.base,
    )
