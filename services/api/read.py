"""The read side of a table (CONTRACT.md §3): its state at any event, a hand's settlement with
its derivation (and what it would pay under other house rules), and the audit of every ruling.

Roles: ``platform`` reads its own tenant's tables (the state as a seat or as the public saw it),
``support`` reads everything of its tenant (the full state with every hand, the audit);
``dashboard`` reads none of this (stats, ledgers and the leaderboard only: services/api/stats.py).
A table is (tenant, table_id): another tenant's table of the same id is exactly as absent as one
that never existed (the same 404; issue 11 §4), and no answer carries the global log's ``position``.

Every fold here is the container's engine's ``replay`` (services/engine_adapter.py): the stored
events as they were accepted, the same fold the projector and the store use, so ``/state``, a
settlement and ``/audit`` agree even after an engine change. (The projector's lifecycle is the
container's: services/bootstrap.py, started by the app's lifespan.)
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Annotated, Any

import msgspec
import structlog
from fastapi import APIRouter, Depends, Path, Query, Request, Response
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from projections import wording
from services.api import read_schemas, schemas
from services.api.deps import (
    PRESET_ENUM,
    TableId,
    check_table_id,
    get_container,
    get_principal,
    read_lang,
    require_role,
)
from services.bootstrap import Container
from services.db import reading
from services.engine_adapter import Engine
from services.errors import BadRules, Malformed, NotFound
from services.logs import get_logger
from services.replica import PRIMARY, Source, said
from services.store.keys import Principal
from services.store.reads import wire

log = get_logger("kwx.read")
_encoder = msgspec.json.Encoder()


router = APIRouter(
    prefix="/v1/tables",
    tags=["read"],
    responses=schemas.error_responses(401, 403, 404, 422, 429, 431, 503),
)


def _json(body: Any) -> Response:
    return Response(_encoder.encode(body), media_type="application/json")


def table_of(container: Container, principal: Principal, table_id: str, *roles: str) -> Any:
    """The head of the key's tenant's table ``table_id``, after the id and the role are checked; a
    table of another tenant is not looked at (``store.head`` keys by (tenant, table_id)), so it is
    the same 404 as a table that never existed."""
    check_table_id(table_id)
    structlog.contextvars.bind_contextvars(table_id=table_id)
    require_role(principal, *roles)
    head = container.store.head(principal.tenant, table_id)
    if head is None or head.version == 0:
        said(PRIMARY)  # the head is always read on the primary: so is this answer
        raise NotFound(f"no table {table_id!r}", message_zh=f"没有这张牌桌：{table_id}")
    return head


def _events(src: Container | Source, tenant: str, table_id: str, upto: int) -> list[Any]:
    """(version, decoded event, ruling JSON) of events 1..upto, read from ``src`` (the primary or
    the replica: ``Container.table_read``)."""
    from domain.events import decode

    out: list[Any] = []
    after = 0
    while after < upto:
        page = src.store.read_table(tenant, table_id, after, min(1000, upto - after))
        if not page:
            break
        for r in page:
            ruling = msgspec.json.decode(r.ruling) if r.ruling else None
            out.append((r.version, decode(r.body), ruling, r))
        after = page[-1].version
    return out


# ------------------------------------------------------------------------------- NDJSON export
def ndjson_events(src: Container | Source, tenant: str, table_id: str, after: int = 0) -> StreamingResponse:
    """Every event of the table after version ``after`` as JSON lines (``Accept:
    application/x-ndjson`` on ``GET /v1/tables/{id}/events``), read in pages of 1000 while it
    streams, so a long table never sits in memory. Each line is one item of the JSON page; each
    page is sent as one chunk (every chunk of a sync iterator is a hop to the thread pool: one a
    line made a 10,000-event table take seconds, docs/benchmarks.md, The export)."""

    def lines() -> Iterator[bytes]:
        last = after
        while True:
            page = src.store.read_table(tenant, table_id, last, 1000)
            if not page:
                return
            yield b"".join(_encoder.encode(wire(r)) + b"\n" for r in page)
            last = page[-1].version

    return StreamingResponse(lines(), media_type="application/x-ndjson")


# ---------------------------------------------------------------------------------------- state
@router.get(
    "/{table_id}/state",
    operation_id="read-table_state",
    summary="The table after event N",
    responses=read_schemas.responses(read_schemas.TableStateAnswer),
)
def table_state(
    table_id: TableId,
    principal: Annotated[Principal, Depends(get_principal)],
    container: Annotated[Container, Depends(get_container)],
    at: Annotated[int | None, Query(ge=1, description="event version (default: the latest)")] = None,
    seat: Annotated[int | None, Query(ge=0, le=2, description="as this seat saw it")] = None,
) -> Response:
    """As seat S saw it (``seat``), else: the full table for support keys, the public view (nobody's
    concealed tiles) for platform keys. Starts from the latest per-hand snapshot ≤ N."""
    head = table_of(container, principal, table_id, "platform", "support")
    version = head.version if at is None else at
    if version > head.version:
        raise Malformed(f"at={version} is past the table's last event ({head.version})", field="query.at",
                        message_zh=f"at={version} 超过了牌桌的最后一个事件（{head.version}）")  # fmt: skip
    from projections import replay, snapshots, views

    engine = container.engine
    tenant = principal.tenant

    def fold(src: Source) -> Any:
        # The snapshot on one pooled connection, given back before the events are read (each page
        # on its own): never two connections held at once (issue 11 §3)
        snap = reading(src.pool, lambda conn: snapshots.latest(conn, tenant, table_id, version))
        return replay.state_at(snap, src.store, engine, tenant, table_id, version)

    # on the replica once it holds the table up to `version` (services/replica.py)
    state, start = container.table_read(tenant, table_id, version, fold)
    if seat is not None:
        body = views.seat_view(state, seat)
    elif principal.role == "support":
        body = views.full_view(state)
    else:
        body = views.spectator_view(state)
    body["table_id"] = table_id
    body["at"] = version
    body["latest"] = head.version
    body["folded_from"] = start
    return _json(body)


# ----------------------------------------------------------------------------------- settlement
def _rules_override(request: Request, preset: str | None) -> dict[str, Any] | None:
    """``?rules=PRESET`` and rule options as query parameters (``?cap=16&pin_dao=full``), checked as
    a new table's rules are (``domain.rule_options.check``): ``422 bad_rules`` naming ``query.NAME``."""
    from domain.rule_options import check
    from domain.rules import OPTION_NAMES, RulesError

    options: dict[str, Any] = {}
    for key, raw in request.query_params.items():
        if key in ("rules", "lang"):  # lang: every read's language (deps.read_lang)
            continue
        if key not in OPTION_NAMES:
            raise BadRules(
                f"unknown query parameter {key[:64]!r}: use rules=PRESET and rule options "
                f"({', '.join(OPTION_NAMES)})",
                field=f"query.{key[:64]}", allowed=["rules", *OPTION_NAMES],
                message_zh=f"没有查询参数{key[:64]!r}：可用 rules=预设 和规则选项",
            )  # fmt: skip
        try:
            options[key] = msgspec.json.decode(raw)
        except msgspec.DecodeError:
            options[key] = raw  # a bare word: "full", "both_pay", …
        except RecursionError:
            raise BadRules(
                f"rule option {key}: nested too deeply",
                field=f"query.{key}",
                message_zh=f"规则选项{key}嵌套过深",
            ) from None
    if preset is None and not options:
        return None
    spec = {"preset": preset, **options} if preset is not None else options
    try:
        check(spec if preset is not None else {"preset": "default", **options})
    except RulesError as exc:
        raise BadRules(
            exc.message, field=_query_field(exc.field), allowed=exc.allowed, message_zh=exc.message_zh
        ) from None
    return spec


