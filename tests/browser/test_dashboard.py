"""The dashboard (issue 17) in a real Chromium against a served desk: what the page shows equals
what the API answers (the desk fixture's ``api()``) — a player's statistics, the coin balance chart
(its last point is the ledger's balance), the leaderboard in order for every sort, the discrepancies
feed newest first — and it says plainly when a key's role may not read something."""

from __future__ import annotations

import json
import random
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from playwright.sync_api import expect

from tests.browser.conftest import Desk, assert_cards, save_screenshot, sign_in

ROOT = Path(__file__).resolve().parents[2]
STATS_JS = """tds => tds.map(td =>
  [td.dataset.block, td.parentElement.dataset.stat, td.dataset.value, td.textContent])"""
BOARD_JS = """trs => trs.map(tr => [tr.dataset.player, Number(tr.dataset.rank), tr.dataset.value,
  Object.fromEntries([...tr.querySelectorAll('td[data-stat]')]
    .map(td => [td.dataset.stat, td.dataset.value]))])"""


def open_dashboard(page: Any, desk: Desk, role: str = "dashboard", query: str = "") -> None:
    page.goto(f"{desk.base}/dashboard{query}")
    sign_in(page, desk, role)
    expect(page.locator("#view")).to_be_visible()


def shown_stats(page: Any) -> dict[str, dict[str, Any]]:
    """{block: {stat: value}} as the stats table shows them (the cells' data-value)."""
    cells = page.eval_on_selector_all("#stats-of td[data-block]", STATS_JS)
    out: dict[str, dict[str, Any]] = {}
    for block, stat, value, text in cells:
        parsed = json.loads(value)
        assert (text == "—") == (parsed is None), (stat, text)
        out.setdefault(block, {})[stat] = parsed
    return out


def expected_stats(answer: dict[str, Any], keys: list[str]) -> dict[str, dict[str, Any]]:
    ratios = set(answer["overall"]["ratios"])
    blocks = {"overall": answer["overall"], **answer["presets"]}
    return {name: {k: (b["ratios"][k] if k in ratios else b[k]) for k in keys} for name, b in blocks.items()}


