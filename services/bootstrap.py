"""The composition root: settings → database (embedded or DATABASE_URL) → migrations → pool →
engine → stores, and the lifecycles: the projector and its runner (a thread, started and stopped by
the app's lifespan: :meth:`Container.start_projector`, :meth:`Container.stop_projector`) and the
rate limits (built on first use). Everything that connects happens here, when called, never at
import time."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, TypeVar

from psycopg_pool import ConnectionPool

from services.engine_adapter import Engine, load_engine
from services.errors import NotKept
from services.settings import Settings, SettingsError
from services.store.events import EventStore
from services.store.keys import KeyStore

if TYPE_CHECKING:
    from projections.projector import Projector, ProjectorRunner
    from services.api.ratelimit import RateLimits
    from services.replica import Replica, Source

T = TypeVar("T")


@dataclass
class Container:
    settings: Settings
    database_url: str  # owner credentials (migrations); the pool runs as settings.db_role
    pool: ConnectionPool
    engine: Engine
    store: EventStore
    keys: KeyStore
    # Whether the app's lifespan runs the projector as a thread of this process: KWX_PROJECTOR=
    # thread (and `on` outside `kwx serve`); `kwx serve` with `on` runs it as a child process and
    # turns this off, as do `off` and a `--workers N` worker.
    projector_background: bool = True
    projector: Projector | None = None  # built by start_projector (or by a caller that sets it)
    projector_runner: ProjectorRunner | None = None  # while the thread runs
    replica: Replica | None = None  # DATABASE_READ_URL (services/replica.py); None: reads on the primary

    @cached_property
    def primary(self) -> Source:
        """The primary as a read source (services/replica.py)."""
        from services.replica import PRIMARY, Source

        return Source(PRIMARY, self.pool, self.store, self.engine)

    def table_read(self, tenant: str, table_id: str, version: int, read: Callable[[Source], T]) -> T:
        """``read(source)`` of a table that needs it up to ``version`` (its head on the primary):
        the replica when it holds that version, else the primary (services/replica.py)."""
        from services.replica import table_read

        return table_read(self.primary, self.replica, tenant, table_id, version, read)

    @cached_property
    def kept(self) -> tuple[str, ...]:
        """The read models this deployment keeps (``KWX_READ_MODELS``; :meth:`Settings.kept_models`)."""
        return self.settings.kept_models()

    def require_kept(self, models: Iterable[str]) -> None:
        """:class:`NotKept` (501) unless every one of ``models`` is kept here: its tables are not
        projected, so an answer from them would be silently old or empty."""
        for name in models:
            if name not in self.kept:
                kept_zh = "、".join(self.kept) or "无"
                raise NotKept(
                    f"this service does not keep the read model {name!r} (KWX_READ_MODELS: "
                    f"{', '.join(self.kept) or 'none'}); a table's own reads — events, state, "
                    "settlement, audit — answer from its events",
                    model=name, kept=list(self.kept),
                    message_zh=f"此服务未保留读取模型 {name}（KWX_READ_MODELS：{kept_zh}）；"
                    "牌桌自身的读取（事件、状态、结算、审计）由事件直接回答",
                )  # fmt: skip

    def model_read(self, models: Iterable[str], read: Callable[[Source], T]) -> T:
        """``read(source)`` of the read models named in ``models`` (501 when one is not kept here:
        :meth:`require_kept`): the replica when it is up, else the primary."""
        from services.replica import model_read

        self.require_kept(models)
        return model_read(self.primary, self.replica, read)

    @cached_property
    def rate_limits(self) -> RateLimits | None:
        """The rate limits of ``settings``, built on first use (None: off)."""
        from services.api.ratelimit import RateLimits

        return RateLimits.from_settings(self.settings)

    def start_projector(self) -> None:
        """Start the projector's thread (the app's lifespan, at startup) for the kept read models,
        unless ``projector_background`` is off, it runs already or no model is kept."""
        if not self.projector_background or self.projector_runner is not None or not self.kept:
            return
        from projections.projector import Projector, ProjectorRunner
        from services import metrics

        if self.projector is None:
            self.projector = Projector(self.pool, self.store, self.engine, names=self.kept)
        self.projector.on_batch = metrics.observe_projection
        self.projector_runner = ProjectorRunner(
            self.projector, self.database_url, gather_seconds=self.settings.projector_gather
        )
        self.projector_runner.start()

    def stop_projector(self) -> None:
        """Stop the projector's thread, if it runs (the app's lifespan, at shutdown)."""
        runner, self.projector_runner = self.projector_runner, None
        if runner is not None:
            runner.stop()

    def close(self) -> None:
        self.stop_projector()
        if self.replica is not None:
            self.replica.close()
        self.pool.close()


class NoDatabase(SettingsError):
    """No embedded database where KWX_DATA_DIR points, and the command may not create one."""


def embedded_exists(settings: Settings) -> bool:
    return (settings.data_dir.resolve() / "pg" / "PG_VERSION").is_file()


def database_url(settings: Settings, *, create: bool = True) -> str:
    """DATABASE_URL when set, else the embedded PostgreSQL under KWX_DATA_DIR (started if needed;
    created if missing only with ``create``: else :class:`NoDatabase`, which says what to do)."""
    if settings.database_url:
        return settings.database_url
    from services.db import embedded_url

    if not create and not embedded_exists(settings):
        raise NoDatabase(
            f"no kwx database in {settings.data_dir.resolve()} (KWX_DATA_DIR, default .kwx of the current "
            "folder): run this command from the folder where `kwx serve` / `make run` runs, or set "
            "KWX_DATA_DIR or DATABASE_URL; --init creates a new, empty database here"
        )
    return embedded_url(settings.data_dir)


def where(settings: Settings, url: str) -> str:
    """Which database a command uses, for a person: the embedded one's folder, or DATABASE_URL's
    host and database (never its password)."""
    from services.db import describe

    if settings.database_url:
        return f"{describe(url)} (DATABASE_URL)"
    return f"embedded PostgreSQL in {settings.data_dir.resolve() / 'pg'} ({describe(url)})"


def command_database(settings: Settings, command: str, *, init: bool = False) -> str:
    """The database URL for the CLI command ``command`` (keys, migrate, verify, projections): on
    stderr, which database it is; an embedded database is created only with ``init`` (``--init``),
    so a command run from another folder never builds a new, empty one silently. Said once the
    database answers: one that does not is the CLI's one-line ``cannot connect`` error alone."""
    import sys

    import psycopg

    created = not settings.database_url and not embedded_exists(settings)
    url = database_url(settings, create=init)
    psycopg.connect(url, connect_timeout=10).close()
    print(f"kwx {command}: {'created ' if created else ''}database {where(settings, url)}", file=sys.stderr)
    return url


