"""The replay page (issue 17) in a real Chromium against a served desk: what it shows equals the
API's answers (each seat's tiles, melds, discards, waits, wall count, whose turn), a seat's view
holds no other seat's concealed tile, the permalink round-trips and warns on a tampered hash, the
keys and jumps move where they say, the audit panel and the dispute report carry the API's
derivations, and zh/en redraws everything."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest
from playwright.sync_api import expect

from tests.browser.conftest import KONG_TABLE, LOU_HU_TABLE, Desk, assert_cards, save_screenshot, sign_in

DEALT_TABLE = "sim-17-1"  # xiangyang would have passed the deal on otherwise (hand 3's start)


def by_seat(coins: list[int], lang: str = "zh") -> str:
    """Coins per seat as the page says them: 甲 0，乙 -4，丙 +4 / seat 0: 0, seat 1: -4, seat 2: +4."""
    signed = [f"+{n}" if n > 0 else str(n) for n in coins]
    if lang == "zh":
        return "，".join(f"{'甲乙丙'[s]} {n}" for s, n in enumerate(signed))
    return ", ".join(f"seat {s}: {n}" for s, n in enumerate(signed))


def expand(compact: str | None) -> list[str]:
    out: list[str] = []
    for group in (compact or "").split():
        if group[-1] in "ps":
            out += [d + group[-1] for d in group[:-1]]
        else:
            out += list(group)
    return out


def open_at(page: Any, desk: Desk, table: str, at: int | None = None, **extra: Any) -> None:
    query = {"table": table, **({"at": at} if at is not None else {}), **extra}
    page.goto(f"{desk.base}/replay?{urlencode(query)}")
    if page.is_visible("#signin"):
        sign_in(page, desk)
    if at is not None:
        expect(page.locator("#step")).to_have_attribute("data-at", str(at))
    else:
        page.wait_for_selector("#step[data-at]")


def tiles_in(page: Any, selector: str) -> list[str]:
    names: list[str] = page.eval_on_selector_all(
        selector + " svg.tile[data-tile]", "ns => ns.map(n => n.dataset.tile)"
    )
    return names


def lines(desk: Desk, table: str, lang: str = "zh") -> list[dict[str, Any]]:
    hands = desk.api(f"/v1/tables/{table}/hands")["hands"]
    out: list[dict[str, Any]] = []
    for h in hands:
        tl = desk.api(f"/v1/tables/{table}/hands/{h['hand']}/timeline", lang=lang)
        out += [x for x in tl["lines"] if x["kind"] not in ("transfer", "net")]
    return out


def test_search_filters_like_the_api_and_opens_a_table(page: Any, desk: Desk) -> None:
    page.goto(desk.base + "/replay")
    sign_in(page, desk)
    found = desk.api("/v1/tables")["tables"]
    every = [t["table_id"] for t in found]
    expect(page.locator("#results-body tr[data-table]")).to_have_count(len(every))
    assert (
        page.eval_on_selector_all("#results-body tr[data-table]", "rs => rs.map(r => r.dataset.table)")
        == every
    )
    # when each table started, to the minute in UTC as the dashboard says a time (the heading says UTC)
    started = page.eval_on_selector_all(
        "#results-body td.first-at", "ts => ts.map(t => [t.dataset.at, t.textContent])"
    )
    assert started == [[t["first_at"], t["first_at"][:16].replace("T", " ")] for t in found]
    expect(page.locator("#results thead th").nth(4)).to_have_text("开始（UTC）")
    page.fill("#search-form input[name=player]", "p004")
    page.click("#search-form button[type=submit]")
    want = [t["table_id"] for t in desk.api("/v1/tables", player="p004")["tables"]]
    assert 0 < len(want) < len(every)
    expect(page.locator("#results-body tr[data-table]")).to_have_count(len(want))
    page.fill("#search-form input[name=player]", "")
    page.fill("#search-form input[name=since]", "2026-11-21")
    page.click("#search-form button[type=submit]")
    assert desk.api("/v1/tables", since="2026-11-21")["tables"] == []
    expect(page.locator("#results-body")).to_contain_text("没有符合的牌桌")
    expect(page.locator("#results-body tr[data-table]")).to_have_count(0)
    page.fill("#search-form input[name=since]", "")
    # "until" a day is through that day: the day the first table started finds it (it found nothing)
    day = found[-1]["first_at"][:10]
    page.fill("#search-form input[name=until]", day)
    page.click("#search-form button[type=submit]")
    want = [t["table_id"] for t in desk.api("/v1/tables", until=day)["tables"]]
    assert found[-1]["table_id"] in want
    expect(page.locator("#results-body tr[data-table]")).to_have_count(len(want))
    page.fill("#search-form input[name=until]", "")
    page.check("#search-form input[name=has][value=lou_hu]")
    page.click("#search-form button[type=submit]")
    want = [t["table_id"] for t in desk.api("/v1/tables", has="lou_hu")["tables"]]
    expect(page.locator("#results-body tr[data-table]")).to_have_count(len(want))
    page.click(f"#results-body tr[data-table='{want[0]}'] button")
    hands = desk.api(f"/v1/tables/{want[0]}/hands")["hands"]
    expect(page.locator("#hands button")).to_have_count(len(hands))
    expect(page.locator("#step")).to_have_attribute("data-at", str(hands[0]["first_event"]))
    assert want[0] in page.inner_text("#table-title")


FLAG_WORDS = {
    "zh": {"lou_hu": "漏胡", "kong_chain": "杠上杠", "liang_dao": "亮倒", "bao_hu": "包胡",
           "discrepancy": "上报不一致"},
    "en": {"lou_hu": "missed win", "kong_chain": "kong chain", "liang_dao": "declared ready",
           "bao_hu": "bao hu", "discrepancy": "reported payout differs"},
}  # fmt: skip


def test_the_search_says_each_flag_in_the_pages_language(page: Any, desk: Desk) -> None:
    """The discovery API's flags are wire ids (lou_hu, kong_chain …): the search's checkboxes, the
    results' flags column and each hand button's title say them in words, and a language switch
    says them again."""
    page.goto(desk.base + "/replay")
    sign_in(page, desk)
    tables = desk.api("/v1/tables")["tables"]
    expect(page.locator("#results-body tr[data-table]")).to_have_count(len(tables))
    table = next(x for x in tables if "lou_hu" in x["flags"])
    hands = desk.api(f"/v1/tables/{table['table_id']}/hands")["hands"]
    flagged = next(h for h in hands if h["flags"])
    button = page.locator(f"#hands button[data-hand='{flagged['hand']}']")
    for lang in ("zh", "en"):
        if lang == "en":  # from the first screen on, before any table is open
            page.click("#lang")
            expect(page.locator("#lang")).to_have_text("中文")
            expect(page.locator("#signout")).to_have_text("Sign out")
        for flag, word in FLAG_WORDS[lang].items():
            label = page.locator("#search-form label", has=page.locator(f"input[value={flag}]"))
            expect(label).to_have_text(word)
        for x in tables:
            cell = page.locator(f"#results-body tr[data-table='{x['table_id']}'] td.flag-words")
            shown = cell.locator("[data-flag]")
            expect(shown).to_have_count(len(x["flags"]))
            assert shown.evaluate_all("ns => ns.map(n => n.dataset.flag)") == x["flags"]
            for flag in x["flags"]:
                if flag in FLAG_WORDS[lang]:
                    expect(cell.locator(f"[data-flag={flag}]")).to_have_text(FLAG_WORDS[lang][flag])
            assert "_" not in cell.inner_text(), cell.inner_text()  # no wire id left
    page.click(f"#results-body tr[data-table='{table['table_id']}'] button")
    expect(button).to_have_attribute("title", re.compile("^(won|wall exhausted|aborted) · "))
    for flag in flagged["flags"]:
        if flag in FLAG_WORDS["en"]:
            assert FLAG_WORDS["en"][flag] in (button.get_attribute("title") or "")
    expect(button).to_have_text(f"Hand {flagged['hand']} •")  # a dot: something happened in it
    page.click("#lang")  # back to Chinese: the titles too, and each hand as the timeline says it
    expect(button).to_have_attribute("title", re.compile("^(胡牌|荒庄|中止) · "))
    expect(button).to_have_text(f"第{flagged['hand']}局 •")
    quiet = [h for h in hands if not h["flags"]]
    for h in quiet:
        expect(page.locator(f"#hands button[data-hand='{h['hand']}']")).to_have_text(f"第{h['hand']}局")
    expect(page.locator("#hand-no")).to_have_text(f"第{hands[0]['hand']}局")  # the board's, opened at hand 1


# RULES.md §10: each preset by its town (or what it is), the wire id kept in value and title
PRESET_NAMES = {
    "zh": {"default": "默认规则", "xiangyang": "襄阳", "shiyan": "十堰", "xiaogan": "孝感", "yunmeng": "云梦",
           "uncapped": "不封顶", "platform_3d": "3D平台"},
    "en": {"default": "default", "xiangyang": "Xiangyang", "shiyan": "Shiyan", "xiaogan": "Xiaogan",
           "yunmeng": "Yunmeng", "uncapped": "uncapped", "platform_3d": "3D platform"},
}  # fmt: skip


def test_a_preset_is_said_by_its_towns_name(page: Any, desk: Desk) -> None:
    """The search's preset choice, the results' preset column, the open table's title and the
    what-if's choice say a preset by name in the page's language (they said the wire id,
    ``xiangyang``, on a Chinese page), the id in each option's value and title; a language switch
    says them again."""
    tables = desk.api("/v1/tables")["tables"]
    table = tables[0]
    last = desk.api(f"/v1/tables/{table['table_id']}/hands")["hands"][0]["last_event"]
    open_at(page, desk, table["table_id"], last)
    expect(page.locator("#settlement #whatif-preset")).to_be_visible()
    for lang in ("zh", "en"):
        if lang == "en":
            page.click("#lang")
            expect(page.locator("#lang")).to_have_text("中文")
        names = PRESET_NAMES[lang]
        expect(page.locator("#whatif-preset option[value=xiangyang]")).to_have_text(
            names["xiangyang"]
        )  # redrawn
        shown = page.eval_on_selector_all(
            "#search-form select[name=preset] option", "os => os.map(o => [o.value, o.title, o.textContent])"
        )
        assert [(v, text) for v, title, text in shown if v] == list(names.items())
        assert all(title == v for v, title, _ in shown if v)
        whatif = page.eval_on_selector_all(
            "#whatif-preset option", "os => os.map(o => [o.value, o.textContent])"
        )
        assert [tuple(x) for x in whatif] == list(names.items())
        expect(page.locator("#table-title .preset")).to_have_text(names[table["preset"]])
        for x in tables:
            cell = page.locator(f"#results-body tr[data-table='{x['table_id']}'] td[data-preset]")
            expect(cell).to_have_text(names[x["preset"]])


def test_a_language_switch_while_a_table_opens_keeps_where_it_was_going(page: Any, desk: Desk) -> None:
    """A switch of language while the table's first state read is still on its way goes where the
    page was going: it went to event 1 (the switch stepped to the event before the first one,
    whose answer then replaced the first step's as the later one) and the board said 第0局."""
    page.goto(desk.base + "/replay")
    sign_in(page, desk)
    table = KONG_TABLE
    first = desk.api(f"/v1/tables/{table}/hands")["hands"][0]["first_event"]
    held: list[Any] = []
    reads = re.compile(r"/v1/tables/[^/]+/state\?")

    def hold(route: Any) -> None:
        held.append(route)

    page.route(reads, hold)
    page.click(f"#results-body tr[data-table='{table}'] button")
    expect(page.locator("#hands button").first).to_be_visible()
    page.click("#lang")  # while the first step's state read is held
    expect(page.locator("#lang")).to_have_text("中文")
    for _ in range(200):  # both reads asked (each is held until both are)
        if len(held) >= 2:
            break
        page.wait_for_timeout(25)
    assert len(held) == 2, held
    for route in held:
        route.continue_()
    page.unroute(reads, hold)
    expect(page.locator("#step")).to_have_attribute("data-at", str(first))
    expect(page.locator("#hand-no")).to_have_text("Hand 1")


def test_on_a_phone_each_table_found_is_a_card_in_the_pages_language(browser: Any, desk: Desk) -> None:
    """At 390 px each table the search found is a card: its cells one under another, each named by
    its column in the page's language (again after a switch), inside the screen; a table's flags
    are listed with the language's separator (漏胡、亮倒 / missed win, declared ready). The results
    scrolled sideways with the flags out of sight."""
    context = browser.new_context(locale="zh-CN", viewport={"width": 390, "height": 844})
    tab = context.new_page()
    try:
        tab.goto(desk.base + "/replay")
        sign_in(tab, desk)
        tables = desk.api("/v1/tables")["tables"]
        expect(tab.locator("#results-body tr[data-table]")).to_have_count(len(tables))
        for lang in ("zh", "en"):
            if lang == "en":
                tab.click("#lang")
                expect(tab.locator("#lang")).to_have_text("中文")
            assert assert_cards(tab, "#results thead th", "#results-body tr[data-table]") == len(tables)
            flagged = next(x for x in tables if len(x["flags"]) > 1)
            words = [FLAG_WORDS[lang][f] for f in flagged["flags"] if f in FLAG_WORDS[lang]]
            if len(words) == len(flagged["flags"]):
                cell = tab.locator(f"#results-body tr[data-table='{flagged['table_id']}'] td.flag-words")
                expect(cell).to_have_text(("、" if lang == "zh" else ", ").join(words))
    finally:
        context.close()


def test_on_a_phone_each_transfer_of_a_settlement_is_a_card(browser: Any, desk: Desk) -> None:
    """At 390 px the audit panel's transfers are cards: payer, payee, coins and why one under
    another, each named in the page's language (again after a switch), inside the screen, with the
    transfer's derivation in the card. The table scrolled sideways, its derivations out of sight."""
    table = KONG_TABLE
    hands = desk.api(f"/v1/tables/{table}/hands")["hands"]
    settled = [(h, desk.api(f"/v1/tables/{table}/hands/{h['hand']}/settlement")["settlement"]) for h in hands]
    hand, settlement = max(
        ((h, s) for h, s in settled if h["winners"]), key=lambda hs: len(hs[1]["transfers"])
    )
    assert len(settlement["transfers"]) >= 3  # a hand worth laying out
    context = browser.new_context(locale="zh-CN", viewport={"width": 390, "height": 844})
    tab = context.new_page()
    try:
        open_at(tab, desk, table, hand["winners"][0]["event"])
        rows = tab.locator("#settlement table.transfers tr[data-event]")
        expect(rows).to_have_count(len(settlement["transfers"]))
        for lang in ("zh", "en"):
            if lang == "en":
                tab.click("#lang")
                expect(tab.locator("#lang")).to_have_text("中文")
                expect(tab.locator("#settlement table.transfers th").first).to_have_text("payer")
            cards = assert_cards(
                tab, "#settlement table.transfers th", "#settlement table.transfers tr[data-event]"
            )
            assert cards == len(settlement["transfers"])
            details = tab.eval_on_selector_all(
                "#settlement table.transfers small.detail", "ns => ns.map(n => n.textContent)"
            )
            said = "detail_zh" if lang == "zh" else "detail"
            assert details == [x[said] for x in settlement["transfers"]]
    finally:
        context.close()


def test_signing_out_of_the_replay_forgets_the_key(page: Any, desk: Desk) -> None:
    open_at(page, desk, KONG_TABLE, 5)
    assert page.evaluate("sessionStorage.getItem('kwx.key')") == desk.keys["support"]
    page.click("#signout")
    expect(page.locator("#signin")).to_be_visible()
    assert page.evaluate("sessionStorage.getItem('kwx.key')") is None
    assert page.is_hidden("#viewer")


def test_a_missing_table_is_said_so(page: Any, desk: Desk) -> None:
    page.goto(desk.base + "/replay")
    sign_in(page, desk)
    page.fill("#open-id", "no-such-table")
    page.click("#open-form button[type=submit]")
    expect(page.locator("#open-error")).to_have_text("没有这张牌桌：no-such-table")  # the tab is zh-CN
    assert page.is_hidden("#viewer")
    page.click("#lang")
    page.click("#open-form button[type=submit]")
    expect(page.locator("#open-error")).to_have_text("No such table: no-such-table")


@pytest.mark.parametrize("table", [KONG_TABLE, LOU_HU_TABLE])
def test_the_board_equals_the_state_at_several_events(page: Any, desk: Desk, table: str) -> None:
    latest = desk.api(f"/v1/tables/{table}/events", limit=1)["version"]
    open_at(page, desk, table, 5)
    for at in (5, 30, 77, 110, 153, latest - 3):
        page.fill("#jump-at", str(at))
        page.click("#jump-form button[type=submit]")
        expect(page.locator("#step")).to_have_attribute("data-at", str(at))
        st = desk.api(f"/v1/tables/{table}/state", at=at)
        h = st["hand"]
        assert page.get_attribute("#wall-count", "data-wall") == str(h["wall_remaining"]), at
        assert page.get_attribute("#turn", "data-turn") == str(h["turn"]), at
        assert page.get_attribute("#dealer", "data-dealer") == str(h["dealer"]), at
        for seat in h["seats"]:
            box = f".seat[data-seat='{seat['seat']}']"
            assert page.locator(f"{box} .concealed svg.tile").count() == seat["concealed_count"], (at, seat)
            assert sorted(tiles_in(page, f"{box} .concealed")) == sorted(expand(seat["concealed"])), (
                at,
                seat,
            )
            assert tiles_in(page, f"{box} .discards") == [d["tile"] for d in seat["discards"]], (at, seat)
            coins = page.locator(f"{box} .coins")
            assert coins.get_attribute("data-coins") == str(st["coins"][seat["seat"]]), (at, seat)
            assert coins.get_attribute("data-kong") == str(h["kong_money"][seat["seat"]]), (at, seat)
            claimed = sum(1 for d in seat["discards"] if d["claimed"])
            assert page.locator(f"{box} .discards svg.tile.claimed").count() == claimed, (at, seat)
            assert page.locator(f"{box} .melds .meld").count() == len(seat["melds"]), (at, seat)
            for i, m in enumerate(seat["melds"]):
                meld = page.locator(f"{box} .melds .meld").nth(i)
                assert meld.locator("svg.tile").count() == (3 if m["kind"] == "peng" else 4), (at, m)
                assert meld.locator("svg.tile.back").count() == (2 if m["kind"] == "kong_concealed" else 0), (
                    at,
                    m,
                )
            if seat["waits"]:
                assert tiles_in(page, f"{box} .ready") == seat["waits"], (at, seat)
            else:
                assert page.locator(f"{box} .ready svg.tile").count() == 0, (at, seat)
            if seat["liang_dao"]:
                expect(page.locator(f"{box} .liang-dao")).to_be_visible()


def test_a_seat_view_holds_no_other_seats_concealed_tile(page: Any, desk: Desk) -> None:
    table, seat = KONG_TABLE, 1
    for at in (30, 60):
        open_at(page, desk, table, at, seat=seat)
        full = desk.api(f"/v1/tables/{table}/state", at=at)["hand"]
        assert page.input_value("#seat") == str(seat)
        for other in full["seats"]:
            box = f".seat[data-seat='{other['seat']}'] .concealed"
            assert page.locator(f"{box} svg.tile").count() == other["concealed_count"]
            if other["seat"] == seat:
                assert sorted(tiles_in(page, box)) == sorted(expand(other["concealed"]))
            elif other["liang_dao"] is None:
                assert tiles_in(page, box) == [], (at, other["seat"])  # face down: no name at all
                assert page.locator(f"{box} svg.tile.back").count() == other["concealed_count"]
                assert page.locator(f".seat[data-seat='{other['seat']}'] .ready svg.tile").count() == 0
        # nor another seat's draws in the event list
        shown = dict(
            page.eval_on_selector_all("#timeline li", "ns => ns.map(n => [n.dataset.version, n.textContent])")
        )
        draws = [
            x for x in lines(desk, table)
            if x["kind"] == "tile_drawn" and x["seat"] != seat and x["tiles"] and str(x["version"]) in shown
        ]  # fmt: skip
        assert draws
        for line in draws:
            text = shown[str(line["version"])]
            assert line["text"] not in text and not any(x in text for x in ("筒", "条", "中", "发", "白")), (
                text
            )
        assert page.is_disabled("#report-btn")  # the report holds every hand: support's view only


def test_a_jump_past_the_head_is_refused_by_the_box_and_a_jump_says_where_it_landed(
    page: Any, desk: Desk
) -> None:
    table = KONG_TABLE
    head = len(desk.tables[table])
    open_at(page, desk, table, 10)
    expect(page.locator("#jump-at")).to_have_attribute("max", str(head))
    page.fill("#jump-at", str(head + 500))
    page.press("#jump-at", "Enter")  # the browser's own check: the value is over the box's max
    assert page.eval_on_selector("#jump-at", "n => n.validity.rangeOverflow")
    expect(page.locator("#step")).to_have_attribute("data-at", "10")
    page.fill("#jump-at", "20")
    page.click("#jump-form button[type=submit]")
    expect(page.locator("#step")).to_have_attribute("data-at", "20")
    expect(page.locator("#jump-at")).to_have_value("20")


def test_the_permalink_round_trips_and_a_tampered_hash_warns(page: Any, desk: Desk) -> None:
    table, at = KONG_TABLE, 77
    open_at(page, desk, table, 40, seat=2)
    page.fill("#jump-at", str(at))
    page.click("#jump-form button[type=submit]")
    expect(page.locator("#step")).to_have_attribute("data-at", str(at))
    page.wait_for_function(f"location.search.includes('at={at}')")
    q = parse_qs(urlsplit(page.url).query)
    hands = desk.api(f"/v1/tables/{table}/hands")["hands"]
    hand = max(h["hand"] for h in hands if h["first_event"] <= at)
    report = desk.api(f"/v1/tables/{table}/hands/{hand}/report")
    stored = next(e["hash"] for e in report["events"] if e["version"] == at)
    assert q == {"table": [table], "hand": [str(hand)], "at": [str(at)], "seat": ["2"], "hash": [stored]}
    link = page.url
    page.goto(desk.base + "/replay")  # elsewhere, then back by the link
    page.goto(link)
    expect(page.locator("#step")).to_have_attribute("data-at", str(at))
    assert page.input_value("#seat") == "2"
    assert tiles_in(page, ".seat[data-seat='2'] .concealed")  # seat 2's own tiles, face up
    assert tiles_in(page, ".seat[data-seat='0'] .concealed") == []
    expect(page.locator("#hash-warning")).to_be_hidden()
    tampered = stored[:-1] + ("0" if stored[-1] != "0" else "1")
    page.goto(link.replace(stored, tampered))
    expect(page.locator("#hash-warning")).to_be_visible()
    expect(page.locator("#hash-warning")).to_contain_text(str(at))
    expect(page.locator("#hash-warning")).to_contain_text(stored[:12])


def test_keys_move_as_the_help_says(page: Any, desk: Desk) -> None:
    table = KONG_TABLE
    hands = desk.api(f"/v1/tables/{table}/hands")["hands"]
    h2, h3 = hands[1], hands[2]
    steps = lines(desk, table)
    open_at(page, desk, table, h2["first_event"] + 5)
    start = h2["first_event"] + 5
    page.keyboard.press("ArrowRight")
    expect(page.locator("#step")).to_have_attribute("data-at", str(start + 1))
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    expect(page.locator("#step")).to_have_attribute("data-at", str(start - 1))
    page.keyboard.press("End")
    expect(page.locator("#step")).to_have_attribute("data-at", str(h3["first_event"] - 1))
    page.keyboard.press("Home")
    expect(page.locator("#step")).to_have_attribute("data-at", str(h2["first_event"]))
    # ↓: seat 0's (the focused seat's) next decision; ↑ back to the one before
    kinds = ("tile_discarded", "peng", "kong", "liang_dao", "hu")
    decisions = [
        x["version"] for x in steps
        if (x["seat"] == 0 and x["kind"] in kinds) or any(c["seat"] == 0 for c in x.get("candidates") or [])
    ]  # fmt: skip
    after = [v for v in decisions if v > h2["first_event"]]
    page.keyboard.press("ArrowDown")
    expect(page.locator("#step")).to_have_attribute("data-at", str(after[0]))
    page.keyboard.press("ArrowDown")
    expect(page.locator("#step")).to_have_attribute("data-at", str(after[1]))
    page.keyboard.press("ArrowUp")
    expect(page.locator("#step")).to_have_attribute("data-at", str(after[0]))
    # PgDn: the next ruling (here a reported payout that differs from the computed one)
    rulings = [x["version"] for x in steps if x.get("ruling") or x.get("differences")]
    assert rulings
    page.keyboard.press("PageDown")
    expect(page.locator("#step")).to_have_attribute("data-at", str(next(v for v in rulings if v > after[0])))
    expect(page.locator("#help")).to_be_hidden()
    page.keyboard.press("?")
    expect(page.locator("#help")).to_be_visible()
    page.keyboard.press("?")
    expect(page.locator("#help")).to_be_hidden()
    # opened, the help takes the focus; closed (Escape), it gives it back to the button that opened it
    page.click("#help-btn")
    expect(page.locator("#help-close")).to_be_focused()
    page.keyboard.press("Escape")
    expect(page.locator("#help")).to_be_hidden()
    expect(page.locator("#help-btn")).to_be_focused()


def test_jumps_and_the_lou_hu_explanation(page: Any, desk: Desk) -> None:
    table = LOU_HU_TABLE
    steps = lines(desk, table)
    lou = [x["version"] for x in steps if "lou_hu" in x["codes"]]
    open_at(page, desk, table, 2)
    page.click("button[data-jump=lou_hu][data-dir='1']")
    expect(page.locator("#step")).to_have_attribute("data-at", str(lou[0]))
    tl = desk.api(f"/v1/tables/{table}/hands/2/timeline", lang="zh")
    expect(page.locator("#audit .lou-hu-text").first).to_have_text(tl["lou_hu"][0]["text"])
    # the passed winning discard is visible on the board: the seat that could win is named, in the
    # timeline's seat word (乙 for seat 1 on a zh page)
    passer = tl["lou_hu"][0]["seat"]
    expect(page.locator(".badge.can-win")).to_contain_text(f"{tl['seat_words'][passer]}可胡")
    passed = page.locator(f"svg.tile.passed-win[data-event='{lou[0]}']")
    expect(passed).to_have_count(1)
    page.keyboard.press("ArrowRight")  # later in the hand the passed discard stays marked
    expect(page.locator("#step")).to_have_attribute("data-at", str(lou[0] + 1))
    expect(passed).to_have_count(1)
    for kind in ("hu", "kong", "liang_dao"):
        want = next(x["version"] for x in steps if x["kind"] == kind and x["version"] > lou[0])
        page.click(f"button[data-jump={kind}][data-dir='1']")
        expect(page.locator("#step")).to_have_attribute("data-at", str(want))
        page.click(f"button[data-jump={kind}][data-dir='-1']")
        back = [x["version"] for x in steps if x["kind"] == kind and x["version"] < want]
        expect(page.locator("#step")).to_have_attribute("data-at", str(back[-1] if back else want))
        page.fill("#jump-at", str(lou[0]))
        page.click("#jump-form button[type=submit]")
        expect(page.locator("#step")).to_have_attribute("data-at", str(lou[0]))
    hands = desk.api(f"/v1/tables/{table}/hands")["hands"]
    page.click("button[data-jump=hand][data-dir='1']")
    expect(page.locator("#step")).to_have_attribute("data-at", str(hands[2]["first_event"]))


@pytest.fixture(scope="module")
def long_table(desk: Desk) -> tuple[str, str]:
    """(a support key, the table id) of a 30-hand table in a tenant of its own (the desk's tables
    stay as the other tests count them)."""
    import random

    from domain.simulate import simulate_table

    platform, support = desk.tenant_keys("longdesk", "platform", "support")
    events = simulate_table(random.Random(5), 30, {"preset": "default"}, "long-30")
    for start in range(0, len(events), 500):
        body = {"events": events[start : start + 500], "expected_version": start}
        answer = httpx.post(f"{desk.base}/v1/tables/long-30/events", json=body,
                            headers={"Authorization": f"Bearer {platform}"}, timeout=120)  # fmt: skip
        assert answer.status_code == 201, answer.text
    return support, "long-30"


HANDS_ROW_JS = """() => {
  const nav = document.querySelector('#hands'), box = nav.getBoundingClientRect();
  const button = nav.querySelector('button').getBoundingClientRect();
  const current = nav.querySelector('button.current').getBoundingClientRect();
  return {rows: Math.round(box.height / button.height), scrolls: nav.scrollWidth > nav.clientWidth,
          inside: current.left >= box.left - 1 && current.right <= box.right + 1,
          hand: Number(nav.querySelector('button.current').dataset.hand), y: scrollY};
}"""


TOOLS_JS = """() => ['#seat', '#report-btn', '#help-btn'].map(s => {
  const box = document.querySelector(s).getBoundingClientRect();
  return Math.round(box.top + box.height / 2); })"""


@pytest.mark.parametrize(("locale", "narrowest"), [("zh-CN", 400), ("en-US", 500)])
def test_the_view_the_report_and_the_help_share_a_line_at_every_width(
    browser: Any, desk: Desk, locale: str, narrowest: int
) -> None:
    """Above the board the view's choice, the report and the help wrap as one group, whatever the
    width: at 1280 px in Chinese an 8-hand table's header had left the help button alone on the
    next line. Every width 10 px apart, from where the group fits on a line (≈ 314 px in Chinese,
    445 in English) to a wide desk's."""
    context = browser.new_context(locale=locale, viewport={"width": 1400, "height": 900})
    context.add_init_script(f"sessionStorage.setItem('kwx.key', {desk.keys['support']!r})")
    tab = context.new_page()
    try:
        tab.goto(f"{desk.base}/replay?{urlencode({'table': KONG_TABLE})}")
        expect(tab.locator("#hands button").first).to_be_visible()
        split = []
        for width in range(narrowest, 1601, 10):
            tab.set_viewport_size({"width": width, "height": 900})
            tops = tab.evaluate(TOOLS_JS)
            if max(tops) - min(tops) > 4:
                split.append((width, tops))
        assert not split, split
    finally:
        context.close()


@pytest.mark.parametrize("size", [(390, 844), (1280, 800)])
def test_on_a_phone_a_long_tables_hands_are_one_row_that_keeps_the_hand_in_view(
    browser: Any, desk: Desk, long_table: tuple[str, str], size: tuple[int, int]
) -> None:
    """At 390 px a 30-hand table's hands are one row that scrolls sideways, the current hand in view
    (and again after ▶ hand); they wrapped into 8 rows, the board a screen below. A desk screen
    still shows them all, wrapped."""
    key, table = long_table
    context = browser.new_context(locale="zh-CN", viewport={"width": size[0], "height": size[1]})
    context.add_init_script(f"sessionStorage.setItem('kwx.key', {key!r})")
    tab = context.new_page()
    try:
        tab.goto(f"{desk.base}/replay?{urlencode({'table': table, 'hand': 20})}")
        expect(tab.locator("#hands button.current")).to_have_attribute("data-hand", "20")
        seen = tab.evaluate(HANDS_ROW_JS)
        if size[0] > 600:
            assert seen["rows"] >= 2 and not seen["scrolls"], seen  # all of them, wrapped
            return
        assert seen == {"rows": 1, "scrolls": True, "inside": True, "hand": 20, "y": 0}, seen
        tab.click("button[data-jump=hand][data-dir='1']")
        expect(tab.locator("#hands button.current")).to_have_attribute("data-hand", "21")
        assert tab.evaluate(HANDS_ROW_JS) == {"rows": 1, "scrolls": True, "inside": True, "hand": 21, "y": 0}
        tab.click("#hands button[data-hand='30']")
        expect(tab.locator("#hands button.current")).to_have_attribute("data-hand", "30")
        assert tab.evaluate(HANDS_ROW_JS)["inside"]
    finally:
        context.close()


LINE_IN_LIST_JS = """() => {
  const box = document.querySelector('#timeline').getBoundingClientRect();
  const line = document.querySelector('#timeline li.current').getBoundingClientRect();
  return {y: scrollY, inside: line.top >= box.top - 1 && line.bottom <= box.bottom + 1};
}"""


@pytest.mark.parametrize("size", [(390, 844), (1280, 800)])
def test_a_step_keeps_the_page_where_it_is_and_its_line_in_the_list(
    browser: Any, desk: Desk, size: tuple[int, int]
) -> None:
    """Opening a table and stepping through it leave the page at its top; the event list scrolls
    itself to the current line. On a phone the list is below the board, and each step (and the
    opening) scrolled the page down to it, below the controls being pressed."""
    context = browser.new_context(locale="zh-CN", viewport={"width": size[0], "height": size[1]})
    tab = context.new_page()
    try:
        events = len(desk.tables[KONG_TABLE])
        open_at(tab, desk, KONG_TABLE, events - 5)
        seen = tab.evaluate(LINE_IN_LIST_JS)
        assert seen == {"y": 0, "inside": True}, seen
        for at in (events - 4, events - 3):
            tab.click("#next")
            expect(tab.locator("#step")).to_have_attribute("data-at", str(at))
            seen = tab.evaluate(LINE_IN_LIST_JS)
            assert seen == {"y": 0, "inside": True}, (at, seen)
        tab.click("#first")
        expect(tab.locator("#timeline li.current")).to_have_count(1)
        assert tab.evaluate(LINE_IN_LIST_JS) == {"y": 0, "inside": True}
    finally:
        context.close()


def test_a_step_is_one_state_read(page: Any, desk: Desk) -> None:
    open_at(page, desk, KONG_TABLE, 10)
    page.keyboard.press("ArrowRight")
    expect(page.locator("#step")).to_have_attribute("data-at", "11")  # the hand's reads are cached now
    before = len(page.requests)
    page.keyboard.press("ArrowRight")
    expect(page.locator("#step")).to_have_attribute("data-at", "12")
    made = [urlsplit(u).path + "?" + urlsplit(u).query for u in page.requests[before:]]
    assert made == [f"/v1/tables/{KONG_TABLE}/state?at=12&lang=zh"], made  # no reload, nothing else


def test_the_event_list_highlights_the_step_and_is_clickable(page: Any, desk: Desk) -> None:
    open_at(page, desk, KONG_TABLE, 10)
    assert page.get_attribute("#timeline li.current", "data-version") == "10"
    page.click("#timeline li[data-version='20']")
    expect(page.locator("#step")).to_have_attribute("data-at", "20")
    expect(page.locator("#timeline li.current")).to_have_count(1)
    assert page.get_attribute("#timeline li.current", "data-version") == "20"
    page.click("#next")
    expect(page.locator("#timeline li.current")).to_have_attribute("data-version", "21")
    page.locator("#slider").fill("25")
    expect(page.locator("#step")).to_have_attribute("data-at", "25")
    expect(page.locator("#timeline li.current")).to_have_attribute("data-version", "25")


def test_the_audit_panel_explains_a_kong_chain_and_a_settlement_with_a_what_if(page: Any, desk: Desk) -> None:
    table = KONG_TABLE
    chain = next(x for x in lines(desk, table, "zh") if "kong_chain" in x["codes"])
    open_at(page, desk, table, chain["version"])
    expect(page.locator("#audit .legal")).to_be_visible()
    expect(page.locator("#audit .kong-text")).to_contain_text(f"×{chain['kong']['factor']}")
    expect(page.locator("#audit .line-text")).to_have_text(chain["text"])
    # hand 3 ends at its hu; its payout was reported with a difference
    hands = desk.api(f"/v1/tables/{table}/hands")["hands"]
    h3 = hands[2]
    hu = h3["winners"][0]["event"]
    page.fill("#jump-at", str(hu))
    page.click("#jump-form button[type=submit]")
    expect(page.locator("#step")).to_have_attribute("data-at", str(hu))
    settled = desk.api(f"/v1/tables/{table}/hands/3/settlement")["settlement"]
    expect(page.locator("#settlement table.transfers tr")).to_have_count(len(settled["transfers"]) + 1)
    for x in settled["transfers"]:
        expect(page.locator("#settlement table.transfers")).to_contain_text(x["detail_zh"])
    expect(page.locator("#settlement .derivation").first).to_contain_text(
        settled["wins"][0]["derivation"]["multiplier"]
    )
    expect(page.locator("#settlement .reported.error")).to_have_count(1)
    page.select_option("#whatif-preset", "uncapped")
    other = desk.api(f"/v1/tables/{table}/hands/3/settlement", rules="uncapped")["what_if"]
    want = by_seat(other["net_difference"])
    expect(page.locator("#settlement .whatif-net")).to_contain_text(want)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_a_hand_end_keeps_its_settlement_and_its_what_if_folds_each_hand_as_dealt(
    page: Any, desk: Desk, lang: str
) -> None:
    """A what-if under rules that would have dealt a hand otherwise answers for it (the hand folded
    as dealt, the difference named); it used to be refused, and the refusal took the hand's own
    settlement off the panel."""
    table = DEALT_TABLE
    last = desk.api(f"/v1/tables/{table}/hands")["hands"][-1]
    other = desk.api(f"/v1/tables/{table}/hands/{last['hand']}/settlement", rules="xiangyang", lang=lang)
    kept = [r for r in other["what_if"]["rulings"] if r["kind"] == "structure"]
    assert kept, "this table no longer needs a hand folded as dealt: choose another"
    open_at(page, desk, table, last["last_event"])  # the tab is zh-CN
    if lang == "en":
        page.click("#lang")
        expect(page.locator("#lang")).to_have_text("中文")
    expect(page.locator("#settlement table.transfers tr")).to_have_count(
        len(other["settlement"]["transfers"]) + 1
    )
    expect(page.locator("#whatif-preset")).to_have_value("xiangyang")
    want = by_seat(other["what_if"]["net_difference"], lang)
    expect(page.locator("#settlement .whatif-net")).to_contain_text(want)
    said = page.locator(f"#settlement .whatif-rulings li[data-event='{kept[0]['event']}']")
    expect(said).to_have_attribute("data-code", "sequence")
    expect(said).to_contain_text(kept[0]["message_zh" if lang == "zh" else "message"])
    expect(page.locator("#settlement .whatif-refused")).to_have_count(0)


def test_a_refused_what_if_leaves_the_settlement_and_says_why_in_the_pages_language(
    page: Any, desk: Desk
) -> None:
    """Rules under which the table cannot be folded at all (none of today's presets of a simulated
    table: the API's 422 is routed in here) are named in the what-if's place, in Chinese for a
    Chinese page; the hand's settlement stays."""
    table = KONG_TABLE
    last = desk.api(f"/v1/tables/{table}/hands")["hands"][-1]
    refusal = {
        "error": "malformed",
        "message": "under these rules the table cannot be folded: event 5 (sequence): …",
        "message_zh": "按这套规则整桌无法重演：第5事件（sequence）：……",
        "field": "query.rules",
    }
    page.route("**/settlement?rules=*", lambda route: route.fulfill(status=422, json=refusal))
    open_at(page, desk, table, last["last_event"])
    settled = desk.api(f"/v1/tables/{table}/hands/{last['hand']}/settlement")["settlement"]
    expect(page.locator("#settlement table.transfers tr")).to_have_count(len(settled["transfers"]) + 1)
    expect(page.locator("#settlement .whatif-refused")).to_contain_text(refusal["message_zh"])
    expect(page.locator("#settlement .whatif-net")).to_have_count(0)


OUTCOME_WORDS = {  # the page's word for each candidate outcome the timeline gives
    "zh": {
        "won": "胡了",
        "passed": "没有胡",
        "blocked_by_lou_hu": "不能胡",
        "rob_kong_disabled": "不许抢杠",
        "below_min_multiplier": "不够起胡",
    },
    "en": {
        "won": "won",
        "passed": "passed",
        "blocked_by_lou_hu": "could not win",
        "rob_kong_disabled": "robbing a kong is off",
        "below_min_multiplier": "below the minimum",
    },
}
KONG_WORDS = {
    "zh": {"concealed": "暗杠", "added": "补杠", "exposed": "直杠", "chain": "杠上杠第 {} 杠"},
    "en": {
        "concealed": "concealed kong",
        "added": "added kong",
        "exposed": "exposed kong",
        "chain": "kong {} of",
    },
}


def test_who_could_have_won_and_each_kong_read_in_the_pages_language(page: Any, desk: Desk) -> None:
    """The audit panel's candidates (every one the 漏胡 table's timeline gives) and kongs (every
    one of the kong table), in zh then en: each candidate's seat, multiplier, what it would have got
    and its outcome in words, with its 漏胡's start and lift; each kong's kind, place in the chain,
    factor and payments; no wire code (``passed``, ``below_min_multiplier``, ``exposed`` …) and
    nothing ``undefined``."""
    chances = [x for x in lines(desk, LOU_HU_TABLE) if x.get("candidates")]
    kongs = [x for x in lines(desk, KONG_TABLE) if x.get("kong")]
    outcomes = {c["outcome"] for x in chances for c in x["candidates"]}
    assert {"passed", "won"} <= outcomes and any(c.get("lou_hu") for x in chances for c in x["candidates"])
    assert any(x["kong"]["k"] > 1 for x in kongs)
    open_at(page, desk, LOU_HU_TABLE, chances[0]["version"])
    players = desk.api(f"/v1/tables/{LOU_HU_TABLE}/state")["players"]
    for lang in ("zh", "en"):
        page.evaluate(f"sessionStorage.setItem('kwx.lang', '{lang}')")
        for x in chances:
            open_at(page, desk, LOU_HU_TABLE, x["version"])
            shown = page.locator("#audit ul.candidates li")
            expect(shown).to_have_count(len(x["candidates"]))
            for i, c in enumerate(x["candidates"]):
                text = shown.nth(i).inner_text()
                assert shown.nth(i).get_attribute("data-outcome") == c["outcome"]
                assert players[c["seat"]] in text and OUTCOME_WORDS[lang][c["outcome"]] in text, (text, c)
                assert (f"{c['multiplier']}番" if lang == "zh" else f"×{c['multiplier']}") in text, (text, c)
                if c["outcome"] in ("won", "passed"):
                    assert (f"应得 {c['coins']} 分" if lang == "zh" else f"would get {c['coins']}") in text
                if c["outcome"] == "blocked_by_lou_hu":
                    assert f"{c['blocked_by']}" in text
                if c.get("lou_hu"):
                    assert f"{c['lou_hu']['since']}" in text and f"{c['lou_hu']['lifted_by']}" in text
                assert c["outcome"] not in text or (lang == "en" and c["outcome"] in ("won", "passed"))
                assert "undefined" not in text and "None" not in text
        for x in kongs:
            open_at(page, desk, KONG_TABLE, x["version"])
            k = x["kong"]
            text = page.locator("#audit .kong-text").inner_text()
            words = KONG_WORDS[lang]
            assert words[k["kind"]] in text and f"×{k['factor']}" in text, (text, k)
            if k["k"] > 1:
                linked = str(k["linked_by"]["event"])
                assert words["chain"].format(k["k"]) in text and linked in text, (text, k)
            for c in k.get("coins") or []:
                assert (" 付 " if lang == "zh" else " pays ") in text and f" {c['amount']}" in text, (text, k)
            if lang == "zh":
                assert k["kind"] not in text, text
            assert "undefined" not in text and "k=" not in text, text


def test_a_settlement_reads_in_the_pages_language(page: Any, desk: Desk) -> None:
    """Every settled hand of the kong table, in zh then en: each win's patterns by name with their
    factor (the names the hand's timeline gives), its product, cap and payable (the derivation's
    ``*_zh`` in Chinese), and each transfer's payer, payee and why (the timeline's words) beside the
    engine's arithmetic; nothing reads ``undefined``."""
    table = KONG_TABLE
    hands = [h for h in desk.api(f"/v1/tables/{table}/hands")["hands"] if h["end"] == "hu"]
    assert hands
    open_at(page, desk, table, hands[0]["last_event"])
    zh = {"payable": "按{}番付", "cap": "cap_zh", "product": "multiplier_zh"}
    en = {"payable": "paid at ×{}", "cap": "cap", "product": "multiplier"}
    for lang, words in (("zh", zh), ("en", en)):
        if lang == "en":
            page.click("#lang")
            expect(page.locator("#audit h3").first).to_contain_text("Audit")  # the step redrawn in English
        for h in hands:
            page.fill("#jump-at", str(h["last_event"]))
            page.click("#jump-form button[type=submit]")
            expect(page.locator("#step")).to_have_attribute("data-at", str(h["last_event"]))
            settled = desk.api(f"/v1/tables/{table}/hands/{h['hand']}/settlement")["settlement"]
            tl = desk.api(f"/v1/tables/{table}/hands/{h['hand']}/timeline", lang=lang)["lines"]
            said = {(x["version"], w["seat"]): w for x in tl if x["kind"] == "hu" for w in x["wins"]}
            expect(page.locator("#settlement .derivation")).to_have_count(len(settled["wins"]))
            for i, win in enumerate(settled["wins"]):
                box = page.locator("#settlement .derivation").nth(i)
                names = {p["id"]: p["name"] for p in said[(win["event"], win["seat"])]["patterns"]}
                shown = box.locator("li.pattern").all_inner_texts()
                assert len(shown) == len(win["patterns"])
                for text, pat in zip(shown, win["patterns"], strict=True):
                    assert text.startswith(f"{names[pat['id']]} ×{pat['x']}"), (text, pat)
                reading = page.locator("#settlement .win").nth(i).locator(".reading")
                groups = win["decomposition"].split()
                assert reading.get_attribute("data-reading") == win["decomposition"]
                expect(reading.locator(".group")).to_have_count(len(groups))
                for j, g in enumerate(groups):
                    drawn = reading.locator(".group").nth(j)
                    assert ("meld" in (drawn.get_attribute("class") or "").split()) == g.startswith("[")
                    names = drawn.locator("svg.tile").evaluate_all("ns => ns.map(n => n.dataset.tile)")
                    assert names == expand(g.strip("[]")), (names, g)
                label = reading.get_attribute("aria-label") or ""
                if lang == "zh":
                    assert groups and not re.search("[A-Za-z]", label), label  # 888筒 234条 [中中中中]
                else:
                    assert label.count(", ") == len(groups) - 1, label
                    assert re.search("dots|bamboo|dragon", label), label
                d = win["derivation"]
                line = box.locator("li.multiplier").inner_text()
                if win["patterns"]:
                    assert d[words["product"]] in line, (line, d)
                assert d[words["cap"]] in line and words["payable"].format(win["payable"]) in line, (line, d)
            why = {
                (
                    x["transfer"]["from"],
                    x["transfer"]["to"],
                    x["transfer"]["amount"],
                    x["transfer"]["event"],
                ): x["why"]
                for x in tl
                if x["kind"] == "transfer"
            }
            rows = page.locator("#settlement table.transfers tr[data-event]")
            expect(rows).to_have_count(len(settled["transfers"]))
            for i, x in enumerate(settled["transfers"]):
                row = rows.nth(i)
                expect(row.locator(".why")).to_have_text(why[(x["from"], x["to"], x["amount"], x["event"])])
                expect(row.locator(".detail")).to_have_text(x["detail_zh"] if lang == "zh" else x["detail"])
                expect(row.locator(".amount")).to_have_text(str(x["amount"]))
            assert "undefined" not in page.inner_text("#settlement")


def test_one_word_for_one_seat_on_the_board_the_settlement_and_the_timeline(page: Any, desk: Desk) -> None:
    """A zh page names a seat as the API's Chinese does (甲 乙 丙: the timeline's ``seat_words``):
    the seat panels, whose turn and who deals, the settlement's payers and payees and the view
    selector say the same word the timeline's lines say beside them; an en page says ``seat N``."""
    table = KONG_TABLE
    h = next(h for h in desk.api(f"/v1/tables/{table}/hands")["hands"] if h["end"] == "hu")
    tl = desk.api(f"/v1/tables/{table}/hands/{h['hand']}/timeline", lang="zh")
    words, players = tl["seat_words"], [p["player"] for p in tl["players"]]
    state = desk.api(f"/v1/tables/{table}/state", at=h["last_event"])
    open_at(page, desk, table, h["last_event"])  # the tab is zh-CN
    for s in range(3):
        expect(page.locator(f"section.seat[data-seat='{s}'] header strong")).to_have_text(
            f"{words[s]} · {players[s]}"
        )
        expect(page.locator(f"#seat option[value='{s}']")).to_have_text(f"{words[s]}（座位 {s}）")
    expect(page.locator("#dealer")).to_have_text(f"庄: {words[state['hand']['dealer']]}")
    seated = next(x for x in tl["lines"] if x["seat"] is not None and x["kind"] == "tile_discarded")
    assert f"{words[seated['seat']]}（{players[seated['seat']]}）" in seated["text"]
    settled = desk.api(f"/v1/tables/{table}/hands/{h['hand']}/settlement")["settlement"]
    rows = page.locator("#settlement table.transfers tr[data-event]")
    expect(rows).to_have_count(len(settled["transfers"]))
    for i, x in enumerate(settled["transfers"]):
        payer = "平台" if x["from"] == "house" else f"{words[x['from']]} · {players[x['from']]}"
        expect(rows.nth(i).locator("td").first).to_have_text(payer)
    expect(page.locator("#settlement p.net")).to_have_text(f"净额: {by_seat(settled['net'])}")
    assert "座位 0" not in page.inner_text("#board") and "座位 1" not in page.inner_text("#settlement")
    page.click("#lang")
    expect(page.locator("section.seat[data-seat='0'] header strong")).to_have_text(f"seat 0 · {players[0]}")
    expect(page.locator("#seat option[value='2']")).to_have_text("seat 2")


def test_the_dispute_report_lists_every_event_with_its_hash(page: Any, desk: Desk) -> None:
    table = KONG_TABLE
    open_at(page, desk, table, 40)
    page.click("#report-btn")
    expect(page.locator("#report")).to_be_visible()
    report = desk.api(f"/v1/tables/{table}/hands/2/report", lang="zh")
    expect(page.locator("#report table.events td.hash")).to_have_count(len(report["events"]))
    assert page.eval_on_selector_all("#report td.hash", "ns => ns.map(n => n.textContent)") == [
        e["hash"] for e in report["events"]
    ]
    # a zh report in Chinese: its headings, the head it hashes to, how a player checks it, each line
    expect(page.locator("#report table.events th").nth(2)).to_have_text("哈希")
    expect(page.locator("#report")).to_contain_text(f"头哈希（事件 {report['head']['version']}）")
    expect(page.locator("#report")).to_contain_text(report["chain"]["how_to_check"])
    assert report["chain"]["how_to_check"].startswith("先下载本局导出")
    lines = page.eval_on_selector_all(
        "#report table.events tr td:nth-child(2)", "ns => ns.map(n => n.textContent)"
    )
    assert lines == [e["line"] for e in report["events"]]
    assert page.is_hidden("#viewer")
    page.emulate_media(media="print")
    assert page.is_hidden("#search") and page.is_visible("#report table.events")
    page.emulate_media(media="screen")
    page.click("#report-back")
    expect(page.locator("#viewer")).to_be_visible()


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_a_differing_report_says_each_line_reported_and_computed(page: Any, desk: Desk, lang: str) -> None:
    """Where the platform's reported payout differs, the audit panel and the printable dispute report
    say each differing line — payer → payee, the reported and the computed coins, the difference —
    and each party's net difference, as the report's ``reported`` has them (the report said only
    "differs on 1 line(s)", the panel only the nets)."""
    from projections import wording

    feed = desk.api("/v1/discrepancies", "support", limit=1000)["discrepancies"]
    d = next(x for x in feed if x["lines"])
    rp = desk.api(f"/v1/tables/{d['table_id']}/hands/{d['hand']}/report", lang=lang)
    (r,) = [x for x in rp["reported"] if x["reported_event"] == d["reported_event"]]
    assert r["status"] == "differs" and r["lines"]

    def seat(x: Any) -> str:
        if x == "house":
            return "平台" if lang == "zh" else "the house"
        return f"{wording.SEAT_ZH[x]} · " if lang == "zh" else f"seat {x} · "

    def said(line: dict[str, Any]) -> re.Pattern[str]:
        diff = f"+{line['difference']}" if line["difference"] > 0 else str(line["difference"])
        if lang == "zh":
            tail = f"：上报 {line['reported']} / 计算 {line['computed']}（{diff}）"
        else:
            tail = f": reported {line['reported']} / computed {line['computed']} ({diff})"
        return re.compile(
            f"^{re.escape(seat(line['from']))}.* → {re.escape(seat(line['to']))}.*{re.escape(tail)}$"
        )

    open_at(page, desk, d["table_id"], d["reported_event"])
    if lang == "en":
        page.click("#lang")
        expect(page.locator("#lang")).to_have_text("中文")
    for box in ("#settlement", "#report"):
        if box == "#report":
            page.click("#report-btn")
            expect(page.locator("#report")).to_be_visible()
        shown = page.locator(f"{box} p.reported-line")
        expect(shown).to_have_count(len(r["lines"]))
        for i, line in enumerate(r["lines"]):
            expect(shown.nth(i)).to_have_text(said(line))
        expect(page.locator(f"{box} p.reported.error")).to_have_text(r["message"])
        nets = [(k, v) for k, v in r["difference"].items() if v != 0]
        for k, v in nets:
            expect(page.locator(f"{box} p.reported-net")).to_contain_text(
                f"{seat(k if k == 'house' else int(k))}"
            )
            expect(page.locator(f"{box} p.reported-net")).to_contain_text(f"+{v}" if v > 0 else str(v))
    # the report's win lines: the winning tile, then its reading apart from it (they ran together:
    # "on the discard 7 bamboo 789 dots, 666 bamboo …")
    wins = rp["settlement"]["wins"]
    expect(page.locator("#report p.win-line")).to_have_count(len(wins))
    for i, w in enumerate(wins):
        said_tile = f"{wording.tile(w['tile'], lang)} · "
        expect(page.locator("#report p.win-line").nth(i)).to_contain_text(said_tile)
    expect(page.locator("#report table.events th").nth(2)).to_have_text("哈希" if lang == "zh" else "Hash")
    # one event a row: the column says "Event" (it said "Events", the heading's word)
    expect(page.locator("#report table.events th").nth(1)).to_have_text("事件" if lang == "zh" else "Event")


CJK = re.compile(r"[\u3000-\u9fff\uff00-\uffef]")


def chinese_lines(page: Any, selector: str) -> list[str]:
    """The lines a person reads in ``selector`` that hold a Chinese character (the tiles' faces,
    drawn in SVG — 中 发 on a dragon — are pictures, not words: left out)."""
    faces = "d => document.querySelectorAll('svg').forEach(s => { s.style.display = d })"
    page.evaluate(faces, "none")
    text = page.inner_text(selector)
    page.evaluate(faces, "")
    return [x for x in text.splitlines() if CJK.search(x)]


def test_an_english_page_says_no_chinese(page: Any, desk: Desk) -> None:
    """In English, every hand's end of the kong table (亮倒 and 包胡 wins, a kong chain, a
    differing report) — the board, the audit panel with its settlement, derivation, transfers and
    a what-if, the event list, the jumps — and a dispute report hold no Chinese character: the
    rules' Chinese names are said as the API's English says them (declared ready, missed win, bao
    hu, the ma tile). It said "declared ready (亮倒)", "the winner had declared 亮倒", "屁胡 ×1" as
    the English product of a plain win and "liang dao" on a jump."""
    table = KONG_TABLE
    hands = desk.api(f"/v1/tables/{table}/hands")["hands"]
    open_at(page, desk, table, hands[0]["last_event"])
    page.click("#lang")
    expect(page.locator("#lang")).to_have_text("中文")  # the one Chinese word: the way back
    page.evaluate("document.getElementById('lang').textContent = ''")
    expect(page.locator(".jump [data-i18n=j_liang_dao]")).to_have_text("declared ready")
    said: set[str] = set()
    for h in hands:
        page.fill("#jump-at", str(h["last_event"]))
        page.click("#jump-form button[type=submit]")
        expect(page.locator("#step")).to_have_attribute("data-at", str(h["last_event"]))
        if h["end"] == "hu":
            settled = desk.api(f"/v1/tables/{table}/hands/{h['hand']}/settlement")["settlement"]
            expect(page.locator("#settlement .derivation")).to_have_count(len(settled["wins"]))
            expect(page.locator("#settlement .whatif-net")).to_be_visible()
        assert chinese_lines(page, "#viewer") == [], h
        said |= {w for w in ("declared ready", "bao hu", "kong chain") if w in page.inner_text("#viewer")}
    assert said == {"declared ready", "bao hu", "kong chain"}, said
    page.click("#report-btn")
    expect(page.locator("#report table.events td.hash").first).to_be_visible()
    assert chinese_lines(page, "#report") == []


def test_the_language_switch_redraws_everything(page: Any, desk: Desk) -> None:
    table = LOU_HU_TABLE
    open_at(page, desk, table, 12)
    zh = desk.api(f"/v1/tables/{table}/hands/1/timeline", lang="zh")["lines"]
    en = desk.api(f"/v1/tables/{table}/hands/1/timeline", lang="en")["lines"]
    expect(page.locator("#timeline li").first).to_have_text(zh[0]["text"])
    assert "下一步" in page.inner_text("#next")
    page.click("#lang")
    expect(page.locator("#timeline li").first).to_have_text(en[0]["text"])
    expect(page.locator("#next")).to_contain_text("step")
    expect(page.locator("#audit h3")).to_contain_text("Audit")
    assert (
        page.locator(
            "svg.tile[aria-label*='dots'], svg.tile[aria-label*='bamboo'], svg.tile[aria-label*='dragon']"
        ).count()
        > 0
    )
    assert page.evaluate("sessionStorage.getItem('kwx.lang')") == "en"
    expect(page.locator("#step")).to_have_attribute("data-at", "12")
    # every tile drawn is named as the API names it (1 dot, 2 dots, white dragon; "(claimed)" aside)
    from projections import wording

    named = page.eval_on_selector_all(
        "svg.tile[data-tile]", "ts => ts.map(t => [t.dataset.tile, t.getAttribute('aria-label')])"
    )
    wrong = [(tile, label) for tile, label in named if label.split(" (")[0] != wording.tile(tile, "en")]
    assert named and not wrong, wrong


@pytest.mark.parametrize("size", [(1280, 800), (390, 844)])
def test_screenshots_at_desk_and_phone_sizes(
    browser: Any, desk: Desk, tmp_path: Path, size: tuple[int, int]
) -> None:
    context = browser.new_context(locale="zh-CN", viewport={"width": size[0], "height": size[1]})
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda e: errors.append(str(e)))
    try:
        open_at(tab, desk, KONG_TABLE, 77)
        # nothing wider than the screen: the page reflows on a phone
        save_screenshot(tab, "replay", size, tmp_path)
        box = tab.locator(".seat[data-seat='0']").bounding_box()
        assert box is not None and box["width"] <= size[0]
    finally:
        context.close()
    assert not errors, errors


