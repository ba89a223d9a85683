"""The shapes of the read routes' 200 answers, for the OpenAPI document (issue 13, typed reads).

The routes build their answers as plain values and encode them with msgspec themselves; nothing
here touches the bytes they send. These msgspec Structs only *describe* those answers, so that a
platform can generate a client: :func:`responses` gives a route's ``responses={200: …}`` (a
``$ref`` to ``#/components/schemas/NAME``) and :func:`install` adds the components to the app's
OpenAPI document. The table's rules are the engine's own :class:`domain.rules.Rules`, so a new
rule option shows up here by itself.

Strict where the shape is fixed: every object is ``additionalProperties: false`` and every key
the answer always carries is required (tests/service/test_read_schemas.py validates real answers
against these, so a key added or dropped by a route fails there until this module says so). Open
on purpose: a legal action (its keys depend on the action's type), a ruling's ``detail``, the
per-pattern and per-preset maps, a what-if's ``rules_override``.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec
from msgspec import UNSET, UnsetType, defstruct

from domain.rules import Rules
from projections.queries.player_stats import RATIOS
from projections.schema import STAT_COUNTERS

Party = int | Literal["house"]
End = Literal["hu", "exhausted", "aborted"]
KongKind = Literal["concealed", "added", "exposed"]
Lang = Literal["en", "zh"]


class _S(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Base of the strict shapes (no key beyond those named)."""


# ---------------------------------------------------------------------- settlements (CONTRACT §2)
class PatternHit(_S):
    id: str
    x: int
    detail: str


class SettlementWin(_S):
    seat: int
    from_: int | None = msgspec.field(name="from")
    tile: str
    patterns: list[PatternHit]
    multiplier: int
    payable: int
    capped: int
    shu_kan: int
    ma: int
    event: int
    decomposition: str
    cap_note: str
    bao_hu: str | None


class SettlementTransfer(_S):
    from_: Party = msgspec.field(name="from")
    to: Party
    amount: int
    reason: Literal["hu", "kong", "exhausted", "piao", "fee"]
    event: int
    detail: str  # which rule, which factor: the units' derivation × base = amount
    detail_zh: str  # the same, in Chinese


class Settlement(_S):
    hand: int
    end: End
    dealer: int
    next_dealer: int
    wins: list[SettlementWin]
    transfers: list[SettlementTransfer]
    net: list[int]
    house: int
    base: int


class ViolationEffect(_S):
    code: str
    counts_as_win: bool
    effect: str
    effect_zh: str
    message: str
    message_zh: str


class Derivation(_S):
    """A win's derivation: each pattern by name with its factor and the engine's note
    (``declared ready ×2 (the winner had declared ready)``), the product (``plain win ×1`` when
    none), what the cap did, what is paid — in whole English and in Chinese (``*_zh``)."""

    patterns: list[str]
    patterns_zh: list[str]
    decomposition: str
    multiplier: str
    multiplier_zh: str
    cap: str
    cap_zh: str
    payable: int
    violation: ViolationEffect | None


class DerivedWin(SettlementWin):
    derivation: Derivation


class DerivedTransfer(SettlementTransfer):
    event_id: str
    event_type: str


class DerivedSettlement(_S):
    hand: int
    end: End
    dealer: int
    next_dealer: int
    wins: list[DerivedWin]
    transfers: list[DerivedTransfer]
    net: list[int]
    house: int
    base: int


class WhatIf(_S):
    rules_override: dict[str, Any]
    rules: Rules
    settlement: DerivedSettlement | None
    net_difference: list[int] | None
    rulings: list[RecordedRuling]  # what the fold under the other rules recorded, up to this hand's end
    note: str
    note_zh: str


class HandSettlementAnswer(_S):
    table_id: str
    hand: int
    rules: Rules
    settlement: DerivedSettlement
    what_if: WhatIf | UnsetType = UNSET  # only with ?rules= or rule options


