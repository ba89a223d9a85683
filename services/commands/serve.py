"""kwx serve [--host 127.0.0.1] [--port 8000]: the HTTP service (CONTRACT.md §4)."""

from __future__ import annotations

import argparse
import signal
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from services.api.app import create_app
    from services.bootstrap import bootstrap
    from services.db import describe
    from services.settings import Settings

    settings = Settings.from_env()
    container = bootstrap(settings)  # starts the embedded PostgreSQL if needed, migrates
    where = "DATABASE_URL" if settings.database_url else f"embedded, data in {settings.data_dir.resolve()}"
    print(f"kwx: database {describe(container.database_url)} ({where}), migrated")
    print(f"kwx: rules engine: {container.engine.name}")
    print(f"kwx: listening on http://{args.host}:{args.port}  (health: /v1/health, docs: /docs)")
    print("kwx: create a key with:  .venv/bin/kwx keys create --tenant NAME --role platform", flush=True)
    # uvicorn re-raises SIGTERM after its graceful shutdown; with Python's default handler the
    # process would die without running atexit, leaving the embedded PostgreSQL running.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
    child = None
    if settings.projector == "on":  # the projector in a process of its own (services/projector_process.py)
        from services.projector_process import ProjectorProcess

        container.extras["projector_background"] = False  # no projector thread in this process
        child = ProjectorProcess(container.database_url, nice=settings.projector_nice)
        child.start()
    print(f"kwx: projector: {_projector_line(settings.projector, child)}", flush=True)
    try:
        uvicorn.run(create_app(settings, container), host=args.host, port=args.port, access_log=False,
                    log_level="warning")  # fmt: skip
    finally:
        if child is not None:
            child.stop()
        container.close()
    return 0


def _projector_line(mode: str, child: object) -> str:
    if mode == "on":
        pid = getattr(getattr(child, "proc", None), "pid", "?")
        return f"child process {pid} (kwx projections follow, nice +{getattr(child, 'nice', 0)})"
    if mode == "thread":
        return "a thread in this process (KWX_PROJECTOR=thread)"
    return "off (KWX_PROJECTOR=off: run `kwx projections follow` to keep the read models current)"
