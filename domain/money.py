"""The money bound: why no amount kwx computes can overflow the 64-bit columns that hold it.

With every rule option at the top of its range (``domain.rule_options``), one seat pays at most
:data:`MAX_HAND_COINS` (< 2^49) in one hand; the derivation is in the docstrings below, pattern by
pattern (RULES.md §5–§7, domain.settle). docs/rules-options.md says the same for a reader.
"""

from __future__ import annotations

from domain.rule_options import MAX_BASE, MAX_KONG_POINTS, MAX_PIAO

MAX_MULTIPLIER = 1 << 25
"""An upper bound of a win's multiplier before the cap, whatever the options (RULES.md §5).

Every hit of one reading multiplies. Seven pairs (≤ ×32) with 清一色 ×4 and the situation patterns
stays under 2^12. A standard reading:

* 碰碰胡 ×2 and 卡五星 ×2 exclude each other (卡五星 needs a sequence, 碰碰胡 has none): ≤ ×2;
* 大三元 ×8 excludes 小三元, and both need dragons, which 清一色 ×4 forbids: ≤ ×8;
* situation: 杠上开花 is at most ×2^12 (``kong_chain_kai_hua: doubling`` gives ×2^chain, and a
  chain has at most 12 kongs: 4 melds per seat) and 海底捞 ×2, both on a self-draw; 杠上炮 and
  抢杠胡 (×2 each) only on a discard; 亮倒 ×2: ≤ ×2^14;
* 四归一 (×4 at most each, ``pin_dao: full`` counts several): each needs all four tiles of a kind
  in the winner's 14 (kongs aside), so at most three: ≤ ×4^3 = ×2^6; 手抓一 (≤ ×64, its range)
  leaves one concealed tile and so no 四归一 at all: the two together ≤ ×2^6.

So a multiplier is at most 2 × 8 × 2^14 × 2^6 = 2^24; the constant keeps a factor 2 of margin."""

MAX_BASE_IN_PLAY = 4 * MAX_BASE
"""A hand's base: ``base`` (≤ 10^6) doubled by 上楼 (level 0 or 1, not cumulative) and again by
equal dice."""

MAX_HAND_UNITS = 4 * (MAX_MULTIPLIER + 14) + 4 * 2 * MAX_PIAO + 12 * MAX_KONG_POINTS * (1 << 11) + 1000 + 2
"""The most one seat pays in one hand, in units of the hand's base (domain.settle):

* hu: at most two wins (一炮双响), each ≤ 2 × payable (包胡), payable ≤ multiplier + 数坎 (≤ 4)
  + 买码 (≤ 10);
* 漂: one line per hu line, ≤ 2 × ``MAX_PIAO`` each (counted twice over here);
* kong money: at most 12 kongs, each ≤ ``MAX_KONG_POINTS`` × 2^11 (the chain factor of a 12th kong;
  ``kong_chain_cap`` only lowers it);
* service fee ≤ 1000 and 荒庄 compensation ≤ 2.

With every range at its largest: 136,684,386 units (< 2^27.1)."""

MAX_HAND_COINS = MAX_HAND_UNITS * MAX_BASE_IN_PLAY
"""The most one transfer line, one seat's loss or the house's fee income moves in one hand, in
coins: 546,737,544,000,000 < 2^49 (a winner gains at most twice that: < 2^50).

Why no 64-bit column overflows (``proj_ledger_entries.amount`` / ``balance``,
``proj_ledger_accounts.balance``, ``proj_hand_settlements.house``, the sums of
``proj_player_stats``; migrations/versions/0003): a single amount is < 2^50, 2^13 times below
2^63; a running balance (a player's, over all the tenant's tables) needs more than 8,400
consecutive hands each lost or won at this absolute maximum — a 12-kong chain ending in a self-drawn
手抓一 大三元 at a base of a million coins, doubled twice — to pass 2^63. A realistic big hand
(×256 uncapped, base 10^6 doubled twice, 包胡) moves < 2^31 coins: 2^32 hands, far beyond any
table's or player's life.
``sum_multiplier`` grows by < 2^25 a win. The test ``test_largest_ranges_through_every_read_model``
plays a table with every range at its largest through settlement, ledger and stats."""

MAX_REPORTED_AMOUNT = (1 << 53) - 1
"""The largest amount a ``settlement_reported`` line may carry: an integer any JSON reader holds
exactly, and far above the largest line kwx computes (``MAX_HAND_COINS``), so a correct report is
never refused."""
