"""亮倒 (declaring ready and showing the hand, RULES.md §8): the declaration, the locked hand, the
kongs that keep the waits, and 3D-platform feeding (``liang_dao_forbid_feeding``)."""

from __future__ import annotations

from domain.ready import waits
from domain.rules import Rules
from domain.rulings import make, t, ts
from domain.shape import decompositions, is_seven_pairs
from domain.state import HandState, Ruling
from domain.walls import remaining


def declared_waits(concealed: tuple[int, ...], discard: int) -> tuple[int, ...]:
    c = list(concealed)
    c[discard] -= 1
    return waits(c)


def check_declaration(
    hs: HandState, rules: Rules, seat: int, discard: int, hidden: list[int], v: int, who: str
) -> Ruling | None:
    """Rule checks of a 亮倒 (the discard itself is checked like any discard)."""
    if rules.liang_dao_min_wall is not None and remaining(hs) < rules.liang_dao_min_wall:
        return make(
            v, "liang_dao_min_wall",
            f"{who} may not declare 亮倒: {remaining(hs)} tiles are left in the wall, fewer than "
            f"liang_dao_min_wall = {rules.liang_dao_min_wall} (少于{rules.liang_dao_min_wall}张不能亮)",
            f"{who} 不能亮倒：牌墙只剩{remaining(hs)}张，少于{rules.liang_dao_min_wall}张不能亮",
            seat=seat, wall=remaining(hs), min_wall=rules.liang_dao_min_wall,
        )  # fmt: skip
    w = declared_waits(hs.concealed[seat], discard)
    if not w:
        return make(
            v, "liang_dao_not_ready",
            f"{who} declared 亮倒 discarding {t(discard)}, but the 13 tiles left are not ready (not 听牌)",
            f"{who} 打{t(discard)}亮倒，但剩下的牌没有听牌，不能亮倒",
            seat=seat, discard=t(discard),
        )  # fmt: skip
    if hidden:
        if not rules.liang_dao_hide_triplets:
            return make(
                v, "liang_dao_hidden",
                f"{who} kept {ts(hidden)} face down, but liang_dao_hide_triplets is off: the whole "
                "hand must be shown",
                f"{who} 扣下了{ts(hidden)}，但本桌规则亮倒须全部亮出（不允许三个的不亮）",
                seat=seat, hidden=[t(k) for k in hidden],
            )  # fmt: skip
        c = list(hs.concealed[seat])
        c[discard] -= 1
        for k in hidden:
            if c[k] < 3 or hidden.count(k) > 1:
                return make(
                    v, "liang_dao_hidden",
                    f"{who} may keep only concealed triplets face down; {t(k)} is not one "
                    f"(held {c[k]} after the discard)",
                    f"{who} 只能扣下暗刻，{t(k)}不是暗刻",
                    seat=seat, tile=t(k),
                )  # fmt: skip
    return None


def kong_keeps_waits(hs: HandState, seat: int, tile: int, kind: str) -> bool:
    """After 亮倒 a kong is allowed only if it leaves the waits unchanged: a 补杠 always; a 暗杠 /
    直杠 only of a triplet that is an independent set in every ready decomposition (23334567 may
    not kong 3). The 13-tile ready hand is the concealed part before the fourth tile came in."""
    if kind == "added":
        return True
    c = list(hs.concealed[seat])
    if kind == "concealed":
        c[tile] -= 1  # the drawn fourth tile
    if c[tile] != 3:
        return False
    ws = waits(c)
    if not ws:
        return False
    for w in ws:
        if w == tile:
            return False  # after the kong the fourth copy is gone: that wait disappears
        c[w] += 1
        try:
            if is_seven_pairs(c):
                return False
            for d in decompositions(c):
                if ("tri", tile) not in [(g.kind, g.tile) for g in d.sets]:
                    return False
        finally:
            c[w] -= 1
    c[tile] -= 3
    return waits(c) == ws


def feeding(hs: HandState, rules: Rules, seat: int, tile: int, v: int, who: str) -> Ruling | None:
    """3D platform: a seat that has not declared may not discard a declarer's wait — unless every
    tile it holds is one (then any discard is allowed, and the declarer may win on it)."""
    ld = hs.liang_dao
    if not rules.liang_dao_forbid_feeding or ld[seat] is not None or ld == (None, None, None):
        return None
    declarers = [(s, info.waits) for s in (0, 1, 2) if s != seat and (info := hs.liang_dao[s]) is not None]
    fed = [s for s, w in declarers if tile in w]
    if not fed:
        return None
    all_waits = {k for _, w in declarers for k in w}
    held = [k for k, n in enumerate(hs.concealed[seat]) if n]
    if all(k in all_waits for k in held):
        return None  # every tile would feed: the discard is forced (docs/rulings.md)
    return make(
        v, "feeding_declared_wait",
        f"{who} may not discard {t(tile)}: seat {fed[0]} declared 亮倒 waiting on it "
        "(liang_dao_forbid_feeding: 此牌为胡口牌，禁止出牌)",
        f"{who} 不能打{t(tile)}：{fed[0]}号位已亮倒，此牌为胡口牌，禁止出牌",
        seat=seat, tile=t(tile), declarers=fed,
    )  # fmt: skip
