// The replay page (issue 17): find a table, step through it event by event, from kwx's own API only.
// Each step is one GET …/state?at=N (as the chosen seat saw it); a hand's timeline, report (chain
// hashes) and settlement are read once per hand and language.
"use strict";
import { wireSignIn, el, get, lang, setLang, signOut, seatWord, presetName } from "/static/api.js";
import { tileSvg, tileName, expand, readingGroups, readingText } from "/static/tiles.js";
import { t } from "/static/replay-i18n.js";

const FLAGS = ["lou_hu", "kong_chain", "liang_dao", "bao_hu", "multi_win", "discrepancy", "violation"];
const PRESETS = ["default", "xiangyang", "shiyan", "xiaogan", "yunmeng", "uncapped", "platform_3d"];
const DECISIONS = new Set(["tile_discarded", "peng", "kong", "liang_dao", "hu", "pass"]);
const JUMPS = ["hu", "kong", "liang_dao", "ruling", "lou_hu", "hand"];

const S = {
  table: null, info: null, hands: [], latest: 0, hand: null, at: null, seat: null, focus: 0,
  linkHash: null, linkAt: null, state: null, cache: new Map(), seq: 0, whatIf: "xiangyang", note: "",
};
const $ = (id) => document.getElementById(id);
const enc = encodeURIComponent;

// ------------------------------------------------------------------------------------ reading
function cached(name, load) {
  const k = `${name}|${lang()}`;
  if (!S.cache.has(k)) S.cache.set(k, load().catch((e) => { S.cache.delete(k); throw e; }));
  return S.cache.get(k);
}
const timeline = (n) => cached(`tl${n}`, () => get(`/v1/tables/${enc(S.table)}/hands/${n}/timeline`));
const report = (n) => cached(`rp${n}`, () => get(`/v1/tables/${enc(S.table)}/hands/${n}/report`).catch(() => null));
const settlement = (n, rules) => cached(`st${n}:${rules || ""}`,
  () => get(`/v1/tables/${enc(S.table)}/hands/${n}/settlement`, { rules }));

function handOf(at) {
  let found = S.hands[0];
  for (const h of S.hands) if (h.first_event <= at) found = h;
  return found;
}
function handEnd(h) {
  const i = S.hands.indexOf(h);
  return i + 1 < S.hands.length ? S.hands[i + 1].first_event - 1 : S.latest;
}
const isRuling = (l) => !!l.ruling || (l.differences && l.differences.length > 0);
const PRED = {
  hu: (l) => l.kind === "hu", kong: (l) => l.kind === "kong", liang_dao: (l) => l.kind === "liang_dao",
  ruling: isRuling, lou_hu: (l) => (l.codes || []).includes("lou_hu"),
};
const stepLines = (tl) => tl.lines.filter((l) => l.kind !== "transfer" && l.kind !== "net");

// ------------------------------------------------------------------------------------ moving
async function go(at) {
  try { await step(at); } catch (e) { S.want = null; flash(`${e.status || ""} ${e.message}`); }
}
const cur = () => (S.want ?? S.at);  // where the page is going: keys pressed quickly add up
async function step(at) {
  if (!S.table) return;
  at = Math.max(1, Math.min(S.latest, Math.trunc(Number(at)) || 1));
  S.want = at;
  const seq = ++S.seq;
  const hand = handOf(at);
  const [st, tl, rp] = await Promise.all([
    get(`/v1/tables/${enc(S.table)}/state`, { at, seat: S.seat }), timeline(hand.hand), report(hand.hand),
  ]);
  if (seq !== S.seq) return;  // a later step has started: this answer is stale
  Object.assign(S, { at, hand, state: st, tl, rp, want: null });
  render();
  writeLink();
}

// The next (dir 1) or previous (-1) event after the current one whose line satisfies pred, across hands.
async function seek(pred, dir) {
  const from = cur();
  for (let j = S.hands.indexOf(handOf(from)); j >= 0 && j < S.hands.length; j += dir) {
    const tl = await timeline(S.hands[j].hand);
    const lines = stepLines(tl).filter((l) => (dir > 0 ? l.version > from : l.version < from) && pred(l));
    if (lines.length) return dir > 0 ? lines[0].version : lines[lines.length - 1].version;
  }
  return null;
}
async function jump(kind, dir) {
  let target = null;
  if (kind === "hand") {
    const now = handOf(cur()), i = S.hands.indexOf(now) + dir;
    if (dir < 0 && cur() > now.first_event) target = now.first_event;
    else if (i >= 0 && i < S.hands.length) target = S.hands[i].first_event;
  } else {
    target = await seek(PRED[kind], dir);
  }
  if (target === null) { flash(t("none_found", t(`j_${kind}`))); return; }
  await go(target);
}
const focusSeat = () => (S.seat !== null ? S.seat : S.focus);
async function decision(dir) {
  const seat = focusSeat();
  const target = await seek((l) => (l.seat === seat && DECISIONS.has(l.kind))
    || (l.candidates || []).some((c) => c.seat === seat), dir);
  if (target === null) { flash(t("none_found", t("decision_of", seatWord(seat)))); return; }
  await go(target);
}
function flash(text) { S.note = text; const n = $("note"); if (n) n.textContent = text; }

// ------------------------------------------------------------------------------------ permalink
function hashAt(at) {
  const row = S.rp && (S.rp.events || []).find((e) => e.version === at);
  return row ? row.hash : null;
}
function writeLink() {
  const q = new URLSearchParams({ table: S.table, hand: String(S.hand.hand), at: String(S.at) });
  if (S.seat !== null) q.set("seat", String(S.seat));
  const h = hashAt(S.at);
  if (h) q.set("hash", h);
  history.replaceState(null, "", `${location.pathname}?${q}`);
}

