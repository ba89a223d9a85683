"""Read model ``ledger``: the double-entry coin ledger.

Every §2 transfer becomes two entries: a debit (−amount) on the payer's account and a credit
(+amount) on the payee's. Accounts are players (by player id, within the tenant) and the house
(``"house"``, which receives service fees). Each entry names the table, hand, the event that caused
the transfer and its reason, says the transfer's derivation as the engine does (``detail``, and
``detail_zh`` in Chinese: the engine's text, made whole where it is read), and carries the
account's running balance after it. Because every transfer is booked twice with opposite signs,
the whole ledger (players and house) sums to zero.

Entries are booked when the hand's settlement is final (kong money is paid "the moment the kong is
made", and the entry names that kong's event, but it is booked with the rest of the hand).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from projections.arrays import texts
from projections.model import Fact, HandSettled, TableInfo
from projections.schema import ledger_entries
from projections.sql import Connection, MultiRowInsert

NAME = "ledger"
HOUSE = "house"


class Entry(msgspec.Struct, frozen=True, kw_only=True):
    tenant: str
    account_kind: str  # player / house
    account: str
    amount: int  # + credit, − debit
    counterparty_kind: str
    counterparty: str
    table_id: str
    hand: int
    ordinal: int
    line: int
    event: int
    reason: str
    seat: int | None
    detail: str
    detail_zh: str
    position: int

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.tenant, self.account_kind, self.account)


def account_of(info: TableInfo, party: int | str) -> tuple[str, str, int | None]:
    """(kind, account id, seat) of a transfer party: a seat's player, or the house."""
    if party == HOUSE:
        return "house", HOUSE, None
    seat = int(party)
    return "player", info.players[seat], seat


def entries(fact: Fact) -> list[Entry]:
    """The pure part: a settled hand → its ledger entries, in transfer order (debit, then credit)."""
    if not isinstance(fact, HandSettled):
        return []
    info, s = fact.info, fact.settlement
    out: list[Entry] = []
    for line, t in enumerate(s.transfers):
        if t.amount == 0:
            continue
        payer_kind, payer, payer_seat = account_of(info, t.from_)
        payee_kind, payee, payee_seat = account_of(info, t.to)
        common = {
            "tenant": info.tenant,
            "table_id": info.table_id,
            "hand": s.hand,
            "ordinal": fact.ordinal,
            "line": line,
            "event": t.event,
            "reason": t.reason,
            "detail": t.detail,
            "detail_zh": t.detail_zh,
            "position": fact.at.position,
        }
        out.append(
            Entry(
                account_kind=payer_kind, account=payer, seat=payer_seat, amount=-t.amount,
                counterparty_kind=payee_kind, counterparty=payee, **common,
            )
        )  # fmt: skip
        out.append(
            Entry(
                account_kind=payee_kind, account=payee, seat=payee_seat, amount=t.amount,
                counterparty_kind=payer_kind, counterparty=payer, **common,
            )
        )  # fmt: skip
    return out


def with_balances(
    batch: Iterable[Entry], opening: dict[tuple[str, str, str], tuple[int, int]]
) -> tuple[list[dict[str, Any]], dict[tuple[str, str, str], tuple[int, int]]]:
    """Pure: number the entries per account and give each its running balance, starting from
    ``opening`` (account → (balance, entries so far)). Returns the rows and the closing balances."""
    closing = dict(opening)
    rows: list[dict[str, Any]] = []
    for e in batch:
        balance, seq = closing.get(e.key, (0, 0))
        balance += e.amount
        seq += 1
        closing[e.key] = (balance, seq)
        row = msgspec.structs.asdict(e)
        row["balance"] = balance
        row["seq"] = seq
        rows.append(row)
    return rows, closing


def rows(fact: Fact) -> list[Entry]:
    return entries(fact)


def write(conn: Connection, batch: list[Entry]) -> None:
    """Book a batch: read the opening balances of the accounts it touches (each account's last
    entry) and append the entries with running balances — in the caller's transaction."""
    if not batch:
        return
    keys = sorted({e.key for e in batch})
    opening: dict[tuple[str, str, str], tuple[int, int]] = {}
    # one statement text for any number of accounts (a compiled IN list differs per length)
    result = conn.execute(_OPENING, [texts(column) for column in zip(*keys, strict=True)])
    for tenant, kind, account, balance, n in result.fetchall():
        opening[(tenant, kind, account)] = (int(balance), int(n))
    entry_rows, _closing = with_balances(batch, opening)
    _ENTRIES_INSERT.execute(conn, entry_rows)


# An account's balance and number of entries are its last entry's running balance and seq (1, 2, …
# per account, no gaps): one backward probe of the entries' key per account. (Until migration 0019
# the projector kept them in a table of their own as well, upserted for every account a batch
# touched; that table is now a view of this.)
_OPENING = (
    "SELECT k.tenant, k.account_kind, k.account, l.balance, l.seq "
    "FROM unnest(%b::text[], %b::text[], %b::text[]) AS k(tenant, account_kind, account) "
    f"CROSS JOIN LATERAL (SELECT e.balance, e.seq FROM {ledger_entries.name} e "
    "WHERE e.tenant = k.tenant AND e.account_kind = k.account_kind AND e.account = k.account "
    "ORDER BY e.seq DESC LIMIT 1) l"
)

# rows go in in the order given (each account's seq ascending, as with_balances numbers them)
_ENTRIES_INSERT = MultiRowInsert(ledger_entries, [c.name for c in ledger_entries.columns])
