"""``KWX_CORS_ORIGINS`` in a real browser: a page of a named origin reads kwx with a key (its
answer, its refusals and the headers kwx exposes), a page of another origin cannot, and no page may
append. A second ``kwx serve`` on the desk's database with the setting, and a platform's dashboard
page served on loopback by a small HTTP server of the test: named as ``http://localhost:PORT``, and
the same page reached as ``http://127.0.0.1:PORT`` is another origin, which kwx does not name."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.browser.conftest import Desk
from tests.service.serving import free_port, serving

pytestmark = pytest.mark.db

FETCH = """async ([url, key, method]) => {
  try {
    const answer = await fetch(url, { method, headers: key ? { Authorization: `Bearer ${key}`,
                                                               "Accept-Language": "zh" } : {} });
    return { status: answer.status, language: answer.headers.get("Content-Language"),
             body: await answer.json() };
  } catch (e) { return { refused: String(e) }; }
}"""


class _Page(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"<!doctype html><title>a platform's dashboard</title>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def served(desk: Desk, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    """(kwx's base URL with KWX_CORS_ORIGINS=http://localhost:PORT, PORT of the dashboard page)."""
    port = free_port()
    pages = ThreadingHTTPServer(("127.0.0.1", port), _Page)
    threading.Thread(target=pages.serve_forever, daemon=True).start()
    out = tmp_path_factory.mktemp("cors") / "serve.out"
    try:
        with serving(
            desk.database_url,
            out,
            workers=1,
            KWX_LOG_LEVEL="warning",
            KWX_PROJECTOR="off",
            KWX_CORS_ORIGINS=f"http://localhost:{port}",
        ) as (_, base, _):
            yield base, port
    finally:
        pages.shutdown()
        pages.server_close()


def fetch_from(browser: Any, origin: str, *asked: list[str]) -> list[dict[str, Any]]:
    """What a page of ``origin`` gets from each ``fetch`` ([url, key, method])."""
    context = browser.new_context()
    try:
        tab = context.new_page()
        tab.goto(f"{origin}/")
        return [tab.evaluate(FETCH, one) for one in asked]
    finally:
        context.close()


def test_a_named_origins_page_reads_with_its_key_and_no_other_page_can(
    browser: Any, desk: Desk, served: tuple[str, int]
) -> None:
    base, port = served
    board = f"{base}/v1/leaderboard"
    append = [f"{base}/v1/tables/from-a-browser/events", desk.keys["platform"], "POST"]
    read, refused, appended = fetch_from(
        browser,
        f"http://localhost:{port}",
        [board, desk.keys["dashboard"], "GET"],
        [board, "", "GET"],
        append,
    )
    assert read.get("status") == 200 and read["language"] == "zh", read
    assert read["body"]["players"] and read["body"]["players"] == desk.api("/v1/leaderboard")["players"]
    assert refused.get("status") == 401 and refused["body"]["error"] == "unauthorized", (
        refused
    )  # it can say why
    assert "refused" in appended, appended  # the preflight is refused: appends are for servers
    (other,) = fetch_from(browser, f"http://127.0.0.1:{port}", [board, desk.keys["dashboard"], "GET"])
    assert "refused" in other, other
    assert all(t["table_id"] != "from-a-browser" for t in desk.api("/v1/tables")["tables"])