def test_liang_dao_as_declared_with_its_triplets_kept_face_down(page: Any, desk: Desk) -> None:
    table = KONG_TABLE
    declared = next(x for x in lines(desk, table) if x["kind"] == "liang_dao" and x["liang_dao"]["hidden"])
    at, seat = declared["version"], declared["seat"]
    kept = len(declared["liang_dao"]["hidden"]) * 3
    open_at(page, desk, table, at)
    box = f".seat[data-seat='{seat}']"
    expect(page.locator(f"{box} .liang-dao")).to_be_visible()
    assert tiles_in(page, f"{box} .liang-dao") == declared["liang_dao"]["waits"]
    assert page.locator(f"{box} .concealed svg.tile.kept").count() == kept  # support: shown, marked kept down
    other = (seat + 1) % 3
    open_at(page, desk, table, at, seat=other)
    view = desk.api(f"/v1/tables/{table}/state", at=at, seat=other)["hand"]["seats"][seat]
    assert sorted(tiles_in(page, f"{box} .concealed")) == sorted(expand(view["concealed"]))
    assert page.locator(f"{box} .concealed svg.tile.back").count() == kept  # another seat: face down
    for x in declared["liang_dao"]["hidden"]:
        assert tiles_in(page, f"{box} .concealed").count(x) == expand(view["concealed"]).count(x)


