"""Floods of concurrent reads against a real ``kwx serve``, for the read-load test
(tests/service/test_read_load.py) and benchmark (tests/bench/bench_reads.py): the tables and keys
of two tenants, every read route, a flood of N requests at once on one route by tenant A while
tenant B reads its own table one request at a time. Loopback only; every request has a timeout."""

from __future__ import annotations

import asyncio
import statistics
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.service.streams import legal_table

TIMEOUT = 120.0  # seconds, per request: a generous bound, never reached by a healthy server


@dataclass
class Loaded:
    """What :func:`load_tables` wrote: tenant A's keys by role, its table and a player; B's."""

    keys: dict[str, dict[str, str]]
    table: str
    player: str
    other_key: dict[str, str]
    other_table: str


def load_tables(url: str) -> Loaded:
    """Tenant ``loada``'s table (two hands, ≈ 100 events), its read models, keys of every role;
    tenant ``loadb``'s own table and platform key."""
    from domain import engine
    from domain.events import convert
    from projections.projector import Projector
    from services.bootstrap import bootstrap
    from services.settings import Settings

    container = bootstrap(Settings(database_url=url, projector="off", log_level="warning"), url=url)
    try:
        wire = legal_table(5, 2)
        container.store.append("loada", "load-a", 0, [convert(e) for e in wire])
        container.store.append("loadb", "load-b", 0, [convert(e) for e in legal_table(6, 2)])
        Projector(container.pool, container.store, engine).catch_up()
        keys = {role: {"Authorization": f"Bearer {container.keys.create('loada', role)}"}
                for role in ("platform", "support", "dashboard")}  # fmt: skip
        other = {"Authorization": f"Bearer {container.keys.create('loadb', 'platform')}"}
        return Loaded(keys, "load-a", wire[0]["players"][0], other, "load-b")
    finally:
        container.close()


def routes(loaded: Loaded) -> dict[str, tuple[str, dict[str, str]]]:
    """Every read route: name → (path, headers)."""
    t, k = f"/v1/tables/{loaded.table}", loaded.keys
    return {
        "state": (f"{t}/state", k["platform"]),
        "settlement": (f"{t}/hands/1/settlement", k["platform"]),
        "audit": (f"{t}/audit", k["support"]),
        "events": (f"{t}/events?limit=1000", k["platform"]),
        "stats": (f"/v1/players/{loaded.player}/stats", k["dashboard"]),
        "ledger": (f"/v1/players/{loaded.player}/ledger", k["dashboard"]),
        "leaderboard": ("/v1/leaderboard", k["dashboard"]),
        "discrepancies": ("/v1/discrepancies", k["support"]),
        "health": ("/v1/health", {}),
    }


@dataclass
class Answer:
    status: int | str  # the HTTP status, or the client error's name (no answer)
    retry_after: str | None
    seconds: float


@dataclass
class Flood:
    answers: list[Answer]
    other: list[Answer] = field(default_factory=list)  # tenant B's reads meanwhile

    def counts(self) -> dict[str, int]:
        out = {"200": 0, "503": 0, "other": 0}
        for a in self.answers:
            key = str(a.status) if a.status in (200, 503) else "other"
            out[key] += 1
        return out


def p(values: list[float], q: float) -> float:
    """The q-quantile (0..1) of ``values``, nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))] if ordered else float("nan")


async def _many(base: str, requests: list[tuple[str, dict[str, str]]]) -> list[Answer]:
    """Every request on a connection of its own, all connected first, then all sent at once: a
    lean client (raw HTTP/1.1 on asyncio streams), so the flood reaches the server together."""
    host, port = base.removeprefix("http://").split(":")

    async def connect() -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | str:
        try:
            return await asyncio.wait_for(asyncio.open_connection(host, int(port)), TIMEOUT)
        except (OSError, TimeoutError) as exc:
            return type(exc).__name__

    async def one(conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | str, raw: bytes) -> Answer:
        started = time.perf_counter()
        if isinstance(conn, str):
            return Answer(conn, None, 0.0)
        reader, writer = conn
        try:
            writer.write(raw)
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), TIMEOUT)
            lines = head.decode("latin-1").split("\r\n")
            headers = {k.lower(): v for k, _, v in (line.partition(": ") for line in lines[1:] if line)}
            await asyncio.wait_for(reader.readexactly(int(headers.get("content-length", "0"))), TIMEOUT)
            return Answer(int(lines[0].split()[1]), headers.get("retry-after"), time.perf_counter() - started)
        except (OSError, TimeoutError, asyncio.IncompleteReadError, ValueError) as exc:
            return Answer(type(exc).__name__, None, time.perf_counter() - started)
        finally:
            writer.close()

    raws = [
        (f"GET {path} HTTP/1.1\r\nHost: kwx\r\nConnection: close\r\n"
         + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n").encode()
        for path, headers in requests
    ]  # fmt: skip
    conns = await asyncio.gather(*(connect() for _ in raws))
    return await asyncio.gather(*(one(c, r) for c, r in zip(conns, raws, strict=True)))


def sequential(base: str, path: str, headers: dict[str, str], n: int) -> list[Answer]:
    """``n`` requests one after the other on one keep-alive connection."""
    out = []
    with httpx.Client(base_url=base, timeout=TIMEOUT) as client:
        for _ in range(n):
            started = time.perf_counter()
            r = client.get(path, headers=headers)
            out.append(Answer(r.status_code, r.headers.get("retry-after"), time.perf_counter() - started))
    return out


def flood(
    base: str, path: str, headers: dict[str, str], n: int, other: tuple[str, dict[str, str]] | None = None
) -> Flood:
    """``n`` concurrent GETs of ``path``; meanwhile (``other``) another tenant's reads, one at a
    time, until the flood is over (at most 2,000 of them)."""
    done = threading.Event()
    seen: list[Answer] = []

    def probe() -> None:
        assert other is not None
        with httpx.Client(base_url=base, timeout=TIMEOUT) as client:
            for _ in range(2000):
                if done.is_set():
                    return
                started = time.perf_counter()
                try:
                    r = client.get(other[0], headers=other[1])
                    retry = r.headers.get("retry-after")
                    seen.append(Answer(r.status_code, retry, time.perf_counter() - started))
                except httpx.HTTPError as exc:
                    seen.append(Answer(type(exc).__name__, None, time.perf_counter() - started))

    prober = threading.Thread(target=probe, daemon=True) if other is not None else None
    if prober is not None:
        prober.start()
    try:
        answers = asyncio.run(_many(base, [(path, headers)] * n))
    finally:
        done.set()
        if prober is not None:
            prober.join(TIMEOUT + 10)
    return Flood(answers, seen)


def summary(values: list[Answer]) -> dict[str, Any]:
    ms = [a.seconds * 1000 for a in values]
    return {"n": len(ms), "p50": statistics.median(ms) if ms else float("nan"), "p99": p(ms, 0.99)}
