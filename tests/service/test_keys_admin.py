"""kwx keys list / revoke against a real PostgreSQL (CONTRACT.md §4), in process; and how soon a
revoked key stops working (KeyStore's cache ttl)."""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from services.cli import main
from services.store.keys import KeyStore, parse_key_id

pytestmark = pytest.mark.db


@pytest.fixture()
def fresh_url(pg_cluster: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    url = pg_cluster.create_database("kwx_keys")
    monkeypatch.setenv("DATABASE_URL", url)
    return str(url)


def create(tenant: str, role: str, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["keys", "create", "--tenant", tenant, "--role", role]) == 0
    return capsys.readouterr().out.strip()


def key_name(key: str) -> str:
    return key[:16]  # kwx_<12 hex>


def assert_no_secret(output: str, keys: list[str]) -> None:
    for key in keys:
        secret = key[17:]
        assert secret not in output and key not in output
        assert hashlib.sha256(key.encode()).hexdigest() not in output


def test_parse_key_id_takes_the_id_the_bare_hex_or_the_whole_key() -> None:
    key = "kwx_0123456789ab_" + "A" * 43
    assert (
        parse_key_id(key)
        == parse_key_id("kwx_0123456789ab")
        == parse_key_id("0123456789ab")
        == "0123456789ab"
    )
    for bad in ("", "kwx_", "kwx_0123456789a", "kwx_0123456789AB", "kwx_0123456789ab_short", "x" * 80):
        assert parse_key_id(bad) is None, bad


def test_list_shows_keys_by_tenant_then_creation_never_their_secrets(
    fresh_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    keys = [create("zeta", "platform", capsys), create("acme", "support", capsys),
            create("acme", "dashboard", capsys)]  # fmt: skip
    assert main(["keys", "list"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert [line.split()[:3] for line in lines] == [
        [key_name(keys[1]), "acme", "support"],
        [key_name(keys[2]), "acme", "dashboard"],
        [key_name(keys[0]), "zeta", "platform"],
    ]
    assert all(re.search(r"created \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", line) for line in lines)
    assert_no_secret(out, keys)

    assert main(["keys", "list", "--tenant", "zeta", "--json"]) == 0
    out = capsys.readouterr().out
    rows = [json.loads(line) for line in out.splitlines()]
    assert [(r["key_id"], r["tenant"], r["role"], r["revoked_at"]) for r in rows] == [
        (key_name(keys[0]), "zeta", "platform", None)
    ]
    assert set(rows[0]) == {"key_id", "tenant", "role", "created_at", "revoked_at"}
    assert_no_secret(out, keys)

    assert main(["keys", "list", "--tenant", "nobody"]) == 0
    assert capsys.readouterr().out == ""
    assert main(["keys", "list", "--tenant", "bad tenant!"]) == 2


def test_revoke_by_id_and_by_whole_key_then_list_all_shows_them(
    fresh_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    by_id, by_key, kept = (create("acme", "platform", capsys) for _ in range(3))
    assert main(["keys", "revoke", key_name(by_id)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"revoked {key_name(by_id)} (tenant acme, role platform) at ")
    assert main(["keys", "revoke", by_key]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith(f"revoked {key_name(by_key)} ")
    assert_no_secret(captured.out + captured.err, [by_key])

    assert main(["keys", "list"]) == 0
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines()] == [key_name(kept)]
    assert main(["keys", "list", "--all", "--json"]) == 0
    out = capsys.readouterr().out
    rows = {r["key_id"]: r for r in map(json.loads, out.splitlines())}
    assert list(rows) == [key_name(k) for k in (by_id, by_key, kept)]
    assert rows[key_name(kept)]["revoked_at"] is None
    assert all(
        re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", rows[key_name(k)]["revoked_at"])
        for k in (by_id, by_key)
    )
    assert main(["keys", "list", "--all"]) == 0
    text = capsys.readouterr().out
    assert sum(" revoked " in line for line in text.splitlines()) == 2
    assert_no_secret(out + text, [by_id, by_key, kept])
    with psycopg.connect(fresh_url) as conn:
        revoked = conn.execute("SELECT key_id FROM api_keys WHERE revoked_at IS NOT NULL ORDER BY created_at")
        assert [r[0] for r in revoked] == [by_id[4:16], by_key[4:16]]


def test_revoking_twice_says_so_and_exits_0_unknown_exits_1(
    fresh_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    key = create("acme", "support", capsys)
    assert main(["keys", "revoke", key_name(key)]) == 0
    first = capsys.readouterr().out
    with psycopg.connect(fresh_url) as conn:
        (at,) = conn.execute("SELECT revoked_at FROM api_keys").fetchone()  # type: ignore[misc]
    assert main(["keys", "revoke", key[4:16]]) == 0  # the bare hex id works too
    again = capsys.readouterr()
    assert again.out.startswith(f"already revoked: {key_name(key)} (tenant acme, role support) at ")
    assert again.out.split(" at ")[-1] == first.split(" at ")[1].split(";")[0] + "\n"
    with psycopg.connect(fresh_url) as conn:
        assert conn.execute("SELECT revoked_at FROM api_keys").fetchone() == (at,)  # unchanged

    assert main(["keys", "revoke", "kwx_000000000000"]) == 1
    err = capsys.readouterr()
    assert err.out == "" and "no key kwx_000000000000" in err.err
    assert main(["keys", "revoke", "kwx_000000000000_" + "A" * 43]) == 1
    err = capsys.readouterr()
    assert "A" * 43 not in err.err + err.out and "no key kwx_000000000000" in err.err
    assert main(["keys", "revoke", "not-a-key-SECRET"]) == 2
    err = capsys.readouterr()
    assert "SECRET" not in err.err and "expected a key id" in err.err


def test_revocation_is_one_way_and_the_service_role_may_change_only_revoked_at(
    fresh_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    key = create("acme", "platform", capsys)
    assert main(["keys", "revoke", key_name(key)]) == 0
    with psycopg.connect(fresh_url, autocommit=True) as conn:  # the owner
        with pytest.raises(psycopg.errors.RaiseException, match="stays revoked"):
            conn.execute("UPDATE api_keys SET revoked_at = NULL")
        conn.execute("SET ROLE kwx_app")
        for column, value in (("tenant", "'other'"), ("role", "'support'"), ("key_hash", "key_hash")):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(f"UPDATE api_keys SET {column} = {value}")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("DELETE FROM api_keys")


def test_a_warm_cache_refuses_a_revoked_key_once_its_ttl_passes_a_fresh_one_at_once(
    container: Any, tenant: str
) -> None:
    ttl = 0.5
    key = container.keys.create(tenant, "platform")
    warm = KeyStore(container.pool, ttl=ttl)
    warmed_at = time.monotonic()
    assert warm.authenticate(key) is not None
    revoker = KeyStore(container.pool)
    assert revoker.authenticate(key) is not None
    found = revoker.revoke(key[4:16])
    assert found is not None and found[1] is True
    assert revoker.authenticate(key) is None  # the revoking process forgets the key at once
    assert KeyStore(container.pool, ttl=ttl).authenticate(key) is None  # a fresh process: at once
    if time.monotonic() < warmed_at + ttl:  # within the ttl the warm cache still answers (the bound)
        known, principal = warm.cached(key)
        assert known and principal is not None and principal.key_id == key[4:16]
    time.sleep(max(0.0, warmed_at + ttl - time.monotonic()) + 0.05)
    assert warm.cached(key) == (False, None)
    assert warm.authenticate(key) is None


def test_the_documented_bound_is_the_default_ttl() -> None:
    from services.commands.keys import CACHE_NOTE

    ttl = inspect.signature(KeyStore).parameters["ttl"].default
    assert f"{ttl:g} s" in CACHE_NOTE
    doc = Path(__file__).resolve().parents[2] / "docs" / "operations.md"
    assert f"up to {ttl:g} s" in doc.read_text(encoding="utf-8")


@pytest.fixture()
def fresh_app(container: Any) -> Iterator[Any]:
    """A client of a new app whose KeyStore has a cold cache (a freshly started process)."""
    from fastapi.testclient import TestClient

    from services.api.app import create_app

    def client() -> Any:
        cold = dataclasses.replace(  # the session's app runs the projector
            container,
            keys=KeyStore(container.pool),
            projector_background=False,
            projector=None,
            projector_runner=None,
        )
        return TestClient(create_app(container=cold))

    yield client


def test_a_revoked_key_gets_401_over_http(
    fresh_app: Any, container: Any, database_url: str, tenant: str, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    key = container.keys.create(tenant, "platform")
    headers = {"Authorization": f"Bearer {key}"}
    with fresh_app() as client:
        assert client.get("/v1/leaderboard?preset=xiangyang", headers=headers).status_code == 200
    monkeypatch.setenv("DATABASE_URL", database_url)
    assert main(["keys", "revoke", key]) == 0
    assert key_name(key) in capsys.readouterr().out
    with fresh_app() as client:
        answer = client.get("/v1/leaderboard?preset=xiangyang", headers=headers)
        assert answer.status_code == 401 and answer.json()["error"] == "unauthorized"
