"""The ``kwx`` command line (CONTRACT.md §4).

Each subcommand lives in ``services/commands/<name>.py`` with two functions:
``add_arguments(parser)`` and ``run(args) -> int`` (the exit code). Every command module is imported
to build the parser, and each imports what it needs (the web stack, the database) inside ``run``,
so ``kwx score`` never imports the web stack.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys

# command -> (module under services.commands, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "serve": ("serve", "run the HTTP service (embedded PostgreSQL unless DATABASE_URL is set)"),
    "migrate": ("migrate", "apply the database migrations"),
    "keys": ("keys", "manage API keys: kwx keys create --tenant NAME --role ROLE / list / revoke KEY_ID"),
    "verify": ("verify", "check every table's hash chain; --file EXPORT checks an export offline"),
    "score": ("score", "score winning hands read as JSON lines"),
    "settle": ("settle", "settle a stream of events read as JSON lines"),
    "simulate": ("simulate", "write simulated, legal table streams"),
    "push": ("push", "send JSON-lines streams to a running kwx in batches, resuming where a table stands"),
    "projections": (
        "projections",
        "the read models: kwx projections rebuild [NAME] / status / retry (parked events) / follow",
    ),
    "openapi": ("openapi", "print the OpenAPI document of the service"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kwx", description="卡五星 game-record service")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command, (module_name, help_text) in COMMANDS.items():
        p = sub.add_parser(command, help=help_text, description=help_text)
        p.set_defaults(_module=module_name)
        module = _load(module_name)
        if module is not None:
            module.add_arguments(p)
    return parser


def _load(module_name: str):  # type: ignore[no-untyped-def]
    try:
        return importlib.import_module(f"services.commands.{module_name}")
    except ModuleNotFoundError as exc:
        if exc.name == f"services.commands.{module_name}":
            return None
        raise


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    module = _load(args._module)
    if module is None:
        print(f"kwx {args.command}: not available in this build", file=sys.stderr)
        return 2
    from services import logs
    from services.settings import SettingsError

    # `serve` and the projector's `follow` are services: their log is their output (stdout).
    # Every other command answers on stdout, so its log lines go to stderr.
    serves = args.command == "serve" or getattr(args, "action", None) == "follow"
    try:
        with contextlib.nullcontext() if serves else logs.on_stderr():
            code: int = module.run(args)
    except SettingsError as exc:  # a bad KWX_* variable: say which, no traceback
        print(f"kwx: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader went away (`kwx projections status --json | head -1`): stop quietly, as a
        # Unix filter does, and keep the interpreter's last flush of stdout from raising again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as exc:
        reason = _unreachable(exc)
        if reason is None:
            raise
        print(f"kwx: cannot connect to the database: {reason}", file=sys.stderr)
        return 1
    return code


def _unreachable(exc: BaseException) -> str | None:
    """The first line of the driver's message when ``exc`` says the database could not be reached or
    refused the connection (down, unknown host, bad credentials, no such database: at start,
    migrating, a CLI command), else None."""
    import psycopg

    cause: BaseException | None = exc
    for _ in range(5):  # SQLAlchemy (alembic's migrations) wraps the driver's error
        if cause is None:
            return None
        if isinstance(cause, psycopg.OperationalError):
            state = cause.sqlstate or ""
            if not state or state.startswith(("08", "28", "3D", "57P03")):
                return (str(cause).strip().splitlines() or ["connection failed"])[0]
            return None
        cause = getattr(cause, "orig", None) or cause.__cause__
    return None


if __name__ == "__main__":
    sys.exit(main())
