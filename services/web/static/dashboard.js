// The dashboard (issue 17): a player's statistics and coin balance over time, the leaderboard and
// the discrepancies feed, all read from kwx's own API with the signed-in key. What it shows is in
// the URL (?player=&by=&order=&preset=&since=&until=&min_hands=&offset=&limit=), so a link reopens it.
"use strict";
import { wireSignIn, signOut, el, get, lang, setLang, seatWord, presetName, ApiError } from "/static/api.js";
import { lineChart } from "/static/chart.js";
import { t, statLabel, statOf, fmt, STAT_KEYS, PRESETS } from "/static/dash-i18n.js";

const $ = (id) => document.getElementById(id);
const PER_PAGE = [10, 25, 50, 100];
const DEFAULTS = { by: "net_coins", order: "desc", preset: "", since: "", until: "", min_hands: "0",
                   offset: "0", limit: "25", player: "" };
const LEDGER_PAGE = 1000;  // the ledger's largest page; ?ledger_limit= pages smaller (tests)
const FEED_PAGE = 1000;
const FEED_SHOWN = 200;  // the newest entries drawn (the feed pages oldest first, so all are read)

function params() {
  const q = new URLSearchParams(location.search);
  const out = {};
  for (const [k, v] of Object.entries(DEFAULTS)) out[k] = q.get(k) ?? v;
  return out;
}

function setParams(changes) {
  const q = new URLSearchParams(location.search);
  for (const [k, v] of Object.entries(changes)) {
    if (v === "" || v === null || v === undefined || String(v) === DEFAULTS[k]) q.delete(k);
    else q.set(k, String(v));
  }
  const search = q.toString();
  history.replaceState(null, "", location.pathname + (search ? `?${search}` : ""));
}

// A clear sentence for what the API refused, never a dump: 401, 403 (the role), 404, 422 (the field),
// 501 (a read model this deployment does not keep).
function notice(err, what, vars = {}) {
  const L = lang();
  let text;
  if (err instanceof ApiError && err.status === 403) {
    const role = err.body.role;  // kwx's 403 names the key's role
    text = role ? t(L, "forbidden", { role, what: t(L, what) }) : t(L, "forbidden_any", { what: t(L, what) });
  } else if (err instanceof ApiError && err.status === 401) {
    text = t(L, "unauthorized");
    signOut();
    $("signin").hidden = false;
  } else if (err instanceof ApiError && err.status === 404 && vars.player !== undefined) {
    text = t(L, "not_found", vars);
  } else if (err instanceof ApiError && err.status === 501) {
    text = err.message;  // a read model not kept here (api.js words it in the page's language)
  } else {
    const field = err instanceof ApiError && err.body.field ? ` (${err.body.field})` : "";
    text = t(L, "failed", { message: (err.message || String(err)) + field });
  }
  const cls = err instanceof ApiError && [403, 404, 501].includes(err.status) ? "notice" : "notice error";
  return el("p", { class: cls, "data-status": err instanceof ApiError ? err.status : "", text });
}

function texts() {
  const L = lang();
  document.documentElement.lang = L === "zh" ? "zh" : "en";
  for (const node of document.querySelectorAll("[data-t]")) node.textContent = t(L, node.dataset.t);
  $("lang").textContent = t(L, "lang");
  $("signout").textContent = t(L, "sign_out");
  const p = params();
  const fill = (select, options, value) => {
    select.replaceChildren(...options.map(([v, label]) => el("option", { value: v, text: label })));
    select.value = value;
  };
  fill($("by"), STAT_KEYS.map((k) => [k, statLabel(L, k)]), p.by);
  fill($("order"), [["desc", t(L, "desc")], ["asc", t(L, "asc")]], p.order);
  fill($("preset"), [["", t(L, "any")], ...PRESETS.map((x) => [x, presetName(x, L)])], p.preset);
  const sizes = PER_PAGE.map(String);
  if (!sizes.includes(p.limit)) sizes.unshift(p.limit);  // a link's own page size (?limit=)
  fill($("limit"), sizes.map((n) => [n, n]), p.limit);
  $("since").value = p.since;
  $("until").value = p.until;
  $("min_hands").value = p.min_hands;
  $("player-input").value = p.player;
}

// ---- 1. a player's statistics -------------------------------------------------------------------