# ------------------------------------------------------------------------------ state (CONTRACT §3)
class LegalAction(msgspec.Struct, kw_only=True):
    """A legal next event: ``type`` and the fields of that event (open: they vary by type)."""

    type: str


class RecordedRuling(_S):
    code: str
    message: str
    message_zh: str
    event: int
    kind: Literal["structure", "rule"]
    detail: dict[str, Any]


class LouHuView(_S):
    hand: int
    seat: int
    event: int
    tile: str
    source: int
    multiplier: int
    since: int
    lifted_by: int | None


class MeldView(_S):
    kind: str
    tile: str
    source: int | None
    event: int


class DiscardView(_S):
    tile: str
    event: int
    claimed: bool


class LiangDaoView(_S):
    event: int
    discard: str
    waits: list[str]
    hidden: list[str] | int  # the kept-face-down triplets: their tiles to their seat, a count to others


class SeatView(_S):
    seat: int
    concealed: str | None
    concealed_count: int
    melds: list[MeldView]
    discards: list[DiscardView]
    liang_dao: LiangDaoView | None
    waits: list[str] | None
    lou_hu: LouHuView | None


class KongChainView(_S):
    seat: int
    length: int
    factor: int
    stage: Literal["kong", "draw", "discard"]


class Score(_S):
    patterns: list[PatternHit]
    multiplier: int
    capped: int
    shu_kan: int
    payable: int
    allowed: bool
    min_required: int
    cap_note: str
    decomposition: str


class KongRecord(_S):
    seat: int
    kind: KongKind
    tile: str
    event: int
    chain: int
    source: int | None
    robbed: bool


class WinRecord(_S):
    seat: int
    source: int | None
    tile: str
    event: int
    score: Score
    liang_dao: bool
    source_liang_dao: bool
    robbed_kong: bool
    kong_draw: bool
    after_kong_discard: bool
    violation: str | None


class Declaration(_S):
    seat: int
    event: int


class HandRecord(_S):
    hand: int
    dealer: int
    base: int
    start_event: int
    piao: list[int] | None
    dice: list[int] | None
    end: End | None
    end_event: int | None
    kongs: list[KongRecord]
    wins: list[WinRecord]
    declarations: list[Declaration]
    ma_tile: str | None
    ma_event: int | None


class HandView(_S):
    hand: int
    dealer: int
    base: int
    phase: Literal["discard", "claim", "replacement", "rob", "over"]
    turn: int
    wall_remaining: int
    wall_known: bool
    last_tile: str | None
    drawn: str | None
    seats: list[SeatView]
    kong_chain: KongChainView | None
    kong_money: list[int]
    lou_hu_log: list[LouHuView]
    record: HandRecord
    wall: list[str] | UnsetType = UNSET  # the full view of a known wall: the tiles still in it
    concealed_all: list[str] | UnsetType = UNSET  # the full view: every seat's concealed tiles


class TableStateAnswer(_S):
    version: int
    viewer: int | None
    players: list[str]
    base: int
    rules: Rules | None
    violations: Literal["reject", "record"]
    closed: bool
    hand_no: int
    dealer: int | None
    next_dealer: int | None
    shang_lou: int
    coins: list[int]
    hand: HandView | None
    settlements: list[Settlement]
    recorded_rulings: list[RecordedRuling]
    legal_actions: list[LegalAction]
    view: Literal["seat", "public", "full"]
    table_id: str
    at: int
    latest: int
    folded_from: int


# ------------------------------------------------------------------------------------------ audit
class BrokenLinkOut(_S):
    version: int
    reason: str


class HashChain(_S):
    ok: bool
    events_checked: int
    first_broken: BrokenLinkOut | None


class AuditRuling(_S):
    event: int
    hand: int
    type: str | None
    id: str | None
    rule: str | None
    kind: str | None
    message: str
    detail: dict[str, Any]


class Passed(_S):
    event: int
    tile: str
    from_: int = msgspec.field(name="from")


class WouldHavePaid(_S):
    multiplier: int


class LiftedBy(_S):
    event: int
    tile: str | None


