"""The projector's read of the global log: the store's gap-free predicate, lean rows.

Same SQL predicate and order as ``services.store.events.EventStore.read_all`` — events of
transactions older than every one still running (``tx_id < pg_snapshot_xmin(pg_current_snapshot())``,
in the current log epoch; every event of an older epoch), strictly after ``(epoch, tx_id,
position)``, in ``(epoch, tx_id, position)`` order (docs/operations.md) — but only the columns the
projector uses, one fixed statement text (no SQLAlchemy compile per page), plain tuples instead of
``StoredEvent`` objects, and on the caller's connection: the projector reads inside its batch
transaction instead of checking out a second connection.

Reading inside that transaction keeps the guarantee: the statement takes its own snapshot (READ
COMMITTED), and if the transaction already has an xid, ``pg_snapshot_xmin`` is at most that xid, so
the read can only be *more* conservative (an event committed meanwhile by a newer transaction comes
with the next page), never skip one.
"""

from __future__ import annotations

from typing import Any

import psycopg

LogRow = tuple[str, int, int, int, str, "str | None", str, int]
"""One event of the log: ``(table_id, version, position, tx_id, body, ruling, tenant, epoch)`` —
``body`` the event as JSON text (jsonb output), ``ruling`` its stored ruling as JSON text (a
recorded violation) or None; a table is (tenant, table_id); ``epoch`` its log epoch. Plain tuples as
psycopg gives them: the projector unpacks them in its loop (a NamedTuple's ``_make`` per row and
attribute reads cost ≈ 0.6 µs per event)."""

LogPlace = tuple[int, int, int]
"""A place in the log: ``(epoch, tx_id, position)`` of an event; ``(0, 0, 0)`` is before the first."""


# The one set of log-order SQL (issue 12): every statement that compares a place in the log, fences
# it or sorts by it builds the text with these — the projector's page, the store's read_all, health
# freshness, ``kwx projections status``'s behind count and the discrepancy feed's ``caught_up``.

PLACE_PARAMS = ("%s", "%s", "%s")
"""A place given as three positional psycopg parameters ``(epoch, tx_id, position)``; pass tx_id
as text or int (it is cast to xid8 through text)."""

CURRENT_EPOCH = "(SELECT max(l.epoch) FROM log_epochs l)"
"""The current log epoch (the latest; ``kwx_log_epoch()`` opens it before kwx writes anything)."""

NEXT_XID = "pg_snapshot_xmax(pg_current_snapshot())::text::int8"
"""The cluster's next transaction id (the snapshot's xmax): no checkpoint of the current epoch can
be at or past it (:func:`stale`)."""


def after(alias: str, place: tuple[str, str, str] = PLACE_PARAMS) -> str:
    """The log-order condition: events of ``alias`` strictly after ``place`` = (epoch, tx_id,
    position), three SQL expressions (default: :data:`PLACE_PARAMS`); a row comparison, so the
    ``events_log_order`` index (epoch, tx_id, position) serves it as one range."""
    epoch, tx_id, position = place
    return f"({alias}.epoch, {alias}.tx_id, {alias}.position) > ({epoch}, ({tx_id})::text::xid8, {position})"


def log_order(alias: str) -> str:
    """``ORDER BY`` the log's order. It names the table's columns: an output column named ``tx_id``
    would win over the column (and sort by the converted value, e.g. xids as text: "1000" < "764")."""
    return f"{alias}.epoch, {alias}.tx_id, {alias}.position"


def checkpoint_of(model: str) -> tuple[str, str, str]:
    """The place of read model ``model``'s checkpoint as three scalar subqueries, ``(0, 0, 0)``
    (before the first event) for a model that never ran. As subqueries (InitPlans: values by the
    time a scan starts), a condition ``after(alias, checkpoint_of(m))`` still plans as the index
    range scan from the checkpoint on."""
    if not model.isidentifier():  # a registry name, written into the text
        raise ValueError(f"not a read model name: {model!r}")
    one = "coalesce((SELECT c.{} FROM projection_checkpoints c WHERE c.name = '" + model + "'), 0)"
    return one.format("epoch"), one.format("tx_id"), one.format("position")


# The fence (tx_id below the oldest transaction still running) applies to the current epoch only:
# an older epoch's transactions ran on a cluster that is gone (a dump's source, the cluster before
# pg_upgrade), so all of them are final — and their xids mean nothing to this cluster's snapshot.
FENCE_XMIN = (
    "(SELECT pg_snapshot_xmin(pg_current_snapshot()) FROM log_epochs l ORDER BY l.epoch DESC LIMIT 1)"
)
"""The fence's xmin as a subquery on ``log_epochs``: one InitPlan on one PostgreSQL (the same value as
the bare call); on a Citus cluster a subquery on a coordinator table is evaluated on the coordinator
before the workers are asked, so ``tx_id`` (the coordinator's transaction id, where the column
default is evaluated) is compared with the coordinator's snapshot, not each worker's (the bare call
would be pushed down to the shards: docs/SCALING.md)."""


