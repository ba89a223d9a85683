"""kwx verify [--table ID] [--tenant T]: recompute every table's hash chain; report the first broken
link of each. Table ids are per tenant: ``--table`` alone checks that id in every tenant.

Exit 0 when every chain holds, 1 when one is broken. Output: JSON lines, one per broken table, then a
summary line.
"""

from __future__ import annotations

import argparse
import json


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--table", default=None, help="only tables with this id (in every tenant, unless --tenant)"
    )
    parser.add_argument("--tenant", default=None, help="only this tenant's tables")
    parser.add_argument("--init", action="store_true",
                        help="create the embedded database if there is none (else: an error)")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from services.bootstrap import bootstrap, command_database
    from services.settings import Settings

    settings = Settings.from_env()
    container = bootstrap(settings, url=command_database(settings, "verify", init=args.init))
    try:
        tables, events, broken = container.store.verify(args.table, tenant=args.tenant)
    finally:
        container.close()
    for link in broken:
        line = {"tenant": link.tenant, "table_id": link.table_id, "version": link.version,
                "broken": link.reason}  # fmt: skip
        print(json.dumps(line))
    print(json.dumps({"ok": not broken, "tables": tables, "events": events, "broken_tables": len(broken)}))
    return 1 if broken else 0