class AuditLouHu(_S):
    hand: int
    seat: int
    player: str
    passed: Passed
    would_have_paid: WouldHavePaid
    since: int
    lifted_by: LiftedBy | None
    message: str


class KongCoin(_S):
    from_: Party = msgspec.field(name="from")
    to: Party
    amount: int
    detail: str
    detail_zh: str  # the same in Chinese (the timeline issue: Chinese whole)


class AuditKong(_S):
    event: int
    seat: int
    kind: KongKind
    tile: str
    k: int
    points: int
    factor: int
    robbed: bool
    source: int | None
    coins: list[KongCoin]
    message: str


class AuditKongChain(_S):
    hand: int
    kongs: list[AuditKong]
    length: int
    total_coins: int


class DifferingLine(_S):
    from_: Party = msgspec.field(name="from")
    to: Party
    computed: int
    reported: int
    difference: int


class SettlementCheck(_S):
    hand: int
    reported_event: int
    status: Literal["match", "differs", "not_settled"]
    lines: list[DifferingLine]
    net_computed: dict[str, int]  # per seat ("0", "1", "2") and "house"
    net_reported: dict[str, int]
    message: str


class WallCheck(_S):
    hand: int
    mode: Literal["known", "committed", "count_only"]
    start_event: int
    result: str
    message: str
    revealed_event: int | UnsetType = UNSET  # a committed wall that was revealed


class TableAuditAnswer(_S):
    table_id: str
    version: int
    lang: Lang
    players: list[str]
    rules: Rules | None
    violations: Literal["reject", "record"]
    hash_chain: HashChain
    rulings: list[AuditRuling]
    lou_hu: list[AuditLouHu]
    kong_chains: list[AuditKongChain]
    settlements: list[SettlementCheck]
    walls: list[WallCheck]


class HandAuditAnswer(TableAuditAnswer):
    hand: int


# ------------------------------------------------------------------------------- stats and ledgers
_Ratios = defstruct(
    "StatRatios", [(n, float | None) for n in RATIOS], kw_only=True, forbid_unknown_fields=True
)
_COUNTERS = [(n, int) for n in STAT_COUNTERS]
PlayerStatsBlock = defstruct(
    "PlayerStatsBlock",
    [*_COUNTERS, ("ratios", _Ratios), ("max_multiplier", int), ("patterns", dict[str, int])],
    kw_only=True, forbid_unknown_fields=True,
)  # fmt: skip
LeaderboardRow = defstruct(
    "LeaderboardRow",
    [("rank", int), ("player_id", str), *_COUNTERS, ("ratios", _Ratios), ("max_multiplier", int),
     ("win_rate", float | None), ("value", int | float | None)],
    kw_only=True, forbid_unknown_fields=True,
)  # fmt: skip


class PatternName(_S):
    zh: str
    en: str


class PlayerStatsAnswer(_S):
    player_id: str
    overall: PlayerStatsBlock  # type: ignore[valid-type]
    presets: dict[str, PlayerStatsBlock]  # type: ignore[valid-type]
    pattern_names: dict[str, PatternName]  # each pattern id of overall.patterns by name (RULES.md §5)


class LeaderboardAnswer(_S):
    by: str
    order: Literal["desc", "asc"]
    preset: str | None
    since: str | None
    until: str | None
    min_hands: int
    offset: int
    limit: int
    players: list[LeaderboardRow]  # type: ignore[valid-type]
    next_offset: int | None


class LedgerEntry(_S):
    seq: int
    amount: int
    balance: int
    counterparty: str
    counterparty_kind: str
    table_id: str
    hand: int
    event: int
    reason: str
    seat: int | None
    detail: str
    line: int
    at: str | None
    recorded_at: str | None
    detail_zh: str | None  # the derivation in Chinese (null: booked before migration 0021, not rebuilt)


class LedgerAnswer(_S):
    account: str
    kind: Literal["player", "house"]
    balance: int
    entries_total: int
    entries: list[LedgerEntry]
    next_after: int | None