def fence(alias: str) -> str:
    """The gap-free predicate on the events table named ``alias`` in the query."""
    return f"({alias}.epoch < {CURRENT_EPOCH} OR {alias}.tx_id < {FENCE_XMIN})"


def stale(cp: LogPlace, epoch: int, next_xid: int) -> bool:
    """A checkpoint ahead of anything the log can produce: of an epoch after the current one, or
    in the current epoch at a transaction id not yet assigned (``next_xid``: :data:`NEXT_XID`).
    What a restored or copied checkpoint looks like when the epoch did not change."""
    return cp[0] > epoch or (cp[0] == epoch and cp[1] >= next_xid)


CHECKPOINTS = (
    "SELECT name, epoch, tx_id, position, parked, (SELECT max(epoch) FROM log_epochs), "
    f"{NEXT_XID} FROM projection_checkpoints"
)
"""Every checkpoint row ``(name, epoch, tx_id, position, parked, current epoch, next xid)``: with
each checkpoint the current epoch and the next xid for :func:`stale`, in the same statement."""


READ_PAGE = (
    "SELECT e.table_id, e.version, e.position, e.tx_id::text::int8 AS tx_int, e.body::text AS body_text, "
    "e.ruling::text AS ruling_text, e.tenant, e.epoch "
    "FROM events e "
    f"WHERE {after('e')} AND {fence('e')} "
    f"ORDER BY {log_order('e')} LIMIT %s"
)


def read_page(conn: psycopg.Connection[Any], after: LogPlace, limit: int) -> list[LogRow]:
    """Up to ``limit`` events strictly after ``after`` = (epoch, tx_id, position), gap-free, in log
    order."""
    # (tx_id as int8: xid8 values stay far below 2**63)
    rows: list[LogRow] = conn.execute(READ_PAGE, (after[0], str(after[1]), after[2], limit)).fetchall()
    return rows


_JUDGED = "coalesce(e.judge = %(judge)s, false)"  # the event's facts were found by this judge (NULL: by none)
_FROM = ("%(epoch)s", "%(tx_id)s", "%(position)s")  # the checkpoint
_UPTO = (
    " AND (e.epoch, e.tx_id, e.position) <= (%(upto_epoch)s, (%(upto_tx_id)s)::text::xid8, %(upto_position)s)"
)


def _facts_page(bounded: bool) -> str:
    """The page is every event after the checkpoint up to its *bound*. One walk of the index counts
    the events passed (at most ``limit``; no row is read out); the bound is then the ``limit``-th
    event for a full page (a second walk), else the newest (one step back from the end of the
    index, or from ``upto``). A last walk over (checkpoint, bound] returns the events the projector
    must look at and the bound itself, each with the count. Every part is the one statement's: one
    snapshot, one fence, so the walks see the same events. (Until 2 Dec, session 12: the page went
    through two window functions, row_number and count, ≈ 1 µs per event of the page on the
    server; this form costs ≈ 27 % less for a page of 2,000 or 4,000 events and the same for 300.)"""
    span = f"{after('e', _FROM)} AND {fence('e')}{_UPTO if bounded else ''}"
    place = "(e.epoch, e.tx_id, e.position)"
    # The bound as a row subquery (an InitPlan: its values are there before the scan starts), so the
    # last walk's index condition has both ends and stops at the bound. Joined to the bound instead,
    # on an analyzed table the walk had only the checkpoint for its index condition and read every
    # event up to the fence: the whole rest of the log for each page, quadratic in a rebuild (on
    # 74,214 events, pages of 4000 from position 0: 3.2 µs of server CPU per event against 0.9).
    # (Three scalar subqueries did the same on one PostgreSQL; on Citus each is a subplan of its own.)
    bound = "(SELECT b.epoch, b.tx_id, b.position FROM bound b)"
    return (
        "WITH passed AS MATERIALIZED (SELECT count(*) AS n FROM ("
        f"SELECT e.position FROM events e WHERE {span} ORDER BY {log_order('e')} LIMIT %(limit)s) p"
        "), bound AS MATERIALIZED ("
        "SELECT f.epoch, f.tx_id, f.position, c.n FROM passed c, LATERAL ("
        f"SELECT e.epoch, e.tx_id, e.position FROM events e WHERE {span} "
        f"ORDER BY {log_order('e')} OFFSET %(limit)s - 1 LIMIT 1) f WHERE c.n = %(limit)s "
        "UNION ALL SELECT l.epoch, l.tx_id, l.position, c.n FROM passed c, LATERAL ("
        f"SELECT e.epoch, e.tx_id, e.position FROM events e WHERE {span} "
        "ORDER BY e.epoch DESC, e.tx_id DESC, e.position DESC LIMIT 1) l "
        "WHERE c.n BETWEEN 1 AND %(limit)s - 1) "
        "SELECT e.table_id, e.version, e.position, e.tx_id::text::int8, "
        f"CASE WHEN NOT {_JUDGED} THEN e.body::text END, CASE WHEN NOT {_JUDGED} THEN e.ruling::text END, "
        f"e.tenant, e.epoch, {_JUDGED}, e.facts, (SELECT b.n FROM bound b) "
        f"FROM events e WHERE {span} AND {place} <= {bound} "
        f"AND (e.facts IS NOT NULL OR NOT {_JUDGED} OR {place} = {bound}) "
        f"ORDER BY {log_order('e')}"
    )


