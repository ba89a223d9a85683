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
from domain.tiles import TILE_NAMES
from projections import wording as w
from projections.timeline_claims import candidates_text, lou_summary
from projections.timeline_money import Hand, Stored, hu_text, kong_text, reported_text, settlement_lines

__all__ = ["Stored", "render"]


def _tag(ev: Event) -> str:
    return str(type(ev).__struct_config__.tag)


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
    h = Hand(state, hand_no)
    lines: list[dict[str, Any]] = []
    for i, (item, before, after) in enumerate(steps):
        nxt = steps[i + 1][0] if i + 1 < len(steps) else None
        lines.append(_line(h, item, before, after, nxt, lang, item[1].at))
    lines.extend(settlement_lines(h, lang))
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
        "lou_hu": lou_summary(h, lang),
    }


# ------------------------------------------------------------------------------------- lines
def _base(item: Stored, at: str | None, seat: int | None, h: Hand) -> dict[str, Any]:
    v, ev, _ = item
    return {
        "version": v,
        "at": at,
        "kind": _tag(ev),
        "seat": seat,
        "player": h.players[seat] if seat is not None and seat < len(h.players) else None,
        "tiles": [],
        "codes": [],
    }


def _line(
    h: Hand,
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
        bits = [
            f"第{ev.hand}局开始，庄家{w.seat(ev.dealer, h.players, lang)}"
            if zh
            else f"hand {ev.hand} starts, dealer {w.seat(ev.dealer, h.players, lang)}",
            w.pick(lang, w.WALL_MODES[mode]),
        ]
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
        for (event, _seat), x in sorted(h.lou.items()):
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
        parts.append(kong_text(h, out, ev, v, before, after, who, lang))
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
        parts.append(hu_text(h, out, ev, v, lang))
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
        parts.append(
            f"买码翻出{w.tile(ev.tile, lang)}，加{value}番"
            if zh
            else f"the ma tile is {w.tile(ev.tile, lang)}: +{value} to the multiplier"
        )
    elif isinstance(ev, WallRevealed):
        new = [r for hand, e, r in after.wall_checks if e == v]
        result = new[0] if new else "ok"
        out["result"] = result
        text = w.pick(lang, w.WALL_RESULTS.get(result) or w.CODES.get(result, (result, result)))
        parts.append(f"公布牌墙：{text}" if zh else f"wall revealed: {text}")
    elif isinstance(ev, SettlementReported):
        parts.append(reported_text(h, out, ev, lang))
    else:
        parts.append(w.pick(lang, ("其他事件", "other event")))
    parts.extend(candidates_text(h, out, v, before, after, nxt, lang))
    if ruling is not None:
        code = str(ruling.get("rule", ""))
        out["codes"].append(code)
        out["ruling"] = {
            "code": code,
            "kind": ruling.get("kind"),
            "message": w.en_whole(str(ruling.get("message") or ""), h.players),
            "message_zh": w.zh_whole(str(ruling.get("message_zh") or ""), h.players),
        }
        parts.append(
            f"（违规记录在案：{w.code(code, lang)}）"
            if zh
            else f" (recorded violation: {w.code(code, lang)})"
        )
    sep = " " if zh else ": "
    out["text"] = w.event_no(v, lang) + sep + "".join(parts)
    return out
