// The replay page's own words, in Chinese and English (the API's texts come in the page's language).
"use strict";
import { lang } from "/static/api.js";

const WORDS = {
  search: ["查找牌桌", "Find tables"], player: ["玩家", "Player"], since: ["起", "Since"], until: ["止", "Until"],
  preset: ["规则", "Preset"], any: ["任意", "any"], has: ["含有", "Has"], find: ["查找", "Find"], more: ["更多", "More"],
  open: ["打开", "Open"], table_id: ["牌桌编号", "Table id"], players: ["玩家", "Players"], hands: ["局数", "Hands"],
  first_at: ["开始", "Started"], flags: ["标记", "Flags"], no_tables: ["没有符合的牌桌", "No table matches"],
  hand: ["局", "Hand"], view: ["视角", "View"], everything: ["全部（客服）", "Everything (support)"],
  seat: ["座位", "Seat"], seat_n: ["座位 {0}", "seat {0}"], lang: ["English", "中文"], report: ["纠纷报告", "Dispute report"],
  help: ["帮助 ?", "Help ?"], first: ["|◀ 本局开始", "|◀ hand start"], prev: ["◀ 上一步", "◀ back"],
  next: ["下一步 ▶", "step ▶"], last: ["本局结束 ▶|", "hand end ▶|"], jump: ["跳到事件", "Jump to event"], go: ["跳转", "Go"],
  j_hu: ["胡", "hu"], j_kong: ["杠", "kong"], j_liang_dao: ["亮倒", "liang dao"], j_ruling: ["裁定", "ruling"],
  j_lou_hu: ["漏胡", "missed win"], j_hand: ["局", "hand"], event_of: ["事件 {0} / {1}", "event {0} of {1}"],
  wall: ["牌墙剩余 {0}", "wall {0} left"], dealer: ["庄", "dealer"], turn: ["该出牌", "to play"],
  coins: ["分 {0}", "coins {0}"], kong_money: ["本局杠钱 {0}", "kong money this hand {0}"], concealed: ["手牌", "concealed"], melds: ["副露", "melds"], discards: ["弃牌", "discards"],
  ready: ["听牌：", "ready on: "], not_ready: ["未听牌", "not ready"], waits_unknown: ["听牌：不可见", "ready: not visible"],
  liang_dao_on: ["亮倒，听 ", "declared ready (亮倒), waiting on "], hidden_kept: ["暗刻不亮 {0} 组", "{0} triplet(s) kept face down"],
  lou_hu_on: ["漏胡中（自事件 {0}）", "missed win in force (since event {0})"], from_seat: ["来自座位 {0}", "from seat {0}"],
  claimed: ["被吃碰杠", "claimed"], can_win: ["座位 {0} 可胡这张牌", "seat {0} could win on this tile"],
  audit: ["审核", "Audit"], legal: ["合法：引擎接受了此事件", "Legal: the engine accepted this event"],
  ruling: ["违规记录：", "Recorded violation: "], candidates: ["可胡者", "Who could have won"],
  times: ["{0}番", "×{0}"], would_get: ["应得 {0} 分", "would get {0}"],
  o_won: ["胡了", "won"], o_passed: ["没有胡", "passed"],
  o_blocked_by_lou_hu: ["事件 {0} 漏胡后尚未摸牌，不能胡", "could not win: still under the missed win of event {0}"],
  o_rob_kong_disabled: ["本规则不许抢杠", "robbing a kong is off under these rules"],
  o_below_min_multiplier: ["番数不够起胡", "below the minimum multiplier to win"],
  lou_hu_open: ["漏胡：自事件 {0} 起，尚未解除", "missed win from event {0}, not lifted yet"],
  lou_hu_at_once: ["漏胡：事件 {0} 摸牌即解除", "missed win, lifted at once by its draw at event {0}"],
  lou_hu_span: ["漏胡：自事件 {0}，事件 {1} 摸牌后解除", "missed win from event {0}, lifted by its draw at event {1}"],
  kong_concealed: ["暗杠", "concealed kong"], kong_added: ["补杠", "added kong"], kong_exposed: ["直杠", "exposed kong"],
  kong_robbed: ["被抢杠：不算杠，不付杠钱", "robbed: not a kong, pays nothing"],
  chain_n: ["{1} 的杠上杠第 {0} 杠", "kong {0} of {1}'s chain"],
  link_discard: ["接事件 {0} 杠后打出的牌", "linked by the discard after the kong at event {0}"],
  link_replacement_draw: ["接事件 {0} 杠后补牌", "linked by the replacement draw at event {0}"],
  kong_factor: ["杠钱×{0}", "money ×{0}"], pays: ["{0} 付 {1} {2} 分", "{0} pays {1} {2}"], kong_chain: ["杠链", "Kong chain"], settlement: ["结算", "Settlement"],
  derivation: ["番数推导", "Multiplier derivation"], transfers: ["转账", "Transfers"], net: ["净额", "Net"],
  reported: ["平台上报与计算", "Reported vs computed"], computed: ["计算", "computed"], reported_v: ["上报", "reported"],
  difference: ["差额", "difference"], whatif: ["假如按另一规则", "What if under another preset"],
  net_difference: ["净额差", "net difference"], house: ["平台", "the house"], pi_hu: ["屁胡 ×1（无番型）", "plain win ×1 (no pattern)"],
  payable: ["按{0}番付", "paid at ×{0}"], ma: ["买码加{0}番", "the bought tile (买码) adds {0}"], bao_discarder_pays_double: ["包胡：放炮者付双倍", "bao hu (包胡): the discarder pays double"],
  bao_both_pay: ["包胡：如亮倒者自摸，两家各付（放炮者也亮倒时由他一人包赔）",
    "bao hu (包胡): paid as a self-draw by both others (the discarder alone when they had declared too)"],
  payer: ["付方", "payer"], payee: ["收方", "payee"], coins_h: ["分", "coins"], why: ["依据", "why"],
  whatif_note: ["按另一规则时，违规只记录、不拒绝", "under the other rules, violations are recorded, not refused"], no_report: ["此局尚无上报", "nothing reported for this hand yet"],
  hash_warn: ["警告：链接中事件 {0} 的哈希与存储的不一致（链接 {1}…，存储 {2}…）",
              "Warning: the link's hash for event {0} differs from the stored one (link {1}…, stored {2}…)"],
  help_title: ["快捷键", "Keys"], k_lr: ["← / →：上一个 / 下一个事件", "← / →: previous / next event"],
  k_ud: ["↑ / ↓：该座位的上一个 / 下一个决定", "↑ / ↓: that seat's previous / next decision"],
  k_pg: ["PgUp / PgDn：上一个 / 下一个裁定", "PgUp / PgDn: previous / next ruling"],
  k_he: ["Home / End：本局开始 / 结束", "Home / End: the hand's start / end"], k_q: ["?：显示 / 隐藏帮助", "?: show / hide this help"],
  close: ["关闭", "Close"], none_found: ["没有了：{0}", "none further: {0}"], seat_only: ["座位视角：只显示该座位当时看到的", "Seat view: only what this seat saw"],
  print: ["打印", "Print"], back: ["返回回放", "Back to the replay"], chain: ["哈希链", "Hash chain"],
  verified: ["已验证", "verified"], broken: ["不一致", "broken"], events: ["事件", "Events"], decision_of: ["决定：座位 {0}", "decisions of seat {0}"],
  draws: ["摸牌", "draws"], passed_win: ["座位 {0} 可胡而未胡（漏胡）", "seat {0} could have won on it and passed (missed win)"],
  k_tile_discarded: ["打出", "discards"], k_tile_drawn: ["摸牌", "draws"], k_replacement_draw: ["补牌", "replacement draw"],
  k_peng: ["碰", "peng"], k_kong: ["杠", "kong"], k_liang_dao: ["亮倒", "declares ready"], k_hu: ["胡", "hu"],
  k_hand_started: ["开局", "hand starts"], k_hand_exhausted: ["荒庄", "wall exhausted"], k_wall_revealed: ["公布牌墙", "wall revealed"],
  k_settlement_reported: ["平台上报结算", "payout reported"], k_transfer: ["转账", "transfer"], k_net: ["净额", "net"], face_down: ["背面", "face down"], what: ["事件", "event"], no_table: ["没有这张牌桌", "No such table"],
};

export function t(name, ...args) {
  const pair = WORDS[name] || [name, name];
  let s = pair[lang() === "zh" ? 0 : 1];
  args.forEach((a, i) => { s = s.replace(`{${i}}`, String(a)); });
  return s;
}