def _query_field(field: str | None) -> str:
    """A rules path as the query parameter that set it: ``rules.preset`` → ``query.rules``,
    ``rules.cap`` → ``query.cap``, ``rules.kong_points.added`` → ``query.kong_points.added``."""
    if field is None or field in ("rules", "rules.preset"):
        return "query.rules"
    return "query." + field.removeprefix("rules.")


# What a recorded violation does to the hand (docs/rulings.md 28, CONTRACT.md §1: with
# violations "record" an event that breaks a rule "is stored with its ruling and shows up in the
# audit"): a hu that is not a winning hand (RULES.md §4) ends the hand and pays nothing; a real win
# recorded with another rule broken is paid as scored.
_NOT_A_WIN = (
    "not a win: the hu was recorded with violation {code} (not a winning shape, RULES.md §4): "
    "it ends the hand and pays nothing; the next dealer follows the recorded winner",
    "不是胡牌：此胡以违规 {code} 记录在案（不成胡牌牌型，RULES.md 第4节）：本局结束，不付分；"
    "下一局庄家仍按记录的胡牌者",
)
_PAID_AS_SCORED = (
    "a real win recorded with violation {code} (a rule of RULES.md broken, stored as the platform "
    "played it): paid as scored",
    "违规 {code} 记录在案的真实胡牌（违反 RULES.md 的规则，按平台实际打法存储）：按计分支付",
)


def _violation_of(win: dict[str, Any], rulings: Any) -> Any:
    """The ruling recorded with this win's hu event (a ruling naming a seat names that winner)."""
    for r in rulings:
        if r.event == win["event"] and r.detail.get("seat") in (None, win["seat"]):
            return r
    return None


