"""Queries of the ``ledger`` read model: one account's page of entries with its balance."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from sqlalchemy import DateTime, String, column, select, table
from sqlalchemy.dialects.postgresql import JSONB

from projections import ledger, wording
from projections.schema import ledger_entries
from projections.sql import Connection, fetch

# The store's events table, as far as an entry's times need it (projections never import services).
_EVENTS = table(
    "events", column("tenant", String), column("table_id", String), column("version"),
    column("body", JSONB), column("recorded_at", DateTime(timezone=True)),
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class LedgerPage:
    """``kind``'s account ``account`` of ``tenant``: entries with ``seq > after``, at most
    ``limit``, with balance and count. ``kind`` is ``player`` or ``house``; the two never share an
    account, whatever the id. Each entry carries the time of the event that caused it: its ``at``
    (as the platform sent it, null when it had none) and ``recorded_at`` (when kwx stored it), read
    from the event itself (the store's key (tenant, table_id, version): one index probe per entry),
    and its derivation in English (``detail``) and in Chinese (``detail_zh``, made whole as the
    settlement route's: ``5筒``, ``甲``; null on an entry booked before migration 0021 until the
    ledger is rebuilt).
    None: no such player account; a house that never received a fee has an empty ledger."""

    models: ClassVar[tuple[str, ...]] = (ledger.NAME,)
    tenant: str
    kind: str
    account: str
    after: int
    limit: int

    def __call__(self, conn: Connection) -> dict[str, Any] | None:
        e = ledger_entries.c
        ev = _EVENTS.c
        # the balance and the number of entries: the account's last entry's (seq 1, 2, … no gaps)
        found = fetch(
            conn,
            select(e.balance, e.seq)
            .where(e.tenant == self.tenant, e.account_kind == self.kind, e.account == self.account)
            .order_by(e.seq.desc())
            .limit(1),
        )
        rows = fetch(
            conn,
            select(
                e.seq, e.amount, e.balance, e.counterparty, e.counterparty_kind, e.table_id, e.hand,
                e.event, e.reason, e.seat, e.detail, e.line, ev.body["at"].astext, ev.recorded_at,
                e.detail_zh,
            )
            .select_from(
                ledger_entries.outerjoin(
                    _EVENTS, (ev.tenant == e.tenant) & (ev.table_id == e.table_id) & (ev.version == e.event)
                )
            )
            .where(e.tenant == self.tenant, e.account_kind == self.kind, e.account == self.account,
                   e.seq > self.after)
            .order_by(e.seq)
            .limit(self.limit + 1),
        )  # fmt: skip
        if not found and self.kind == "player":
            return None
        if not found:  # a tenant whose house never received a fee: an empty ledger, not an unknown one
            found = [(0, 0)]
        more = len(rows) > self.limit
        entries = [
            {"seq": int(r[0]), "amount": int(r[1]), "balance": int(r[2]), "counterparty": r[3],
             "counterparty_kind": r[4], "table_id": r[5], "hand": r[6], "event": r[7], "reason": r[8],
             "seat": r[9], "detail": wording.en_whole(r[10]), "line": r[11], "at": r[12],
             "recorded_at": r[13].isoformat() if r[13] is not None else None,
             "detail_zh": wording.zh_whole(r[14]) if r[14] is not None else None}
            for r in rows[: self.limit]
        ]  # fmt: skip
        return {
            "account": self.account,
            "kind": self.kind,
            "balance": int(found[0][0]),
            "entries_total": int(found[0][1]),
            "entries": entries,
            "next_after": entries[-1]["seq"] if more else None,
        }