// ------------------------------------------------------------------------------------ drawing
function tiles(list, opts = {}) {
  const box = el("span", { class: "tiles" });
  for (const x of list) box.append(tileSvg(x, opts, lang()));
  return box;
}
// A winning hand's reading as tiles: one group per set, pair or declared meld (bracketed in the
// engine's notation, drawn as a meld); its words for a screen reader and on hover.
function reading(compact) {
  const words = readingText(compact, lang());
  const box = el("span", { class: "reading", "data-reading": compact || "", title: words, "aria-label": words });
  for (const { meld, group } of readingGroups(compact)) {
    const g = el("span", { class: meld ? "group meld" : "group" });
    for (const x of expand(group)) g.append(tileSvg(x, { small: true }, lang()));
    box.append(g);
  }
  return box;
}
const seatName = (s) => `${t("seat_n", seatWord(s))} · ${(S.state.players || [])[s] || ""}`;

// Discards some seat could have won on and passed (the timeline's candidates): event → seats.
function passedWins() {
  const out = new Map();
  for (const l of S.tl.lines) {
    const seats = (l.candidates || []).filter((c) => c.outcome === "passed").map((c) => c.seat);
    if (seats.length) out.set(l.version, seats);
  }
  return out;
}

function drawSeat(seat, hs, st) {
  const h = st.hand;
  const box = el("section", { class: "seat card" + (seat.seat === focusSeat() ? " focus" : ""), "data-seat": seat.seat });
  box.addEventListener("click", () => { if (S.seat === null) { S.focus = seat.seat; render(); } });
  const head = el("header", {}, el("strong", { text: seatName(seat.seat) }));
  if (h.dealer === seat.seat) head.append(el("span", { class: "badge dealer", text: t("dealer") }));
  if (h.turn === seat.seat && h.phase !== "over") head.append(el("span", { class: "badge turn", text: t("turn") }));
  const coins = (st.coins || [])[seat.seat] ?? 0, kong = (h.kong_money || [])[seat.seat] ?? 0;
  head.append(el("span", { class: "coins", "data-coins": coins, "data-kong": kong,
    text: t("coins", coins) + (kong ? ` · ${t("kong_money", kong > 0 ? `+${kong}` : kong)}` : "") }));
  box.append(head);

  // Ready (听牌) and on what: the state's waits (own seats), or what 亮倒 declared.
  const ready = el("div", { class: "ready" });
  const ld = seat.liang_dao;
  if (Array.isArray(seat.waits) && seat.waits.length) ready.append(el("span", { class: "good", text: t("ready") }), tiles(seat.waits, { small: true }));
  else if (Array.isArray(seat.waits)) ready.append(el("span", { class: "muted", text: t("not_ready") }));
  else if (ld) ready.append(el("span", { class: "good", text: t("ready") }), tiles(ld.waits, { small: true }));
  else ready.append(el("span", { class: "muted", text: t("waits_unknown") }));
  box.append(ready);
  if (ld) {
    const hidden = Array.isArray(ld.hidden) ? ld.hidden.length : ld.hidden;
    box.append(el("div", { class: "liang-dao" }, el("span", { class: "badge ld", text: t("f_liang_dao") }),
      ` ${t("liang_dao_on")}`, tiles(ld.waits, { small: true }), hidden ? ` · ${t("hidden_kept", hidden)}` : ""));
  }
  if (seat.lou_hu) {
    const since = seat.lou_hu.since ?? seat.lou_hu.event ?? "";
    box.append(el("div", { class: "lou-hu warn", text: t("lou_hu_on", since) }));
  }

  // Concealed: face up what this view may see, face down the rest (no name on a back).
  const shown = seat.concealed === null || seat.concealed === undefined ? [] : expand(seat.concealed);
  const conc = el("div", { class: "concealed", "data-count": seat.concealed_count });
  const kept = ld && Array.isArray(ld.hidden) ? [...ld.hidden] : [];
  const keptLeft = Object.fromEntries(kept.map((x) => [x, 3]));
  let drawnMarked = false;
  const order = h.drawn && h.turn === seat.seat ? shown : shown;
  for (const x of order) {
    let extra = "";
    if (keptLeft[x] > 0) { keptLeft[x] -= 1; extra = "kept"; }
    if (!drawnMarked && h.drawn === x && h.turn === seat.seat && !extra) { drawnMarked = true; extra = "drawn"; }
    conc.append(tileSvg(x, { extra }, lang()));
  }
  for (let i = shown.length; i < seat.concealed_count; i++) conc.append(tileSvg(null, {}, lang()));
  box.append(el("div", { class: "label muted", text: t("concealed") }), conc);

  const melds = el("div", { class: "melds" });
  for (const m of seat.melds || []) {
    const four = m.kind !== "peng";
    const list = four ? [m.tile, m.tile, m.tile, m.tile] : [m.tile, m.tile, m.tile];
    const g = el("span", { class: `meld ${m.kind}`, "data-event": m.event, title: `${m.kind} · ${t("what")} ${m.event}` });
    list.forEach((x, i) => g.append(tileSvg(x, { back: m.kind === "kong_concealed" && (i === 0 || i === 3), small: true }, lang())));
    if (m.source !== null && m.source !== undefined) g.append(el("small", { class: "muted", text: ` ${t("from_seat", seatWord(m.source))}` }));
    melds.append(g);
  }
  box.append(el("div", { class: "label muted", text: t("melds") }), melds);

  const discards = el("div", { class: "discards" });
  const waitsOf = (s) => (Array.isArray(s.waits) ? s.waits : (s.liang_dao ? s.liang_dao.waits : []));
  for (const d of seat.discards || []) {
    const winners = h.seats.filter((o) => o.seat !== seat.seat && waitsOf(o).includes(d.tile)).map((o) => o.seat);
    const extra = [d.claimed ? "claimed" : "", d.event === S.at ? "latest" : ""].filter(Boolean).join(" ");
    const passed = S.seat === null && passedWins().get(d.event);
    const svg = tileSvg(d.tile, { small: true, extra: passed ? `${extra} passed-win` : extra }, lang());
    svg.dataset.event = d.event;
    if (passed) svg.setAttribute("aria-label", `${tileName(d.tile, lang())} (${t("passed_win", passed.map((s) => seatWord(s)).join(zhOr("、", ", ")))})`);
    if (d.claimed) svg.setAttribute("aria-label", `${tileName(d.tile, lang())} (${t("claimed")})`);
    discards.append(svg);
    if (d.event === S.at && winners.length) {
      discards.append(el("span", { class: "badge can-win", text: winners.map((w) => t("can_win", seatWord(w))).join(" · ") }));
    }
  }
  box.append(el("div", { class: "label muted", text: t("discards") }), discards);
  return box;
}