def _derivation(
    settlement: Any, events: dict[int, Any], rules: Any, rulings: Any = (), players: Sequence[str] = ()
) -> dict[str, Any]:
    """The settlement with each win's derivation, in English (the engine's own notes) and in
    Chinese (``*_zh``: the same numbers in projections/wording.py's words); the engine's texts made
    whole — ``wording.zh_whole``: tiles and seats in Chinese words, as the timeline says them;
    ``wording.en_whole``: the rules' Chinese names and tiles in English words)."""
    body: dict[str, Any] = msgspec.to_builtins(settlement)
    for w in body["wins"]:
        ruling = _violation_of(w, rulings)
        ids = [p["id"] for p in w["patterns"]]
        for p in w["patterns"]:
            if p.get("detail"):  # the engine's note on the pattern ("the winner had declared 亮倒"), whole
                p["detail"] = wording.en_whole(p["detail"], players)
        w["cap_note"] = wording.en_whole(w.get("cap_note", ""))  # "数坎 +1 after the cap: kong PPPP"
        product = " × ".join(str(p["x"]) for p in w["patterns"]) + f" = {w['multiplier']}"
        derivation: dict[str, Any] = {
            "patterns": [
                wording.pattern(p["id"], p["x"], "en") + (f" ({p['detail']})" if p.get("detail") else "")
                for p in w["patterns"]
            ],
            "patterns_zh": [wording.pattern(p["id"], p["x"], "zh") for p in w["patterns"]],
            "decomposition": w.get("decomposition", ""),
            "multiplier": product if w["patterns"] else wording.patterns([], "en"),
            "multiplier_zh": product if w["patterns"] else wording.patterns([], "zh"),  # numbers: the same
            "cap": w["cap_note"],
            "cap_zh": wording.cap(
                w["multiplier"], w["capped"], w["shu_kan"], ids, rules.cap, rules.cap_exempt, "zh"
            ),
            "payable": w["payable"],
            "violation": None,
        }
        if ruling is not None:
            not_a_win = ruling.code == "not_a_winning_hand" or w["multiplier"] == 0
            en, zh = _NOT_A_WIN if not_a_win else _PAID_AS_SCORED
            derivation["violation"] = {
                "code": ruling.code,
                "counts_as_win": not not_a_win,
                "effect": en.format(code=ruling.code),
                "effect_zh": zh.format(code=ruling.code),
                "message": wording.en_whole(ruling.message, players),
                "message_zh": wording.zh_whole(ruling.message_zh, players),
            }
            if not_a_win:
                derivation["multiplier"] = "not a win (no multiplier): pays nothing"
                derivation["multiplier_zh"] = "不是胡牌（没有番数）：不付分"
                derivation["cap_zh"] = "不成胡牌牌型：记录在案，不付分"
        w["derivation"] = derivation
    for t in body["transfers"]:
        t["detail"] = wording.en_whole(t["detail"])
        t["detail_zh"] = wording.zh_whole(t["detail_zh"])
        ev = events.get(t["event"])
        if ev is not None:
            t["event_id"] = ev.id
            t["event_type"] = type(ev).__struct_config__.tag
    return body