def bootstrap(settings: Settings | None = None, *, url: str | None = None, migrate: bool = True) -> Container:
    from services import logs
    from services.db import make_pool

    settings = settings or Settings.from_env()
    logs.configure(settings.log_level)
    from services import tracing

    if tracing.wanted():  # before any pool connects: psycopg's instrumentation traces every connection
        tracing.setup()
    url = url or database_url(settings)
    if migrate:
        from services import migrate as migrations

        migrations.upgrade(url, settings.db_role)
    pool = make_pool(url, size=settings.pool_size, role=settings.db_role)
    engine = load_engine()
    store = EventStore(pool, engine, snapshot_every=settings.snapshot_every)
    replica = None
    if settings.database_read_url:  # never migrated: its schema streams from the primary
        from services.replica import Replica

        replica = Replica(settings.database_read_url, engine, size=settings.pool_size, role=settings.db_role,
                          wait=settings.read_replica_wait)  # fmt: skip
    # The app's lifespan runs the projector as a thread unless KWX_PROJECTOR=off; `kwx serve` with
    # KWX_PROJECTOR=on (the default) runs it as a child process instead and turns this off.
    return Container(
        settings, url, pool, engine, store, KeyStore(pool), projector_background=settings.projector != "off",
        replica=replica,
    )  # fmt: skip
