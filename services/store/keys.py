"""API keys: ``kwx_<key id>_<secret>``, stored as SHA-256 of the whole key, never in clear.

A key has 256 bits of randomness, so a fast hash is enough (no password stretching needed): the
database never sees the key, a lookup is one indexed probe on the hash. Lookups are cached for
``ttl`` seconds in the process (a revoked key stops working within that time).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import threading
import time
from dataclasses import dataclass
from typing import Literal

import sqlalchemy as sa
from psycopg_pool import ConnectionPool

from services.db import fetch
from services.store.schema import api_keys

Role = Literal["platform", "support", "dashboard"]
ROLES: tuple[str, ...] = ("platform", "support", "dashboard")
TENANT_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_KEY_RE = re.compile(r"^kwx_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$")


@dataclass(frozen=True, slots=True)
class Principal:
    key_id: str
    tenant: str
    role: str


def key_hash(key: str) -> bytes:
    return hashlib.sha256(key.encode()).digest()


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
        with self.pool.connection() as conn:
            rows = fetch(conn, stmt)
        principal = None
        if rows and hmac.compare_digest(bytes(rows[0][1]), digest):
            principal = Principal(rows[0][0], rows[0][2], rows[0][3])
        with self._lock:
            if len(self._cache) > 10_000:
                self._cache.clear()
            self._cache[digest] = (now + self.ttl, principal)
        return principal
