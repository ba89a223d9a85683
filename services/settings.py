"""Settings, read from the environment once, by the composition root (never at import time).

| variable | default | meaning |
|---|---|---|
| ``DATABASE_URL`` | unset | PostgreSQL ≥ 15 (owner credentials: migrations run with them); unset → embedded |
| ``DATABASE_READ_URL`` | unset | a streaming replica for reads (docs/SCALING.md); unset: all on the primary |
| ``KWX_READ_REPLICA_WAIT`` | ``0.5`` | seconds a table read waits for the replica (then the primary) |
| ``KWX_DATA_DIR`` | ``.kwx`` | where the embedded PostgreSQL keeps its data |
| ``KWX_DB_ROLE`` | ``kwx_app`` | role the pool ``SET ROLE``s to (INSERT/SELECT only on events) |
| ``KWX_POOL_SIZE`` | ``4`` | psycopg_pool max size *per process* (2 cores → 4 connections keep them busy) |
| ``KWX_WORKERS`` | cores | ``kwx serve`` HTTP workers (``--workers`` overrides; 1 with projector thread) |
| ``KWX_MAX_BODY_BYTES`` | ``1048576`` | largest request body (413 beyond) |
| ``KWX_BODY_TIMEOUT`` | ``30`` | seconds an append's body may take to arrive (408 beyond) |
| ``KWX_HEADER_TIMEOUT`` | ``10`` | seconds a request's headers may take (408 beyond) |
| ``KWX_MAX_HEADER_BYTES`` | ``16384`` | largest request line + headers (431 beyond, connection closed) |
| ``KWX_MAX_HEADERS`` | ``100`` | most header lines in a request (431 beyond) |
| ``KWX_RATE_LIMIT_KEY`` | ``1000/second`` | requests per API key (429; ``off``: none); ``limits``' notation |
| ``KWX_RATE_LIMIT_TENANT`` | ``2000/second`` | requests per tenant, all its keys together (429; ``off``) |
| ``KWX_RATE_LIMIT_STORAGE`` | ``memory://`` | where counts live: per process; ``redis://…``: shared |
| ``KWX_READ_CONCURRENCY`` | pool size | reads a process runs at once (the others queue, fair by tenant) |
| ``KWX_READ_QUEUE`` | ``256`` | read requests a process lets wait (503 beyond) |
| ``KWX_READ_WAIT`` | ``2`` | seconds a read may wait for its turn (then 503 with Retry-After) |
| ``KWX_MAX_BATCH`` | ``1000`` | most events in one append (413 beyond) |
| ``KWX_SNAPSHOT_EVERY`` | ``50`` | write the table's state snapshot when it is this many events old |
| ``KWX_LOG_LEVEL`` | ``info`` | structlog level |
| ``KWX_PROJECTOR`` | ``on`` | ``on``: child process of ``kwx serve``; ``thread``: in-process; ``off``: none |
| ``KWX_PROJECTOR_NICE`` | ``10`` | the child projector's ``nice`` increment (0: the server's priority) |
| ``KWX_SHUTDOWN_GRACE`` | ``10`` | whole seconds ``kwx serve`` lets requests finish after SIGTERM |
| ``KWX_PROJECTOR_WATCHDOG`` | ``120`` | seconds a silent projector child lives (then restarted; 0: never) |
| ``KWX_READ_MODELS`` | ``all`` | read models kept: ``all``, ``none`` or names (``ledger,feed``); others 501 |
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


def available_cores() -> int:
    """The CPUs this process may run on (its affinity mask, else the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True, slots=True)
