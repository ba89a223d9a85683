"""kwx migrate: apply the Alembic migrations (DATABASE_URL, else the embedded PostgreSQL)."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--revision", default="head", help="target revision (default: head)")
    parser.add_argument("--down", action="store_true", help="downgrade to --revision instead (e.g. base)")
    parser.add_argument("--init", action="store_true",
                        help="create the embedded database if there is none (else: an error)")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from services import migrate
    from services.bootstrap import command_database
    from services.db import describe
    from services.settings import Settings

    settings = Settings.from_env()
    url = command_database(settings, "migrate", init=args.init)
    if args.down:
        migrate.downgrade(url, settings.db_role, args.revision)
    else:
        migrate.upgrade(url, settings.db_role, args.revision)
    print(f"{describe(url)}: at revision {migrate.current(url) or 'base'}")
    return 0
