"""Verifiable outside kwx (issue 13): a table's or a hand's NDJSON export with every event's chain
hash, and a hand's dispute report (docs/verify.md). ``kwx verify --file EXPORT`` checks an export
offline (services/store/export.py).

* ``GET /v1/tables/{id}/export``: the head line, then every event (1 … the head's version) with its
  ``previous`` and ``hash``; read in pages of ``PAGE`` while it streams.
* ``GET /v1/tables/{id}/hands/{n}/export``: the same for hand n's events (from its ``hand_started``
  to the event before the next hand's), ``previous`` of its first event being the stored hash just
  before it, so the chain checks from there.
* ``GET /v1/tables/{id}/hands/{n}/report?lang=zh|en``: the hand's events with their hashes, its
  settlement with each multiplier's derivation and each transfer (services/api/read.py's), the
  reported-vs-computed difference, the rulings, 漏胡 and kong chains of the hand
  (projections/hand_audit.py's: the hand's audit), the table's head hash. It folds the hand only,
  from its snapshot (projections/hand_reads.py, the read the hand's settlement, audit and timeline
  fold), not the table from event 1; the same bytes either way (tests/projections/test_hand_reads.py).

Roles: ``platform`` and ``support`` export their own tenant's tables (a platform can read every
event already: ``GET …/events``); the report is ``support``'s, as the audit is. Another tenant's
table is the same 404 as a missing one. An export carries no tenant and no time of its own: the
same stored table exports to the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any, Literal

import msgspec
from fastapi import APIRouter, Depends, Path, Response
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from projections import wording
from services.api import schemas
from services.api.deps import TableId, get_container, get_principal, read_lang
from services.bootstrap import Container
from services.errors import NotFound
from services.replica import Source
from services.store import chain_reads, export
from services.store.keys import Principal

router = APIRouter(
    prefix="/v1/tables",
    tags=["export"],
    responses=schemas.error_responses(401, 403, 404, 422, 429, 431, 503),  # type: ignore[arg-type]
)
PAGE = 1000  # events read per page while an export streams
_encoder = msgspec.json.Encoder()
_EXPORT_ROLES = ("platform", "support")
_Hand = Annotated[int, Path(ge=1, le=2**31 - 1, description="the hand's number (1, 2, …)")]

_NDJSON = {
    200: {
        "description": "JSON lines: a head line (`kind` head) then one line per event "
        "`{version, previous, hash, event}`; the format: docs/verify.md",
        "content": {export.MEDIA_TYPE: {"schema": {"type": "string"}}},
    }
}


def _lines(
    src: Container | Source,
    tenant: str,
    table_id: str,
    first: int,
    last: int,
    head_line: bytes,
    previous: bytes,
) -> Iterator[bytes]:
    yield head_line
    after = first - 1
    while after < last:
        page = chain_reads.hashed_page(src.pool, tenant, table_id, after, last, PAGE)
        if not page:
            return
        chunk = []
        for version, canonical, stored in page:
            chunk.append(export.event_line(version, previous, stored, canonical))
            previous = stored
        yield b"".join(chunk)  # one chunk a page: each chunk of a sync iterator is a thread hop
        after = page[-1][0]


def _stream(body: Iterator[bytes], table_id: str, hand: int | None = None) -> StreamingResponse:
    name = f"{table_id}.kwx.ndjson" if hand is None else f"{table_id}-hand-{hand}.kwx.ndjson"
    return StreamingResponse(
        body, media_type=export.MEDIA_TYPE, headers={"Content-Disposition": f'attachment; filename="{name}"'}
    )


@router.get(
    "/{table_id}/export", operation_id="export-table", summary="The table as verifiable JSON lines",
    response_class=Response, responses=_NDJSON,  # type: ignore[arg-type]
)  # fmt: skip
def table_export(
    table_id: TableId,
    principal: Annotated[Principal, Depends(get_principal)],
    container: Annotated[Container, Depends(get_container)],
) -> Response:
    """Every event up to the table's head with its chain hash; check it with `kwx verify --file`."""
    from services.api.read import table_of

    head = table_of(container, principal, table_id, *_EXPORT_ROLES)
    tenant = principal.tenant

    def build(src: Source) -> Response:
        genesis = chain_reads.hash_before(src.pool, tenant, table_id, 1)
        line = export.head_line(
            scope="table", table_id=table_id, hand=None, version=head.version, head_hash=head.last_hash,
            first_version=1, last_version=head.version, previous=genesis, last_hash=head.last_hash,
            opened=chain_reads.opened(src.pool, tenant, table_id),
        )  # fmt: skip
        return _stream(_lines(src, tenant, table_id, 1, head.version, line, genesis), table_id)

    # events 1 … head: on the replica once it holds them (services/replica.py)
    return container.table_read(tenant, table_id, head.version, build)


