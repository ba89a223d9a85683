// kwx's own mahjong tiles, drawn as SVG (no image files, no fonts to fetch): 筒 dots 1–9, 条 sticks
// 1–9, 中 发 白, and a face-down back. A face-down tile carries no name at all: what a seat may not
// see is never in the page.
"use strict";

const NS = "http://www.w3.org/2000/svg";
const W = 30, H = 40;
// Where the pips of 1–9 sit in a 30×40 face (x, y), shared by dots and sticks.
const PIPS = {
  1: [[15, 20]],
  2: [[15, 11], [15, 29]],
  3: [[8, 9], [15, 20], [22, 31]],
  4: [[9, 11], [21, 11], [9, 29], [21, 29]],
  5: [[9, 10], [21, 10], [15, 20], [9, 30], [21, 30]],
  6: [[9, 9], [21, 9], [9, 20], [21, 20], [9, 31], [21, 31]],
  7: [[7, 8], [15, 11], [23, 14], [9, 24], [21, 24], [9, 33], [21, 33]],
  8: [[9, 7], [21, 7], [9, 15.5], [21, 15.5], [9, 24.5], [21, 24.5], [9, 33], [21, 33]],
  9: [[7, 9], [15, 9], [23, 9], [7, 20], [15, 20], [23, 20], [7, 31], [15, 31], [23, 31]],
};
const DOT_COLOURS = ["#1a5fb4", "#c01c28", "#26a269"];
const HONOURS = { C: ["中", "#c01c28"], F: ["发", "#26a269"], P: ["白", "#1a5fb4"] };
const NAMES_ZH = { p: "筒", s: "条" };
const NAMES_EN = { p: "dots", s: "bamboo" };
const HONOUR_EN = { C: "red dragon", F: "green dragon", P: "white dragon" };

function node(tag, attrs = {}) {
  const n = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, String(v));
  return n;
}

// A tile's name for a person: "5筒" / "5 dots", "中" / "red dragon".
export function tileName(tile, lang = "zh") {
  if (HONOURS[tile]) return lang === "zh" ? HONOURS[tile][0] : HONOUR_EN[tile];
  const suit = tile.slice(-1);
  if (lang === "zh") return `${tile[0]}${NAMES_ZH[suit] || suit}`;
  return `${tile[0]} ${tile[0] === "1" && suit === "p" ? "dot" : NAMES_EN[suit] || suit}`;  // as the API's: 1 dot, 2 dots
}

// Compact notation ("12p 23445677s C") to wire names, in order: ["1p","2p","2s",…,"C"].
export function expand(compact) {
  const out = [];
  for (const group of (compact || "").trim().split(/\s+/)) {
    if (!group) continue;
    const last = group.slice(-1);
    if (last === "p" || last === "s") {
      for (const d of group.slice(0, -1)) out.push(d + last);
    } else {
      for (const h of group) out.push(h);
    }
  }
  return out;
}

// A winning hand's reading (the engine's compact notation, declared melds bracketed:
// "888p 234s 11s [4444p] [CCCC]") as its groups: [{ meld, group: "4444p" }, …].
export function readingGroups(compact) {
  return (compact || "").trim().split(/\s+/).filter(Boolean).map((raw) => {
    const meld = raw.startsWith("[") && raw.endsWith("]");
    return { meld, group: meld ? raw.slice(1, -1) : raw };
  });
}

// The reading in words: "888筒 234条 11条 [4444筒] [中中中中]" /
// "888 dots, 234 bamboo, 11 bamboo, [4444 dots], [red dragon ×4]".
export function readingText(compact, lang = "zh") {
  const said = readingGroups(compact).map(({ meld, group: g }) => {
    const suit = g.slice(-1);
    let text;
    if (NAMES_ZH[suit]) text = lang === "zh" ? `${g.slice(0, -1)}${NAMES_ZH[suit]}` : `${g.slice(0, -1)} ${NAMES_EN[suit]}`;
    else if (lang === "zh") text = [...g].map((h) => (HONOURS[h] ? HONOURS[h][0] : h)).join("");
    else text = `${HONOUR_EN[g[0]] || g[0]} ×${g.length}`;
    return meld ? `[${text}]` : text;
  });
  return said.join(lang === "zh" ? " " : ", ");
}

// One tile as an <svg>. `tile` null or opts.back: face down (no name, no data-tile).
export function tileSvg(tile, opts = {}, lang = "zh") {
  const back = !tile || opts.back;
  const svg = node("svg", { viewBox: `0 0 ${W} ${H}`, class: "tile" + (back ? " back" : "") + (opts.extra ? ` ${opts.extra}` : ""),
                            role: "img", width: opts.small ? 22 : 30, height: opts.small ? 29 : 40 });
  if (back) {
    svg.setAttribute("aria-label", lang === "zh" ? "背面" : "face down");
    svg.append(node("rect", { x: 0.75, y: 0.75, width: W - 1.5, height: H - 1.5, rx: 4, fill: "#2f6f4f", stroke: "#1d4733", "stroke-width": 1.5 }));
    svg.append(node("rect", { x: 5, y: 6, width: W - 10, height: H - 12, rx: 2, fill: "none", stroke: "#8fc3a6", "stroke-width": 1 }));
    return svg;
  }
  svg.dataset.tile = tile;
  const label = tileName(tile, lang);
  svg.setAttribute("aria-label", label);
  const title = node("title");
  title.textContent = label;
  svg.append(title);
  svg.append(node("rect", { x: 0.75, y: 0.75, width: W - 1.5, height: H - 1.5, rx: 4, fill: "#fffdf6", stroke: "#8a8470", "stroke-width": 1.5 }));
  if (HONOURS[tile]) {
    const [glyph, colour] = HONOURS[tile];
    if (tile === "P") {
      svg.append(node("rect", { x: 6, y: 7, width: W - 12, height: H - 14, rx: 2, fill: "none", stroke: colour, "stroke-width": 2.5 }));
    } else {
      const t = node("text", { x: W / 2, y: 28.5, "text-anchor": "middle", "font-size": 22, "font-weight": 700, fill: colour });
      t.textContent = glyph;
      svg.append(t);
    }
    return svg;
  }
  const n = Number(tile[0]), suit = tile.slice(-1);
  PIPS[n].forEach(([x, y], i) => {
    if (suit === "p") {
      const r = n === 1 ? 9 : n <= 4 ? 5.5 : n <= 6 ? 4.6 : 3.6;
      const colour = n === 1 ? DOT_COLOURS[1] : DOT_COLOURS[(i + n) % 3];
      svg.append(node("circle", { cx: x, cy: y, r, fill: "none", stroke: colour, "stroke-width": n === 1 ? 3 : 1.8 }));
      svg.append(node("circle", { cx: x, cy: y, r: r / 2.8, fill: colour }));
    } else {
      const h = n === 1 ? 20 : n <= 6 ? 8.5 : 7;
      const colour = (n === 1 || (n >= 5 && i === Math.floor(n / 2))) ? "#c01c28" : "#26a269";
      svg.append(node("rect", { x: x - 2, y: y - h / 2, width: 4, height: h, rx: 1.6, fill: colour }));
      svg.append(node("line", { x1: x - 2, x2: x + 2, y1: y, y2: y, stroke: "#fffdf6", "stroke-width": 0.8 }));
    }
  });
  const corner = node("text", { x: 3, y: 8, "font-size": 7, fill: "#5b6570" });
  corner.textContent = String(n);
  svg.append(corner);
  return svg;
}