function drawBoard() {
  const st = S.state, board = $("board");
  board.replaceChildren();
  const h = st.hand;
  const top = el("div", { class: "table-line" },
    el("strong", { id: "hand-no", text: st.hand_no == null ? "" : t("hand_n", st.hand_no) }),
    el("span", { id: "wall-count", "data-wall": h ? h.wall_remaining : "", text: h ? t("wall", h.wall_remaining) : "" }),
    el("span", { id: "turn", "data-turn": h ? h.turn : "", text: h ? `${t("turn")}: ${t("seat_n", seatWord(h.turn))}` : "" }),
    el("span", { id: "dealer", "data-dealer": h ? h.dealer : "", text: h ? `${t("dealer")}: ${t("seat_n", seatWord(h.dealer))}` : "" }),
    el("span", { id: "view-kind", text: S.seat === null ? t("everything") : t("seat_only") }));
  board.append(top);
  if (!h) return;
  const seats = el("div", { class: "seats" });
  for (const seat of h.seats) seats.append(drawSeat(seat, h, st));
  board.append(seats);
}

function lineText(l) {
  if (S.seat === null) return l.text;
  // A seat's view: only what it saw. Another seat's draw shows no tile; the hand's start no hands.
  const who = l.seat === null || l.seat === undefined ? "" : ` · ${t("seat_n", seatWord(l.seat))}`;
  const hiddenDraw = (l.kind === "tile_drawn" || l.kind === "replacement_draw") && l.seat !== S.seat;
  const hide = hiddenDraw || l.kind === "hand_started" || l.candidates || (l.codes || []).includes("lou_hu");
  const tilesText = hide ? "" : ` ${(l.tiles || []).map((x) => tileName(x, lang())).join(" ")}`;
  return `${t("what")} ${l.version}${who} · ${t(`k_${l.kind}`)}${tilesText}`;
}

function drawTimeline() {
  const list = $("timeline");
  list.replaceChildren();
  let current = null;
  for (const l of S.tl.lines) {
    const li = el("li", { value: l.version, "data-version": l.version, "data-kind": l.kind, tabindex: -1 }, lineText(l));
    if (isRuling(l)) li.classList.add("ruling");
    if (l.version === S.at && !current && l.kind !== "transfer" && l.kind !== "net") { li.classList.add("current"); current = li; }
    li.addEventListener("click", () => go(l.version));
    list.append(li);
  }
  if (current) showInBox(list, current);
}

// `item` in view inside its own scroll box `box` (the event list, a phone's row of hands), the
// page left where it is: on a phone the list is below the board, and `scrollIntoView` pulled the
// page down to it on every step (a table opened from a link landed below its controls).
// `centred`: sideways, `item` in the middle (a hand with its neighbours on both sides).
function showInBox(box, item, centred = false) {
  const b = box.getBoundingClientRect(), at = item.getBoundingClientRect();
  if (at.top < b.top) box.scrollTop += at.top - b.top;
  else if (at.bottom > b.bottom) box.scrollTop += at.bottom - b.bottom;
  if (centred) box.scrollLeft += (at.left + at.right) / 2 - (b.left + b.right) / 2;
  else if (at.left < b.left) box.scrollLeft += at.left - b.left;
  else if (at.right > b.right) box.scrollLeft += at.right - b.right;
}

function p(text, cls = "") { return el("p", { class: cls, text }); }

// One seat that could have won on this event's tile: its multiplier, what it would have got and
// what became of it (the timeline's candidate, in the page's words).
function candidateText(c) {
  const scored = c.outcome === "won" || c.outcome === "passed" || c.outcome === "blocked_by_lou_hu";
  const parts = [t("times", c.multiplier)];
  if (scored) parts.push(t("would_get", c.coins));
  parts.push(t(`o_${c.outcome}`, c.blocked_by));
  const x = c.lou_hu;
  if (x) {
    const open = x.lifted_by === null || x.lifted_by === undefined;
    // since: the event that closed the claim window — the seat's own draw when it plays next
    parts.push(open ? t("lou_hu_open", x.since)
      : x.lifted_by === x.since ? t("lou_hu_at_once", x.since) : t("lou_hu_span", x.since, x.lifted_by));
  }
  return `${seatName(c.seat)}: ${parts.join(zhOr("，", ", "))}`;
}

