"""kwx verify [--table ID]: recompute every table's hash chain; report the first broken link of each.

Exit 0 when every chain holds, 1 when one is broken. Output: JSON lines, one per broken table, then a
summary line.
"""

from __future__ import annotations

import argparse
import json


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--table", default=None, help="only this table")


def run(args: argparse.Namespace) -> int:
    from services.bootstrap import bootstrap
    from services.settings import Settings

    container = bootstrap(Settings.from_env())
    try:
        tables, events, broken = container.store.verify(args.table)
    finally:
        container.close()
    for link in broken:
        print(json.dumps({"table_id": link.table_id, "version": link.version, "broken": link.reason}))
    print(json.dumps({"ok": not broken, "tables": tables, "events": events, "broken_tables": len(broken)}))
    return 1 if broken else 0