class Settings:
    database_url: str | None = None
    database_read_url: str | None = None  # a streaming replica for reads (services/replica.py)
    read_replica_wait: float = 0.5
    data_dir: Path = Path(".kwx")
    db_role: str = "kwx_app"
    pool_size: int = 4
    max_body_bytes: int = 1 << 20
    body_timeout: float = 30.0
    header_timeout: float = 10.0  # a request's headers, and a new connection's first bytes
    max_header_bytes: int = 16 * 1024  # request line + headers (services/api/deadline.py)
    max_headers: int = 100
    rate_limit_key: str = "1000/second"  # `limits` notation; "" (KWX_RATE_LIMIT_KEY=off): none
    rate_limit_tenant: str = "2000/second"
    rate_limit_storage: str = "memory://"
    read_concurrency: int | None = None  # None: the pool size (services/api/gate.py)
    read_queue: int = 256
    read_wait: float = 2.0
    max_batch: int = 1000
    snapshot_every: int = 50
    log_level: str = "info"
    projector: str = "on"  # "on" (child process of kwx serve) | "thread" | "off"
    projector_nice: int = 10
    projector_watchdog: float = 120.0
    projector_gather: float = 0.5  # seconds the projector may gather appends that keep coming
    shutdown_grace: int = 10  # after SIGTERM: how long requests in flight may take (a slow upload …)
    workers: int | None = None  # `kwx serve` uvicorn workers; None: serving_workers() decides
    ready_max_lag: float = 60.0  # /v1/health/ready: not ready while the read models lag more (seconds)
    metrics: str = "on"  # GET /metrics on the service's port; "off"; or a port number of its own
    read_models: str = "all"  # the read models kept live: "all", or names (kept_models())
    # origins whose pages may read the API from a browser (CORS: GET and HEAD only); () none
    cors_origins: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.database_read_url is not None:
            check_read_url(self.database_read_url)
        if not 0 <= self.read_replica_wait <= 60:  # (NaN too)
            raise ValueError(f"KWX_READ_REPLICA_WAIT={self.read_replica_wait}: expected seconds, 0 to 60")
        if self.workers is not None and self.workers < 1:
            raise ValueError(f"KWX_WORKERS={self.workers}: expected at least 1")
        if not self.body_timeout > 0:  # (NaN too)
            raise ValueError(f"KWX_BODY_TIMEOUT={self.body_timeout}: expected seconds, more than 0")
        if not self.header_timeout > 0:  # (NaN too)
            raise ValueError(f"KWX_HEADER_TIMEOUT={self.header_timeout}: expected seconds, more than 0")
        if self.max_header_bytes < 1024:
            raise ValueError(f"KWX_MAX_HEADER_BYTES={self.max_header_bytes}: expected bytes, at least 1024")
        if self.max_headers < 8:
            raise ValueError(f"KWX_MAX_HEADERS={self.max_headers}: expected a count, at least 8")
        for name, value in (("KWX_RATE_LIMIT_KEY", self.rate_limit_key),
                            ("KWX_RATE_LIMIT_TENANT", self.rate_limit_tenant)):  # fmt: skip
            _check_rate(name, value)
        if not self.rate_limit_storage.partition("://")[1]:
            raise ValueError(
                f"KWX_RATE_LIMIT_STORAGE={self.rate_limit_storage!r}: expected memory:// or redis://HOST:PORT"
            )
        if self.read_concurrency is not None and self.read_concurrency < 1:
            raise ValueError(f"KWX_READ_CONCURRENCY={self.read_concurrency}: expected at least 1")
        if self.read_queue < 0:
            raise ValueError(f"KWX_READ_QUEUE={self.read_queue}: expected a count, 0 or more")
        if not self.read_wait > 0:  # (NaN too)
            raise ValueError(f"KWX_READ_WAIT={self.read_wait}: expected seconds, more than 0")
        if self.shutdown_grace < 1:
            raise ValueError(f"KWX_SHUTDOWN_GRACE={self.shutdown_grace}: expected whole seconds, at least 1")
        if not self.projector_watchdog >= 0:  # (NaN too)
            raise ValueError(f"KWX_PROJECTOR_WATCHDOG={self.projector_watchdog}: expected seconds, 0 or more")
        if not 0 <= self.projector_gather <= 10:  # (NaN too)
            raise ValueError(f"KWX_PROJECTOR_GATHER={self.projector_gather}: expected seconds, 0 to 10")
        port = self.metrics.isdigit() and 0 < int(self.metrics) < 65536
        if self.metrics not in ("on", "off") and not port:
            raise ValueError(f"KWX_METRICS={self.metrics!r}: expected on, off or a port number")
        if not self.ready_max_lag > 0:  # (NaN too)
            raise ValueError(f"KWX_READY_MAX_LAG={self.ready_max_lag}: expected seconds, more than 0")
        self.kept_models()  # (a name it does not know: a ValueError naming it)
        for origin in self.cors_origins:
            _check_origin(origin)

    def kept_models(self) -> tuple[str, ...]:
        """``KWX_READ_MODELS``: the read models this deployment keeps — the ones its projector
        (child, thread or ``kwx projections follow``) projects, its health and metrics watch and its
        API answers from; a route of another answers 501 ``not_kept``. In the registry's order."""
        return read_models(self.read_models)

    def metrics_port(self) -> int | None:
        """The port of a metrics server of its own (``KWX_METRICS=PORT``), else None."""
        return int(self.metrics) if self.metrics.isdigit() else None

    def serving_workers(self) -> int:
        """``KWX_WORKERS`` if set, else one worker per core (ingest is CPU-bound and one interpreter
        runs Python on one core at a time; docs/operations.md, Workers) — but one with
        ``KWX_PROJECTOR=thread``, whose projector lives inside the one serving process."""
        if self.workers is not None:
            return self.workers
        return 1 if self.projector == "thread" else available_cores()

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """The settings from ``env`` (os.environ); a value that can't be read is a
        :class:`SettingsError` naming the variable."""
        env = os.environ if env is None else env
        try:
            return cls._from_env(env)
        except SettingsError:
            raise
        except ValueError as exc:
            raise SettingsError(_named(str(exc), env)) from None

    @classmethod
    def _from_env(cls, env: Mapping[str, str]) -> Settings:
        return cls(
            database_url=env.get("DATABASE_URL") or None,
            database_read_url=env.get("DATABASE_READ_URL") or None,
            read_replica_wait=float(env.get("KWX_READ_REPLICA_WAIT") or 0.5),
            data_dir=Path(env.get("KWX_DATA_DIR") or ".kwx"),
            db_role=env.get("KWX_DB_ROLE") or "kwx_app",
            pool_size=int(env.get("KWX_POOL_SIZE") or 4),
            max_body_bytes=int(env.get("KWX_MAX_BODY_BYTES") or (1 << 20)),
            body_timeout=float(env.get("KWX_BODY_TIMEOUT") or 30),
            header_timeout=float(env.get("KWX_HEADER_TIMEOUT") or 10),
            max_header_bytes=int(env.get("KWX_MAX_HEADER_BYTES") or 16 * 1024),
            max_headers=int(env.get("KWX_MAX_HEADERS") or 100),
            rate_limit_key=_rate(env.get("KWX_RATE_LIMIT_KEY"), "1000/second"),
            rate_limit_tenant=_rate(env.get("KWX_RATE_LIMIT_TENANT"), "2000/second"),
            rate_limit_storage=env.get("KWX_RATE_LIMIT_STORAGE") or "memory://",
            read_concurrency=int(env["KWX_READ_CONCURRENCY"]) if env.get("KWX_READ_CONCURRENCY") else None,
            read_queue=int(env.get("KWX_READ_QUEUE") or 256),
            read_wait=float(env.get("KWX_READ_WAIT") or 2),
            max_batch=int(env.get("KWX_MAX_BATCH") or 1000),
            snapshot_every=int(env.get("KWX_SNAPSHOT_EVERY") or 50),
            log_level=(env.get("KWX_LOG_LEVEL") or "info").lower(),
            projector=projector_mode(env.get("KWX_PROJECTOR") or "on"),
            projector_nice=int(env.get("KWX_PROJECTOR_NICE") or 10),
            projector_watchdog=float(env.get("KWX_PROJECTOR_WATCHDOG") or 120),
            projector_gather=float(env.get("KWX_PROJECTOR_GATHER") or 0.5),
            shutdown_grace=_whole_seconds("KWX_SHUTDOWN_GRACE", env.get("KWX_SHUTDOWN_GRACE") or "10"),
            workers=int(env["KWX_WORKERS"]) if env.get("KWX_WORKERS") else None,
            ready_max_lag=float(env.get("KWX_READY_MAX_LAG") or 60),
            metrics=(env.get("KWX_METRICS") or "on").strip().lower(),
            read_models=(env.get("KWX_READ_MODELS") or "all").strip(),
            cors_origins=_origins(env.get("KWX_CORS_ORIGINS")),
        )


