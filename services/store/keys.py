"""API keys: ``kwx_<key id>_<secret>``, stored as SHA-256 of the whole key, never in clear.

A key has 256 bits of randomness, so a fast hash is enough (no password stretching needed): the
database never sees the key, a lookup is one indexed probe on the hash. Lookups are cached for
``ttl`` seconds in the process (a revoked key stops working within that time).

A key's public name is its id, ``kwx_<12 hex>`` (the part before the secret): `kwx keys list`
shows it and `kwx keys revoke` takes it. Neither ever shows the secret or its hash.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

import sqlalchemy as sa
from psycopg_pool import ConnectionPool

from services.db import fetch, read_rows
from services.store.schema import api_keys

Role = Literal["platform", "support", "dashboard"]
ROLES: tuple[str, ...] = ("platform", "support", "dashboard")
TENANT_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_KEY_RE = re.compile(r"^kwx_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$")
# what `kwx keys revoke` accepts: the id (``kwx_<12 hex>`` or the bare 12 hex), or the whole key
_KEY_ID_RE = re.compile(r"^(?:kwx_)?([0-9a-f]{12})$")


@dataclass(frozen=True, slots=True)
class Principal:
    key_id: str
    tenant: str
    role: str


@dataclass(frozen=True, slots=True)
class KeyInfo:
    """What may be shown about a key: never its secret nor its hash."""

    key_id: str  # the 12 hex stored in api_keys.key_id
    tenant: str
    role: str
    created_at: datetime
    revoked_at: datetime | None

    @property
    def name(self) -> str:
        """``kwx_<12 hex>``: the key's public id, the prefix of the key before its secret."""
        return f"kwx_{self.key_id}"


def key_hash(key: str) -> bytes:
    return hashlib.sha256(key.encode()).digest()


def parse_key_id(text: str) -> str | None:
    """The 12-hex id in ``kwx_<id>``, ``<id>`` or a whole key ``kwx_<id>_<secret>``; else None."""
    text = text.strip()
    if _KEY_RE.match(text):
        return text[4:16]
    found = _KEY_ID_RE.match(text)
    return found.group(1) if found else None


class KeyStore:
    def __init__(self, pool: ConnectionPool, ttl: float = 10.0) -> None:
        self.pool = pool
        self.ttl = ttl
        self._cache: dict[bytes, tuple[float, Principal | None]] = {}
        self._lock = threading.Lock()

    def create(self, tenant: str, role: str) -> str:
        if not TENANT_RE.match(tenant):
            raise ValueError("tenant: 1–64 of A-Za-z0-9_.-")
        if role not in ROLES:
            raise ValueError(f"role: one of {', '.join(ROLES)}")
        key_id = secrets.token_hex(6)
        key = f"kwx_{key_id}_{secrets.token_urlsafe(32)}"
        stmt = sa.insert(api_keys).values(key_id=key_id, key_hash=key_hash(key), tenant=tenant, role=role)
        with self.pool.connection() as conn:
            fetch(conn, stmt)
        return key

    def list_keys(self, tenant: str | None = None, include_revoked: bool = False) -> list[KeyInfo]:
        """The keys (of ``tenant`` if given; revoked ones only with ``include_revoked``), by tenant
        (the bytes of its name, on every server) then creation."""
        c = api_keys.c
        stmt = sa.select(c.key_id, c.tenant, c.role, c.created_at, c.revoked_at).order_by(
            c.tenant.collate("C"), c.created_at, c.key_id.collate("C")
        )
        if tenant is not None:
            stmt = stmt.where(c.tenant == tenant)
        if not include_revoked:
            stmt = stmt.where(c.revoked_at.is_(None))
        with self.pool.connection() as conn:
            rows = fetch(conn, stmt)
        return [KeyInfo(*row) for row in rows]

    def revoke(self, key_id: str) -> tuple[KeyInfo, bool] | None:
        """Revoke the key with this 12-hex id: ``(key, True)`` if this call revoked it, ``(key,
        False)`` if it already was, None if there is no such key. The key stops working at once in
        this process; other processes' caches keep it for up to their ``ttl`` (module docstring)."""
        c = api_keys.c
        columns = (c.key_id, c.tenant, c.role, c.created_at, c.revoked_at)
        update = (
            sa.update(api_keys)
            .where(c.key_id == key_id, c.revoked_at.is_(None))
            .values(revoked_at=sa.func.now())
            .returning(*columns)
        )
        with self.pool.connection() as conn:
            rows = fetch(conn, update)
            revoked_now = bool(rows)
            if not rows:
                rows = fetch(conn, sa.select(*columns).where(c.key_id == key_id))
        with self._lock:  # this process need not wait for its own cache to expire
            for digest, (_, principal) in list(self._cache.items()):
                if principal is not None and principal.key_id == key_id:
                    del self._cache[digest]
        if not rows:
            return None
        return KeyInfo(*rows[0]), revoked_now

    def cached(self, key: str) -> tuple[bool, Principal | None]:
        """(known, principal) from the in-process cache only: no database."""
        if not _KEY_RE.match(key):
            return True, None
        with self._lock:
            hit = self._cache.get(key_hash(key))
        if hit is not None and hit[0] > time.monotonic():
            return True, hit[1]
        return False, None

    def authenticate(self, key: str) -> Principal | None:
        known, principal = self.cached(key)
        if known:
            return principal
        digest = key_hash(key)
        now = time.monotonic()
        stmt = sa.select(api_keys.c.key_id, api_keys.c.key_hash, api_keys.c.tenant, api_keys.c.role).where(
            api_keys.c.key_hash == digest, api_keys.c.revoked_at.is_(None)
        )
        (rows,) = read_rows(self.pool, stmt)  # every request's first read: once more if cut
        principal = None
        if rows and hmac.compare_digest(bytes(rows[0][1]), digest):
            principal = Principal(rows[0][0], rows[0][2], rows[0][3])
        with self._lock:
            if len(self._cache) > 10_000:
                self._cache.clear()
            self._cache[digest] = (now + self.ttl, principal)
        return principal
