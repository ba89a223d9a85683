// The dashboard's words in zh and en, and the statistics it knows (the leaderboard's `by` values of
// openapi/openapi.json, in its order; a test checks they stay equal).
"use strict";

// [key, zh, en]; RATIO_KEYS live under a row's `ratios`, the others at its top level.
const STATS = [
  ["hands_played", "局数", "Hands played"],
  ["hands_aborted", "中止局", "Hands aborted"],
  ["hands_exhausted", "荒庄", "Hands exhausted"],
  ["hands_dealt", "坐庄", "Hands dealt"],
  ["wins", "胡牌", "Wins"],
  ["wins_self_draw", "自摸", "Self-draw wins"],
  ["wins_discard", "接炮胡", "Discard wins"],
  ["wins_robbed_kong", "抢杠胡", "Robbed-kong wins"],
  ["wins_double", "一炮双响（胡）", "Double-win wins"],
  ["deal_ins", "点炮", "Deal-ins"],
  ["deal_ins_double", "一炮双响（点）", "Double deal-ins"],
  ["robbed_kongs", "被抢杠", "Kongs robbed"],
  ["bao_hu_paid", "包胡次数", "Bao hu paid"],
  ["bao_hu_coins", "包胡金币", "Bao hu coins"],
  ["liang_dao_declared", "亮倒", "Declared ready"],
  ["liang_dao_won", "亮倒胡", "Wins after declaring ready"],
  ["lou_hu_incurred", "漏胡", "Missed wins"],
  ["hu_violations", "违规胡牌", "Wins claimed against a rule"],
  ["kongs_concealed", "暗杠", "Concealed kongs"],
  ["kongs_added", "补杠", "Added kongs"],
  ["kongs_exposed", "直杠", "Exposed kongs"],
  ["kongs_in_chain", "连杠", "Kongs in a chain"],
  ["sum_multiplier", "番数合计", "Sum of multipliers"],
  ["sum_payable", "应付合计", "Sum payable"],
  ["coins_won", "赢", "Coins won"],
  ["coins_lost", "输", "Coins lost"],
  ["net_coins", "净输赢", "Net coins"],
  ["max_multiplier", "最大番数", "Max multiplier"],
  ["win_rate", "胡牌率", "Win rate"],
  ["self_draw_share", "自摸占比", "Self-draw share"],
  ["deal_in_rate", "点炮率", "Deal-in rate"],
  ["liang_dao_rate", "亮倒率", "Declared-ready rate"],
  ["liang_dao_success", "亮倒成功率", "Declared-ready success"],
  ["lou_hu_per_hand", "每局漏胡", "Missed wins per hand"],
  ["average_multiplier", "平均番数", "Average multiplier"],
  ["average_payable", "平均应付", "Average payable"],
  ["net_coins_per_hand", "每局净输赢", "Net coins per hand"],
];

export const STAT_KEYS = STATS.map((s) => s[0]);
export const RATIO_KEYS = STAT_KEYS.slice(STAT_KEYS.indexOf("win_rate"));
export const PRESETS = ["default", "xiangyang", "shiyan", "xiaogan", "yunmeng", "uncapped", "platform_3d"];