READ_FACTS_PAGE = _facts_page(False)
READ_FACTS_PAGE_UPTO = _facts_page(True)  # (two texts: a bound as a filter would not stop the scan)

FactRow = tuple[str, int, int, int, "str | None", "str | None", str, int, bool, "bytes | None", int]
"""One event of a facts page: ``(table_id, version, position, tx_id, body, ruling, tenant, epoch,
known, facts, n)`` — ``known``: its stored facts were found by the reader's judge (``body`` and
``ruling`` are then None: not read), ``facts`` those facts (None: it gave none), ``n`` how many log
events the page passed over."""


WALK_INDEX = (
    "SELECT set_config('kwx.walk_index', current_setting('enable_seqscan') || ' ' "
    "|| current_setting('enable_bitmapscan'), true)",
    "SELECT set_config('enable_seqscan', 'off', true), set_config('enable_bitmapscan', 'off', true)",
    "SELECT set_config('enable_seqscan', split_part(current_setting('kwx.walk_index'), ' ', 1), true), "
    "set_config('enable_bitmapscan', split_part(current_setting('kwx.walk_index'), ' ', 2), true)",
)
"""The page's walks of the ``events_log_order`` index (its count, its bound, its rows: each at most
the page's events). Left to itself the planner takes, for a custom plan (a statement's first five
runs on a connection, so every page of a fresh pool), a bitmap or sequential scan of *every* event
after the checkpoint and a sort: the whole rest of the log per page (on 38,945 events, a page from
position 0 cost ≈ 30 ms against ≈ 5.5 walked), because it guesses a row comparison's selectivity
as one third of the table, whatever the checkpoint. So the read turns sequential and bitmap scans
off for itself, inside the caller's transaction (``set_config(…, true)``), and puts back the values
it found (kept in ``kwx.walk_index``): the batch's other statements plan as before. Outside a
transaction the settings last one statement each: the page is the same, only its plan is the
planner's."""


def read_facts_page(
    conn: psycopg.Connection[Any],
    after: LogPlace,
    limit: int,
    judge: int | None,
    upto: LogPlace | None = None,
) -> list[FactRow]:
    """The next ``limit`` events of the log after ``after`` (gap-free, in log order, at most up to
    ``upto``), of which only those a projector must look at: the ones with facts stored by
    ``judge``, every one stored by another judge (with its body and ruling, to fold), and the last
    one (where the page ends). One statement, so one snapshot decides the fence for all of them: an
    event passed over without a row can never be one committed late. Each row carries ``n``, the
    events passed; no rows: nothing new."""
    params: dict[str, Any] = {
        "judge": judge, "epoch": after[0], "tx_id": str(after[1]), "position": after[2], "limit": limit,
    }  # fmt: skip
    text = READ_FACTS_PAGE
    if upto is not None:
        params.update(upto_epoch=upto[0], upto_tx_id=str(upto[1]), upto_position=upto[2])
        text = READ_FACTS_PAGE_UPTO
    # One round trip (a pipeline): walk the index, read the page, put the planner back (WALK_INDEX).
    with conn.pipeline():
        for statement in WALK_INDEX[:2]:
            conn.execute(statement)
        # In PostgreSQL's binary format: a hand_started's stored facts (≈ 3.7 KB, the table's whole
        # engine state) travel as their bytes; the text format doubles them into hex on the server
        # and libpq decodes the hex again here (≈ 13 % of a rebuild's instructions, by callgrind).
        cur = conn.execute(text, params, binary=True)
        conn.execute(WALK_INDEX[2])
    rows: list[FactRow] = cur.fetchall()
    return rows
