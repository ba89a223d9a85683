"""The API docs pages (/docs: Swagger UI, /redoc: ReDoc) work with no outside network: their HTML
names no other host, and every script, style and icon it names is served by kwx itself."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest


class _Refs(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.refs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.refs += [v for k, v in attrs if k in ("src", "href") and v]


def _assets(html: str) -> list[str]:
    parser = _Refs()
    parser.feed(html)
    # the Swagger UI page names its script, style and the openapi document inside its script too
    quoted = re.findall(r"""['"](/[A-Za-z0-9_./-]+\.(?:js|css|png|json))['"]""", html)
    return sorted(set(parser.refs) | set(quoted))


@pytest.fixture(scope="module")
def docs_client() -> object:
    from fastapi.testclient import TestClient

    from services.api.app import create_app

    return TestClient(create_app())  # building the app connects to nothing; the pages need no database


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_the_docs_page_names_no_outside_host_and_kwx_serves_every_asset(
    docs_client: object, page: str
) -> None:
    r = docs_client.get(page)  # type: ignore[attr-defined]
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    html = r.text
    outside = re.findall(r"(?:https?:)?//[A-Za-z0-9.-]+", html)
    assert outside == [], "the page loads something from another host"
    assets = _assets(html)
    assert any(a.endswith(".js") for a in assets), assets  # the page's script is one of them
    for asset in assets:
        assert asset.startswith("/"), asset
        got = docs_client.get(asset)  # type: ignore[attr-defined]
        assert got.status_code == 200 and len(got.content) > 0, (asset, got.status_code)
    if page == "/docs":
        named = {"/docs/assets/swagger-ui-bundle.js", "/docs/assets/swagger-ui.css", "/openapi.json"}
        assert named <= set(assets)
    else:
        assert "/docs/assets/redoc.standalone.js" in assets
