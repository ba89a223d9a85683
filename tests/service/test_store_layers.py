"""The service layer's seams (issue 12; docs/ARCHITECTURE.md): the one lost-connection retry
(``services.db.RetryIfLost``) that the store's append, the HTTP append and every read share, the one
stored event → wire item function behind the events page and its NDJSON export, and the append's
strategies in order."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import msgspec
import psycopg
import pytest
from psycopg import errors as pg_errors
from psycopg_pool import PoolTimeout

from domain.events import convert
from services.db import RetryIfLost
from tests.service.streams import legal_table


def _twice(first: Callable[[], str], *, before: list[BaseException]) -> tuple[str, list[str]]:
    """The helper's use as the store writes it: a first try, and a second one only when it is lost."""
    tries: list[str] = []
    with RetryIfLost(before.append):
        tries.append("first")
        return first(), tries
    tries.append("again")
    return "again", tries


def _raise(exc: BaseException) -> Callable[[], str]:
    def fail() -> str:
        raise exc

    return fail


def test_a_lost_connection_is_tried_once_more_after_the_hook_and_nothing_else_is() -> None:
    before: list[BaseException] = []
    assert _twice(lambda: "ok", before=before) == ("ok", ["first"]) and before == []
    lost = psycopg.OperationalError("server closed the connection unexpectedly")  # no SQLSTATE: lost
    assert _twice(_raise(lost), before=before) == ("again", ["first", "again"]) and before == [lost]
    for not_lost in (
        pg_errors.QueryCanceled("canceling statement due to statement timeout"),  # a working connection
        PoolTimeout("no free connection"),  # retrying it would double the wait
        ValueError("not the database"),
    ):
        with pytest.raises(type(not_lost)):
            _twice(_raise(not_lost), before=before)
    assert before == [lost]  # the hook ran for the lost connection only


def test_the_helper_serves_an_awaited_first_try_too() -> None:
    """The HTTP append's first try is awaited (services.store.fast.AsyncFastPath)."""
    seen: list[BaseException] = []

    async def lost_then_retried() -> str:
        retry = RetryIfLost(seen.append)
        with retry:
            await asyncio.sleep(0)
            raise psycopg.OperationalError("terminating connection due to administrator command")
        return "retried" if retry.lost is not None else "not retried"

    assert asyncio.run(lost_then_retried()) == "retried" and len(seen) == 1


@pytest.mark.db
def test_the_events_page_and_its_ndjson_export_show_each_event_alike(
    client: Any, platform: dict[str, str], table_id: str
) -> None:
    """One stored event → wire item function (services.store.reads.wire): a line of the export is
    exactly the page's item, ruling and raw body included."""
    wire = legal_table(45)
    body = json.dumps({"events": wire, "expected_version": 0})
    assert client.post(f"/v1/tables/{table_id}/events", content=body, headers=platform).status_code == 201
    page = client.get(f"/v1/tables/{table_id}/events", headers=platform, params={"limit": 1000}).json()
    export = client.get(
        f"/v1/tables/{table_id}/events", headers={**platform, "Accept": "application/x-ndjson"}
    )
    lines = [msgspec.json.decode(line) for line in export.content.splitlines()]
    assert len(lines) == len(wire) and lines == page["events"]
    assert [x["event"]["id"] for x in lines] == [e["id"] for e in wire]


@pytest.mark.db
def test_append_tries_the_cache_then_the_head_then_the_lock(
    container: Any, tenant: str, table_id: str
) -> None:
    """``EventStore.append``'s strategies in order: the cached tip (fast), the head as stored on a
    cache miss (fast), the locking path when the batch is the problem (a re-send, a stale expected
    version)."""
    from services.errors import VersionConflict
    from services.store.events import EventStore

    store = EventStore(container.pool, container.engine)
    events = [convert(e) for e in legal_table(46)]
    counts = lambda: (store.fast_appends, store.locked_appends)  # noqa: E731 - a one-line reading
    store.append(tenant, table_id, 0, events[:5])  # new table: the cache's guess, one statement
    assert counts() == (1, 0)
    store.append(tenant, table_id, 5, events[5:8])  # the cached tip
    assert counts() == (2, 0)
    store.cache.clear()
    store.append(tenant, table_id, 8, events[8:11])  # a cache miss: the head at 8, read without a lock
    assert counts() == (3, 0)
    again = store.append(tenant, table_id, 5, events[5:8])  # a re-send: the lock recognises it
    assert (again.replayed, again.first_version, again.version) == (True, 6, 8) and counts() == (3, 1)
    with pytest.raises(VersionConflict):
        store.append(tenant, table_id, 5, events[11:12])  # stale: only the lock can say so
    assert counts() == (3, 1)  # refused: no transaction went through
    assert store.head(tenant, table_id).version == 11  # type: ignore[union-attr]