@router.get(
    "/{table_id}/hands/{hand}/export", operation_id="export-hand",
    summary="One hand as verifiable JSON lines", response_class=Response, responses=_NDJSON,  # type: ignore[arg-type]
)  # fmt: skip
def hand_export(
    table_id: TableId,
    hand: _Hand,
    principal: Annotated[Principal, Depends(get_principal)],
    container: Annotated[Container, Depends(get_container)],
) -> Response:
    """The hand's events with their chain hashes, from the stored hash just before its first event
    (the head line's `previous`); the table's head hash is stated in the head line."""
    from services.api.read import table_of

    head = table_of(container, principal, table_id, *_EXPORT_ROLES)
    tenant = principal.tenant

    def build(src: Source) -> Response:
        found = chain_reads.hand_range(src.pool, tenant, table_id, hand, head.version)
        if found is None:
            raise NotFound(
                f"table {table_id!r} has no hand {hand}", message_zh=f"牌桌 {table_id} 没有第{hand}局"
            )
        first, last = found
        previous = chain_reads.hash_before(src.pool, tenant, table_id, first)
        last_hash = chain_reads.hash_before(src.pool, tenant, table_id, last + 1)
        line = export.head_line(
            scope="hand", table_id=table_id, hand=hand, version=head.version, head_hash=head.last_hash,
            first_version=first, last_version=last, previous=previous, last_hash=last_hash,
            opened=chain_reads.opened(src.pool, tenant, table_id),
        )  # fmt: skip
        return _stream(_lines(src, tenant, table_id, first, last, line, previous), table_id, hand)

    return container.table_read(tenant, table_id, head.version, build)


# ----------------------------------------------------------------------------------- report
class ReportEvent(BaseModel):
    version: int
    type: str
    id: str
    event: dict[str, Any] = Field(
        description="the event as stored (its canonical JSON: what the chain hashes)"
    )
    previous: str = Field(description="the chain hash before it (hex)")
    hash: str = Field(description="its chain hash (hex): SHA-256(previous ‖ canonical event bytes)")
    ruling: dict[str, Any] | None = Field(description="the engine's ruling stored with it, if any")
    line: str = Field(description="what happened, in the report's language")


class HandReport(BaseModel):
    model_config = ConfigDict(extra="allow")
    table_id: str
    hand: int
    lang: Literal["en", "zh"]
    summary: str
    players: list[str]
    rules: dict[str, Any] | None
    head: dict[str, Any] = Field(description="{version, hash}: the table's head when the report was made")
    chain: dict[str, Any] = Field(description="formula, first/last version, previous, last hash, verified")
    events: list[ReportEvent]
    settlement: dict[str, Any] | None = Field(
        description="as `…/settlement`: wins with each multiplier's derivation, every transfer; "
        "null: not settled"
    )
    reported: list[dict[str, Any]] = Field(
        description="each settlement_reported of the hand against the computed settlement: status "
        '(match, differs, not_settled), the lines that differ, net per party (seats "0" "1" "2", '
        '"house") each way, difference = reported − computed per party; empty: none reported'
    )
    rulings: list[dict[str, Any]]
    lou_hu: list[dict[str, Any]]
    kong_chains: list[dict[str, Any]]
    wall: dict[str, Any] | None


@router.get(
    "/{table_id}/hands/{hand}/report", operation_id="export-hand_report",
    summary="A hand's dispute report: events and hashes, settlement and its derivation, reported vs computed",
    response_model=HandReport,
)  # fmt: skip
def hand_report(
    table_id: TableId,
    hand: _Hand,
    principal: Annotated[Principal, Depends(get_principal)],
    container: Annotated[Container, Depends(get_container)],
    language: Annotated[str, Depends(read_lang)],
) -> Response:
    """Support keys only. Everything an agent sends a player about one hand, with each event's chain
    hash and the table's head hash so the player can check it (docs/verify.md)."""
    from services.api import read

    head = read.table_of(container, principal, table_id, "support")
    tenant = principal.tenant
    # everything below on the replica once it holds the table's head (services/replica.py)
    return container.table_read(tenant, table_id, head.version,
                                lambda src: _report(src, table_id, hand, head, tenant, language))  # fmt: skip