async function showPlayer() {
  const L = lang(), player = params().player;
  const box = $("stats"), chart = $("chart");
  $("chart-h").hidden = !player;  // no heading over a chart that is not there
  if (!player) {
    box.replaceChildren(el("p", { class: "muted", text: t(L, "pick") }));
    chart.replaceChildren();
    return;
  }
  box.replaceChildren(el("p", { class: "muted", text: t(L, "loading") }));
  chart.replaceChildren();
  let stats;
  try {
    stats = await get(`/v1/players/${encodeURIComponent(player)}/stats`);
  } catch (err) {
    box.replaceChildren(notice(err, "what_stats", { player }));
  }
  if (player !== params().player) return;  // another player was opened meanwhile
  if (stats) box.replaceChildren(statsTable(stats));
  await showLedger(player);
}

function statsTable(stats) {
  const L = lang();
  const blocks = [["overall", t(L, "overall"), stats.overall],
                  ...Object.keys(stats.presets).sort().map((p) => [p, presetName(p, L), stats.presets[p]])];
  const head = el("tr", {}, el("th", { scope: "col", text: t(L, "stat_h") }),
    ...blocks.map(([k, label]) => el("th", { scope: "col", "data-block": k, text: label })));
  const rows = STAT_KEYS.map((key) => el("tr", { "data-stat": key },
    el("th", { scope: "row", text: statLabel(L, key) }),
    ...blocks.map(([k, , block]) => {
      const v = statOf(block, key);
      return el("td", { "data-block": k, "data-value": JSON.stringify(v), title: fmt(v), text: fmt(v, key) });
    })));
  const patterns = Object.entries(stats.overall.patterns || {}).sort();
  return el("div", { id: "stats-of", "data-player": stats.player_id },
    el("p", {}, el("strong", { text: stats.player_id })),
    el("div", { class: "scroll" }, el("table", { class: "grid stats" }, el("thead", {}, head), el("tbody", {}, ...rows))),
    el("p", { class: "patterns" }, `${t(L, "patterns")}: `,
       ...(patterns.length ? patterns.flatMap(([k, n], i) => [...(i ? [" · "] : []),
         el("span", { class: "pattern", "data-id": k, "data-n": n, title: k,
                      text: t(L, "pattern_n", { name: ((stats.pattern_names || {})[k] || {})[L] || k, n }) })])
         : [t(L, "none")])));  // a count, not a factor: "亮倒 8 次", not "亮倒 × 8" (×8 reads as a multiplier)
}

// ---- 2. the coin balance over time --------------------------------------------------------------

async function showLedger(player) {
  const L = lang(), chart = $("chart");
  const q = new URLSearchParams(location.search);
  const limit = Math.min(LEDGER_PAGE, Math.max(1, Number(q.get("ledger_limit")) || LEDGER_PAGE));
  const entries = [];
  let page, after = 0, pages = 0;
  try {
    do {
      page = await get(`/v1/players/${encodeURIComponent(player)}/ledger`, { after, limit });
      entries.push(...page.entries);
      after = page.next_after;
      pages += 1;
    } while (after !== null && after !== undefined);
  } catch (err) {
    const none = err instanceof ApiError && err.status === 404;
    chart.replaceChildren(none ? el("p", { class: "muted", text: t(L, "no_entries") }) : notice(err, "what_ledger"));
    return;
  }
  if (player !== params().player) return;  // another player was opened meanwhile
  // each point says its entry: the table and hand, why coins moved and how many, and the
  // transfer's derivation in the page's language (an entry booked before kwx said it in Chinese
  // has only the English one)
  const points = overTime(entries).map(({ e, x, y }) => ({
    x, y, label: `${e.table_id} ${t(L, "hand_n", { n: e.hand })} · ${t(L, `r_${e.reason}`)} ${e.amount > 0 ? "+" : ""}${e.amount}`,
    detail: (L === "zh" ? e.detail_zh : null) ?? e.detail,
  }));
  const summary = el("p", { class: "muted", id: "ledger-summary", "data-balance": page.balance,
                            "data-entries": entries.length, "data-pages": pages },
                     `${t(L, "balance")}: `, el("strong", { text: String(page.balance) }),
                     ` · ${entries.length} ${t(L, "entries")}`);
  if (!points.length) {
    chart.replaceChildren(summary, el("p", { class: "muted", text: t(L, "no_entries") }));
    return;
  }
  const opts = { title: `${t(L, "chart")} · ${player}`, yLabel: t(L, "balance"), xLabel: t(L, "time") };
  const list = el("div", { id: "entries" });
  chart.replaceChildren(summary, lineChart(points, { ...opts, width: chart.clientWidth }), list);
  drawn = { points, opts, width: chart.clientWidth };
  showEntries(list, entries, ENTRIES_SHOWN);
}

