// kwx's pages talk to kwx's own API only (same origin), with the key the agent signed in with.
// The key lives in sessionStorage: gone when the tab closes, never in a URL, never sent elsewhere.
"use strict";

const KEY = "kwx.key";
const LANG = "kwx.lang";

export function key() { return sessionStorage.getItem(KEY) || ""; }
export function signIn(value) { sessionStorage.setItem(KEY, value.trim()); }
export function signOut() { sessionStorage.removeItem(KEY); }
export function lang() { return sessionStorage.getItem(LANG) || (navigator.language.startsWith("zh") ? "zh" : "en"); }
export function setLang(value) { sessionStorage.setItem(LANG, value === "zh" ? "zh" : "en"); }

// A seat as the API's Chinese texts name it (甲 乙 丙 for seats 0, 1, 2: docs/timeline.md, Words), so
// the page and the timeline, settlement and report beside it say one word for one seat; English: its number.
const SEAT_ZH = ["甲", "乙", "丙"];
export function seatWord(seat, language = lang()) {
  return language === "zh" && SEAT_ZH[seat] !== undefined ? SEAT_ZH[seat] : String(seat);
}

// A house-rule preset by its town's name (RULES.md §10: 襄阳, 十堰 …), the wire id kept in `value`
// and `title` for an agent matching a platform's setting; an id this page does not know: the id.
const PRESET_NAMES = {
  default: ["默认规则", "default"], xiangyang: ["襄阳", "Xiangyang"], shiyan: ["十堰", "Shiyan"],
  xiaogan: ["孝感", "Xiaogan"], yunmeng: ["云梦", "Yunmeng"], uncapped: ["不封顶", "uncapped"],
  platform_3d: ["3D平台", "3D platform"],
};
export function presetName(id, language = lang()) {
  const names = PRESET_NAMES[id];
  return names ? names[language === "zh" ? 0 : 1] : String(id);
}

// kwx's own words for what the API refused, in the page's language where the page has them: a read
// model this deployment does not keep (501 not_kept, KWX_READ_MODELS) is its operator's choice.
function said(status, body) {
  if (body && body.error === "not_kept") {
    return lang() === "zh"
      ? `此服务未保留读取模型 ${body.model}（运维设置 KWX_READ_MODELS），这一页无法显示。`
      : `This service does not keep the ${body.model} read model (its operator's KWX_READ_MODELS): this page cannot show it.`;
  }
  if (body && body.message_zh && lang() === "zh") return body.message_zh;
  return body && body.message ? body.message : `HTTP ${status}`;
}

export class ApiError extends Error {
  constructor(status, body) {
    super(said(status, body));
    this.status = status;
    this.body = body || {};
  }
}

// GET /v1/... with the key and the page's language; the JSON answer, or an ApiError that carries
// kwx's own {error, message, field}.
export async function get(path, params = {}) {
  const url = new URL(path, location.origin);
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== "") url.searchParams.set(k, String(v));
  }
  if (!url.searchParams.has("lang")) url.searchParams.set("lang", lang());
  const answer = await fetch(url, { headers: { Authorization: `Bearer ${key()}`, Accept: "application/json" } });
  let body = null;
  try { body = await answer.json(); } catch (_) { body = null; }
  if (!answer.ok) throw new ApiError(answer.status, body);
  return body;
}

// The sign-in form of a page: shows it when there is no key, calls onReady once there is one.
export function wireSignIn(form, onReady) {
  const input = form.querySelector("input[name=key]");
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    signIn(input.value);
    input.value = "";
    form.hidden = true;
    onReady();
  });
  if (key()) { form.hidden = true; onReady(); } else { form.hidden = false; input.focus(); }
}

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null && v !== false) node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
}