// A kong in the chain's words: its kind, its place in the chain and what linked it, the factor on
// its money, and who paid whom (or, before the hand is settled, the running kong money).
function kongText(k) {
  const parts = [t(`kong_${k.kind}`)];
  if (k.robbed) return [...parts, t("kong_robbed")].join(" · ");
  if (k.k > 1 && k.chain_seat !== undefined) {
    parts.push(t("chain_n", k.k, seatName(k.chain_seat)));
    if (k.linked_by) parts.push(t(`link_${k.linked_by.kind}`, k.linked_by.event));
  }
  parts.push(t("kong_factor", k.factor));
  const money = k.coins ? k.coins.map((c) => t("pays", party(c.from), party(c.to), c.amount))
    : (k.net || []).map((d, s) => (d ? `${seatName(s)} ${d > 0 ? "+" : ""}${d}` : "")).filter(Boolean);
  if (money.length) parts.push(money.join(zhOr("，", ", ")));
  return parts.join(" · ");
}
async function drawAudit() {
  const box = $("audit"), seq = S.seq;
  box.replaceChildren(el("h3", { text: `${t("audit")} · ${t("what")} ${S.at}` }));
  const lines = S.tl.lines.filter((l) => l.version === S.at && l.kind !== "transfer" && l.kind !== "net");
  for (const l of lines) {
    if (l.ruling) {
      // a ruling's message may quote a hand: a seat's view shows only its own rulings' messages
      const mine = S.seat === null || l.seat === S.seat || l.seat === null || l.seat === undefined;
      const msg = !mine ? "" : lang() === "zh" ? l.ruling.message_zh || l.ruling.message : l.ruling.message;
      box.append(p(`${t("ruling")}${l.ruling.code} (${l.ruling.kind || ""}) — ${msg || ""}`, "error ruling-text"));
    } else {
      box.append(p(t("legal"), "good legal"));
    }
    if (S.seat !== null) continue;  // a seat's view: no one else's chances or hands
    box.append(p(l.text, "line-text"));
    if (l.candidates && l.candidates.length) {
      const ul = el("ul", { class: "candidates" });
      for (const c of l.candidates) ul.append(el("li", { "data-seat": c.seat, "data-outcome": c.outcome, text: candidateText(c) }));
      box.append(el("h4", { text: t("candidates") }), ul);
    }
    for (const x of S.tl.lou_hu || []) {
      if (x.passed.event === S.at || x.lifted_by === S.at || (x.blocked_wins || []).some((b) => b.event === S.at)) {
        box.append(el("h4", { text: t("j_lou_hu") }), p(x.text, "lou-hu-text warn"));
      }
    }
    if (l.kong) box.append(el("h4", { text: t("kong_chain") }), p(kongText(l.kong), "kong-text"));
  }
  // At the hand's end: the settlement, reported vs computed, and a what-if.
  const st = S.state, n = S.hand.hand;
  const over = (st.settlements || []).some((x) => x.hand === n) || (st.hand && st.hand.phase === "over" && st.hand_no === n);
  if (!over) return;
  let real, other;
  // the hand's own settlement is what the panel is for; a what-if the other rules refuse says so
  // in its own place and takes nothing else away
  const refused = (e) => ({ refused: e.message });
  try { [real, other] = await Promise.all([settlement(n), settlement(n, S.whatIf).catch(refused)]); } catch (e) { box.append(p(String(e.message), "error")); return; }
  if (seq !== S.seq) return;
  box.append(settlementSection(real, other));
}

// A party of a transfer: a seat with its player, or the house.
const party = (x) => (x === "house" ? t("house") : seatName(x));
// Coins per seat, each with its seat's word: 甲 0，乙 -4，丙 +4 / seat 0: 0, seat 1: -4, seat 2: +4.
const signed = (n) => (n > 0 ? `+${n}` : String(n));
const bySeat = (list) => (list || []).map((n, s) => zhOr(`${seatWord(s)} ${signed(n)}`, `seat ${s}: ${signed(n)}`)).join(zhOr("，", ", "));
const zhOr = (zh, en) => (lang() === "zh" ? zh : en);

// What the platform reported against what kwx computed (one of the report's `reported`): the
// verdict, each line that differs — payer → payee, reported / computed coins and the difference —
// and each party's net difference. The audit panel and the dispute report say it alike.
function reportedSaid(r) {
  const out = [p(r.message || r.status, r.status === "match" ? "good reported" : "error reported")];
  for (const l of r.lines || []) {
    out.push(p(t("reported_line", party(l.from), party(l.to), l.reported, l.computed, signed(l.difference)), "reported-line"));
  }
  const diff = Object.entries(r.difference || {}).filter(([, v]) => v !== 0)
    .map(([k, v]) => `${party(k === "house" ? k : Number(k))} ${signed(v)}`).join(zhOr("，", ", "));
  if (diff) out.push(p(`${t("difference")}: ${diff}`, "reported-net"));
  return out;
}

// What the hand's timeline (in the page's language) says of its wins and transfers.
const transferKey = (x) => `${x.event}:${x.from}:${x.to}:${x.amount}:${x.reason}`;
function spoken() {
  const said = new Map();  // "event:seat" → the timeline's win (kind, pattern names)
  const why = new Map();  // transferKey → the timeline's reason
  for (const l of S.tl.lines) {
    for (const x of l.kind === "hu" ? l.wins || [] : []) said.set(`${l.version}:${x.seat}`, x);
    if (l.kind === "transfer") why.set(transferKey(l.transfer), l.why || "");
  }
  return { said, why };
}

// A win's product, cap and what it pays (the settlement's derivation, in the page's language).
function paid(w) {
  const d = w.derivation || {};
  const plain = !(w.patterns || []).length && !(d.violation && !d.violation.counts_as_win);
  const product = plain ? t("pi_hu") : zhOr(d.multiplier_zh, d.multiplier);
  return `${product} · ${zhOr(d.cap_zh, d.cap)} · ${t("payable", w.payable)}`;
}

