"""kwx keys create --tenant NAME --role platform|support|dashboard: prints a new API key, one line.
kwx keys list [--tenant NAME] [--all] [--json]: the keys, by tenant then creation (ids, never secrets).
kwx keys revoke KEY_ID: revokes a key (its id ``kwx_<12 hex>``, or the whole key)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

CACHE_NOTE = (
    "A running service caches each key lookup for 10 s in each process (each worker of `kwx serve "
    "--workers N`), so a revoked key keeps working for up to 10 s in a process that looked it up "
    "just before; the others refuse it at once."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--init", action="store_true",
                        help="create the embedded database if there is none (else: an error)")  # fmt: skip
    sub = parser.add_subparsers(dest="keys_command", required=True, metavar="ACTION")
    create = sub.add_parser("create", help="create a key and print it (shown once; stored hashed)")
    create.add_argument("--tenant", required=True)
    create.add_argument("--role", required=True, choices=["platform", "support", "dashboard"])

    listing = sub.add_parser(
        "list",
        help="list the keys: id, tenant, role, created, revoked (never the secret)",
        description="One line per key, by tenant then creation: its id (kwx_<12 hex>, the part of "
        "the key before the secret), tenant, role, when it was created and, if revoked, when. The "
        "secret is not stored and never shown. Revoked keys only with --all.",
    )
    listing.add_argument("--tenant", help="only this tenant's keys")
    listing.add_argument("--all", action="store_true", help="include revoked keys")
    listing.add_argument("--json", action="store_true", help="one JSON object per line (for scripts)")

    revoke = sub.add_parser(
        "revoke",
        help="revoke a key by its id (kwx_<12 hex>); takes effect within 10 s",
        description="Revoke a key: sets its revoked_at (once; a revoked key stays revoked). Exit 0 "
        "when revoked now or already revoked, 1 when no key has this id. " + CACHE_NOTE,
    )
    revoke.add_argument(
        "key_id",
        metavar="KEY_ID",
        help="the key's id as `kwx keys list` shows it (kwx_<12 hex>), or the whole key (its id is "
        "derived; prefer the id, which keeps the secret out of shell history)",
    )


def run(args: argparse.Namespace) -> int:
    from services.store.keys import TENANT_RE, parse_key_id

    action = args.keys_command
    tenant = getattr(args, "tenant", None)
    if tenant is not None and not TENANT_RE.match(tenant):
        print("kwx keys: --tenant must be 1–64 of A-Za-z0-9_.-", file=sys.stderr)
        return 2
    key_id = None
    if action == "revoke":
        key_id = parse_key_id(args.key_id)
        if key_id is None:  # never echo the argument: it may be a (mangled) secret
            print("kwx keys revoke: expected a key id kwx_<12 hex> (or a whole key)", file=sys.stderr)
            return 2

    from services.bootstrap import bootstrap, command_database
    from services.settings import Settings

    settings = Settings.from_env()
    container = bootstrap(settings, url=command_database(settings, "keys", init=args.init))
    try:
        if action == "create":
            print(container.keys.create(args.tenant, args.role))
            return 0
        if action == "list":
            _print_keys(container.keys.list_keys(tenant, include_revoked=args.all), as_json=args.json)
            return 0
        assert key_id is not None
        return _revoke(container.keys, key_id)
    finally:
        container.close()


def _revoke(keys: Any, key_id: str) -> int:
    found = keys.revoke(key_id)
    if found is None:
        print(f"kwx keys revoke: no key kwx_{key_id}", file=sys.stderr)
        return 1
    info, revoked_now = found
    what = f"{info.name} (tenant {info.tenant}, role {info.role})"
    if revoked_now:
        print(f"revoked {what} at {_time(info.revoked_at)}; running services refuse it within 10 s")
    else:
        print(f"already revoked: {what} at {_time(info.revoked_at)}")
    return 0


def _time(value: Any) -> str:
    """UTC, ISO 8601 to the second: ``2024-05-01T12:00:00Z``."""
    from datetime import UTC

    return str(value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))


def _print_keys(keys: list[Any], *, as_json: bool) -> None:
    if as_json:
        import json

        for k in keys:
            row = {"key_id": k.name, "tenant": k.tenant, "role": k.role, "created_at": _time(k.created_at),
                   "revoked_at": _time(k.revoked_at) if k.revoked_at else None}  # fmt: skip
            print(json.dumps(row, ensure_ascii=False))
        return
    width = max((len(k.tenant) for k in keys), default=0)
    for k in keys:
        line = f"{k.name}  {k.tenant:<{width}}  {k.role:<9}  created {_time(k.created_at)}"
        if k.revoked_at is not None:
            line += f"  revoked {_time(k.revoked_at)}"
        print(line)