def _report(src: Source, table_id: str, hand: int, head: Any, tenant: str, language: str) -> Response:
    """The hand's report, read from ``src``."""
    from domain.events import SettlementReported, decode
    from projections import hand_audit
    from services.api import read
    from services.api.hand_reads import hand_events
    from services.db import reading
    from services.store import chain
    from services.store.hand_span import reports_after

    # The hand's events from its snapshot (projections/hand_reads.py, as its settlement, audit and
    # timeline read them): the audit's entries of the hand (rulings, 漏胡, kong chains, wall) and
    # its settlement from that one fold (projections/hand_audit.py); the reports of the hand made
    # after its last event (a settlement_reported may come after the next hand started) read apart.
    got = hand_events(src, tenant, table_id, hand, head.version)
    if got.first is None:
        raise NotFound(f"table {table_id!r} has no hand {hand}", message_zh=f"牌桌 {table_id} 没有第{hand}局")
    first, last = got.first, got.last
    late: list[Any] = []
    if last < head.version:
        stored = reading(src.pool, lambda c: reports_after(c, tenant, table_id, last, hand))
        for version, text in stored:
            event = decode(text)
            if isinstance(event, SettlementReported):
                late.append(hand_audit.reported_of(version, event))
    state, whole = hand_audit.fold_hand(src.engine, table_id, got, late, {}, head.version, language)
    by_version = {v: e for v, e, _ in got.events}
    ruling_of = {v: r for v, _, r in got.events}
    settled = read._find(state.settlements, hand)
    settlement = (
        read._derivation(settled, by_version, state.rules, state.rulings, state.players)
        if settled is not None
        else None
    )

    previous = chain_reads.hash_before(src.pool, tenant, table_id, first)
    start, computed, verified = previous, previous, True
    rows: list[dict[str, Any]] = []
    hashed = {v: (c, h) for v, c, h in _hashed(src, tenant, table_id, first, last)}
    for version in range(first, last + 1):
        canonical, stored_hash = hashed[version]
        computed = chain.link(computed, canonical)
        verified = verified and computed == stored_hash
        ev = by_version[version]
        ruling = ruling_of[version]
        rows.append({
            "version": version, "type": type(ev).__struct_config__.tag, "id": ev.id,
            "event": msgspec.Raw(canonical), "previous": previous.hex(), "hash": stored_hash.hex(),
            "ruling": ruling, "line": _line(ev, whole["players"], ruling, language),
        })  # fmt: skip
        previous = stored_hash
    reported = [  # the audit's own comparison: every report of the hand against its settlement
        dict(s, difference={k: s["net_reported"].get(k, 0) - v for k, v in s["net_computed"].items()})
        for s in whole["settlements"]
    ]
    net = settled.net if settled is not None else None
    body = {
        "table_id": table_id,
        "hand": hand,
        "lang": language,
        "summary": _summary(hand, first, last, whole["players"], reported, net, language),
        "players": whole["players"],
        "rules": whole["rules"],
        "head": {"version": head.version, "hash": head.last_hash.hex()},
        "chain": {
            "formula": _FORMULA,
            "first_version": first, "last_version": last, "previous": start.hex(),
            "last_hash": previous.hex(), "verified": verified,
            "how_to_check": _HOW["zh" if language == "zh" else "en"],
        },
        "events": rows,
        "settlement": settlement,
        "reported": reported,
        "rulings": whole["rulings"],
        "lou_hu": whole["lou_hu"],
        "kong_chains": whole["kong_chains"],
        "wall": whole["walls"][0] if whole["walls"] else None,
    }  # fmt: skip
    return Response(
        _encoder.encode(body),
        media_type="application/json",
        headers={"Content-Language": language, "Vary": "Accept-Language"},
    )