// The hand's settlement: each win with its kind, patterns (in the page's language: the names the
// hand's timeline gives), product, cap and what is paid; each transfer with why (the timeline's
// words) and the engine's arithmetic; reported vs computed; a what-if under another preset.
function settlementSection(real, other) {
  const sec = el("section", { id: "settlement" }, el("h3", { text: t("settlement") }));
  const s = real.settlement;
  const { said, why } = spoken();
  for (const w of s.wins || []) {
    const d = w.derivation || {};
    const win = said.get(`${w.event}:${w.seat}`) || {};
    const names = new Map((win.patterns || []).map((x) => [x.id, x.name]));
    const from = w.from === null ? "" : `${party(w.from)} `;
    sec.append(el("div", { class: "win", "data-seat": w.seat }, `${party(w.seat)} ← ${from}${win.kind || ""} `,
      tiles([w.tile], { small: true }), " ", reading(w.decomposition)));
    const ul = el("ul", { class: "derivation" });
    for (const x of w.patterns || []) {
      const detail = lang() === "en" && x.detail ? ` — ${x.detail}` : "";
      ul.append(el("li", { class: "pattern", "data-id": x.id, text: `${names.get(x.id) || x.id} ×${x.x}${detail}` }));
    }
    ul.append(el("li", { class: "multiplier", text: paid(w) }));
    if (w.ma) ul.append(el("li", { text: t("ma", w.ma) }));
    if (w.bao_hu) ul.append(el("li", { class: "warn bao-hu", text: t(`bao_${w.bao_hu}`) }));
    if (d.violation) {
      const v = d.violation;
      ul.append(el("li", { class: "error violation", text: zhOr(v.effect_zh, v.effect) }));
    }
    sec.append(el("h4", { text: t("derivation") }), ul);
  }
  const head = el("tr", {}, ...["payer", "payee", "coins_h", "why"].map((k) => el("th", { scope: "col", text: t(k) })));
  const rows = (s.transfers || []).map((x) => el("tr", { "data-event": x.event },
    cell("payer", { text: party(x.from) }), cell("payee", { text: party(x.to) }), cell("coins_h", { class: "amount", text: x.amount }),
    cell("why", {}, el("div", {}, el("span", { class: "why", text: why.get(transferKey(x)) || x.reason }), el("br"),
      el("small", { class: "detail muted", text: zhOr(x.detail_zh || x.detail, x.detail) })))));
  const tr = el("table", { class: "grid transfers cards" }, el("thead", {}, head), el("tbody", {}, ...rows));
  sec.append(el("h4", { text: t("transfers") }), tr, p(`${t("net")}: ${bySeat(s.net)}`, "net"));
  const rep = S.rp && (S.rp.reported || []);
  sec.append(el("h4", { text: t("reported") }));
  if (!rep || !rep.length) sec.append(p(t("no_report"), "muted"));
  for (const r of rep || []) sec.append(...reportedSaid(r));
  const pick = el("select", { id: "whatif-preset" });
  for (const x of PRESETS) pick.append(el("option", { value: x, title: x, text: presetName(x), selected: x === S.whatIf }));
  pick.addEventListener("change", () => { S.whatIf = pick.value; drawAudit(); });
  sec.append(el("h4", {}, el("label", { for: "whatif-preset", text: t("whatif") }), " ", pick));
  if (other.refused) {
    sec.append(p(t("whatif_refused") + other.refused, "error whatif-refused"));
    return sec;
  }
  const wf = other.what_if || {};
  sec.append(p(`${t("net")}: ${bySeat((wf.settlement || {}).net)} · ${t("net_difference")}: ${bySeat(wf.net_difference)}`, "whatif-net"));
  if (wf.note) sec.append(p(t("whatif_note"), "muted"));
  const recorded = wf.rulings || [];
  if (recorded.length) {
    sec.append(el("details", { class: "whatif-rulings" }, el("summary", { text: t("whatif_rulings", recorded.length) }),
      el("ul", {}, ...recorded.map((r) => el("li", { "data-event": r.event, "data-code": r.code,
        text: `${t("event_n", r.event)}: ${zhOr(r.message_zh, r.message)}` })))));
  }
  return sec;
}

function drawControls() {
  const slider = $("slider");
  slider.max = String(S.latest);
  slider.value = String(S.at);
  // what the agent is typing into the jump box is theirs: a redraw (a language switch's) keeps it
  if (document.activeElement !== $("jump-at")) $("jump-at").value = String(S.at);
  $("jump-at").max = String(S.latest);
  $("step").textContent = t("event_of", S.at, S.latest);
  $("step").dataset.at = String(S.at);
  for (const b of document.querySelectorAll("#hands button")) b.classList.toggle("current", Number(b.dataset.hand) === S.hand.hand);
  const shown = document.querySelector("#hands button.current");  // on a phone the hands are one row that scrolls
  if (shown) showInBox($("hands"), shown, true);
  $("note").textContent = S.note;
  S.note = "";
  const warn = $("hash-warning");
  const stored = S.linkHash && S.at === S.linkAt ? hashAt(S.at) : null;
  if (stored && stored !== S.linkHash) {
    warn.hidden = false;
    warn.textContent = t("hash_warn", S.at, S.linkHash.slice(0, 12), stored.slice(0, 12));
  } else {
    warn.hidden = true;
  }
  $("report-btn").disabled = S.seat !== null;
}

function render() {
  if (!S.state) return;
  drawControls();
  drawBoard();
  drawTimeline();
  drawAudit().catch((e) => flash(e.message));
}