class ReportedLineOut(_S):
    from_: Party = msgspec.field(name="from")
    to: Party
    amount: int


class Discrepancy(_S):
    seq: int
    table_id: str
    hand: int
    reported_event: int
    lines: list[DifferingLine]
    net_computed: dict[str, int]
    net_reported: dict[str, int]
    reported: list[ReportedLineOut]


class DiscrepancyFeedAnswer(_S):
    discrepancies: list[Discrepancy]
    next_after: int | None
    caught_up: bool


ANSWERS: tuple[type, ...] = (
    TableStateAnswer, HandSettlementAnswer, TableAuditAnswer, HandAuditAnswer, PlayerStatsAnswer,
    LeaderboardAnswer, LedgerAnswer, DiscrepancyFeedAnswer,
)  # fmt: skip
_REF = "#/components/schemas/{name}"


def _optional() -> set[tuple[str, str]]:
    """(struct name, key) of the keys an answer may leave out: the fields defaulting to ``UNSET``."""
    out: set[tuple[str, str]] = set()
    for obj in list(globals().values()):
        if isinstance(obj, type) and issubclass(obj, msgspec.Struct):
            out.update(
                (obj.__name__, f.encode_name) for f in msgspec.structs.fields(obj) if f.default is UNSET
            )
    return out


def _strict(node: Any, optional: set[tuple[str, str]]) -> Any:
    """Every struct object closed, and every key it has required but the ``UNSET`` ones (msgspec
    marks a key with a default as optional; the answers always carry those)."""
    if isinstance(node, dict):
        out = {k: _strict(v, optional) for k, v in node.items()}
        props = out.get("properties")
        if out.get("type") == "object" and isinstance(props, dict) and out.get("title") != "LegalAction":
            out["additionalProperties"] = False
            out["required"] = [k for k in props if (out.get("title"), k) not in optional]
        return out
    if isinstance(node, list):
        return [_strict(v, optional) for v in node]
    return node


def components() -> dict[str, Any]:
    """The components of every answer (and of what they contain), by name."""
    _, defs = msgspec.json.schema_components(ANSWERS, ref_template=_REF)
    optional = _optional()
    return {name: _strict(schema, optional) for name, schema in defs.items()}


def responses(answer: type, description: str = "Successful Response") -> dict[int | str, dict[str, Any]]:
    """A route's ``responses`` entry for its 200 answer ``answer`` (one of :data:`ANSWERS`)."""
    ref = {"$ref": _REF.format(name=answer.__name__)}
    return {200: {"description": description, "content": {"application/json": {"schema": ref}}}}


# The operations whose answers say where they were read (services/replica.py: a table's reads and
# the read models'), by operationId prefix; their 200 documents the Kwx-Read-From header.
READ_FROM_OPERATIONS = ("read-", "tables-read_events", "export-", "stats-", "discovery-")
READ_FROM_HEADER = {
    "description": "which database answered: `primary`, or `replica` with DATABASE_READ_URL (a table's "
    "read only once the replica holds the table up to the version it needs; docs/SCALING.md)",
    "schema": {"type": "string", "enum": ["primary", "replica"]},
}


def _document_read_from(schema: dict[str, Any]) -> None:
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            if str(operation.get("operationId", "")).startswith(READ_FROM_OPERATIONS):
                ok = operation.get("responses", {}).get("200")
                if ok is not None:
                    ok.setdefault("headers", {})["Kwx-Read-From"] = READ_FROM_HEADER


def install(app: Any) -> None:
    """Add :func:`components` to ``app``'s OpenAPI document (once, when it is first built), and the
    ``Kwx-Read-From`` header to the reads' 200 answers."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = build()
            known = schema.setdefault("components", {}).setdefault("schemas", {})
            for name, component in components().items():
                if known.setdefault(name, component) != component:
                    raise RuntimeError(f"two OpenAPI components named {name!r}: rename one")
            _document_read_from(schema)
            app.openapi_schema = schema
        return app.openapi_schema  # type: ignore[no-any-return]

    app.openapi = openapi
