"""The pages come from kwx itself: every asset in the package, a Content-Security-Policy that
allows only this origin, the key kept in sessionStorage only, no request leaving the origin."""

from __future__ import annotations

import json
from typing import Any

import httpx
from playwright.sync_api import expect

from tests.browser.conftest import Desk, sign_in


def test_every_page_and_asset_is_served_with_a_same_origin_policy(desk: Desk) -> None:
    for path in ("/", "/replay", "/dashboard", "/static/api.js", "/static/kwx.css"):
        answer = httpx.get(desk.base + path, timeout=30)
        assert answer.status_code == 200, path
        assert "default-src 'self'" in answer.headers["content-security-policy"], path
    assert httpx.get(desk.base + "/static/../services/web/__init__.py", timeout=30).status_code == 404
    assert httpx.get(desk.base + "/static/nope.js", timeout=30).status_code == 404


def test_the_services_address_leads_to_each_page(page: Any, desk: Desk) -> None:
    """``/`` is where a person lands who opens the address ``kwx serve`` printed: each of its links
    opens what it names, in both languages, with no request leaving the origin and no script."""
    page.goto(desk.base + "/")
    links = (("#to-replay", "回放", "Replay"), ("#to-dashboard", "数据", "Dashboard"),
             ("#to-docs", "接口文档", "API reference"), ("#to-health", "健康状态", "Health"))  # fmt: skip
    for item, zh, en in links:
        expect(page.locator(f"{item} a")).to_have_text(f"{zh} · {en}")
    assert page.evaluate("document.scripts.length") == 0
    page.click("#to-replay a")
    expect(page.locator("#signin")).to_be_visible()
    assert page.url == desk.base + "/replay"
    page.go_back()
    page.click("#to-dashboard a")
    expect(page.locator("#signin")).to_be_visible()
    assert page.url == desk.base + "/dashboard"
    page.go_back()
    page.click("#to-docs a")
    expect(page.locator(".swagger-ui")).to_be_visible()
    page.go_back()
    page.click("#to-health a")
    assert json.loads(page.inner_text("body"))["database"] == "ok"


def test_an_asset_the_browser_has_is_a_304_and_what_is_read_comes_gzipped(desk: Desk) -> None:
    """``no-cache`` makes a browser ask for every asset on each load: with the ETag it sent, the
    answer is a bodiless 304 (it was the whole file each time). Reads of 1 KB or more come gzipped
    to a client that takes it — the scripts, a table's state (≈ 1 KB of settlements a hand) — the
    same bytes once inflated; an append's answer never is."""
    script = httpx.get(desk.base + "/static/replay.js", headers={"Accept-Encoding": "identity"}, timeout=30)
    etag = script.headers["etag"]
    again = httpx.get(desk.base + "/static/replay.js", headers={"If-None-Match": etag}, timeout=30)
    assert (again.status_code, again.content, again.headers["etag"]) == (304, b"", etag)
    assert "default-src 'self'" in again.headers["content-security-policy"]
    other = httpx.get(desk.base + "/static/replay.js", headers={"If-None-Match": '"0000"'}, timeout=30)
    assert other.status_code == 200 and other.content == script.content
    assert httpx.get(desk.base + "/static/api.js", timeout=30).headers["etag"] != etag

    zipped = httpx.get(desk.base + "/static/replay.js", headers={"Accept-Encoding": "gzip"}, timeout=30)
    assert zipped.headers["content-encoding"] == "gzip" and zipped.content == script.content
    assert int(zipped.headers["content-length"]) < len(script.content) // 2
    table = sorted(desk.tables)[0]
    path = f"{desk.base}/v1/tables/{table}/state?at={len(desk.tables[table])}"
    support = {"Authorization": f"Bearer {desk.keys['support']}"}
    plain = httpx.get(path, headers={**support, "Accept-Encoding": "identity"}, timeout=30)
    state = httpx.get(path, headers={**support, "Accept-Encoding": "gzip"}, timeout=30)
    assert "content-encoding" not in plain.headers and state.headers["content-encoding"] == "gzip"
    assert state.content == plain.content and len(plain.content) > 1024
    assert {"Accept-Encoding", "Accept-Language"} <= {v.strip() for v in state.headers["vary"].split(",")}
    platform = {"Authorization": f"Bearer {desk.keys['platform']}", "Accept-Encoding": "gzip"}
    stored = httpx.post(f"{desk.base}/v1/tables/{table}/events", json={"events": desk.tables[table][:50]},
                        headers=platform, timeout=30)  # fmt: skip
    assert stored.status_code == 201 and "content-encoding" not in stored.headers  # a replay: stored once


def test_sign_in_keeps_the_key_in_session_storage_only(page: Any, desk: Desk) -> None:
    page.goto(desk.base + "/replay")
    assert page.is_visible("#signin")
    sign_in(page, desk)
    assert page.is_hidden("#signin")
    assert page.evaluate("sessionStorage.getItem('kwx.key')") == desk.keys["support"]
    assert page.evaluate("localStorage.length") == 0 and desk.keys["support"] not in page.url
    page.reload()
    assert page.is_hidden("#signin")  # the same tab keeps it