// ------------------------------------------------------------------------------------ the report
async function showReport() {
  const rp = await report(S.hand.hand);
  const box = $("report");
  box.replaceChildren();
  if (!rp) return;
  box.append(el("div", { class: "controls" },
    el("button", { type: "button", id: "print-btn", text: t("print"), onclick: () => window.print() }),
    el("button", { type: "button", id: "report-back", text: t("back"), onclick: () => { box.hidden = true; $("viewer").hidden = false; } })));
  box.append(el("h2", { text: `${t("report")} · ${rp.table_id} · ${t("hand_n", rp.hand)}` }));
  const sum = rp.summary;
  if (sum) box.append(p(typeof sum === "string" ? sum : JSON.stringify(sum)));
  box.append(p(`${t("chain")}: ${rp.chain.verified ? t("verified") : t("broken")} · ${rp.chain.formula} · ${t("head_at", rp.head.version)} ${rp.head.hash}`, rp.chain.verified ? "good" : "error"));
  if (rp.chain.how_to_check) box.append(p(rp.chain.how_to_check, "muted"));
  const s = rp.settlement;
  if (s) {
    box.append(el("h3", { text: t("settlement") }));
    const { said, why } = spoken();
    for (const w of s.wins || []) {
      const win = said.get(`${w.event}:${w.seat}`) || {};
      const from = w.from === null ? "" : `${party(w.from)} `;
      const pats = (win.patterns || []).map((x) => `${x.name} ×${x.x}`).join(zhOr("，", ", "));
      box.append(p(`${party(w.seat)} ← ${from}${win.kind || ""} ${tileName(w.tile, lang())} · ${readingText(w.decomposition, lang())}${pats ? ` · ${pats}` : ""} · ${paid(w)}`, "win-line"));
    }
    for (const x of s.transfers || []) {
      box.append(p(`${party(x.from)} → ${party(x.to)}: ${x.amount} · ${why.get(transferKey(x)) || x.reason} (${zhOr(x.detail_zh || x.detail, x.detail)})`));
    }
    box.append(p(`${t("net")}: ${bySeat(s.net)}`));
  }
  if ((rp.reported || []).length) box.append(el("h3", { text: t("reported") }));
  for (const r of rp.reported || []) box.append(...reportedSaid(r));
  for (const x of rp.lou_hu || []) box.append(p(x.text || JSON.stringify(x), "warn"));
  const table = el("table", { class: "grid events" }, el("tr", {}, el("th", { text: "#" }), el("th", { text: t("event_col") }), el("th", { text: t("hash_h") })));
  for (const e of rp.events) table.append(el("tr", {}, el("td", { text: e.version }), el("td", { text: e.line || e.type }), el("td", { class: "hash", text: e.hash })));
  box.append(el("h3", { text: t("events") }), table);
  $("viewer").hidden = true;
  box.hidden = false;
}

// A key whose role may not read tables (a dashboard key, e.g. from the dashboard's links), said in
// the page's words with the roles that may (the API's 403 names both); once on the page: not again
// where `other` already says it.
function refused(e, other) {
  const roles = (e.body.roles || []).join(t("or"));
  const text = e.body.role ? t("forbidden_tables", e.body.role, roles) : e.message;
  return other && other.textContent === text ? "" : text;
}

// ------------------------------------------------------------------------------------ opening
async function openTable(id, { at = null, hand = null, seat = null, hash = null } = {}) {
  $("open-error").textContent = "";
  let body;
  try { body = await get(`/v1/tables/${enc(id)}/hands`); } catch (e) {
    $("open-error").textContent = e.status === 403 ? refused(e, $("search-error"))
      : e.status === 501 ? e.message : e.status === 404 ? t("no_table", id) : `${id}: ${e.message}`;
    return;
  }
  const head = await get(`/v1/tables/${enc(id)}/events`, { limit: 1 });  // the table's head version
  Object.assign(S, { table: id, info: body.table, hands: body.hands, latest: head.version, cache: new Map() });
  S.seat = seat === null || seat === "" || seat === undefined ? null : Number(seat);
  S.focus = S.seat ?? 0;
  $("seat").value = S.seat === null ? "" : String(S.seat);
  $("table-title").replaceChildren(`${id} · ${(body.table.players || []).join(" / ")} · `,
    el("span", { class: "preset", "data-preset": body.table.preset, title: body.table.preset, text: presetName(body.table.preset) }));
  const hl = $("hands");
  hl.replaceChildren();
  for (const h of body.hands) {
    const b = el("button", { type: "button", "data-hand": h.hand, "data-end": String(h.end), "data-flags": (h.flags || []).join(","),
      onclick: () => go(h.first_event) });
    handLabel(b);
    hl.append(b);
  }
  $("viewer").hidden = false;
  $("report").hidden = true;
  $("search").open = false;  // the table to the top; the search one click away
  let target = at !== null && at !== "" ? Number(at) : null;
  if (target === null && hand) { const h = body.hands.find((x) => x.hand === Number(hand)); if (h) target = h.first_event; }
  if (target === null) target = body.hands.length ? body.hands[0].first_event : 1;
  if (S.whatIf === body.table.preset) S.whatIf = body.table.preset === "default" ? "xiangyang" : "default";
  S.linkHash = hash || null;
  S.linkAt = target;
  await go(target);
}

