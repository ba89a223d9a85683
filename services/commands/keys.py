"""kwx keys create --tenant NAME --role platform|support|dashboard: prints a new API key, one line."""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="keys_command", required=True, metavar="ACTION")
    create = sub.add_parser("create", help="create a key and print it (shown once; stored hashed)")
    create.add_argument("--tenant", required=True)
    create.add_argument("--role", required=True, choices=["platform", "support", "dashboard"])


def run(args: argparse.Namespace) -> int:
    from services.bootstrap import bootstrap
    from services.settings import Settings
    from services.store.keys import TENANT_RE

    if not TENANT_RE.match(args.tenant):
        print("kwx keys: --tenant must be 1–64 of A-Za-z0-9_.-", file=sys.stderr)
        return 2
    container = bootstrap(Settings.from_env())
    try:
        print(container.keys.create(args.tenant, args.role))
    finally:
        container.close()
    return 0