// The entries themselves, newest booked first (the ledger's own order, and its running balance
// after each): when, which table and hand (a link to the replay at the event that moved the coins),
// with whom, why, how many, and the engine's derivation in the page's language. A page of them at a
// time: "more" shows the next.
const ENTRIES_SHOWN = 20;
function showEntries(box, entries, shown) {
  const L = lang();
  const newest = entries.slice().reverse();
  const when = (e) => new Date(e.at ?? e.recorded_at).toISOString().slice(0, 16).replace("T", " ");
  const cols = ["e_time", "e_hand", "e_with", "e_reason", "e_coins", "balance", "e_why"];
  const head = el("tr", {}, ...cols.map((k) => el("th", { scope: "col", text: t(L, k) })));
  // each cell names its column (data-label): on a phone an entry is a card of labelled lines
  const cell = (i, attrs, ...kids) => el("td", { ...attrs, "data-label": t(L, cols[i]) }, ...kids);
  const rows = newest.slice(0, shown).map((e) => el("tr", { "data-seq": e.seq },
    cell(0, { text: when(e) }),
    cell(1, {}, el("a", { class: "replay-link", text: `${e.table_id} · ${t(L, "hand_n", { n: e.hand })}`,
                          href: `/replay?table=${encodeURIComponent(e.table_id)}&hand=${e.hand}&at=${e.event}` })),
    cell(2, { text: e.counterparty_kind === "house" ? t(L, "house") : e.counterparty }),
    cell(3, { text: t(L, `r_${e.reason}`) }),
    cell(4, { class: "num", text: `${e.amount > 0 ? "+" : ""}${e.amount}` }),
    cell(5, { class: "num", text: String(e.balance) }),
    cell(6, { class: "why", text: (L === "zh" ? e.detail_zh : null) ?? e.detail })));
  const more = newest.length > shown
    ? [el("button", { type: "button", id: "entries-more", text: t(L, "more", { n: Math.min(ENTRIES_SHOWN, newest.length - shown) }),
                      onclick: () => showEntries(box, entries, shown + ENTRIES_SHOWN) })]
    : [];
  box.replaceChildren(el("h4", { text: t(L, "entries_newest") }),
    el("p", { class: "muted", id: "entries-order", text: t(L, "entries_order") }),
    el("div", { class: "scroll" }, el("table", { class: "grid entries cards", "data-shown": rows.length },
      el("thead", {}, head), el("tbody", {}, ...rows))), ...more);
}

// The chart is drawn as wide as its card, so its words keep their size on a phone as on a desk
// (a drawing scaled down to a phone's width had 5-px letters); a change of the card's width draws
// it again.
let drawn = null, redraw = 0;
window.addEventListener("resize", () => {
  clearTimeout(redraw);
  redraw = setTimeout(() => {
    const chart = $("chart"), old = chart && chart.querySelector("svg.chart");
    if (!drawn || !old || Math.abs(chart.clientWidth - drawn.width) < 2) return;
    drawn.width = chart.clientWidth;
    old.replaceWith(lineChart(drawn.points, { ...drawn.opts, width: drawn.width }));
  }, 100);
});

// The balance as a function of time: the entries in the order of their hands' times (`at`, else
// when kwx stored them), each point the balance after every entry up to it. The ledger's own
// order, and its running `balance`, is the order kwx learnt of the hands: two tables played at once,
// or a platform's backfill of older tables, interleave times in it, and plotted as it is the line
// went back and forth in time. The last point is the ledger's balance all the same.
function overTime(entries) {
  if (!entries.length) return [];
  const timed = entries.map((e, i) => ({ e, i, x: Date.parse(e.at ?? e.recorded_at) }))
    .sort((a, b) => a.x - b.x || a.i - b.i);
  let y = entries[0].balance - entries[0].amount;  // before the first entry read (0 from the start)
  return timed.map(({ e, x }) => ({ e, x, y: (y += e.amount) }));
}