// ------------------------------------------------------------------------------------ search
let cursor = null;
// "2026-12-06T16:52:16Z" as the dashboard says a time: "2026-12-06 16:52" (UTC, said in the heading)
const minute = (at) => (at ? String(at).slice(0, 16).replace("T", " ") : "");
async function search(more = false) {
  const f = $("search-form");
  const q = { player: f.player.value.trim(), since: f.since.value, until: f.until.value, preset: f.preset.value, limit: 20 };
  const has = FLAGS.filter((x) => f.querySelector(`input[name=has][value=${x}]`).checked);
  if (has.length) q.has = has.join(",");
  if (more && cursor) q.cursor = cursor;
  const body = $("results-body");
  if (!more) body.replaceChildren();
  $("search-error").textContent = "";
  let page;
  try { page = await get("/v1/tables", q); } catch (e) {
    $("search-error").textContent = e.status === 403 ? refused(e, $("open-error")) : e.message;
    return;
  }
  for (const x of page.tables) {
    body.append(el("tr", { "data-table": x.table_id },
      cell("table_id", {}, el("button", { type: "button", class: "link", text: x.table_id, onclick: () => openTable(x.table_id) })),
      cell("players", { text: x.players.join(", ") }), cell("preset", { "data-preset": x.preset, text: presetName(x.preset) }),
      cell("hands", { text: x.hands }), cell("first_at", { class: "first-at", "data-at": x.first_at || "", text: minute(x.first_at) }),
      cell("flags", { class: "flag-words" }, el("span", {}, ...flagWords(x.flags || [])))));
  }
  if (!more && !page.tables.length) body.append(el("tr", {}, el("td", { colspan: 6, class: "muted", text: t("no_tables") })));
  cursor = page.next_cursor;
  $("more").hidden = !cursor;
}

// ------------------------------------------------------------------------------------ the page
function L(name, tag = "span", attrs = {}) { return el(tag, { ...attrs, "data-i18n": name, text: t(name) }); }
// An element's name for a screen reader, in the page's language (relabelled with the page).
function aria(key) { return { "aria-label": t(key), "data-aria-key": key }; }
// A cell that names its column (data-label, relabelled with the page): on a phone a table of class
// "cards" is a card per row (kwx.css).
function cell(key, attrs, ...kids) { return el("td", { ...attrs, "data-label": t(key), "data-label-key": key }, ...kids); }

// The discovery API's flags (wire ids) in the page's words, each relabelled with the page.
function flagWords(flags) { return flags.flatMap((x, i) => [...(i ? [L("sep")] : []), L(`f_${x}`, "span", { "data-flag": x })]); }
// A hand's button: "第3局" / "Hand 3", a dot when something happened in it, its end and flags as the title.
function handLabel(b) {
  b.textContent = t("hand_n", b.dataset.hand) + (b.dataset.flags ? " •" : "");
  b.title = handTitle(b);
}

function handTitle(b) {
  const flags = b.dataset.flags ? b.dataset.flags.split(",").map((x) => t(`f_${x}`)) : [];
  return [t(`end_${b.dataset.end}`), ...flags].join(" · ");
}

function build() {
  const view = $("view");
  const presetSel = el("select", { name: "preset" }, el("option", { value: "", "data-i18n": "any", text: t("any") }));
  for (const x of PRESETS) presetSel.append(el("option", { value: x, title: x, text: presetName(x) }));
  const flags = el("span", { class: "flags" }, L("has"));
  for (const x of FLAGS) flags.append(el("label", {}, el("input", { type: "checkbox", name: "has", value: x }), " ", L(`f_${x}`)));
  const form = el("form", { id: "search-form", class: "row" },
    el("label", {}, L("player"), " ", el("input", { name: "player", maxlength: 64, size: 8 })),
    el("label", {}, L("since"), " ", el("input", { name: "since", type: "date" })),
    el("label", {}, L("until"), " ", el("input", { name: "until", type: "date" })),
    el("label", {}, L("preset"), " ", presetSel), flags, L("find", "button", { type: "submit" }));
  form.addEventListener("submit", (e) => { e.preventDefault(); search(false); });
  const openForm = el("form", { id: "open-form", class: "row" },
    el("label", {}, L("table_id"), " ", el("input", { name: "table", id: "open-id", maxlength: 128 })), L("open", "button", { type: "submit" }),
    el("span", { id: "open-error", class: "error" }));
  openForm.addEventListener("submit", (e) => { e.preventDefault(); openTable(openForm.table.value.trim()); });
  const results = el("table", { class: "grid cards", id: "results" },
    el("thead", {}, el("tr", {}, ...["table_id", "players", "preset", "hands", "first_at", "flags"].map((k) => L(k, "th")))),
    el("tbody", { id: "results-body" }));
  const search_ = el("details", { id: "search", class: "card", open: true }, el("summary", {}, L("search", "h2")), form, openForm,
    el("p", { id: "search-error", class: "error" }), results, L("more", "button", { type: "button", id: "more", hidden: true, onclick: () => search(true) }));

  const seatSel = el("select", { id: "seat" }, el("option", { value: "", "data-i18n": "everything", text: t("everything") }));
  for (const s of [0, 1, 2]) seatSel.append(el("option", { value: s, text: t("seat_opt", seatWord(s), s) }));
  seatSel.addEventListener("change", () => { S.seat = seatSel.value === "" ? null : Number(seatSel.value); if (S.seat !== null) S.focus = S.seat; go(S.at); });
  const jumps = el("div", { class: "jumps" });
  for (const k of JUMPS) {
    jumps.append(el("span", { class: "jump" },
      el("button", { type: "button", "data-jump": k, "data-dir": -1, text: "◀", onclick: () => jump(k, -1) }),
      L(`j_${k}`), el("button", { type: "button", "data-jump": k, "data-dir": 1, text: "▶", onclick: () => jump(k, 1) })));
  }
  const jumpForm = el("form", { id: "jump-form" }, L("jump", "label", { for: "jump-at" }), " ", el("input", { id: "jump-at", type: "number", min: 1 }), L("go", "button", { type: "submit" }));
  jumpForm.addEventListener("submit", async (e) => {
    e.preventDefault();
    await go($("jump-at").value);
    $("jump-at").value = String(S.at);  // where the jump landed
  });
  const slider = el("input", { id: "slider", type: "range", min: 1, max: 1, step: 1, ...aria("slider") });
  slider.addEventListener("input", () => go(slider.value));
  const controls = el("div", { class: "controls card" },
    el("div", { class: "row" },
      L("first", "button", { type: "button", id: "first", onclick: () => go(S.hand.first_event) }),
      L("prev", "button", { type: "button", id: "prev", onclick: () => go(cur() - 1) }),
      el("strong", { id: "step" }),
      L("next", "button", { type: "button", id: "next", onclick: () => go(cur() + 1) }),
      L("last", "button", { type: "button", id: "last", onclick: () => go(handEnd(S.hand)) }), jumpForm),
    slider, jumps, el("p", { id: "note", class: "muted", "aria-live": "polite" }));
  // the view, the report and the help wrap as one group: never one button alone on a line
  const tools = el("span", { class: "row viewer-tools" }, el("label", {}, L("view"), " ", seatSel),
    L("report", "button", { type: "button", id: "report-btn", onclick: showReport }),
    L("help", "button", { type: "button", id: "help-btn", onclick: () => toggleHelp() }));
  const top = el("div", { class: "row viewer-head" }, el("h2", { id: "table-title" }), el("nav", { id: "hands", ...aria("hands_nav") }), tools);
  const viewer = el("section", { id: "viewer", hidden: true }, top,
    el("div", { id: "hash-warning", class: "warning", role: "alert", hidden: true }), controls,
    el("div", { class: "replay-grid" }, el("div", { id: "board" }),
      el("div", { class: "side" }, el("aside", { id: "audit", class: "card" }), el("ol", { id: "timeline", class: "card", tabindex: 0, ...aria("events") }))));
  const help = el("div", { id: "help", class: "overlay", hidden: true, role: "dialog", "aria-modal": "true", "aria-labelledby": "help-title" },
    el("div", { class: "card" }, L("help_title", "h3", { id: "help-title" }),
      el("ul", {}, L("k_lr", "li"), L("k_ud", "li"), L("k_pg", "li"), L("k_he", "li"), L("k_seats", "li"), L("k_q", "li")),
      L("close", "button", { type: "button", id: "help-close", onclick: () => toggleHelp(false) })));
  // the page's language and the key: from the first screen on, as on the dashboard
  const pageTop = el("div", { class: "row page-top" },
    el("button", { type: "button", id: "lang", text: t("lang"), onclick: switchLang }),
    L("sign_out", "button", { type: "button", id: "signout", onclick: () => { signOut(); location.reload(); } }));
  view.replaceChildren(pageTop, search_, viewer, el("section", { id: "report", class: "report card", hidden: true }), help);
}