def check_read_url(url: str) -> None:
    """``DATABASE_READ_URL``: a ``postgresql://`` URL libpq can read (a mistyped one is a settings
    error at startup, not a replica that is "down" for good). The message never repeats the URL:
    it may carry a password."""
    from urllib.parse import urlsplit

    scheme = url.partition("://")[0] if "://" in url else ""
    if scheme not in ("postgresql", "postgres"):
        raise SettingsError(
            "DATABASE_READ_URL: expected a PostgreSQL URL, postgresql://USER@HOST:PORT/DATABASE "
            f"(got {'a ' + scheme + ':// URL' if scheme else 'no postgresql:// scheme'})"
        )
    try:
        port = urlsplit(url).port
    except ValueError as exc:
        raise SettingsError(f"DATABASE_READ_URL: not a valid URL ({exc})") from None
    if port == 0:
        raise SettingsError("DATABASE_READ_URL: port 0 is not a port")
    from psycopg.conninfo import conninfo_to_dict

    try:
        conninfo_to_dict(url)
    except Exception as exc:
        lines = str(exc).replace(url, "the URL").splitlines()
        first = lines[0] if lines else type(exc).__name__
        raise SettingsError(f"DATABASE_READ_URL: libpq cannot read it ({first[:120]})") from None


def _origins(text: str | None) -> tuple[str, ...]:
    """``KWX_CORS_ORIGINS``: origins separated by commas; unset or empty: none."""
    return tuple(origin for origin in (part.strip() for part in (text or "").split(",")) if origin)