_FORMULA = "h_0 = SHA-256('kwx-chain-v1:' + table_id); h_n = SHA-256(h_(n-1) + canonical event n)"
_HOW = {
    "en": "GET …/hands/{n}/export, then kwx verify --file EXPORT --head HEAD (docs/verify.md)",
    "zh": "先下载本局导出（GET …/hands/{n}/export），再运行 kwx verify --file 导出文件 --head 头哈希"
    "（见 docs/verify.md）",
}


def _hashed(src: Container | Source, tenant: str, table_id: str, first: int, last: int) -> list[Any]:
    out: list[Any] = []
    after = first - 1
    while after < last:
        page = chain_reads.hashed_page(src.pool, tenant, table_id, after, last, PAGE)
        if not page:
            break
        out += page
        after = page[-1][0]
    return out


def _line(ev: Any, players: list[str], ruling: dict[str, Any] | None, lang: str) -> str:
    """One plain line per event in the timeline's words (seats ``乙（bob）``, tiles ``5筒``:
    projections/wording.py); the timeline route has the full text."""
    tag = type(ev).__struct_config__.tag
    seat = getattr(ev, "seat", None)

    def who(s: int | None) -> str:
        return "" if s is None else wording.seat(s, players, lang)

    def tile_of(name: str | None) -> str:
        return wording.tile(name, lang) if name else ""

    tile = tile_of(getattr(ev, "tile", None))
    discard = tile_of(getattr(ev, "discard", None))
    winners = list(getattr(ev, "winners", []))  # (one wins, two win)
    kong = wording.a_kong(ev.kind, lang) if tag == "kong" else ""  # 直杠 / "an exposed kong"
    zh = {"hand_started": f"第{getattr(ev, 'hand', '')}局开始，庄家{who(getattr(ev, 'dealer', None))}",
          "tile_drawn": f"{who(seat)}摸{tile}", "tile_discarded": f"{who(seat)}打{tile}",
          "peng": f"{who(seat)}碰{tile}", "kong": f"{who(seat)}{kong}{tile}",
          "liang_dao": f"{who(seat)}亮倒，打{discard}",
          "hu": "、".join(who(w) for w in winners) + f"胡{tile}",
          "hand_exhausted": "荒庄：牌墙摸完", "hand_aborted": "本局作废", "ma_drawn": f"买码{tile}",
          "wall_revealed": "公开牌墙", "settlement_reported": "平台上报结算", "table_closed": "牌桌结束",
          "table_opened": "开桌"}  # fmt: skip
    en = {"hand_started": f"hand {getattr(ev, 'hand', '')} starts, dealer {who(getattr(ev, 'dealer', None))}",
          "tile_drawn": f"{who(seat)} draws {tile}", "tile_discarded": f"{who(seat)} discards {tile}",
          "peng": f"{who(seat)} pengs {tile}", "kong": f"{who(seat)} makes {kong} of {tile}",
          "liang_dao": f"{who(seat)} declares ready (liang dao), discarding {discard}",
          "hu": " and ".join(who(w) for w in winners) + f" {'win' if len(winners) > 1 else 'wins'} on {tile}",
          "hand_exhausted": "the wall is exhausted", "hand_aborted": "the hand is voided",
          "ma_drawn": f"ma tile {tile}", "wall_revealed": "the wall is revealed",
          "settlement_reported": "the platform reports its settlement", "table_closed": "the table closes",
          "table_opened": "the table opens"}  # fmt: skip
    text = (zh if lang == "zh" else en).get(tag, tag)
    if ruling:
        if lang == "zh":
            text += (
                "（违规："
                + wording.zh_whole(ruling.get("message_zh") or ruling.get("message", ""), players)
                + "）"
            )
        else:
            text += " (ruling: " + wording.en_whole(str(ruling.get("message", "")), players) + ")"
    return text


def _summary(hand: int, first: int, last: int, players: list[str], reported: Any, net: Any, lang: str) -> str:
    def nets(sep: str) -> str:
        return sep.join(f"{players[s] if s < len(players) else s} {n:+d}" for s, n in enumerate(net))

    if lang == "zh":
        text = f"第{hand}局，第{first}至第{last}事件。"
        text += f"结算：{nets('、')}。" if net is not None else "本局未结算。"
        if reported:
            text += reported[-1]["message"] + "。"
        return text
    text = f"hand {hand}, events {first} to {last}. "
    text += f"Settlement: {nets(', ')}." if net is not None else "The hand is not settled."
    if reported:
        text += " " + reported[-1]["message"] + "."
    return text