const WORDS = {
  zh: {
    stats: "玩家统计", player: "玩家", show: "查看", overall: "全部", stat_h: "统计项", balance: "金币余额",
    chart: "金币余额走势", leaderboard: "排行榜", by: "排序", order: "顺序", desc: "降序", asc: "升序",
    since: "起（UTC 日）", until: "止（UTC 日）", preset: "规则", any: "全部", min_hands: "最少局数",
    per_page: "每页", prev: "上一页", next: "下一页", apply: "应用", rank: "名次",
    discrepancies: "赔付差异", table: "牌桌", hand_n: "第{n}局", seq: "序号", reported: "上报", computed: "计算",
    difference: "差额", seat: "座位", house: "平台", open_replay: "回放", none: "无", no_entries: "暂无金币记录", patterns: "胡牌番型（次数）", pattern_n: "{name} {n} 次",
    loading: "加载中…", time: "时间", entries: "条记录", sign_out: "退出", lang: "English",
    page_of: "第 {a}–{b} 名", caught_up: "已包含全部事件", not_caught_up: "仍在追赶事件",
    forbidden: "您的密钥（角色 {role}）无权查看{what}。", forbidden_any: "您的密钥无权查看{what}。", unauthorized: "密钥无效或已撤销，请重新登录。",
    not_found: "没有玩家 {player} 的统计。", failed: "读取失败：{message}",
    what_stats: "玩家统计", what_ledger: "金币记录", what_leaderboard: "排行榜",
    what_discrepancies: "赔付差异（需 support 或 platform 角色）",
    pick: "输入玩家编号，或在排行榜中点选玩家。", no_players: "此条件下没有玩家。",
    newest: "显示最新 {n} 条，共 {total} 条",
    // a transfer's reason (CONTRACT §2) in the words of the API's projections/wording.REASONS
    r_hu: "胡牌", r_kong: "杠钱", r_exhausted: "荒庄", r_piao: "漂", r_fee: "服务费",
    entries_newest: "金币明细（最后入账在前）",
    entries_order: "按入账顺序，每条后为当时余额；晚送来的牌桌晚入账，所以时间可能前后交错。", e_time: "时间（UTC）", e_hand: "牌桌 · 局", e_with: "对方",
    e_reason: "原因", e_coins: "金币", e_why: "依据", more: "再显示 {n} 条",
  },
  en: {
    stats: "Player statistics", player: "Player", show: "Show", overall: "Overall", stat_h: "Statistic", balance: "Balance",
    chart: "Coin balance over time", leaderboard: "Leaderboard", by: "Rank by", order: "Order",
    desc: "Descending", asc: "Ascending", since: "Since (UTC day)", until: "Until (UTC day)",
    preset: "Preset", any: "Any", min_hands: "Min. hands", per_page: "Per page", prev: "Previous",
    next: "Next", apply: "Apply", rank: "Rank", discrepancies: "Discrepancies", table: "Table",
    hand_n: "Hand {n}", seq: "No.", reported: "Reported", computed: "Computed", difference: "Difference", seat: "seat", house: "the house",
    open_replay: "Replay", none: "None", no_entries: "No coin entries yet", patterns: "Patterns won (times)", pattern_n: "{name}: {n}",
    loading: "Loading…", time: "Time", entries: "entries", sign_out: "Sign out", lang: "中文",
    page_of: "Ranks {a}–{b}", caught_up: "up to date: every stored event is counted", not_caught_up: "still catching up",
    forbidden: "Your key (role {role}) may not read {what}.", forbidden_any: "Your key may not read {what}.",
    unauthorized: "The key was not accepted (unknown or revoked): sign in again.",
    not_found: "No statistics for player {player}.", failed: "Could not read: {message}",
    what_stats: "player statistics", what_ledger: "the coin ledger", what_leaderboard: "the leaderboard",
    what_discrepancies: "the discrepancies feed (it needs a support or platform key)",
    pick: "Type a player id, or pick a player in the leaderboard.", no_players: "No players match.",
    newest: "the newest {n} of {total}",
    r_hu: "win", r_kong: "kong money", r_exhausted: "exhausted wall", r_piao: "piao", r_fee: "service fee",
    entries_newest: "Coin entries, last booked first",
    entries_order: "In the order they were booked, each with the balance after it; a table sent late is booked late, so the times may run out of order.", e_time: "Time (UTC)", e_hand: "Table · hand", e_with: "With",
    e_reason: "Reason", e_coins: "Coins", e_why: "How it was paid", more: "{n} more",
  },
};

export function t(lang, word, vars = {}) {
  const text = (WORDS[lang] || WORDS.en)[word] ?? word;
  return text.replace(/\{(\w+)\}/g, (_, k) => String(vars[k] ?? ""));
}

export function statLabel(lang, key) {
  const s = STATS.find((x) => x[0] === key);
  return s ? (lang === "zh" ? s[1] : s[2]) : key;
}

// A statistic of a leaderboard row or a stats block: ratios sit under `ratios`.
export function statOf(block, key) {
  if (RATIO_KEYS.includes(key)) return block.ratios ? block.ratios[key] ?? null : null;
  return block[key] ?? null;
}

// Shares as percentages, other ratios to two places; the exact value stays in the cell's data-value.
const PERCENT = ["win_rate", "self_draw_share", "deal_in_rate", "liang_dao_rate", "liang_dao_success"];
export function fmt(value, key = "") {
  if (value === null || value === undefined) return "—";
  if (PERCENT.includes(key)) return `${(value * 100).toFixed(1)}%`;
  if (RATIO_KEYS.includes(key)) return value.toFixed(2);
  return String(value);
}