@router.get(
    "/{table_id}/hands/{hand}/settlement",
    operation_id="read-hand_settlement",
    summary="A hand's settlement with its derivation; ?rules=PRESET (and option overrides) for what-if",
    responses=read_schemas.responses(read_schemas.HandSettlementAnswer),
)
def hand_settlement(
    table_id: TableId,
    hand: Annotated[int, Path(ge=1, description="the hand's number (1, 2, …)")],
    request: Request,
    principal: Annotated[Principal, Depends(get_principal)],
    container: Annotated[Container, Depends(get_container)],
    rules: Annotated[
        str | None, Query(description="another preset, e.g. xiangyang", json_schema_extra=PRESET_ENUM)
    ] = None,
) -> Response:
    head = table_of(container, principal, table_id, "platform", "support")
    override = _rules_override(request, rules)
    engine = container.engine
    tenant = principal.tenant
    if override is None:  # hand n's events only, from its snapshot (services/api/hand_reads.py)
        from services.api.hand_reads import hand_events

        got = container.table_read(
            tenant, table_id, head.version, lambda src: hand_events(src, tenant, table_id, hand, head.version)
        )
        events = []
        by_version = {v: e for v, e, _ in got.events}
        state = got.final(engine)
    else:  # what-if: other rules may change every hand before this one, so the whole table
        stored = container.table_read(
            tenant, table_id, head.version, lambda src: _events(src, tenant, table_id, head.version)
        )
        events = [e for _, e, _, _ in stored]
        by_version = {v: e for v, e, _, _ in stored}
        state = _fold(engine, events)
    actual = _find(state.settlements, hand)
    if actual is None:
        raise NotFound(
            f"hand {hand} of {table_id!r} is not settled", message_zh=f"牌桌 {table_id} 的第{hand}局尚未结算"
        )
    body: dict[str, Any] = {"table_id": table_id, "hand": hand, "rules": msgspec.to_builtins(state.rules)}
    body["settlement"] = _derivation(actual, by_version, state.rules, state.rulings, state.players)
    if override is not None:
        from domain.engine import IllegalEvent

        try:
            other = engine.fold_under(events, override)
        except IllegalEvent as exc:  # a structure break these rules see (docs/rulings.md 29)
            ruling = exc.ruling
            raise Malformed(
                f"under these rules the table cannot be folded: event {exc.index + 1} "
                f"({ruling.code}): {wording.en_whole(ruling.message, state.players)}",
                field="query." + ("rules" if "preset" in override else next(iter(override))),
                message_zh=f"按这套规则整桌无法重演：第{exc.index + 1}事件（{ruling.code}）："
                f"{wording.zh_whole(ruling.message_zh, state.players)}",
                event=exc.index + 1,
                rule=ruling.code,
            ) from None
        alt = _find(other.settlements, hand)
        upto = _hand_end(events, hand)
        body["what_if"] = {
            "rules_override": override,
            "rules": msgspec.to_builtins(other.rules),
            "settlement": _derivation(alt, by_version, other.rules, other.rulings, other.players)
            if alt is not None
            else None,
            "net_difference": [b - a for a, b in zip(actual.net, alt.net, strict=True)]
            if alt is not None
            else None,
            "rulings": [_ruling_out(r, other.players) for r in other.rulings if r.event <= upto],
            "note": "rule violations under the other rules are recorded, not refused; a hand dealt "
            "by another seat than their rotation is folded as dealt, a ma tile draw under rules "
            "without ma tiles draws nothing (each in rulings)",
            "note_zh": "按另一套规则，违规只记录、不拒绝；不按轮庄发的局照实际发牌重演；"
            "不买码的规则下，买码摸牌不摸任何牌（每一项都列在裁定中）",
        }
    return _json(body)


def _ruling_out(ruling: Any, players: Sequence[str]) -> dict[str, Any]:
    """An engine ruling as JSON, its English and Chinese made whole (``wording.en_whole``,
    ``wording.zh_whole``)."""
    out: dict[str, Any] = msgspec.to_builtins(ruling)
    out["message"] = wording.en_whole(ruling.message, players)
    out["message_zh"] = wording.zh_whole(ruling.message_zh, players)
    return out


def _fold(engine: Engine, events: list[Any]) -> Any:
    """The stored events as they were accepted (``Engine.replay``: a later engine's refusal does
    not stop the fold)."""
    state = engine.initial()
    for ev in events:
        state = engine.replay(state, ev)
    return state


def _hand_end(events: list[Any], hand: int) -> int:
    """The version of hand ``hand``'s last event: the one before the next hand's start, else the
    table's last."""
    from domain.events import HandStarted

    for i, ev in enumerate(events):
        if isinstance(ev, HandStarted) and ev.hand > hand:
            return i
    return len(events)


def _find(settlements: Any, hand: int) -> Any:
    found = [s for s in settlements if s.hand == hand]
    played = [s for s in found if s.end != "aborted"]
    return (played or found or [None])[-1]


# ---------------------------------------------------------------------------------------- audit
@router.get(
    "/{table_id}/audit",
    operation_id="read-table_audit",
    summary="Every ruling on the table",
    responses=read_schemas.responses(read_schemas.TableAuditAnswer),
)
async def table_audit(
    table_id: TableId,
    principal: Annotated[Principal, Depends(get_principal)],
    container: Annotated[Container, Depends(get_container)],
    lang: Annotated[str, Depends(read_lang)],
) -> Response:
    """Support keys only: recorded violations, 漏胡, kong chains, reported-vs-computed settlements,
    wall checks, the hash chain. Messages in Chinese for ``lang=zh`` (or Accept-Language preferring zh)."""
    head = await run_in_threadpool(table_of, container, principal, table_id, "support")
    from projections import audit

    def build(src: Source) -> dict[str, Any]:
        stored = _events(src, principal.tenant, table_id, head.version)
        _tables, checked, problems = src.store.verify(table_id, tenant=principal.tenant)
        chain = {"ok": not problems, "events_checked": checked,
                 "first_broken": ({"version": problems[0].version, "reason": problems[0].reason}
                                  if problems else None)}  # fmt: skip
        return audit.build(
            container.engine,
            table_id,
            [e for _, e, _, _ in stored],
            [(v, r) for v, _, r, _ in stored],
            chain,
            lang,
        )

    body = await run_in_threadpool(container.table_read, principal.tenant, table_id, head.version, build)
    return Response(
        _encoder.encode(body),
        media_type="application/json",
        headers={"Content-Language": body["lang"], "Vary": "Accept-Language"},
    )
