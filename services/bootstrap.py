"""The composition root: settings → database (embedded or DATABASE_URL) → migrations → pool →
engine → stores. Everything that connects happens here, when called, never at import time."""

from __future__ import annotations

from dataclasses import dataclass, field

from psycopg_pool import ConnectionPool

from services.engine_adapter import Engine, load_engine
from services.settings import Settings
from services.store.events import EventStore
from services.store.keys import KeyStore


@dataclass
class Container:
    settings: Settings
    database_url: str  # owner credentials (migrations); the pool runs as settings.db_role
    pool: ConnectionPool
    engine: Engine
    store: EventStore
    keys: KeyStore
    extras: dict[str, object] = field(default_factory=dict)  # room for projections and friends

    def close(self) -> None:
        self.pool.close()


def database_url(settings: Settings) -> str:
    """DATABASE_URL when set, else the embedded PostgreSQL under KWX_DATA_DIR (started if needed)."""
    if settings.database_url:
        return settings.database_url
    from services.db import embedded_url

    return embedded_url(settings.data_dir)


def bootstrap(settings: Settings | None = None, *, url: str | None = None, migrate: bool = True) -> Container:
    from services import logs
    from services.db import make_pool

    settings = settings or Settings.from_env()
    logs.configure(settings.log_level)
    url = url or database_url(settings)
    if migrate:
        from services import migrate as migrations

        migrations.upgrade(url, settings.db_role)
    pool = make_pool(url, size=settings.pool_size, role=settings.db_role)
    engine = load_engine()
    store = EventStore(pool, engine, snapshot_every=settings.snapshot_every)
    container = Container(settings, url, pool, engine, store, KeyStore(pool))
    # The app's lifespan runs the projector as a thread unless KWX_PROJECTOR=off; `kwx serve` with
    # KWX_PROJECTOR=on (the default) runs it as a child process instead and turns this off.
    container.extras["projector_background"] = settings.projector != "off"
    return container
