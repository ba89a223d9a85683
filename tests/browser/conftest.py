"""Browser tests (issue 17): the pages as a person uses them, in the system's real Chromium
(Debian's ``chromium``, driven by Playwright; no browser is downloaded), against a real ``kwx
serve`` with its projector child on a real PostgreSQL, holding simulated tables.

``KWX_CHROMIUM`` names another binary. A machine without Chromium fails these tests loudly
(``.ci/run`` installs it); they are never skipped."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from services.settings import Settings
from tests.service.serving import serving, wait_for

CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync"]  # fmt: skip

pytestmark = pytest.mark.db

# The desk's simulated tables (simulate --seed 17) that tests open by name
LOU_HU_TABLE, LOU_HU_AT = "sim-17-5", 110  # hand 2 has a 漏胡 at event 110
KONG_TABLE = "sim-17-2"  # a kong chain, 亮倒 with a hidden triplet, reported payouts that differ

_CARDS_JS = """trs => trs.map(tr => [...tr.cells].map(td => {
    const r = td.getBoundingClientRect();
    return [td.dataset.label, Math.round(r.top), Math.round(r.right)]; }))"""


def chromium_path() -> str:
    path = os.environ.get("KWX_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(path).exists():
        raise RuntimeError(f"no Chromium at {path}: apt-get install chromium (or set KWX_CHROMIUM)")
    return path


class Desk:
    """The served desk: its base URL, a key of each role, the simulated tables it holds and its
    database (owner URL)."""

    def __init__(
        self, base: str, keys: dict[str, str], tables: dict[str, list[dict[str, Any]]], database_url: str = ""
    ) -> None:
        self.base, self.keys, self.tables, self.database_url = base, keys, tables, database_url

    def api(self, path: str, role: str = "support", **params: Any) -> Any:
        answer = httpx.get(f"{self.base}{path}", params=params,
                           headers={"Authorization": f"Bearer {self.keys[role]}"}, timeout=60)  # fmt: skip
        assert answer.status_code == 200, answer.text
        return answer.json()

    def tenant_keys(self, tenant: str, *roles: str) -> list[str]:
        """New keys of ``tenant``, one per role: a tenant of a test's own, whose tables leave the
        desk's as the other tests count them."""
        from services.bootstrap import bootstrap

        made = bootstrap(
            Settings(database_url=self.database_url, pool_size=1, log_level="warning"), migrate=False
        )
        try:
            return [made.keys.create(tenant, role) for role in roles]
        finally:
            made.close()


@pytest.fixture(scope="session")
def desk(pg_cluster: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Desk]:
    from services.bootstrap import bootstrap
    from services.cli import main

    url = pg_cluster.create_database("kwx_browser")
    folder = tmp_path_factory.mktemp("desk")
    with serving(url, folder / "serve.out", workers=1, KWX_LOG_LEVEL="warning") as (_, base, _):
        keys_of = bootstrap(Settings(database_url=url, pool_size=1, log_level="warning"), migrate=False)
        try:
            keys = {role: keys_of.keys.create("desk", role) for role in ("platform", "support", "dashboard")}
            keys["elsewhere"] = keys_of.keys.create("elsewhere", "dashboard")  # another tenant's key
        finally:
            keys_of.close()
        streams = folder / "streams"
        assert main(["simulate", "--tables", "6", "--hands", "4", "--seed", "17", "--players", "5",
                     "--start", "2026-11-20T08:00:00Z", "--out", str(streams)]) == 0  # fmt: skip
        tables: dict[str, list[dict[str, Any]]] = {}
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {keys['platform']}"},
                          timeout=60) as client:  # fmt: skip
            for path in sorted(streams.glob("*.jsonl")):
                events = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
                body = {"events": events, "expected_version": 0}
                answer = client.post(f"/v1/tables/{path.stem}/events", json=body)
                assert answer.status_code == 201, answer.text
                tables[path.stem] = events

        def caught_up() -> bool:
            body = httpx.get(f"{base}/v1/health", timeout=30).json()
            return bool(body.get("projections", {}).get("caught_up"))

        wait_for(caught_up, 300, "the projector child did not catch up")
        yield Desk(base, keys, tables, url)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Chromium, for one test module: Playwright's sync API runs an event loop in this thread while
    it is open, so it is closed before the next module (other tests call ``asyncio.run``)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS)
        yield launched
        launched.close()


@pytest.fixture()
def page(browser: Any, desk: Desk) -> Iterator[Any]:
    """A fresh tab; every request it makes is recorded, and none may leave kwx's origin."""
    context = browser.new_context(locale="zh-CN", viewport={"width": 1400, "height": 900})
    tab = context.new_page()
    requests: list[str] = []
    tab.on("request", lambda r: requests.append(r.url))
    errors: list[str] = []
    tab.on("pageerror", lambda e: errors.append(str(e)))
    tab.requests, tab.errors = requests, errors
    yield tab
    context.close()
    origin = urlsplit(desk.base).netloc
    outside = [u for u in requests if urlsplit(u).scheme in ("http", "https")
               and urlsplit(u).netloc != origin]  # fmt: skip
    assert not outside, outside
    assert not errors, errors


def sign_in(page: Any, desk: Desk, role: str = "support") -> None:
    page.fill("#signin input[name=key]", desk.keys[role])
    page.click("#signin button[type=submit]")


def assert_cards(tab: Any, heads: str, rows: str) -> int:
    """On a phone each row of ``rows`` is a card (kwx.css ``table.cards``): its cells one under
    another, each named (``data-label``) by its column's heading in ``heads``, inside the screen.
    The number of cards."""
    named = tab.locator(heads).all_text_contents()
    width = tab.evaluate("window.innerWidth")
    cards = tab.eval_on_selector_all(rows, _CARDS_JS)
    for card in cards:
        assert [label for label, _, _ in card] == named
        tops = [top for _, top, _ in card]
        assert tops == sorted(tops) and len(set(tops)) == len(tops), card  # one under another
        assert all(right <= width for _, _, right in card), (card, width)
    return len(cards)


def save_screenshot(tab: Any, name: str, size: tuple[int, int], tmp_path: Path) -> Path:
    """The whole page as ``NAME-WxH.png`` in ``KWX_ARTEFACTS`` (else the test's folder), checked
    to hold a drawn page and to be no wider than the screen (the page reflows)."""
    folder = Path(os.environ.get("KWX_ARTEFACTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    shot = folder / f"{name}-{size[0]}x{size[1]}.png"
    tab.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    assert tab.evaluate("document.documentElement.scrollWidth") <= size[0]
    return shot
