"""The dashboard (issue 17) in a real Chromium against a served desk: what the page shows equals
what the API answers (the desk fixture's ``api()``) — a player's statistics, the coin balance chart
(its last point is the ledger's balance), the leaderboard in order for every sort, the discrepancies
feed newest first — and it says plainly when a key's role may not read something."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from playwright.sync_api import expect

from tests.browser.conftest import Desk, sign_in

ROOT = Path(__file__).resolve().parents[2]


def open_dashboard(page: Any, desk: Desk, role: str = "dashboard", query: str = "") -> None:
    page.goto(f"{desk.base}/dashboard{query}")
    sign_in(page, desk, role)
    expect(page.locator("#view")).to_be_visible()


def shown_stats(page: Any) -> dict[str, dict[str, Any]]:
    """{block: {stat: value}} as the stats table shows them (the cells' data-value)."""
    cells = page.eval_on_selector_all(
        "#stats-of td[data-block]",
        "tds => tds.map(td => [td.dataset.block, td.parentElement.dataset.stat, td.dataset.value, td.textContent])",
    )
    out: dict[str, dict[str, Any]] = {}
    for block, stat, value, text in cells:
        parsed = json.loads(value)
        assert text == ("—" if parsed is None else text), text
        out.setdefault(block, {})[stat] = parsed
    return out


def expected_stats(answer: dict[str, Any], keys: list[str]) -> dict[str, dict[str, Any]]:
    ratios = set(answer["overall"]["ratios"])
    blocks = {"overall": answer["overall"], **answer["presets"]}
    return {name: {k: (b["ratios"][k] if k in ratios else b[k]) for k in keys} for name, b in blocks.items()}


def sortable() -> list[str]:
    spec = json.loads((ROOT / "openapi" / "openapi.json").read_text())
    params = spec["paths"]["/v1/leaderboard"]["get"]["parameters"]
    return next(p for p in params if p["name"] == "by")["schema"]["enum"]


def test_a_typed_player_shows_the_stats_json_and_the_chart_ends_at_the_balance(page: Any, desk: Desk) -> None:
    open_dashboard(page, desk)
    page.fill("#player-input", "p001")
    page.click("#player-form button[type=submit]")
    expect(page.locator("#stats-of")).to_have_attribute("data-player", "p001")
    keys = sortable()
    assert shown_stats(page) == expected_stats(desk.api("/v1/players/p001/stats", "dashboard"), keys)
    ledger = desk.api("/v1/players/p001/ledger", "dashboard", limit=1000)
    expect(page.locator("svg.chart")).to_be_visible()
    ys = page.eval_on_selector_all("svg.chart circle.point", "cs => cs.map(c => Number(c.dataset.y))")
    assert ys == [e["balance"] for e in ledger["entries"]]
    assert ys[-1] == ledger["balance"] and ledger["entries_total"] == len(ys)
    # axes with labels, and the hover readout at the right edge is the last balance
    assert page.locator("svg.chart text.tick.y").count() >= 2
    assert page.locator("svg.chart text.tick.x").count() >= 2
    chart = page.locator("svg.chart")
    chart.scroll_into_view_if_needed()
    box = chart.bounding_box()
    chart.hover(position={"x": box["width"] - 2, "y": box["height"] / 2})
    tip = page.locator("svg.chart g.tip")
    expect(tip).to_have_attribute("visibility", "visible")
    expect(tip).to_have_attribute("data-y", str(ledger["balance"]))
    expect(tip.locator("text.tip-value")).to_contain_text(str(ledger["balance"]))
    assert page.url.endswith("?player=p001")


def test_the_chart_pages_through_the_ledger(page: Any, desk: Desk) -> None:
    ledger = desk.api("/v1/players/p003/ledger", "dashboard", limit=1000)
    open_dashboard(page, desk, query="?player=p003&ledger_limit=7")
    summary = page.locator("#ledger-summary")
    expect(summary).to_have_attribute("data-balance", str(ledger["balance"]))
    pages = -(-ledger["entries_total"] // 7)
    assert pages > 1 and summary.get_attribute("data-pages") == str(pages)
    ys = page.eval_on_selector_all("svg.chart circle.point", "cs => cs.map(c => Number(c.dataset.y))")
    assert ys == [e["balance"] for e in ledger["entries"]] and ys[-1] == ledger["balance"]
    # the keyboard reaches the same readout as the mouse
    page.focus("svg.chart")
    page.keyboard.press("ArrowRight")
    expect(page.locator("svg.chart g.tip")).to_have_attribute("data-y", str(ledger["balance"]))
