"""The pages against axe-core's accessibility rules (WCAG 2.0 and 2.1, A and AA, and axe's best
practices), in Chromium, at a desk's and a phone's width, in Chinese and in English: every screen a
support agent or a dashboard reader meets — signing in, the search, a table at a settled hand with
its audit panel and what-if, the keys' help, the dispute report, one seat's view, a player's
statistics with the coin chart and entries, the leaderboard and the feed, and a dashboard key's
notice. axe-core comes with ``axe-playwright-python`` (its script, injected into the page); a
violation is reported with its rule, its help and the elements it found."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from tests.browser.conftest import KONG_TABLE, LOU_HU_AT, LOU_HU_TABLE, Desk, sign_in

pytestmark = pytest.mark.db

RULES = {"runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]}}
SIZES = [(1280, 800), (390, 844)]
LOCALES = {"zh": "zh-CN", "en": "en-US"}

_axe = Axe()

# Text the page shows in both languages at once (the header, the sign-in) says which each part is
# in, so a screen reader reads 回放 as Chinese on an English page and "Sign in" as English on a Chinese one.
MIXED_JS = r"""() => {
  const wrong = [];
  for (const root of document.querySelectorAll("header.bar, #signin, .start")) {
    const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      const text = n.textContent, said = n.parentElement.closest("[lang]").lang;
      if (/[\u3400-\u9fff\uff08\uff09]/.test(text) && said !== "zh") wrong.push([text, said]);
      if (/[A-Za-z]/.test(text) && said !== "en") wrong.push([text, said]);
    }
  }
  return wrong;
}"""


def violations(tab: Any) -> list[str]:
    """What axe finds on the page as it stands, a line per rule: its id, impact, help and elements."""
    found = _axe.run(tab, options=RULES).response["violations"]
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']][:5]}" for v in found
    ]


def enter(tab: Any, desk: Desk, path: str, role: str = "support") -> None:
    """Open ``path``, signing in with ``role``'s key when the tab holds none."""
    tab.goto(desk.base + path)
    if tab.is_visible("#signin"):
        sign_in(tab, desk, role)


def settled_hand_end(desk: Desk) -> int:
    hands = desk.api(f"/v1/tables/{KONG_TABLE}/hands")["hands"]
    return int(next(h for h in hands if h["winners"])["winners"][0]["event"])


def replay_screens(desk: Desk) -> list[tuple[str, Callable[[Any], None]]]:
    at = settled_hand_end(desk)

    def search(tab: Any) -> None:
        enter(tab, desk, "/replay")
        expect(tab.locator("#results-body tr[data-table]").first).to_be_visible()

    def table(tab: Any) -> None:
        enter(tab, desk, f"/replay?table={KONG_TABLE}&at={at}")
        expect(tab.locator("#step")).to_have_attribute("data-at", str(at))
        expect(tab.locator("#settlement table.transfers")).to_be_visible()
        expect(tab.locator("#whatif-preset")).to_be_visible()

    def help_(tab: Any) -> None:
        tab.click("#help-btn")
        expect(tab.locator("#help")).to_be_visible()

    def report(tab: Any) -> None:
        tab.keyboard.press("Escape")
        expect(tab.locator("#help")).to_be_hidden()
        tab.click("#report-btn")
        expect(tab.locator("#report")).to_be_visible()

    def seat_view(tab: Any) -> None:
        enter(tab, desk, f"/replay?table={KONG_TABLE}&at={at}&seat=1")
        expect(tab.locator("#step")).to_have_attribute("data-at", str(at))

    def lou_hu(tab: Any) -> None:
        enter(tab, desk, f"/replay?table={LOU_HU_TABLE}&at={LOU_HU_AT}")
        expect(tab.locator("#step")).to_have_attribute("data-at", str(LOU_HU_AT))

    def missing(tab: Any) -> None:
        enter(tab, desk, "/replay")
        tab.fill("#open-id", "no-such-table")
        tab.click("#open-form button[type=submit]")
        expect(tab.locator("#open-error")).not_to_be_empty()

    return [("sign-in", lambda tab: tab.goto(f"{desk.base}/replay")), ("search", search),
            ("table", table), ("help", help_), ("report", report), ("seat view", seat_view),
            ("a missed win", lou_hu), ("a missing table", missing)]  # fmt: skip