def test_a_dashboard_key_is_told_it_may_not_read_tables(page: Any, desk: Desk) -> None:
    page.goto(f"{desk.base}/replay?table={KONG_TABLE}&at=10")
    sign_in(page, desk, "dashboard")
    key = desk.keys["dashboard"]
    answer = httpx.get(f"{desk.base}/v1/tables", headers={"Authorization": f"Bearer {key}"})
    assert answer.status_code == 403 and answer.json()["roles"] == ["platform", "support"]
    # said once, in the page's language (the tab is zh-CN), with the key's role and the roles that
    # may — not "no such table" (the table is there; the key may not read it)
    said = "您的密钥（角色 dashboard）不能查看牌桌：回放需要 platform 或 support 角色的密钥。"
    errors = page.locator("#search-error, #open-error")
    expect(errors.filter(has_text=said)).to_have_count(1)
    assert "没有这张牌桌" not in page.inner_text("#open-error")
    assert "may not" not in page.inner_text("#search-error") + page.inner_text("#open-error")
    assert page.is_hidden("#viewer") and page.locator("svg.tile").count() == 0
    page.click("#lang")  # a search in English says it in English
    page.click("#search-form button[type=submit]")
    expect(page.locator("#search-error")).to_have_text(
        "Your key (role dashboard) may not read tables: the replay needs a platform or support key."
    )


