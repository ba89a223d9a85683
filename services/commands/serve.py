"""kwx serve [--host 127.0.0.1] [--port 8000] [--workers N]: the HTTP service (CONTRACT.md §4).

``--workers N`` (``KWX_WORKERS``, default one per core, but 1 with ``KWX_PROJECTOR=thread``): N > 1
runs N uvicorn worker processes (services/api/served.py) after this process has bootstrapped
(database, migrations, projector child); see docs/operations.md, Workers.

Faults (docs/faults.md, Process faults): a worker that dies is replaced by uvicorn's supervisor; a
worker that cannot start (its app's start-up failed: the database unreachable for its pool's 15 s)
stops the whole server with exit status 1 and a ``kwx: worker … could not start`` line, so that a
service manager restarts it. SIGTERM (or Ctrl-C) lets requests in flight finish for at most
``KWX_SHUTDOWN_GRACE`` seconds (default 10), then answers the rest 503 (an append is
one transaction: stored whole or not at all; services/api/served.guard) and exits 0.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from services.settings import Settings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--workers", type=_positive, default=None, metavar="N",
                        help="HTTP worker processes (default: KWX_WORKERS, else one per core)")  # fmt: skip


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected at least 1, got {value}")
    return value


def run(args: argparse.Namespace) -> int:
    from services.settings import Settings

    settings = Settings.from_env()  # a bad KWX_* value: SettingsError, named by services.cli (exit 2)
    if settings.metrics != "off":  # every worker and the projector child count (services/metrics.py)
        from services.metrics_dir import use_folder

        use_folder()
    import uvicorn

    from services.api.app import create_app
    from services.bootstrap import bootstrap

    grace = settings.shutdown_grace
    workers = args.workers or settings.serving_workers()
    if workers > 1 and settings.projector == "thread":
        print(f"kwx: KWX_PROJECTOR=thread runs the projector inside the serving process, and {workers} "
              "workers would run it once each: use KWX_PROJECTOR=on (a child process, the default) or "
              "off, or serve with --workers 1", file=sys.stderr)  # fmt: skip
        return 2
    from services.bootstrap import embedded_exists, where

    created = not settings.database_url and not embedded_exists(settings)
    container = bootstrap(settings)  # starts the embedded PostgreSQL if needed (creates it), migrates
    print(f"kwx: {'created ' if created else ''}database {where(settings, container.database_url)}, migrated")
    if settings.database_read_url:  # services/replica.py; docs/SCALING.md, A streaming read replica
        from services.db import describe

        wait = settings.read_replica_wait
        print(f"kwx: read replica {describe(settings.database_read_url)} (DATABASE_READ_URL): table reads "
              f"wait up to {wait:g} s for it (KWX_READ_REPLICA_WAIT), then the primary")  # fmt: skip
    from services import compiled_engine

    form = "compiled with mypyc" if compiled_engine.active() else "interpreted"
    print(f"kwx: rules engine: {container.engine.name} ({form})")
    print(f"kwx: listening on http://{args.host}:{args.port}  (health: /v1/health, docs: /docs)")
    print(f"kwx: pages: http://{args.host}:{args.port}/replay (support desk), /dashboard (statistics)")
    print("kwx: create a key with:  .venv/bin/kwx keys create --tenant NAME --role platform", flush=True)
    # uvicorn re-raises SIGTERM after its graceful shutdown; with Python's default handler the
    # process would die without running atexit, leaving the embedded PostgreSQL running.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
    child = None
    if settings.projector == "on":  # the projector in a process of its own (services/projector_process.py)
        container.projector_background = False  # no projector thread in this process
    if settings.projector == "on" and container.kept:
        from services.projector_process import ProjectorProcess

        child = ProjectorProcess(
            container.database_url, nice=settings.projector_nice, watchdog=settings.projector_watchdog
        )
        child.start()
    print(f"kwx: projector: {_projector_line(settings.projector, child, container.kept)}", flush=True)
    print(f"kwx: workers: {_workers_line(workers, settings.pool_size)}", flush=True)
    print(f"kwx: limits: {_limits_line(settings, workers)}", flush=True)
    scraped = container if workers == 1 else None  # (with N workers this process keeps no pool)
    print(f"kwx: metrics: {_metrics_line(settings, args.host, args.port, scraped)}", flush=True)
    try:
        if workers == 1:
            from services import heap
            from services.api.served import guard

            app = guard(create_app(settings, container))
            heap.settle()  # imports, the app, the pool: never traversed by the collector again
            uvicorn.run(app, host=args.host, port=args.port, access_log=False, log_level="warning",
                        timeout_graceful_shutdown=grace, http=_http_protocol(settings))  # fmt: skip
        else:
            # The workers join the database this process resolved (for the embedded server: its
            # socket; this process's handle keeps the server up until the workers are gone) and
            # neither migrate nor project (services/api/served.py). This process serves nothing:
            # its pool is closed, uvicorn supervises the workers.
            os.environ["DATABASE_URL"] = container.database_url
            os.environ["KWX_SERVE_PID"] = str(os.getpid())
            container.close()
            config = uvicorn.Config("services.api.served:create_served_app", factory=True, workers=workers,
                                    host=args.host, port=args.port, access_log=False, log_level="warning",
                                    timeout_graceful_shutdown=grace,
                                    http=_http_protocol(settings))  # fmt: skip
            failed = _supervise(config)
            if failed:
                pids = ", ".join(map(str, failed))
                print(f"kwx: worker {pids} could not start (see the log above); the server stops, "
                      "exit status 1, for a service manager to restart it", flush=True)  # fmt: skip
                return 1
    finally:
        if child is not None:
            child.stop()
        container.close()
    return 0


def _http_protocol(settings: Settings) -> Any:
    """uvicorn's httptools protocol with the headers' deadline, size and count
    (services/api/deadline.py), set from ``KWX_HEADER_TIMEOUT``, ``KWX_MAX_HEADER_BYTES`` and
    ``KWX_MAX_HEADERS`` here and, for ``--workers N``, again in each worker (served.py)."""
    from services.api.deadline import HeaderDeadline

    return HeaderDeadline.configure(settings.header_timeout, settings.max_header_bytes, settings.max_headers)


def _supervise(config: Any) -> list[int]:
    """uvicorn's multi-process supervisor (as ``uvicorn.run`` runs it): it replaces a worker that
    dies, and stops every worker when one fails to *start* (its app's start-up failed), which
    ``uvicorn.run`` does not tell apart from SIGTERM. The pids of the workers that failed to start
    (empty after a signal)."""
    import logging

    from uvicorn.config import STARTUP_FAILURE
    from uvicorn.supervisors import Multiprocess

    # Its lines about the workers' lives ("Child process [PID] died", at info) in this process's
    # log, for an operator (docs/faults.md, Process faults); its other info lines stay out.
    lives = logging.getLogger("uvicorn.error")
    lives.setLevel(logging.INFO)
    lives.addFilter(lambda line: line.levelno >= logging.WARNING or "Child process" in line.getMessage())
    supervisor = Multiprocess(config, sockets=[config.bind_socket()])
    with contextlib.suppress(KeyboardInterrupt):  # as uvicorn.run
        supervisor.run()
    return [p.pid for p in supervisor.processes if p.exitcode == STARTUP_FAILURE and p.pid is not None]


def _metrics_line(settings: Settings, host: str, port: int, container: Any) -> str:
    """Where /metrics is served (and, for ``KWX_METRICS=PORT``, that server started)."""
    if settings.metrics == "off":
        return "off (KWX_METRICS=off)"
    own = settings.metrics_port()
    if own is None:
        return f"http://{host}:{port}/metrics (every worker and the projector counted)"
    from services import metrics

    metrics.serve_port(
        own, host, getattr(container, "pool", None), getattr(container, "replica", None),
        getattr(container, "kept", None),
    )  # fmt: skip
    return f"http://{host}:{own}/metrics (a port of its own: KWX_METRICS={own})"


def _limits_line(settings: Settings, workers: int) -> str:
    """The edge's limits as an operator reads them (docs/faults.md, Limits)."""
    limits = (("key", settings.rate_limit_key), ("tenant", settings.rate_limit_tenant))
    rates = [f"{rate} per {scope}" for scope, rate in limits if rate]
    where = settings.rate_limit_storage.split("://", 1)[0]
    if rates and where == "memory" and workers > 1:
        where = f"memory, counted in each of the {workers} workers"
    rate = f"rate {', '.join(rates)} ({where})" if rates else "rate limits off"
    reads = settings.read_concurrency or settings.pool_size
    return (f"headers {settings.max_header_bytes} bytes / {settings.max_headers} lines; {rate}; reads "
            f"{reads} at once, {settings.read_queue} waiting for {settings.read_wait:g} s")  # fmt: skip


def _workers_line(workers: int, pool_size: int) -> str:
    if workers == 1:
        return f"1 (this process; pool of {pool_size} connections)"
    return f"{workers} processes (uvicorn workers; a pool of {pool_size} connections each)"


def _projector_line(mode: str, child: object, kept: tuple[str, ...]) -> str:
    from projections import registry

    models = "every read model" if kept == registry.NAMES else f"KWX_READ_MODELS: {', '.join(kept) or 'none'}"
    if not kept:
        return "none (KWX_READ_MODELS=none: no read model is kept; their routes answer 501)"
    if mode == "on":
        pid = getattr(getattr(child, "proc", None), "pid", "?")
        return f"child process {pid} (kwx projections follow, nice +{getattr(child, 'nice', 0)}; {models})"
    if mode == "thread":
        return f"a thread in this process (KWX_PROJECTOR=thread; {models})"
    return f"off (KWX_PROJECTOR=off: run `kwx projections follow` to keep the read models current; {models})"