def dashboard_screens(desk: Desk) -> list[tuple[str, Callable[[Any], None]]]:
    player = desk.api("/v1/tables")["tables"][0]["players"][0]

    def support(tab: Any) -> None:
        enter(tab, desk, f"/dashboard?player={player}")
        expect(tab.locator("svg.chart")).to_be_visible()
        expect(tab.locator("#entries tbody tr").first).to_be_visible()
        expect(tab.locator("#board-table")).to_be_visible()

    def dashboard_key(tab: Any) -> None:
        tab.click("#signout")
        expect(tab.locator("#signin")).to_be_visible()
        enter(tab, desk, f"/dashboard?player={player}", "dashboard")
        expect(tab.locator("svg.chart")).to_be_visible()

    def refused(tab: Any) -> None:  # a field the API refuses
        enter(tab, desk, "/dashboard?min_hands=-1")
        expect(tab.locator("#board .notice")).to_contain_text("query.min_hands")

    def nothing(tab: Any) -> None:  # an empty board, a player nobody has
        enter(tab, desk, "/dashboard?player=nobody-here&since=2030-01-01")
        expect(tab.locator("#board-empty")).to_be_visible()
        expect(tab.locator("#stats .notice")).to_be_visible()

    return [("sign-in", lambda tab: tab.goto(f"{desk.base}/dashboard")), ("a player", support),
            ("a dashboard key", dashboard_key), ("a refused field", refused),
            ("nothing found", nothing)]  # fmt: skip


def start_screens(desk: Desk) -> list[tuple[str, Callable[[Any], None]]]:
    return [("start", lambda tab: tab.goto(f"{desk.base}/"))]


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}px")
@pytest.mark.parametrize("lang", list(LOCALES))
@pytest.mark.parametrize(
    "pages", [replay_screens, dashboard_screens, start_screens], ids=["replay", "dashboard", "start"]
)
def test_every_screen_passes_axe(
    browser: Any, desk: Desk, pages: Callable[[Desk], list[tuple[str, Callable[[Any], None]]]], lang: str,
    size: tuple[int, int],
) -> None:  # fmt: skip
    context = browser.new_context(locale=LOCALES[lang], viewport={"width": size[0], "height": size[1]})
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda e: errors.append(str(e)))
    found: dict[str, list[str]] = {}
    try:
        for name, show in pages(desk):
            show(tab)
            if name not in ("sign-in", "start"):  # these say their few words in both languages
                assert tab.evaluate("document.documentElement.lang") == lang, name
            found[name] = violations(tab) + [
                f"{text!r} read as {said}" for text, said in tab.evaluate(MIXED_JS)
            ]
    finally:
        context.close()
    assert not errors, errors
    assert found and not any(found.values()), {name: v for name, v in found.items() if v}


def test_what_a_screen_reader_names_follows_the_language_switch(page: Any, desk: Desk) -> None:
    """The names axe asks for that no text on the screen gives (the event slider, the table's hands,
    the event list) are said in the page's language, and again after a switch."""
    at = settled_hand_end(desk)
    enter(page, desk, f"/replay?table={KONG_TABLE}&at={at}")
    expect(page.locator("#step")).to_have_attribute("data-at", str(at))
    said = {
        "zh": ["本桌各局", "事件进度", "事件"],
        "en": ["The table's hands", "Events of the table", "Events"],
    }
    names = "ns => ns.map(n => n.getAttribute('aria-label'))"  # in the document's order
    assert page.eval_on_selector_all("#slider, #hands, #timeline", names) == said["zh"]
    page.click("#lang")
    expect(page.locator("#lang")).to_have_text("中文")
    assert page.eval_on_selector_all("#slider, #hands, #timeline", names) == said["en"]
