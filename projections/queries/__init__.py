"""The read side of the checkpointed read models: what each one answers, as queries.

A :class:`Query` is one question to a read model with its parameters bound (the tenant always
among them: nothing here reads across tenants but the log-wide freshness); called on a connection,
it runs its SQL and answers plain data that a route encodes as it is (or None: not found). The
service runs it with its one retry after a lost connection (``services.db.reading(pool, query)``);
a test or the CLI calls it on a connection of its own. The writers stay in ``projections/<model>.py``
(a pure event → rows function and a write); the queries of a model are here, under its name:

* :mod:`.player_stats` — a player's statistics, the leaderboard (``player_stats``)
* :mod:`.ledger` — an account's page of entries (``ledger``)
* :mod:`.discrepancies` — the tenant's feed and whether it is caught up (``discrepancies``)
* :mod:`.freshness` — how far every model is behind the log: health, ``kwx projections status``

Not here: the on-demand queries, computed from a table's stored events when asked and never
checkpointed — ``projections.views`` (who sees what), ``projections.replay`` (state at N, from a
snapshot), ``projections.audit``. (The eventsourcing library keeps a view's queries with its tracking
records the same way; cosmicpython's ``views.py`` reads straight from the read tables.)
"""

from __future__ import annotations

from typing import ClassVar, Protocol, TypeVar

from projections.sql import Connection

T_co = TypeVar("T_co", covariant=True)


class Query(Protocol[T_co]):
    """One question to the read models named in ``models`` (their checkpoint names), parameters
    bound; ``query(conn)`` answers it on that connection (a few statements, reads only)."""

    models: ClassVar[tuple[str, ...]]

    def __call__(self, conn: Connection) -> T_co: ...


__all__ = ["Query"]
