// A small SVG line chart drawn by the page itself (no library): a step line of values over time,
// with both axes, tick labels, a zero line and a hover / keyboard readout of the nearest point.
"use strict";

const NS = "http://www.w3.org/2000/svg";
const H = 300, M = { left: 64, right: 16, top: 16, bottom: 40 };
const NARROWEST = 300;  // a chart narrower than this is drawn this wide and scaled down

function svg(tag, attrs = {}, text) {
  const node = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

// Round steps of 1, 2 or 5 × 10^k, about `count` of them over [lo, hi].
export function ticks(lo, hi, count = 5) {
  if (lo === hi) { lo -= 1; hi += 1; }
  const raw = (hi - lo) / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw);
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Math.round(v / step) * step);
  return out;
}

// Time ticks on round UTC minutes, hours or days, about `count` of them over [lo, hi] (epoch ms).
const MINUTE = 60_000, HOUR = 60 * MINUTE, DAY = 24 * HOUR;
const TIME_STEPS = [MINUTE, 5 * MINUTE, 10 * MINUTE, 15 * MINUTE, 30 * MINUTE, HOUR, 2 * HOUR, 3 * HOUR,
                    6 * HOUR, 12 * HOUR, DAY, 2 * DAY, 7 * DAY, 14 * DAY, 30 * DAY, 91 * DAY, 365 * DAY];
export function timeTicks(lo, hi, count = 6) {
  const raw = (hi - lo) / count;
  const step = TIME_STEPS.find((s) => s >= raw) ?? TIME_STEPS[TIME_STEPS.length - 1];
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi; v += step) out.push(v);
  return [out, step < DAY];
}

function utc(ms, withTime = true) {
  const iso = new Date(ms).toISOString();
  return withTime ? `${iso.slice(0, 10)} ${iso.slice(11, 16)}` : iso.slice(0, 10);
}

// A readout's line broken into rows no wider than `max` as drawn by `row` (a <text> in the chart):
// after a space, a comma or a semicolon, or a Chinese colon (not inside 10:27), else where it must.
function wrap(row, text, max) {
  const fits = (t) => { row.textContent = t; return row.getComputedTextLength() <= max; };
  const out = [];
  const push = (chunk) => {  // a chunk wider than the chart (one long word): cut where it must
    while (chunk.length > 1 && !fits(chunk)) {
      let n = chunk.length - 1;
      while (n > 1 && !fits(chunk.slice(0, n))) n -= 1;
      out.push(chunk.slice(0, n));
      chunk = chunk.slice(n);
    }
    if (chunk) out.push(chunk);
  };
  let cur = "";
  for (const part of text.split(/(?<=[\s，；：,;])/)) {
    if (!cur || fits(cur + part)) { cur += part; continue; }
    push(cur);
    cur = part;
  }
  push(cur);
  return out;
}