// ---- 3. the leaderboard -------------------------------------------------------------------------

// The leaderboard's query as the URL holds it now (the empty ones left out).
function boardAsked() {
  const p = params();
  const asked = { by: p.by, order: p.order, preset: p.preset, since: p.since, until: p.until,
                  min_hands: p.min_hands, offset: p.offset, limit: p.limit };
  return [asked, new URLSearchParams(Object.entries(asked).filter(([, v]) => v !== "")).toString()];
}

async function showBoard() {
  const L = lang(), box = $("board");
  const [asked, query] = boardAsked();
  let board;
  try {
    board = await get("/v1/leaderboard", asked);
  } catch (err) {
    box.replaceChildren(notice(err, "what_leaderboard"));
    return;
  }
  const sortHead = (key, label) => {
    const active = key === board.by;
    return el("th", { scope: "col", "data-sort": key, class: active ? `sorted ${board.order}` : "",
                      "aria-sort": active ? (board.order === "asc" ? "ascending" : "descending") : "none" },
      el("button", { type: "button", class: "sort", text: label + (active ? (board.order === "asc" ? " ▲" : " ▼") : ""),
                     onclick: () => { setParams({ by: key, order: active && board.order === "desc" ? "asc" : "desc", offset: 0 }); texts(); showBoard(); } }));
  };
  const head = el("tr", {}, el("th", { scope: "col", text: t(L, "rank") }), el("th", { scope: "col", text: t(L, "player") }),
                  ...STAT_KEYS.map((k) => sortHead(k, statLabel(L, k))));
  const rows = board.players.map((row) => el("tr", { "data-player": row.player_id, "data-rank": row.rank, "data-value": JSON.stringify(row.value) },
    el("td", { text: String(row.rank) }),
    el("td", {}, el("button", { type: "button", class: "link player", text: row.player_id,
                                onclick: () => openPlayer(row.player_id) })),
    ...STAT_KEYS.map((k) => {
      const v = statOf(row, k);
      return el("td", { "data-stat": k, class: k === board.by ? "sorted" : "", "data-value": JSON.stringify(v),
                        title: fmt(v), text: fmt(v, k) });
    })));
  const offset = board.offset, shown = board.players.length;
  const pager = el("div", { class: "controls pager" },
    el("button", { type: "button", id: "board-prev", disabled: offset === 0, text: t(L, "prev"),
                   onclick: () => { setParams({ offset: Math.max(0, offset - board.limit) }); showBoard(); } }),
    el("span", { id: "board-range", text: shown ? t(L, "page_of", { a: offset + 1, b: offset + shown }) : t(L, "none") }),
    el("button", { type: "button", id: "board-next", disabled: board.next_offset === null, text: t(L, "next"),
                   onclick: () => { setParams({ offset: board.next_offset }); showBoard(); } }));
  if (query !== boardAsked()[1]) return;  // the form changed meanwhile: a newer read draws
  box.replaceChildren(el("div", { class: "scroll" }, el("table", { class: "grid board", id: "board-table", "data-by": board.by,
                                                                     "data-order": board.order, "data-query": query },
    el("thead", {}, head), el("tbody", {}, ...rows))),
    ...(rows.length ? [] : [el("p", { class: "muted", id: "board-empty", text: t(L, "no_players") })]), pager);
  showSorted(box.querySelector(".scroll"));
}

// The column the board is ranked by is in view beside the sticky rank and player columns: a wide
// board on a narrow screen scrolls to it (a redraw starts at the left edge), to a column's start, so
// that no column is cut beneath the sticky ones where the sorted one can be shown whole without.
function showSorted(scroller) {
  const sorted = scroller && scroller.querySelector("th.sorted");
  if (!sorted) return;
  scroller.onscroll = () => scroller.classList.toggle("scrolled", scroller.scrollLeft > 0);
  // where the sticky player column ends once stuck (its CSS `left`, not its place in the flow:
  // the rank column may be wider than that offset, and a scrolled column would peek between)
  const player = scroller.querySelector("th:nth-child(2)");
  const fixed = player ? (parseFloat(getComputedStyle(player).left) || 0) + player.offsetWidth : 0;
  const left = sorted.offsetLeft, right = left + sorted.offsetWidth;
  if (left < scroller.scrollLeft + fixed || right > scroller.scrollLeft + scroller.clientWidth) {
    scroller.scrollLeft = columnStart(scroller, fixed, left - fixed, right);
  }
  scroller.onscroll();
}