def test_a_recorded_ruling_is_explained_in_zh_and_en(page: Any, desk: Desk) -> None:
    from tests.paths import GOLDEN
    from tests.service.serving import wait_for
    from tests.service.streams import expectation, load

    path = GOLDEN / "lou-hu-rejected.jsonl"
    wire, error = load(path), expectation(path)["error"]
    table = "browser-lou-hu-recorded"
    events = [dict(wire[0], violations="record"), *wire[1:]]
    platform = {"Authorization": f"Bearer {desk.keys['platform']}"}
    body = {"events": events, "expected_version": 0}
    stored = httpx.post(f"{desk.base}/v1/tables/{table}/events", json=body, headers=platform, timeout=60)
    assert stored.status_code == 201, stored.text
    support = {"Authorization": f"Bearer {desk.keys['support']}"}
    url = f"{desk.base}/v1/tables/{table}/hands"
    wait_for(lambda: httpx.get(url, headers=support, timeout=30).status_code == 200, 120, "the hand list")
    line = next(x for x in lines(desk, table, "zh") if x.get("ruling"))
    assert line["version"] == error["index"] + 1 and line["ruling"]["code"] == error["rule"]
    open_at(page, desk, table, 2)
    page.keyboard.press("PageDown")
    expect(page.locator("#step")).to_have_attribute("data-at", str(line["version"]))
    expect(page.locator("#timeline li.current.ruling")).to_have_count(1)
    expect(page.locator("#audit .ruling-text")).to_contain_text(error["rule"])
    expect(page.locator("#audit .ruling-text")).to_contain_text(line["ruling"]["message_zh"])
    page.keyboard.press("PageUp")  # no ruling before it: it stays, and says so
    expect(page.locator("#note")).not_to_be_empty()
    assert page.get_attribute("#step", "data-at") == str(line["version"])
    page.click("#lang")
    expect(page.locator("#audit .ruling-text")).to_contain_text(line["ruling"]["message"])
    winners = events[error["index"]].get("winners") or [events[error["index"]].get("seat")]
    other = next(s for s in (0, 1, 2) if s not in winners)
    open_at(page, desk, table, line["version"], seat=other)
    expect(page.locator("#audit .ruling-text")).to_contain_text(error["rule"])  # a hu's ruling: the table's
