"""kwx verify [--table ID] [--tenant T]: recompute every table's hash chain; report the first broken
link of each. Table ids are per tenant: ``--table`` alone checks that id in every tenant.

Exit 0 when every chain holds, 1 when one is broken. Output: JSON lines, one per broken table, then a
summary line.

kwx verify --file EXPORT [--head HASH]: check an export (``GET /v1/tables/{id}/export`` or
``…/hands/{n}/export``) offline, with no database (docs/verify.md): every hash recomputed from the
event's bytes, versions consecutive, the chain's end against the head line, and ``--head`` (the head
hash you were given) against the export's. ``-`` reads standard input. Exit 0 and one JSON line when
it holds; 1 and a message naming the first bad line, its version and why when it does not; 2 when
the file cannot be read. Imports neither the database driver nor SQLAlchemy.
"""

from __future__ import annotations

import argparse
import json
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--table", default=None, help="only tables with this id (in every tenant, unless --tenant)"
    )
    parser.add_argument("--tenant", default=None, help="only this tenant's tables")
    parser.add_argument(
        "--file", default=None, metavar="EXPORT",
        help="check this NDJSON export offline (no database); - for standard input",
    )  # fmt: skip
    parser.add_argument(
        "--head", default=None, metavar="HASH", help="with --file: the table's head hash (hex) it must have"
    )
    parser.add_argument("--init", action="store_true",
                        help="create the embedded database if there is none (else: an error)")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    if args.file is not None:
        if args.table is not None or args.tenant is not None or args.init:
            print("kwx verify: --table / --tenant / --init are for the database, --file checks an export: "
                  "not both", file=sys.stderr)  # fmt: skip
            return 2
        return _verify_file(args.file, args.head)
    if args.head is not None:
        print("kwx verify: --head goes with --file EXPORT", file=sys.stderr)
        return 2
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


def _verify_file(path: str, head: str | None) -> int:
    from services.store import export  # pure: msgspec and hashlib only

    try:
        source = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        print(f"kwx verify: cannot read {path}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    try:
        checked = export.verify(source, head)
    finally:
        if source is not sys.stdin.buffer:
            source.close()
    name = "stdin" if path == "-" else path
    if not checked.ok:
        print(f"kwx verify: {name}: {checked.message()}", file=sys.stderr)
        print(json.dumps({"ok": False, "file": name, "line": checked.line, "version": checked.version,
                          "reason": checked.reason}, ensure_ascii=False))  # fmt: skip
        return 1
    print(json.dumps({"ok": True, "file": name, "scope": checked.scope, "table_id": checked.table_id,
                      "events": checked.events, "last_hash": checked.last_hash,
                      "head_hash": checked.head_hash, "head_checked": head is not None},
                     ensure_ascii=False))  # fmt: skip
    return 0
