"""The desk's pages on a deployment that keeps only some read models (``KWX_READ_MODELS``): what a
page cannot show is said in the page's language as the operator's choice (501 ``not_kept``), not as
a missing table or a failure. A second ``kwx serve`` on the desk's database, keeping ``snapshots``
and ``feed`` (no projector of its own), driven by the system's Chromium."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import Desk
from tests.service.serving import serving

pytestmark = [pytest.mark.db]


@pytest.fixture(scope="module")
def narrow(desk: Desk, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of a service on the desk's database that keeps snapshots and feed only."""
    folder = tmp_path_factory.mktemp("narrow")
    with serving(
        desk.database_url,
        folder / "serve.out",
        workers=1,
        KWX_READ_MODELS="snapshots,feed",
        KWX_PROJECTOR="off",
        KWX_LOG_LEVEL="warning",
    ) as (_, base, _):
        yield base


@pytest.fixture()
def tab(browser: Any) -> Iterator[Any]:
    context = browser.new_context(locale="zh-CN", viewport={"width": 1400, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    yield page
    context.close()
    assert not errors, errors


def _sign_in(page: Any, key: str) -> None:
    page.fill("#signin input[name=key]", key)
    page.click("#signin button[type=submit]")


def test_the_replay_desk_says_the_table_list_is_not_kept(tab: Any, desk: Desk, narrow: str) -> None:
    table = sorted(desk.tables)[0]
    tab.goto(narrow + "/replay")
    _sign_in(tab, desk.keys["support"])
    tab.fill("#open-id", table)
    tab.click("#open-form button[type=submit]")
    said = tab.locator("#open-error")
    expect(said).to_contain_text("此服务未保留读取模型 discovery")
    assert "没有这张牌桌" not in said.inner_text()  # not "no such table": the table is there
    assert tab.is_hidden("#viewer")


def test_the_dashboard_says_statistics_are_not_kept_in_either_language(
    tab: Any, desk: Desk, narrow: str, tmp_path: Path
) -> None:
    tab.goto(narrow + "/dashboard")
    _sign_in(tab, desk.keys["dashboard"])
    notice = tab.locator("#board .notice")
    expect(notice).to_have_attribute("data-status", "501")
    expect(notice).to_contain_text("此服务未保留读取模型 player_stats")
    assert "error" not in (notice.get_attribute("class") or "") and "{" not in notice.inner_text()
    tab.click("#lang")
    expect(tab.locator("#board .notice")).to_contain_text("does not keep the player_stats read model")