// The keys' help: opened, it takes the focus (a keyboard is where it is read); closed, it gives the
// focus back to where it was.
let helpFrom = null;
function toggleHelp(show) {
  const h = $("help");
  const open = show === undefined ? h.hidden : show;
  if (open === !h.hidden) return;
  h.hidden = !open;
  if (open) { helpFrom = document.activeElement; $("help-close").focus(); }
  else { (helpFrom && helpFrom.isConnected ? helpFrom : $("help-btn")).focus(); helpFrom = null; }
}

function relabel() {
  for (const n of document.querySelectorAll("[data-i18n]")) n.textContent = t(n.dataset.i18n);
  for (const o of document.querySelectorAll("#seat option")) if (o.value !== "") o.textContent = t("seat_opt", seatWord(Number(o.value)), o.value);
  for (const o of document.querySelectorAll("#search-form select[name=preset] option")) if (o.value !== "") o.textContent = presetName(o.value);
  for (const n of document.querySelectorAll("[data-preset]")) n.textContent = presetName(n.dataset.preset);
  for (const n of document.querySelectorAll("[data-label-key]")) n.dataset.label = t(n.dataset.labelKey);
  for (const n of document.querySelectorAll("[data-aria-key]")) n.setAttribute("aria-label", t(n.dataset.ariaKey));
  $("lang").textContent = t("lang");
  document.documentElement.lang = lang();
}
async function switchLang() {
  setLang(lang() === "zh" ? "en" : "zh");
  relabel();
  if (S.table) {
    for (const b of document.querySelectorAll("#hands button")) {
      handLabel(b);
    }
    await go(cur());  // where the page is going: a first step still on its way is not undone
    if (!$("report").hidden) await showReport();
  }
}

function onKey(e) {
  const tag = e.target && e.target.tagName;
  if ((tag === "INPUT" && e.target.type !== "range") || tag === "SELECT" || tag === "TEXTAREA") return;
  if (e.key === "?") { toggleHelp(); e.preventDefault(); return; }
  if (e.key === "Escape") { toggleHelp(false); return; }
  if (!S.table || $("viewer").hidden) return;
  const acts = {
    ArrowLeft: () => go(cur() - 1), ArrowRight: () => go(cur() + 1),
    ArrowDown: () => decision(1), ArrowUp: () => decision(-1),
    PageDown: () => jump("ruling", 1), PageUp: () => jump("ruling", -1),
    Home: () => go(handOf(cur()).first_event), End: () => go(handEnd(handOf(cur()))),
  };
  if (acts[e.key]) { e.preventDefault(); acts[e.key](); }
}

function start() {
  build();
  relabel();
  document.addEventListener("keydown", onKey);
  const q = new URLSearchParams(location.search);
  search(false);
  if (q.get("table")) {
    openTable(q.get("table"), { at: q.get("at"), hand: q.get("hand"), seat: q.get("seat"), hash: q.get("hash") });
  }
}

wireSignIn(document.getElementById("signin"), start);
