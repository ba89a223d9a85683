"""The audit of one table (``GET /v1/tables/{id}/audit``), built purely from its stored events.

Every ruling on the table, in one document a support agent can read: recorded violations, each
漏胡 (who passed which discard, what it would have paid, the draw that lifted it), each kong with
its place in a 杠上杠 chain and its factor, computed-vs-reported settlement differences line by
line, the wall checks of every hand, and the hash chain. Messages are English or Chinese
(``lang``), with the stable codes alongside.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from domain.engine import Replayer, TableState
from domain.events import Event, HandStarted, TableOpened, TileDrawn
from domain.tiles import TILE_NAMES
from projections import wording
from projections.discrepancies import compare, nets

_WALL_EN = {
    "known": "wall known: every draw checked against it",
    "committed": "wall committed by SHA-256",
    "count_only": "wall not given: tile counts (≤ 4 of a kind) checked",
}
_WALL_ZH = {  # whole Chinese (issue 13): no SHA-256, no result codes in the zh text
    "known": "牌墙已知：每次摸牌均已核对",
    "committed": "开局只给了牌墙的哈希值",
    "count_only": "未给出牌墙：已核对每种牌不超过4张",
}
_KONG_ZH = {"concealed": "暗杠", "added": "补杠", "exposed": "直杠"}


def _msg(lang: str, en: str, zh: str) -> str:
    return zh if lang == "zh" else en


def _records(
    engine: Replayer,
    events: Sequence[tuple[int, Event]],
    state: TableState | None = None,
    applied: int = 0,
) -> tuple[TableState, list[Any], dict[int, dict[str, Any]], dict[int, tuple[int, str]]]:
    """Fold (each event as it was accepted: ``engine.replay``, the fold of every read); the final
    state, every hand's record (in order) and per-hand wall information. ``events``: (version,
    event); from ``state`` (default: the initial state), which already holds the events with
    version ≤ ``applied`` (a snapshot's ``hand_started``: read for its wall, not folded again)."""
    state = engine.initial() if state is None else state
    records: list[Any] = []
    walls: dict[int, dict[str, Any]] = {}
    draws: dict[int, tuple[int, str]] = {}  # event version -> (seat, tile) of draws
    for version, ev in events:
        before = state
        if version > applied:
            state = engine.replay(state, ev)
        if isinstance(ev, HandStarted):
            if before.hand is not None and version > applied:
                records.append(before.hand.record)
            mode = "known" if ev.wall is not None else ("committed" if ev.wall_sha256 else "count_only")
            walls[ev.hand] = {"hand": ev.hand, "mode": mode, "start_event": version}
        if isinstance(ev, TileDrawn):
            draws[version] = (ev.seat, ev.tile)
    if state.hand is not None:
        records.append(state.hand.record)
    return state, records, walls, draws


def _lou_hu(
    state: Any, players: Sequence[str], draws: dict[int, tuple[int, str]], lang: str
) -> list[dict[str, Any]]:
    found: dict[tuple[int, int, int], Any] = {(x.hand, x.seat, x.event): x for x in state.lou_hu_log}
    if state.hand is not None:
        for x in state.hand.lou_hu_log:
            found[(x.hand, x.seat, x.event)] = x
    out = []
    for key in sorted(found):
        x = found[key]
        tile = TILE_NAMES[x.tile]
        lifted = None
        if x.lifted_by is not None:
            draw = draws.get(x.lifted_by)
            lifted = {"event": x.lifted_by, "tile": draw[1] if draw is not None else None}
        who = players[x.seat] if x.seat < len(players) else str(x.seat)
        en = (f"seat {x.seat} ({who}) could have won on {tile} from seat {x.source} at event {x.event} "
              f"for ×{x.multiplier} and passed; no discard win from event {x.since} "
              + (f"until their draw at event {x.lifted_by}" if x.lifted_by is not None else "until their next draw")  # noqa: E501
              + " (a missed win)")  # fmt: skip
        zh = (f"{wording.seat(x.seat, players, 'zh')}在第{x.event}事件可胡"
              f"{wording.short_seat(x.source, 'zh')}打出的"
              f"{wording.tile(tile, 'zh')}（{x.multiplier}番）但未胡：漏胡，"
              + (f"直到第{x.lifted_by}事件自己摸牌前" if x.lifted_by is not None else "直到自己下次摸牌前")
              + "不能胡别人打出的牌")  # fmt: skip
        out.append(
            {
                "hand": x.hand, "seat": x.seat, "player": who,
                "passed": {"event": x.event, "tile": tile, "from": x.source},
                "would_have_paid": {"multiplier": x.multiplier},
                "since": x.since, "lifted_by": lifted,
                "message": _msg(lang, en, zh),
            }
        )  # fmt: skip
    return out


def _kong_chains(state: Any, records: Sequence[Any], lang: str) -> list[dict[str, Any]]:
    from domain.settle import chain_factor

    rules = state.rules
    by_hand = {s.hand: s for s in state.settlements}
    chains: list[dict[str, Any]] = []
    for rec in records:
        settlement = by_hand.get(rec.hand)
        current: dict[str, Any] | None = None
        for k in rec.kongs:
            factor = chain_factor(k.chain, rules.kong_chain_cap) if rules is not None else 2 ** (k.chain - 1)
            points = getattr(rules.kong_points, k.kind) if rules is not None else 0
            coins = [
                {
                    "from": t.from_,
                    "to": t.to,
                    "amount": t.amount,
                    "detail": wording.en_whole(t.detail),  # the engine's own derivation, whole
                    "detail_zh": wording.zh_whole(t.detail_zh),
                }
                for t in (settlement.transfers if settlement is not None else ())
                if t.reason == "kong" and t.event == k.event
            ]
            tile = TILE_NAMES[k.tile]
            if k.robbed:
                en = (f"seat {k.seat}'s {k.kind} kong of {wording.tile(tile, 'en')} at event {k.event} "
                      "was robbed: it pays nothing")  # fmt: skip
                zh = (
                    f"{wording.short_seat(k.seat, 'zh')}在第{k.event}事件的{_KONG_ZH[k.kind]}"
                    f"{wording.tile(tile, 'zh')}被抢杠：抢的杠不算杠"
                )
            else:
                each = points * factor * rec.base
                place, place_zh = (
                    (f"kong {k.chain} of its kong chain", f"杠上杠第{k.chain}杠")
                    if k.chain > 1
                    else ("a kong on its own", "单独一杠")
                )
                what = f"seat {k.seat} {k.kind} kong of {wording.tile(tile, 'en')} at event {k.event}"
                how = f"{points} points × factor {factor} × base {rec.base} = {each}"
                en = f"{what}: {place}; each payer pays {how}"
                kong_zh = _KONG_ZH[k.kind] + wording.tile(tile, "zh")
                what_zh = f"{wording.short_seat(k.seat, 'zh')}第{k.event}事件{kong_zh}"
                zh = f"{what_zh}：{place_zh}，每个付方付杠分{points}×{factor}倍×底分{rec.base}={each}"
            item = {
                "event": k.event, "seat": k.seat, "kind": k.kind, "tile": tile, "k": k.chain,
                "points": points, "factor": factor, "robbed": k.robbed, "source": k.source,
                "coins": coins, "message": _msg(lang, en, zh),
            }  # fmt: skip
            if k.chain <= 1 or current is None:
                current = {"hand": rec.hand, "kongs": []}
                chains.append(current)
            current["kongs"].append(item)
    for c in chains:
        c["length"] = len(c["kongs"])
        c["total_coins"] = sum(x["amount"] for k in c["kongs"] for x in k["coins"])
    return chains


def _settlement_checks(state: Any, lang: str, reported: Sequence[Any] | None = None) -> list[dict[str, Any]]:
    out = []
    for rep in state.reported if reported is None else reported:
        computed = next((s for s in reversed(state.settlements) if s.hand == rep.hand), None)
        c_lines = [(t.from_, t.to, t.amount) for t in computed.transfers] if computed is not None else []
        r_lines = list(rep.transfers)
        lines = compare(c_lines, r_lines)
        status = (
            "match"
            if not lines and computed is not None
            else ("differs" if computed is not None else "not_settled")
        )
        if status == "match":
            en, zh = f"hand {rep.hand}: the reported payout matches", f"第{rep.hand}局：上报结算一致"
        elif status == "differs":
            en = f"hand {rep.hand}: the reported payout differs on {len(lines)} line(s)"
            zh = f"第{rep.hand}局：上报结算有{len(lines)}处不一致"
        else:
            en, zh = (
                f"hand {rep.hand}: reported but not settled by the engine",
                f"第{rep.hand}局：已上报但未结算",
            )
        out.append(
            {"hand": rep.hand, "reported_event": rep.event, "status": status, "lines": lines,
             "net_computed": nets(c_lines), "net_reported": nets(r_lines), "message": _msg(lang, en, zh)}
        )  # fmt: skip
    return out


def _wall_checks(
    state: Any, walls: dict[int, Any], rulings: list[dict[str, Any]], lang: str
) -> list[dict[str, Any]]:
    reveals = {hand: (event, result) for hand, event, result in state.wall_checks}
    out = []
    for hand in sorted(h for h in walls if h > 0):
        w = dict(walls[hand])
        problems = [
            r for r in rulings if r.get("hand") == hand and r["rule"] in ("wall_mismatch", "tile_count")
        ]
        if hand in reveals:
            w["revealed_event"], w["result"] = reveals[hand]
        elif w["mode"] == "committed":
            w["result"] = "not_revealed"
        else:
            w["result"] = "ok" if not problems else problems[0]["rule"]
        mode_en = _WALL_EN[w["mode"]]
        mode_zh = _WALL_ZH[w["mode"]]
        result_zh = wording.pick(
            "zh", wording.WALL_RESULTS.get(w["result"]) or wording.CODES.get(w["result"], ("结果未知", ""))
        )
        w["message"] = _msg(lang, f"hand {hand}: {mode_en}; result {w['result']}",
                            f"第{hand}局：{mode_zh}；{result_zh}")  # fmt: skip
        out.append(w)
    return out


def build(
    engine: Replayer,
    table_id: str,
    events: Sequence[Event],
    stored_rulings: Sequence[tuple[int, dict[str, Any] | None]],
    hash_chain: dict[str, Any],
    lang: str = "en",
) -> dict[str, Any]:
    """The audit document. ``stored_rulings``: (version, ruling JSON or None) of every event."""
    state, records, walls, draws = _records(engine, list(enumerate(events, start=1)))
    opened = next((e for e in events if isinstance(e, TableOpened)), None)
    players = list(opened.players) if opened is not None else []
    hand_of: dict[int, int] = {}
    hand = 0
    for version, ev in enumerate(events, start=1):
        if isinstance(ev, HandStarted):
            hand = ev.hand
        hand_of[version] = hand
    rulings = ruling_items(
        lambda version: events[version - 1] if 0 < version <= len(events) else None,
        hand_of, stored_rulings, lang, players,
    )  # fmt: skip
    rules = msgspec.to_builtins(state.rules) if state.rules is not None else None
    return {
        "table_id": table_id,
        "version": state.version,
        "lang": lang,
        "players": players,
        "rules": rules,
        "violations": state.violations,
        "hash_chain": hash_chain,
        "rulings": rulings,
        "lou_hu": _lou_hu(state, players, draws, lang),
        "kong_chains": _kong_chains(state, records, lang),
        "settlements": _settlement_checks(state, lang),
        "walls": _wall_checks(state, walls, rulings, lang),
    }


def ruling_items(
    ruled_at: Callable[[int], Event | None],
    hand_of: dict[int, int],
    stored_rulings: Sequence[tuple[int, dict[str, Any] | None]],
    lang: str,
    players: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """The audit's ``rulings``: one item per stored ruling (version, ruling JSON or None), with
    the event it rules on (``ruled_at(version)``) and its hand (``hand_of``; 0 before the first);
    the message made whole in its language (``wording.zh_whole`` / ``en_whole``: tiles, seats and
    the rules' names in that language's words)."""
    rulings = []
    for version, ruling in stored_rulings:
        if ruling is None:
            continue
        ruled = ruled_at(version)
        zh = wording.zh_whole(ruling.get("message_zh") or ruling.get("message", ""), players)
        rulings.append(
            {
                "event": version, "hand": hand_of.get(version, 0),
                "type": type(ruled).__struct_config__.tag if ruled is not None else None,
                "id": ruled.id if ruled is not None else None,
                "rule": ruling.get("rule"), "kind": ruling.get("kind"),
                "message": _msg(lang, wording.en_whole(ruling.get("message", ""), players), zh),
                "detail": ruling.get("detail", {}),
            }
        )  # fmt: skip
    return rulings


language = wording.language  # ``zh`` when Accept-Language prefers Chinese over English, else ``en``