// points: [{x: epoch ms, y: number, label: string, detail?: string}] in time order. Returns the
// <svg>, `width` px wide as drawn (the container's: its text then keeps its CSS size; at least
// NARROWEST). The readout says a point's value, then its time and label, then its detail if it has
// one, each broken into rows that fit the chart.
export function lineChart(points, { title = "", yLabel = "", xLabel = "", width = 800 } = {}) {
  const W = Math.max(NARROWEST, Math.round(width));
  const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, class: "chart", role: "img", tabindex: 0,
                            "aria-label": title, "data-points": points.length });
  root.append(svg("title", {}, title));
  if (!points.length) return root;
  const xs = points.map((p) => p.x), ys = points.map((p) => p.y);
  let x0 = Math.min(...xs), x1 = Math.max(...xs);
  if (x0 === x1) { x0 -= 60_000; x1 += 60_000; }
  const yt = ticks(Math.min(0, ...ys), Math.max(0, ...ys));
  const y0 = Math.min(yt[0], ...ys), y1 = Math.max(yt[yt.length - 1], ...ys);
  const sx = (x) => M.left + ((x - x0) / (x1 - x0)) * (W - M.left - M.right);
  const sy = (y) => H - M.bottom - ((y - y0) / (y1 - y0 || 1)) * (H - M.top - M.bottom);

  const axes = svg("g", { class: "axes" });
  for (const v of yt) {
    axes.append(svg("line", { x1: M.left, x2: W - M.right, y1: sy(v), y2: sy(v), class: v === 0 ? "zero" : "grid" }));
    axes.append(svg("text", { x: M.left - 6, y: sy(v) + 4, "text-anchor": "end", class: "tick y" }, String(v)));
  }
  const [xt, withTime] = timeTicks(x0, x1, Math.max(2, Math.min(6, Math.floor((W - M.left - M.right) / 110))));
  const sameDay = utc(x0, false) === utc(x1, false);
  for (const v of xt.length ? xt : [x0, x1]) {
    axes.append(svg("line", { x1: sx(v), x2: sx(v), y1: H - M.bottom, y2: H - M.bottom + 5, class: "axis" }));
    const label = sameDay ? utc(v).slice(11) : withTime ? utc(v).slice(5) : utc(v, false);
    axes.append(svg("text", { x: sx(v), y: H - M.bottom + 18, "text-anchor": "middle", class: "tick x" }, label));
  }
  axes.append(svg("line", { x1: M.left, x2: M.left, y1: M.top, y2: H - M.bottom, class: "axis" }));
  axes.append(svg("line", { x1: M.left, x2: W - M.right, y1: H - M.bottom, y2: H - M.bottom, class: "axis" }));
  axes.append(svg("text", { x: 12, y: M.top + (H - M.top - M.bottom) / 2, class: "axis-label",
                            transform: `rotate(-90 12 ${M.top + (H - M.top - M.bottom) / 2})`, "text-anchor": "middle" }, yLabel));
  axes.append(svg("text", { x: M.left + (W - M.left - M.right) / 2, y: H - 4, class: "axis-label", "text-anchor": "middle" },
                  sameDay ? `${xLabel} (${utc(x0, false)} UTC)` : `${xLabel} (UTC)`));
  root.append(axes);

  // a step line: the balance holds until the next entry changes it
  let d = `M${sx(points[0].x)},${sy(points[0].y)}`;
  for (let i = 1; i < points.length; i++) d += ` H${sx(points[i].x)} V${sy(points[i].y)}`;
  root.append(svg("path", { d, class: "line" }));
  const dots = svg("g", { class: "dots" });
  points.forEach((p, i) => {
    const c = svg("circle", { cx: sx(p.x), cy: sy(p.y), r: 3, class: "point", "data-i": i, "data-y": p.y, "data-at": utc(p.x) });
    c.append(svg("title", {}, `${utc(p.x)} UTC · ${p.y}${p.label ? " · " + p.label : ""}${p.detail ? "\n" + p.detail : ""}`));
    dots.append(c);
  });
  root.append(dots);

  const tip = svg("g", { class: "tip", visibility: "hidden" });
  const ring = svg("circle", { r: 6, class: "tip-ring" });
  const box = svg("rect", { rx: 4, class: "tip-box" });
  const rows = svg("g", { class: "tip-rows" });
  tip.append(ring, box, rows);
  root.append(tip);
  let current = -1;
  const show = (i) => {
    current = i;
    const p = points[i], cx = sx(p.x), cy = sy(p.y);
    ring.setAttribute("cx", cx); ring.setAttribute("cy", cy);
    const said = [[`${yLabel} ${p.y}`, "tip-value"], [`${utc(p.x)} UTC${p.label ? " · " + p.label : ""}`, "tip-time"],
                  ...(p.detail ? [[p.detail, "tip-detail"]] : [])];
    rows.replaceChildren();
    const lines = [];
    for (const [text, cls] of said) {  // measured as drawn: a Chinese letter is about two Latin ones wide
      const probe = svg("text", { class: cls });
      rows.append(probe);
      const parts = wrap(probe, text, W - 16);
      probe.remove();
      for (const part of parts) {
        const row = svg("text", { class: cls }, part);
        rows.append(row);
        lines.push(row);
      }
    }
    const width = Math.min(W, Math.max(...lines.map((l) => l.getComputedTextLength())) + 16);
    const height = 8 + 15 * lines.length;
    const bx = Math.min(Math.max(cx - width / 2, 0), W - width);
    const by = Math.max(0, Math.min(cy > H / 2 ? cy - height - 10 : cy + 10, H - height));
    box.setAttribute("x", bx); box.setAttribute("y", by); box.setAttribute("width", width); box.setAttribute("height", height);
    lines.forEach((l, n) => { l.setAttribute("x", bx + 8); l.setAttribute("y", by + 16 + 15 * n); });
    tip.setAttribute("visibility", "visible");
    tip.setAttribute("data-i", i); tip.setAttribute("data-y", p.y);
  };
  root.addEventListener("mousemove", (ev) => {
    const m = root.getScreenCTM();
    if (!m) return;
    const x = new DOMPoint(ev.clientX, ev.clientY).matrixTransform(m.inverse()).x;
    let best = 0;
    points.forEach((p, i) => { if (Math.abs(sx(p.x) - x) <= Math.abs(sx(points[best].x) - x)) best = i; });
    show(best);
  });
  root.addEventListener("mouseleave", () => tip.setAttribute("visibility", "hidden"));
  root.addEventListener("keydown", (ev) => {
    if (ev.key === "ArrowRight" || ev.key === "ArrowLeft") {
      ev.preventDefault();
      const step = ev.key === "ArrowRight" ? 1 : -1;
      show(current < 0 ? points.length - 1 : Math.min(points.length - 1, Math.max(0, current + step)));
    }
  });
  return root;
}
