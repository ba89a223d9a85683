"""The pages come from kwx itself: every asset in the package, a Content-Security-Policy that
allows only this origin, the key kept in sessionStorage only, no request leaving the origin."""

from __future__ import annotations

from typing import Any

import httpx

from tests.browser.conftest import Desk, sign_in


def test_every_page_and_asset_is_served_with_a_same_origin_policy(desk: Desk) -> None:
    for path in ("/replay", "/dashboard", "/static/api.js", "/static/kwx.css"):
        answer = httpx.get(desk.base + path, timeout=30)
        assert answer.status_code == 200, path
        assert "default-src 'self'" in answer.headers["content-security-policy"], path
    assert httpx.get(desk.base + "/static/../services/web/__init__.py", timeout=30).status_code == 404
    assert httpx.get(desk.base + "/static/nope.js", timeout=30).status_code == 404


def test_sign_in_keeps_the_key_in_session_storage_only(page: Any, desk: Desk) -> None:
    page.goto(desk.base + "/replay")
    assert page.is_visible("#signin")
    sign_in(page, desk)
    assert page.is_hidden("#signin")
    assert page.evaluate("sessionStorage.getItem('kwx.key')") == desk.keys["support"]
    assert page.evaluate("localStorage.length") == 0 and desk.keys["support"] not in page.url
    page.reload()
    assert page.is_hidden("#signin")  # the same tab keeps it
