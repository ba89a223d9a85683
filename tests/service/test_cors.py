"""``KWX_CORS_ORIGINS``: the pages of named origins (a platform's own dashboard) may read the API
from a browser — GET and HEAD, with a key in ``Authorization`` — and no other origin may; appends
come from a platform's servers, so a browser's preflight for one is refused. Off by default. Through
a TestClient on a real PostgreSQL (the session's container)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from services.api.app import create_app
from services.settings import Settings, SettingsError

pytestmark = pytest.mark.db

DASH = "https://dash.example.com"


@pytest.fixture()
def cors_client(container: Any) -> Iterator[TestClient]:
    settings = Settings(
        database_url=container.settings.database_url, cors_origins=(DASH, "http://localhost:3000")
    )
    with TestClient(create_app(settings, container=container)) as client:
        yield client


def preflight(client: TestClient, path: str, origin: str, method: str = "GET") -> Any:
    return client.options(
        path,
        headers={
            "Origin": origin,
            "Access-Control-Request-Method": method,
            "Access-Control-Request-Headers": "authorization, accept-language",
        },
    )


def test_a_named_origin_reads_with_its_key_and_sees_the_headers_it_needs(
    cors_client: TestClient, make_key: Callable[..., dict[str, str]]
) -> None:
    asked = preflight(cors_client, "/v1/leaderboard", DASH)
    assert asked.status_code == 200
    assert asked.headers["access-control-allow-origin"] == DASH
    assert "authorization" in asked.headers["access-control-allow-headers"].lower()
    assert "GET" in asked.headers["access-control-allow-methods"]
    assert asked.headers["access-control-max-age"] == "600"
    key = make_key("cors-a", "dashboard")
    read = cors_client.get("/v1/leaderboard", headers={**key, "Origin": DASH, "Accept-Language": "zh"})
    assert read.status_code == 200 and read.json()["players"] == []
    assert read.headers["access-control-allow-origin"] == DASH
    exposed = read.headers["access-control-expose-headers"].lower()
    assert "content-language" in exposed and "retry-after" in exposed
    assert read.headers["content-language"] == "zh"
    # a refusal is readable by the page too: it can say why
    refused = cors_client.get("/v1/leaderboard", headers={"Origin": DASH})
    assert refused.status_code == 401 and refused.headers["access-control-allow-origin"] == DASH
    assert refused.json()["error"] == "unauthorized"


def test_another_origin_is_not_allowed_and_appends_are_not_for_browsers(
    cors_client: TestClient, make_key: Callable[..., dict[str, str]]
) -> None:
    other = "https://evil.example.com"
    asked = preflight(cors_client, "/v1/leaderboard", other)
    assert asked.status_code == 400 and "access-control-allow-origin" not in asked.headers
    read = cors_client.get("/v1/leaderboard", headers={**make_key("cors-b", "dashboard"), "Origin": other})
    assert "access-control-allow-origin" not in read.headers  # the browser keeps the answer from the page
    append = preflight(cors_client, "/v1/tables/t-1/events", DASH, method="POST")
    assert append.status_code == 400 and "POST" not in append.headers.get("access-control-allow-methods", "")


def test_no_origin_is_allowed_unless_named(client: Any, make_key: Callable[..., dict[str, str]]) -> None:
    read = client.get("/v1/leaderboard", headers={**make_key("cors-c", "dashboard"), "Origin": DASH})
    assert read.status_code == 200 and "access-control-allow-origin" not in read.headers
    asked = preflight(client, "/v1/leaderboard", DASH)
    assert "access-control-allow-origin" not in asked.headers


@pytest.mark.parametrize(
    "value",
    ["*", "https://dash.example.com/", "https://dash.example.com/path", "ftp://dash.example.com",
     "https://Dash.example.com", "https://user@dash.example.com", "https://dash.example.com:99999",
     "dash.example.com"],
)  # fmt: skip
def test_an_origin_a_browser_would_never_send_is_a_settings_error(value: str) -> None:
    with pytest.raises(SettingsError, match="KWX_CORS_ORIGINS"):
        Settings.from_env({"KWX_CORS_ORIGINS": f"https://ok.example.com, {value}"})


def test_origins_are_read_separated_by_commas() -> None:
    read = Settings.from_env({"KWX_CORS_ORIGINS": " https://a.example.com ,http://localhost:3000,, "})
    assert read.cors_origins == ("https://a.example.com", "http://localhost:3000")
    assert Settings.from_env({}).cors_origins == ()