// The scroll position `want` (a column's start at the sticky columns' edge) if the board scrolls that
// far; else the furthest column start from which the column ending at `right` is still whole; else
// (a last column, whose start the board cannot reach) the board's end, one column cut beneath the
// sticky ones, which their shadow shows.
function columnStart(scroller, fixed, want, right) {
  const most = scroller.scrollWidth - scroller.clientWidth;
  if (want <= most) return Math.max(0, want);
  const starts = [...scroller.querySelectorAll("thead th")].map((th) => th.offsetLeft - fixed)
    .filter((at) => at > 0 && at <= most && at + scroller.clientWidth >= right);
  return starts.length ? Math.max(...starts) : most;
}

function openPlayer(player) {
  setParams({ player });
  $("player-input").value = player;
  showPlayer();
  $("stats-card").scrollIntoView({ block: "start" });
}

// ---- 4. the discrepancies feed, newest first ----------------------------------------------------

async function showDiscrepancies() {
  const L = lang(), box = $("discrepancies");
  const all = [];
  let page, after = 0;
  try {
    do {
      page = await get("/v1/discrepancies", { after, limit: FEED_PAGE });
      all.push(...page.discrepancies);
      after = page.next_after;
    } while (after !== null && after !== undefined);
  } catch (err) {
    box.replaceChildren(notice(err, "what_discrepancies"));
    return;
  }
  all.sort((a, b) => b.seq - a.seq);
  const items = all.slice(0, FEED_SHOWN).map((d) => {
    const href = `/replay?table=${encodeURIComponent(d.table_id)}&hand=${d.hand}&at=${d.reported_event}`;
    const party = (x) => (x === "house" ? t(L, "house") : L === "zh" ? seatWord(x, L) : `${t(L, "seat")} ${x}`);
    const lines = d.lines.map((l) => `${party(l.from)} → ${party(l.to)}: ${t(L, "reported")} ${l.reported} / ${t(L, "computed")} ${l.computed} (${l.difference > 0 ? "+" : ""}${l.difference})`);
    return el("li", { "data-seq": d.seq, "data-table": d.table_id, "data-hand": d.hand },
      el("span", { class: "muted", text: `#${d.seq} ` }),
      el("a", { href, class: "replay-link", text: `${t(L, "table")} ${d.table_id} · ${t(L, "hand_n", { n: d.hand })}` }),
      el("span", { text: ` · ${lines.join("; ")}` }));
  });
  const count = all.length > FEED_SHOWN ? ` · ${t(L, "newest", { n: FEED_SHOWN, total: all.length })}` : "";
  box.replaceChildren(
    el("p", { class: "muted", text: (page.caught_up ? t(L, "caught_up") : t(L, "not_caught_up")) + count }),
    items.length ? el("ol", { class: "feed", id: "feed", reversed: true }, ...items) : el("p", { class: "muted", text: t(L, "none") }));
}

// ---- the page -----------------------------------------------------------------------------------

function everything() {
  texts();
  showPlayer();
  showBoard();
  showDiscrepancies();
}

function wire() {
  $("player-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    openPlayer($("player-input").value.trim());
  });
  $("board-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    setParams({ by: $("by").value, order: $("order").value, preset: $("preset").value, since: $("since").value,
                until: $("until").value, min_hands: $("min_hands").value || "0", limit: $("limit").value, offset: 0 });
    showBoard();
  });
  for (const id of ["by", "order", "preset", "limit"]) {
    $(id).addEventListener("change", () => $("board-form").requestSubmit());
  }
  $("lang").addEventListener("click", () => { setLang(lang() === "zh" ? "en" : "zh"); everything(); });
  $("signout").addEventListener("click", () => { signOut(); location.reload(); });
}

wire();
wireSignIn($("signin"), () => { $("view").hidden = false; everything(); });
