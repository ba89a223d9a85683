"""Run SQLAlchemy Core statements on a psycopg connection (the service has one pool and one
driver: psycopg_pool; statements are built with Core and compiled for the psycopg dialect)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import msgspec
import psycopg
from psycopg.types.json import Jsonb
from sqlalchemy import BigInteger, Date, DateTime, Integer, LargeBinary, Numeric, String, Table, Text
from sqlalchemy.dialects import postgresql as pg_dialects
from sqlalchemy.dialects.postgresql import JSON, JSONB
from sqlalchemy.sql import ClauseElement

from projections.arrays import text_array

_DIALECT = pg_dialects.psycopg.dialect()  # type: ignore[attr-defined]


def _adapt(value: Any) -> Any:
    return Jsonb(value) if isinstance(value, dict | list) else value


def compiled(stmt: ClauseElement, column_keys: Sequence[str] | None = None) -> tuple[str, dict[str, Any]]:
    c = stmt.compile(
        dialect=_DIALECT,
        column_keys=list(column_keys) if column_keys is not None else None,
        compile_kwargs={"render_postcompile": True},
    )
    return str(c), {k: _adapt(v) for k, v in c.params.items()}


def fetch(conn: psycopg.Connection[Any], stmt: ClauseElement) -> list[tuple[Any, ...]]:
    text, params = compiled(stmt)
    cur = conn.execute(text, params)  # type: ignore[arg-type]  # compiled SQL text
    return cur.fetchall() if cur.description else []


_TEXTS: dict[tuple[str, tuple[str, ...]], str] = {}


def execute_many(
    conn: psycopg.Connection[Any],
    stmt: ClauseElement | Callable[[], ClauseElement],
    rows: Sequence[dict[str, Any]],
    cache: str | None = None,
) -> None:
    """One statement for many rows (``INSERT … VALUES (%(col)s, …)`` executed as a batch).
    ``cache``: a name for the statement, to compile it once per process and column set; ``stmt``
    may then be a function that builds it, called only when the text is not cached yet (building a
    Core statement, e.g. an upsert's ``excluded`` columns, costs more than running it)."""
    if not rows:
        return
    keys = list(rows[0].keys())
    text = _TEXTS.get((cache, tuple(keys))) if cache is not None else None
    if text is None:
        text, _ = compiled(stmt if isinstance(stmt, ClauseElement) else stmt(), keys)
        if cache is not None:
            _TEXTS[(cache, tuple(keys))] = text
    with conn.cursor() as cur:
        cur.executemany(text, [{k: _adapt(r[k]) for k in keys} for r in rows])  # type: ignore[arg-type]


def _record_type(table: Table, key: str) -> tuple[str, str]:
    """(type in the record definition, SQL that turns ``r."key"`` into the column's value). A
    ``jsonb`` or ``json`` column is not in the record: it arrives as text, in an array of its own
    (:class:`MultiRowInsert`), and is cast."""
    t = table.c[key].type
    ref = f'r."{key}"'
    if isinstance(t, JSONB):
        return "jsonb", f"{ref}::jsonb"
    if isinstance(t, JSON):  # (JSONB is a JSON too: tested first)
        return "json", f"{ref}::json"
    if isinstance(t, Integer | BigInteger):
        return "int8", ref
    if isinstance(t, String | Text):
        return "text", ref
    if isinstance(t, Date):  # msgspec encodes a date as YYYY-MM-DD
        return "date", ref
    if isinstance(t, DateTime):  # and an aware datetime as RFC 3339
        return ("timestamptz" if t.timezone else "timestamp"), ref
    if isinstance(t, LargeBinary):  # msgspec encodes bytes as base64
        return "text", f"decode({ref}, 'base64')"
    if isinstance(t, Numeric):
        return "numeric", ref
    raise TypeError(f"{table.name}.{key}: no record type for {t!r}")


_json_encode = msgspec.json.encode


class MultiRowInsert:
    """``INSERT INTO table (cols) SELECT … FROM json_to_recordset(%s::json) AS r(col type, …)
    [tail]``: many rows in one statement — the rows' scalar columns encoded as one JSON array by
    msgspec — where ``executemany`` had psycopg adapt every value of every row in Python and
    PostgreSQL bind and execute the statement row by row.

    A ``jsonb`` column travels apart, as a text array in PostgreSQL's binary format (``%b::text[]``,
    one element per row: the value as msgspec encodes it, or NULL), zipped with the record set by
    ``ROWS FROM`` and cast to ``jsonb``. Inside the JSON array, such a value was parsed three times
    by the server — the array's ``json`` input, ``json_to_recordset`` walking it, and ``jsonb`` input
    of the field — and a settlement's or a feed entry's document was most of what the read models
    send (docs/projections.md §6, "What a read model's row costs"); apart, once. The stored
    ``jsonb`` is the same: it is the same text's ``jsonb``. A ``json`` column (the documents that are
    only stored and read back whole: migration 0017) the same way: its input only checks the text,
    which is stored as it came — msgspec's compact encoding, keys in the order written.

    Rows are dicts (keys beyond ``keys`` are ignored); values are what msgspec encodes: str, int,
    None (SQL NULL), dict/list/Struct for json/jsonb columns, bytes for bytea. They go in in the order
    given (``json_to_recordset`` yields the array in order, so a serial column numbers them in that
    order). ``tail``: e.g. an ``ON CONFLICT`` clause; a ``DO UPDATE`` must not meet the same key
    twice in one call (PostgreSQL refuses), a ``DO NOTHING`` keeps the first.

    ``computed``: more columns, each with the SQL expression of its value, which may use the row's
    columns (``r."key"``) and ``r.n``, the row's place in the call (1, 2, …).

    ``zeros``: integer columns a row may leave out when they are 0 (``coalesce(r."key", 0)``): a
    row of counters most of which a batch leaves at 0 (the player statistics' 28) sends only the
    others — a third of the JSON, and ``json_to_recordset`` hashes only the fields sent
    (docs/projections.md §6, "Counters sent sparse").

    ``prior``: values computed for every row *before the first row is inserted* (``r."name"`` in
    ``computed``), for a subquery that reads the table being written — e.g. a tenant's last number.
    In ``computed`` itself such a subquery runs as each row goes in, after a window's sort, so it
    meets the rows this statement has already inserted: in the index, not visible to it, each one
    fetched from the heap to be skipped — quadratic in the statement's rows (the feed's ``seq``:
    ≈ 36 heap fetches per row for batches of ≈ 70; docs/projections.md §6). Here they are columns of
    a subquery fenced by ``OFFSET 0``, which the window's sort reads to the end before it yields."""

    def __init__(
        self,
        table: Table,
        keys: Sequence[str],
        tail: str = "",
        computed: Mapping[str, str] | None = None,
        prior: Mapping[str, str] | None = None,
        zeros: Sequence[str] = (),
    ) -> None:
        self.table = table
        self.keys = tuple(keys)
        types = {k: _record_type(table, k) for k in self.keys}
        for k in zeros:
            if types[k][0] != "int8":
                raise TypeError(f"{table.name}.{k}: only an integer column is 0 when left out")
            types[k] = ("int8", f'coalesce(r."{k}", 0)')
        # json and jsonb columns apart (a text array each), every other column in the JSON record
        self.docs = tuple(k for k in self.keys if types[k][0] in ("json", "jsonb"))
        self.scalars = tuple(k for k in self.keys if k not in self.docs)
        record_type = msgspec.defstruct(f"{table.name}_record", [(str(k), Any, None) for k in self.scalars])
        self._records: Any = list[record_type]  # type: ignore[valid-type]
        extra = dict(computed or {})
        cols = ", ".join(f'"{k}"' for k in (*self.keys, *extra))
        record = ", ".join(f'"{k}" {types[k][0]}' for k in self.scalars)
        select = ", ".join([types[k][1] for k in self.keys] + list(extra.values()))
        if not self.docs and not extra:
            source = f"json_to_recordset(%s::json) AS r({record})"
        else:
            names = ", ".join(f'"{k}"' for k in (*self.scalars, *self.docs))
            arrays = "".join(", unnest(%b::text[])" for _ in self.docs)
            ordinality = " WITH ORDINALITY" if extra else ""
            source = (
                f"ROWS FROM (json_to_recordset(%s::json) AS ({record}){arrays}){ordinality} "
                f"AS r({names}{', n' if extra else ''})"
            )
        if prior:
            values = ", ".join(f'{sql} AS "{name}"' for name, sql in prior.items())
            source = f"(SELECT r.*, {values} FROM {source} OFFSET 0) AS r"
        self.text = f"INSERT INTO {table.name} ({cols}) SELECT {select} FROM {source}"
        if tail:
            self.text += " " + tail

    def execute(self, conn: psycopg.Connection[Any], rows: Sequence[Mapping[str, Any]]) -> None:
        if not rows:
            return
        if not self.docs:
            conn.execute(self.text, (_json_encode(rows).decode(),))
            return
        # the rows' scalar columns only, as msgspec's Structs of them (a key a row lacks is None:
        # NULL, as json_to_recordset makes a missing field) — a dict built per row in Python cost
        # ≈ 1.3 µs a row, the conversion ≈ 0.3
        params: list[Any] = [_json_encode(msgspec.convert(rows, self._records)).decode()]
        for k in self.docs:  # packed by kwx (projections.arrays): psycopg's list dumping is per element
            params.append(text_array([None if (d := r.get(k)) is None else _json_encode(d) for r in rows]))
        conn.execute(self.text, params)


Connection = psycopg.Connection[Any]


def last_number(conn: psycopg.Connection[Any], table: str, column: str, tenant: str) -> int:
    """The tenant's greatest ``column`` of ``table`` (0: none yet): one probe of an index on
    ``(tenant, column)``; on a Citus cluster, one per shard, merged by the coordinator. The
    projector numbers rows 1, 2, … per tenant from it (its batches run one at a time, under its
    lock)."""
    row = conn.execute(f"SELECT max({column}) FROM {table} WHERE tenant = %s", (tenant,)).fetchone()
    return int(row[0]) if row is not None and row[0] is not None else 0