def in_time_order(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entries as the chart draws them: in the order of their hands' times (``at``, else
    ``recorded_at``; ties in the ledger's order)."""

    def when(e: dict[str, Any]) -> float:
        return datetime.fromisoformat(e["at"] or e["recorded_at"]).timestamp()

    return [entries[i] for i in sorted(range(len(entries)), key=lambda i: (when(entries[i]), i))]


def over_time(entries: list[dict[str, Any]]) -> list[int]:
    """The balances the chart draws: each the balance after every entry up to it, in time order."""
    y = entries[0]["balance"] - entries[0]["amount"] if entries else 0
    out = []
    for e in in_time_order(entries):
        y += e["amount"]
        out.append(y)
    return out


def sortable() -> list[str]:
    spec = json.loads((ROOT / "openapi" / "openapi.json").read_text())
    params = spec["paths"]["/v1/leaderboard"]["get"]["parameters"]
    return next(p for p in params if p["name"] == "by")["schema"]["enum"]


def test_the_dashboard_and_its_assets_are_served_with_a_same_origin_policy(desk: Desk) -> None:
    for name in ("dashboard.js", "dashboard.css", "chart.js", "dash-i18n.js"):
        answer = httpx.get(f"{desk.base}/static/{name}", timeout=30)
        assert answer.status_code == 200, name
        assert "default-src 'self'" in answer.headers["content-security-policy"], name
    html = httpx.get(f"{desk.base}/dashboard", timeout=30).text
    assert (
        "<style" not in html and "<script>" not in html and " style=" not in html
    )  # the CSP allows no inline


def test_the_choices_are_the_apis_own(page: Any, desk: Desk) -> None:
    spec = json.loads((ROOT / "openapi" / "openapi.json").read_text())
    params = {p["name"]: p for p in spec["paths"]["/v1/leaderboard"]["get"]["parameters"]}
    open_dashboard(page, desk)
    expect(page.locator("#board-table")).to_be_visible()
    assert (
        page.eval_on_selector_all("#by option", "os => os.map(o => o.value)")
        == params["by"]["schema"]["enum"]
    )
    presets = page.eval_on_selector_all("#preset option", "os => os.map(o => o.value)")
    assert presets == ["", *params["preset"]["schema"]["enum"]]
    orders = page.eval_on_selector_all("#order option", "os => os.map(o => o.value)")
    assert orders == params["order"]["schema"]["enum"]
    headers = page.eval_on_selector_all("#board-table th[data-sort]", "ths => ths.map(th => th.dataset.sort)")
    assert headers == params["by"]["schema"]["enum"]  # a column for every statistic, each one sorts


def test_a_typed_player_shows_the_stats_json_and_the_chart_ends_at_the_balance(page: Any, desk: Desk) -> None:
    open_dashboard(page, desk)
    # before a player is chosen: the hint, and no "balance over time" heading over nothing
    expect(page.locator("#stats p.muted")).to_be_visible()
    expect(page.locator("#chart-h")).to_be_hidden()
    page.fill("#player-input", "p001")
    page.click("#player-form button[type=submit]")
    expect(page.locator("#stats-of")).to_have_attribute("data-player", "p001")
    keys = sortable()
    answer = desk.api("/v1/players/p001/stats", "dashboard")
    assert shown_stats(page) == expected_stats(answer, keys)
    rate, average = answer["overall"]["ratios"]["win_rate"], answer["overall"]["ratios"]["average_multiplier"]
    cell = "#stats-of tr[data-stat={}] td[data-block=overall]"
    expect(page.locator(cell.format("win_rate"))).to_have_text(f"{rate * 100:.1f}%")
    expect(page.locator(cell.format("average_multiplier"))).to_have_text(f"{average:.2f}")
    expect(page.locator(cell.format("wins"))).to_have_text(str(answer["overall"]["wins"]))
    # the patterns won by name, in the page's language (the tab is zh-CN), each with its count said
    # as a count (亮倒 8 次: it said 亮倒 × 8, which reads as a factor)
    won = answer["overall"]["patterns"]
    shown = page.eval_on_selector_all(
        ".patterns span.pattern", "ss => ss.map(s => [s.dataset.id, s.textContent])"
    )
    assert shown == [[k, f"{answer['pattern_names'][k]['zh']} {won[k]} 次"] for k in sorted(won)] and shown
    ledger = desk.api("/v1/players/p001/ledger", "dashboard", limit=1000)
    expect(page.locator("svg.chart")).to_be_visible()
    expect(page.locator("#chart-h")).to_be_visible()
    ys = page.eval_on_selector_all("svg.chart circle.point", "cs => cs.map(c => Number(c.dataset.y))")
    assert ys == over_time(ledger["entries"])
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


TIP_JS = """svg => {
  const box = svg.querySelector("g.tip rect.tip-box"), width = Number(box.getAttribute("width"));
  const x = Number(box.getAttribute("x")), y = Number(box.getAttribute("y"));
  const rows = [...svg.querySelectorAll("g.tip text")];
  const of = (cls) => rows.filter((t) => t.classList.contains(cls)).map((t) => t.textContent).join("");
  return { x, y, width, height: Number(box.getAttribute("height")), rows: rows.length,
           value: of("tip-value"), time: of("tip-time"), detail: of("tip-detail"),
           chart: svg.viewBox.baseVal.width, shown: svg.getBoundingClientRect().width,
           fits: rows.every((t) => t.getComputedTextLength() <= width - 15
                                   && Number(t.getAttribute("x")) >= x) };
}"""


@pytest.mark.parametrize("size", [(1280, 800), (390, 844)])
def test_each_point_of_the_balance_says_its_entry_in_the_pages_language(
    page: Any, desk: Desk, size: tuple[int, int]
) -> None:
    """A point of the balance says the entry behind it: its table and hand as the replay and the
    timeline say them (第3局 / Hand 3), why the coins moved in the API's words (wording.REASONS) and
    how many, and the transfer's derivation as the ledger says it — the Chinese one on a Chinese
    page, the English one after the switch. The keyboard's readout says the same, in rows that fit
    its box (a Chinese letter is about twice a Latin one's width), inside the chart, which is drawn
    as wide as its card: its letters keep their size on a phone (it was an 800-wide drawing scaled
    to the screen, 5-px letters at 390 px)."""
    from projections import wording

    page.set_viewport_size({"width": size[0], "height": size[1]})
    ledger = desk.api("/v1/players/p001/ledger", "dashboard", limit=1000)
    drawn = in_time_order(ledger["entries"])
    assert all(e["detail_zh"] for e in drawn)
    open_dashboard(page, desk, query="?player=p001")
    chart = page.locator("svg.chart")
    most = 0
    for lang, which in (("zh", 0), ("en", 1)):
        if lang == "en":
            page.click("#lang")
            expect(page.locator("svg.chart text.axis-label").first).to_have_text("Balance")
        expect(chart.locator("circle.point")).to_have_count(len(drawn))
        titles = chart.evaluate(
            "svg => [...svg.querySelectorAll('circle.point title')].map(t => t.textContent)"
        )
        for title, e, y in zip(titles, drawn, over_time(ledger["entries"]), strict=True):
            hand = f"第{e['hand']}局" if lang == "zh" else f"Hand {e['hand']}"
            amount = f"+{e['amount']}" if e["amount"] > 0 else str(e["amount"])
            label = f"{e['table_id']} {hand} · {wording.REASONS[e['reason']][which]} {amount}"
            detail = e["detail_zh"] if lang == "zh" else e["detail"]
            assert title.split(" UTC · ", 1)[1] == f"{y} · {label}\n{detail}", title
        chart.focus()
        page.keyboard.press("ArrowRight")  # from nowhere: the last point, then back to the first
        for i in reversed(range(len(drawn))):
            if i < len(drawn) - 1:
                page.keyboard.press("ArrowLeft")
            expect(chart.locator("g.tip")).to_have_attribute("data-i", str(i))
            tip = chart.evaluate(TIP_JS)
            assert tip["detail"] == (drawn[i]["detail_zh"] if lang == "zh" else drawn[i]["detail"])
            assert tip["time"].endswith(titles[i].split("\n")[0].split(" · ", 2)[2]), (tip, titles[i])
            assert tip["fits"] and tip["x"] >= 0 and tip["x"] + tip["width"] <= tip["chart"], tip
            assert tip["y"] >= 0 and tip["y"] + tip["height"] <= 300, tip
            assert abs(tip["shown"] - tip["chart"]) <= 2, tip  # drawn at its size: letters as styled
            most = max(most, tip["rows"])
    if size[0] < 500:
        assert most > 3  # some derivation broken into rows to fit a phone's chart


def test_the_chart_is_drawn_again_at_its_cards_width(page: Any, desk: Desk) -> None:
    open_dashboard(page, desk, query="?player=p001")
    chart = page.locator("svg.chart")
    expect(chart).to_be_visible()
    wide = chart.evaluate("svg => svg.viewBox.baseVal.width")
    page.set_viewport_size({"width": 390, "height": 844})
    page.wait_for_function("w => document.querySelector('svg.chart').viewBox.baseVal.width < w", arg=wide)
    shown = chart.evaluate("svg => [svg.viewBox.baseVal.width, svg.getBoundingClientRect().width]")
    assert shown[0] < 390 and abs(shown[0] - shown[1]) <= 2, (wide, shown)
    points = chart.locator("circle.point")
    expect(points).to_have_count(int(chart.get_attribute("data-points") or 0))


ENTRY_JS = """trs => trs.map(tr => [Number(tr.dataset.seq), ...[...tr.cells].map(td => td.textContent),
                                     tr.querySelector("a").getAttribute("href")])"""


def said_entry(e: dict[str, Any], lang: str) -> list[Any]:
    """An entry's row as the page should say it in ``lang``."""
    from projections import wording

    which = 0 if lang == "zh" else 1
    when = datetime.fromisoformat(e["at"] or e["recorded_at"]).astimezone(UTC).strftime("%Y-%m-%d %H:%M")
    hand = f"第{e['hand']}局" if lang == "zh" else f"Hand {e['hand']}"
    party = (
        ("平台" if lang == "zh" else "the house") if e["counterparty_kind"] == "house" else e["counterparty"]
    )
    return [
        e["seq"], when, f"{e['table_id']} · {hand}", party, wording.REASONS[e["reason"]][which],
        f"+{e['amount']}" if e["amount"] > 0 else str(e["amount"]), str(e["balance"]),
        e["detail_zh"] if lang == "zh" else e["detail"],
        f"/replay?table={e['table_id']}&hand={e['hand']}&at={e['event']}",
    ]  # fmt: skip


def test_the_coin_entries_say_each_entry_newest_first_and_open_its_hand(page: Any, desk: Desk) -> None:
    """Under the chart, the player's entries newest booked first (the ledger's own order and running
    balance), 20 at a time: each one's time, table and hand, with whom, why (the API's words), the
    coins, the balance after it and the derivation in the page's language; its link opens the replay
    at the event that moved the coins."""
    ledger = desk.api("/v1/players/p001/ledger", "dashboard", limit=1000)
    newest = list(reversed(ledger["entries"]))
    assert len(newest) > 20, "the desk's player has fewer entries than a page: this shows no paging"
    open_dashboard(page, desk, role="support", query="?player=p001")
    rows = page.locator("#entries tbody tr")
    expect(rows).to_have_count(20)
    expect(page.locator("#entries h4")).to_have_text("金币明细（最后入账在前）")
    assert page.eval_on_selector_all("#entries tbody tr", ENTRY_JS) == [
        said_entry(e, "zh") for e in newest[:20]
    ]
    page.click("#entries-more")
    expect(rows).to_have_count(min(40, len(newest)))
    assert page.eval_on_selector_all("#entries tbody tr", ENTRY_JS)[20:] == [
        said_entry(e, "zh") for e in newest[20:40]
    ]
    page.click("#lang")
    expect(page.locator("#entries h4")).to_have_text("Coin entries, last booked first")
    # booking order, not time order: the list says so, and why its times may not run in order
    expect(page.locator("#entries-order")).to_contain_text("a table sent late is booked late")
    expect(rows).to_have_count(20)
    assert page.eval_on_selector_all("#entries tbody tr", ENTRY_JS) == [
        said_entry(e, "en") for e in newest[:20]
    ]
    kong = next((e for e in newest[:20] if e["reason"] == "kong"), newest[0])
    page.click(f"#entries tbody tr[data-seq='{kong['seq']}'] a")
    page.wait_for_url(f"**/replay?table={kong['table_id']}&hand={kong['hand']}&at={kong['event']}")
    expect(page.locator("#step")).to_have_attribute("data-at", str(kong["event"]))


def test_on_a_phone_each_coin_entry_is_a_card_read_without_scrolling(browser: Any, desk: Desk) -> None:
    """At 390 px an entry is a card: its cells one under another, each named by its column, the
    derivation inside the screen (the table was wider than the screen, the why out of sight)."""
    context = browser.new_context(locale="zh-CN", viewport={"width": 390, "height": 844})
    tab = context.new_page()
    try:
        open_dashboard(tab, desk, role="support", query="?player=p001")
        expect(tab.locator("#entries tbody tr")).to_have_count(20)
        assert assert_cards(tab, "#entries thead th", "#entries tbody tr") == 20
    finally:
        context.close()


@pytest.fixture(scope="module")
def backfilled(desk: Desk) -> tuple[str, str]:
    """A tenant of its own whose platform sent a table, then an older one (a backfill): its player's
    ledger holds the newer table's entries before the older one's. (dashboard key, player)"""
    from domain.simulate import simulate_table
    from tests.service.serving import wait_for

    platform, dashboard = desk.tenant_keys("backfill", "platform", "dashboard")
    players = ["bf-a", "bf-b", "bf-c"]
    headers = {"Authorization": f"Bearer {platform}"}
    for n, start in enumerate(["2026-11-25T20:00:00+00:00", "2026-11-12T09:00:00+00:00"]):
        when = datetime.fromisoformat(start)
        events = simulate_table(random.Random(90 + n), 3, None, f"bf-{n}", start=when, players=players)
        body = {"events": events, "expected_version": 0}
        answer = httpx.post(f"{desk.base}/v1/tables/bf-{n}/events", json=body, headers=headers, timeout=60)
        assert answer.status_code == 201, answer.text

    def both_in() -> bool:
        got = httpx.get(f"{desk.base}/v1/players/bf-a/ledger", params={"limit": 1000},
                        headers={"Authorization": f"Bearer {dashboard}"}, timeout=30)  # fmt: skip
        return got.status_code == 200 and {e["table_id"] for e in got.json()["entries"]} == {"bf-0", "bf-1"}

    wait_for(both_in, 120, "the projector did not take both backfilled tables")
    return dashboard, "bf-a"


def test_the_balance_over_time_follows_the_hands_times_not_the_order_they_arrived(
    page: Any, desk: Desk, backfilled: tuple[str, str]
) -> None:
    key, player = backfilled
    ledger = httpx.get(f"{desk.base}/v1/players/{player}/ledger", params={"limit": 1000},
                       headers={"Authorization": f"Bearer {key}"}, timeout=30).json()  # fmt: skip
    entries = ledger["entries"]
    times = [e["at"] for e in entries]
    assert times != sorted(times), "the ledger is in time order: this test shows nothing"
    page.goto(f"{desk.base}/dashboard?player={player}")
    page.fill("#signin input[name=key]", key)
    page.press("#signin input[name=key]", "Enter")
    expect(page.locator("#ledger-summary")).to_have_attribute("data-balance", str(ledger["balance"]))
    drawn = page.eval_on_selector_all(
        "svg.chart circle.point", "cs => cs.map(c => [c.dataset.at, Number(c.dataset.y)])"
    )
    assert [at for at, _ in drawn] == sorted(at for at, _ in drawn)  # left to right in time
    assert [y for _, y in drawn] == over_time(entries) and drawn[-1][1] == ledger["balance"]
    # each point is the balance after every hand up to its time: the older table's hands first
    older = sum(e["amount"] for e in entries if e["table_id"] == "bf-1")
    assert drawn[sum(e["table_id"] == "bf-1" for e in entries) - 1][1] == older


def test_the_chart_pages_through_the_ledger(page: Any, desk: Desk) -> None:
    ledger = desk.api("/v1/players/p003/ledger", "dashboard", limit=1000)
    open_dashboard(page, desk, query="?player=p003&ledger_limit=7")
    summary = page.locator("#ledger-summary")
    expect(summary).to_have_attribute("data-balance", str(ledger["balance"]))
    pages = -(-ledger["entries_total"] // 7)
    assert pages > 1 and summary.get_attribute("data-pages") == str(pages)
    ys = page.eval_on_selector_all("svg.chart circle.point", "cs => cs.map(c => Number(c.dataset.y))")
    assert ys == over_time(ledger["entries"]) and ys[-1] == ledger["balance"]
    # the keyboard reaches the same readout as the mouse
    page.focus("svg.chart")
    page.keyboard.press("ArrowRight")
    expect(page.locator("svg.chart g.tip")).to_have_attribute("data-y", str(ledger["balance"]))


def shown_board(page: Any) -> list[tuple[str, int, Any, dict[str, Any]]]:
    """(player, rank, value, {stat: value}) of each leaderboard row, top to bottom."""
    rows = page.eval_on_selector_all("#board-table tbody tr", BOARD_JS)
    return [(p, r, json.loads(v), {k: json.loads(x) for k, x in cells.items()}) for p, r, v, cells in rows]


def expected_board(answer: dict[str, Any], keys: list[str]) -> list[tuple[str, int, Any, dict[str, Any]]]:
    ratios = set(answer["players"][0]["ratios"]) if answer["players"] else set()
    return [
        (
            row["player_id"],
            row["rank"],
            row["value"],
            {k: (row["ratios"][k] if k in ratios else row[k]) for k in keys},
        )
        for row in answer["players"]
    ]


def board_query(**asked: Any) -> str:
    """The query the page read its board with (data-query): the API's parameter order, empty ones left out."""
    names = ("by", "order", "preset", "since", "until", "min_hands", "offset", "limit")
    full = {"min_hands": 0, "offset": 0, **asked}
    return urlencode([(k, full[k]) for k in names if full.get(k, "") != ""])


SORTED_IN_VIEW_JS = """() => {
  const scroller = document.querySelector('#board .scroll');
  const box = scroller.getBoundingClientRect();
  const player = document.querySelector('#board-table th:nth-child(2)');
  const fixed = player.getBoundingClientRect();
  const th = document.querySelector('#board-table th.sorted').getBoundingClientRect();
  const cut = [...document.querySelectorAll('#board-table thead th')].slice(2).filter((c) => {
    const r = c.getBoundingClientRect();
    return r.left < fixed.right - 1 && r.right > fixed.right + 1;
  }).map((c) => c.dataset.sort);
  return {after_fixed: th.left - fixed.right, before_edge: box.right - th.right, cut,
          scrolled: scroller.scrollLeft, end: scroller.scrollWidth - scroller.clientWidth,
          marked: scroller.classList.contains('scrolled'), shadow: getComputedStyle(player).boxShadow};
}"""


def board_is(page: Any, by: str, order: str, *, uncut: bool = False) -> None:
    """The board is ranked by ``by`` in ``order``, and that column is in view: right of the sticky
    rank and player columns, inside the board's scrolling box. No column is cut beneath the sticky
    ones unless the board is scrolled to its very end (a last column, whose start it cannot reach
    there; ``uncut``: not even then), and once scrolled their edge casts a shadow."""
    table = page.locator("#board-table")
    expect(table).to_have_attribute("data-by", by)
    expect(table).to_have_attribute("data-order", order)
    seen = page.evaluate(SORTED_IN_VIEW_JS)
    assert seen["after_fixed"] >= -1 and seen["before_edge"] >= -1, (by, seen)
    assert not seen["cut"] or (seen["scrolled"] >= seen["end"] - 1 and not uncut), (by, seen)
    assert seen["marked"] == (seen["scrolled"] > 0), (by, seen)
    assert (seen["shadow"] != "none") == (seen["scrolled"] > 0), (by, seen)


def test_clicking_each_column_sorts_the_board_as_the_api_does_both_ways(page: Any, desk: Desk) -> None:
    keys = sortable()
    open_dashboard(page, desk)
    # (net coins sits far right on a board wider than the box: the scroll that shows it used to end
    # at the board's end, a column's digits peeking out beside the player ids)
    board_is(page, "net_coins", "desc", uncut=True)
    page.locator("#board-table th[data-sort=net_coins] button").click()
    board_is(page, "net_coins", "asc")
    page.locator("#board-table th[data-sort=net_coins] button").click()
    board_is(page, "net_coins", "desc")
    assert shown_board(page) == expected_board(desk.api("/v1/leaderboard", "dashboard", limit=25), keys)
    options = page.eval_on_selector_all("#by option", "os => os.map(o => o.value)")
    assert options == keys  # every statistic the API ranks by, in its order
    seen_orders = set()
    for by in keys:
        header = page.locator(f"#board-table th[data-sort={by}] button")
        header.click()
        first = "desc"  # another column starts high; clicking the sorted one flips it
        board_is(page, by, first)
        for order in (first, "asc" if first == "desc" else "desc"):
            if order != first:
                page.locator(f"#board-table th[data-sort={by}] button").click()
                board_is(page, by, order)
            answer = desk.api("/v1/leaderboard", "dashboard", by=by, order=order, limit=25)
            assert shown_board(page) == expected_board(answer, keys), (by, order)
            seen_orders.add(tuple(p for p, *_ in shown_board(page)))
        assert f"by={by}" in page.url or by == "net_coins"
    assert len(seen_orders) > 2  # the sorts really rank differently


def test_period_preset_minimum_and_paging_equal_the_api(page: Any, desk: Desk) -> None:
    keys = sortable()
    open_dashboard(page, desk, query="?limit=2&by=wins&order=asc")
    board_is(page, "wins", "asc")
    offset, seen = 0, []
    while True:
        answer = desk.api("/v1/leaderboard", "dashboard", by="wins", order="asc", limit=2, offset=offset)
        expect(page.locator("#board-table")).to_have_attribute(
            "data-query", board_query(by="wins", order="asc", offset=offset, limit=2)
        )
        expect(page.locator("#board-range")).to_contain_text(f"{offset + 1}–")
        assert shown_board(page) == expected_board(answer, keys), offset
        seen += [p for p, *_ in shown_board(page)]
        if answer["next_offset"] is None:
            expect(page.locator("#board-next")).to_be_disabled()
            break
        page.click("#board-next")
        offset = answer["next_offset"]
    assert seen == [
        r["player_id"] for r in desk.api("/v1/leaderboard", "dashboard", by="wins", order="asc")["players"]
    ]
    page.click("#board-prev")
    expect(page.locator("#board-table")).to_have_attribute(
        "data-query", board_query(by="wins", order="asc", offset=offset - 2, limit=2)
    )
    # a period, a preset and a minimum number of hands
    day = desk.tables[sorted(desk.tables)[0]][0]["at"][:10]
    periods = (
        (day, day, "default", "0"),
        (day, "", "", "13"),
        ("2099-01-01", "", "", "0"),
        ("", day, "xiangyang", "0"),
    )
    for since, until, preset, min_hands in periods:
        page.fill("#since", since)
        page.fill("#until", until)
        page.select_option("#preset", preset)
        page.fill("#min_hands", min_hands)
        page.click("#board-form button[type=submit]")
        params = {k: v for k, v in (("since", since), ("until", until), ("preset", preset)) if v}
        expect(page.locator("#board-table")).to_have_attribute(
            "data-query", board_query(by="wins", order="asc", min_hands=min_hands, limit=2, **params)
        )
        answer = desk.api("/v1/leaderboard", "dashboard", by="wins", order="asc", limit=2,
                          min_hands=min_hands, **params)  # fmt: skip
        assert shown_board(page) == expected_board(answer, keys), (since, until, preset, min_hands)
        assert page.locator("#board-empty").count() == (0 if answer["players"] else 1)
        assert f"min_hands={min_hands}" in page.url or min_hands == "0"


def test_clicking_a_player_in_the_board_opens_their_stats(page: Any, desk: Desk) -> None:
    open_dashboard(page, desk)
    last = desk.api("/v1/leaderboard", "dashboard")["players"][-1]["player_id"]
    page.click(f"#board-table tr[data-player={last}] button.player")
    expect(page.locator("#stats-of")).to_have_attribute("data-player", last)
    assert shown_stats(page) == expected_stats(desk.api(f"/v1/players/{last}/stats", "dashboard"), sortable())
    expect(page.locator("#ledger-summary")).to_have_attribute(
        "data-balance", str(desk.api(f"/v1/players/{last}/ledger", "dashboard")["balance"])
    )
    assert f"player={last}" in page.url


def test_the_discrepancies_feed_is_newest_first_and_links_to_the_replay(page: Any, desk: Desk) -> None:
    feed = desk.api("/v1/discrepancies", "support", limit=1000)["discrepancies"]
    assert feed, "the desk's simulation reports some payouts wrong"
    open_dashboard(page, desk, role="support")
    items = page.locator("#feed li")
    expect(items).to_have_count(len(feed))
    newest = sorted(feed, key=lambda d: d["seq"], reverse=True)
    shown = page.eval_on_selector_all(
        "#feed li",
        "lis => lis.map(li => [Number(li.dataset.seq), li.querySelector('a').getAttribute('href')])",
    )
    links = [f"/replay?table={d['table_id']}&hand={d['hand']}&at={d['reported_event']}" for d in newest]
    assert shown == [[d["seq"], link] for d, link in zip(newest, links, strict=True)]
    first = newest[0]["lines"][0]
    expect(items.first).to_contain_text(f"{first['reported']}")
    expect(items.first).to_contain_text(f"{first['computed']}")
    # each line's parties in the seat words of the replay and the API's Chinese (the tab is zh-CN),
    # its hand as the replay and the timeline say it
    said = {"house": "平台", 0: "甲", 1: "乙", 2: "丙"}
    expect(items.first).to_contain_text(f"{said[first['from']]} → {said[first['to']]}: ")
    expect(items.first.locator("a")).to_have_text(f"牌桌 {newest[0]['table_id']} · 第{newest[0]['hand']}局")
    items.first.locator("a").click()
    page.wait_for_url(f"**{links[0]}")
    # the replay opens at the reported payout: the computed settlement beside it, the difference said
    expect(page.locator("#step")).to_have_attribute("data-at", str(newest[0]["reported_event"]))
    expect(page.locator("#settlement .reported.error").first).to_be_visible()
    expect(page.locator("#settlement table.transfers")).to_be_visible()


def test_a_dashboard_key_reads_all_but_the_feed_and_is_told_so_plainly(page: Any, desk: Desk) -> None:
    open_dashboard(page, desk, query="?player=p002")
    notice = page.locator("#discrepancies .notice")
    expect(notice).to_have_attribute("data-status", "403")
    expect(notice).to_have_text("您的密钥（角色 dashboard）无权查看赔付差异（需 support 或 platform 角色）。")
    assert "error" not in (notice.get_attribute("class") or "") and "{" not in notice.inner_text()
    expect(page.locator("#stats-of")).to_have_attribute("data-player", "p002")
    expect(page.locator("#board-table tbody tr")).to_have_count(
        len(desk.api("/v1/leaderboard", "dashboard")["players"])
    )
    expect(page.locator("svg.chart")).to_be_visible()
    page.click("#lang")
    expect(notice).to_have_text(
        "Your key (role dashboard) may not read the discrepancies feed (it needs a support or platform key)."
    )


def test_an_unknown_player_and_a_revoked_key_are_said_plainly(page: Any, desk: Desk) -> None:
    open_dashboard(page, desk)
    page.fill("#player-input", "nobody-here")
    page.click("#player-form button[type=submit]")
    expect(page.locator("#stats .notice")).to_have_text("没有玩家 nobody-here 的统计。")
    expect(page.locator("#chart")).to_contain_text("暂无金币记录")
    page.goto(f"{desk.base}/dashboard?min_hands=-1")
    expect(page.locator("#board .notice")).to_contain_text("query.min_hands")
    page.evaluate("sessionStorage.setItem('kwx.key', 'kwx_not_a_key')")
    page.goto(f"{desk.base}/dashboard")
    expect(page.locator("#board .notice")).to_have_text("密钥无效或已撤销，请重新登录。")
    expect(page.locator("#signin")).to_be_visible()
    sign_in(page, desk, "dashboard")
    expect(page.locator("#board-table")).to_be_visible()


def test_the_language_switch_redraws_every_text(page: Any, desk: Desk) -> None:
    open_dashboard(page, desk, role="support", query="?player=p001")
    expect(page.locator("#board-card h2")).to_have_text("排行榜")
    expect(page.locator("#board-table th[data-sort=net_coins]")).to_contain_text("净输赢")
    expect(page.locator("#stats-of tr[data-stat=wins] th")).to_have_text("胡牌")
    expect(page.locator("#preset option[value=xiangyang]")).to_have_text("襄阳")
    expect(page.locator("#stats-of th[data-block=default]")).to_have_text("默认规则")
    before = shown_stats(page)
    page.click("#lang")
    expect(page.locator("#board-card h2")).to_have_text("Leaderboard")
    expect(page.locator("#stats-card h2")).to_have_text("Player statistics")
    expect(page.locator("#disc-card h2")).to_have_text("Discrepancies")
    expect(page.locator("#board-table th[data-sort=net_coins]")).to_contain_text("Net coins")
    expect(page.locator("#stats-of tr[data-stat=wins] th")).to_have_text("Wins")
    expect(page.locator("#by option[value=win_rate]")).to_have_text("Win rate")
    expect(page.locator("#preset option[value=xiangyang]")).to_have_text("Xiangyang")  # by its town's name
    expect(page.locator("#lang")).to_have_text("中文")
    expect(page.locator("svg.chart text.axis-label").first).to_have_text("Balance")
    expect(page.locator("#feed li").first).to_contain_text("Reported")
    assert page.evaluate("document.documentElement.lang") == "en"
    assert shown_stats(page) == before  # the same numbers, other words
    # no Chinese left in English but the way back (中文): the rules' names as the API's English says
    # them (it said "Liang dao rate", "Lou hu per hand")
    expect(page.locator("#by option[value=liang_dao_rate]")).to_have_text("Declared-ready rate")
    expect(page.locator("#stats-of tr[data-stat=lou_hu_incurred] th")).to_have_text("Missed wins")
    page.evaluate("document.getElementById('lang').textContent = ''")
    cjk = "[\u3000-\u9fff\uff00-\uffef]"
    chinese = [x for x in page.inner_text("#app").splitlines() if re.search(cjk, x)]
    assert chinese == []
    page.evaluate("document.getElementById('lang').textContent = '中文'")
    page.reload()
    expect(page.locator("#board-card h2")).to_have_text("Leaderboard")  # the tab keeps the choice
    page.click("#lang")
    expect(page.locator("#board-card h2")).to_have_text("排行榜")


@pytest.mark.parametrize("size", [(1280, 800), (390, 844)])
def test_screenshots_at_desk_and_phone_sizes(
    browser: Any, desk: Desk, tmp_path: Path, size: tuple[int, int]
) -> None:
    context = browser.new_context(locale="zh-CN", viewport={"width": size[0], "height": size[1]})
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda e: errors.append(str(e)))
    try:
        open_dashboard(tab, desk, role="support", query="?player=p001")
        expect(tab.locator("svg.chart")).to_be_visible()
        expect(tab.locator("#feed li").first).to_be_visible()
        # the page reflows: only the wide tables scroll, inside their own box
        save_screenshot(tab, "dashboard", size, tmp_path)
        board_is(tab, "net_coins", "desc")  # the ranked column is in view at this size too
        chart = tab.locator("svg.chart").bounding_box()
        assert chart is not None and chart["width"] <= size[0]
    finally:
        context.close()
    assert not errors, errors


def test_sign_out_forgets_the_key(page: Any, desk: Desk) -> None:
    open_dashboard(page, desk)
    expect(page.locator("#board-table")).to_be_visible()
    page.click("#signout")
    expect(page.locator("#signin")).to_be_visible()
    assert page.evaluate("sessionStorage.getItem('kwx.key')") is None


def test_another_tenants_key_sees_none_of_the_desk(page: Any, desk: Desk) -> None:
    """The desk's players are the same "no statistics" to another tenant as a player nobody has."""
    open_dashboard(page, desk, role="elsewhere", query="?player=p001")
    expect(page.locator("#stats .notice")).to_have_text("没有玩家 p001 的统计。")
    expect(page.locator("#chart")).to_contain_text("暂无金币记录")
    expect(page.locator("#board-empty")).to_be_visible()
    expect(page.locator("#board-table tbody tr")).to_have_count(0)
    page.fill("#player-input", "nobody-here")
    page.click("#player-form button[type=submit]")
    expect(page.locator("#stats .notice")).to_have_text("没有玩家 nobody-here 的统计。")