def _check_origin(origin: str) -> None:
    """One ``KWX_CORS_ORIGINS`` entry: an origin as a browser sends it (``https://dash.example.com``,
    a port if not the scheme's), not ``*``: a key is a bearer secret, so the pages allowed to hold one
    are named one by one."""
    from urllib.parse import urlsplit

    expected = "expected origins as a browser sends them, https://HOST[:PORT], separated by commas"
    if origin == "*":
        raise ValueError(f"KWX_CORS_ORIGINS: {origin!r} is not allowed: name each origin ({expected})")
    try:
        parts = urlsplit(origin)
        parts.port  # noqa: B018 (a port out of range raises)
    except ValueError:
        raise ValueError(f"KWX_CORS_ORIGINS: {origin!r}: {expected}") from None
    bare = f"{parts.scheme}://{parts.netloc}"
    if (
        parts.scheme not in ("http", "https")
        or not parts.hostname
        or origin != bare
        or "@" in parts.netloc
        or origin != origin.lower()  # a browser sends the host in lower case; the match is exact
    ):
        raise ValueError(f"KWX_CORS_ORIGINS: {origin!r}: {expected}")


def _rate(text: str | None, default: str) -> str:
    """A ``KWX_RATE_LIMIT_*`` value: unset → ``default``; ``off`` (0, none, false, no) → ``""``."""
    if text is None or not text.strip():
        return default
    return "" if text.strip().lower() in ("off", "0", "none", "false", "no") else text.strip()


def _check_rate(name: str, value: str) -> None:
    """``value`` in the ``limits`` library's notation (``100/second``, ``10 per 1 second;
    6000/minute``), or ``""`` (off)."""
    if not value:
        return
    from limits import parse_many

    try:
        parse_many(value)
    except ValueError:
        raise ValueError(f"{name}={value!r}: expected a rate such as 100/second (several: "
                         "100/second;3000/minute), or off") from None  # fmt: skip


def _whole_seconds(name: str, text: str) -> int:
    if not text.strip().lstrip("-").isdigit():
        raise SettingsError(f"{name}={text!r}: expected whole seconds, at least 1")
    return int(text)


class SettingsError(ValueError):
    """An environment variable kwx can't read; the message names it (``kwx`` prints it, exit 2)."""


def _named(message: str, env: Mapping[str, str]) -> str:
    """``message`` naming the variable: a conversion error only quotes the value."""
    if message.startswith("KWX_"):
        return message
    for name in sorted(k for k in env if k.startswith("KWX_")):
        if repr(env[name]) in message or f"'{env[name]}'" in message:
            return f"{name}={env[name]!r}: {message}"
    return message


def read_models(value: str) -> tuple[str, ...]:
    """``KWX_READ_MODELS`` → the kept read models' names, in the registry's order: ``all`` (every
    one), ``none``, or names separated by commas or spaces (``ledger,feed``)."""
    from projections import registry

    text = value.strip().lower()
    if text == "all":
        return registry.NAMES
    names = {n for n in text.replace(",", " ").split()} - {"none"}
    unknown = sorted(names - set(registry.NAMES))
    if unknown or not (names or text == "none"):
        what = f"unknown read model {', '.join(unknown)}" if unknown else "empty"
        raise ValueError(
            f"KWX_READ_MODELS={value!r}: {what}; expected all, none, or some of {', '.join(registry.NAMES)}"
        )
    return tuple(n for n in registry.NAMES if n in names)


def projector_mode(value: str) -> str:
    """``KWX_PROJECTOR`` → ``"on"`` | ``"thread"`` | ``"off"`` (1/true/yes and 0/false/no accepted)."""
    mode = value.strip().lower()
    if mode in ("on", "1", "true", "yes", "process"):
        return "on"
    if mode in ("off", "0", "false", "no"):
        return "off"
    if mode == "thread":
        return "thread"
    raise ValueError(f"KWX_PROJECTOR={value!r}: expected on, thread or off")
