"""A model's rows of the last fact, given again for the same fact (by identity).

The projector hands each fact to every read model in turn, and some models build their rows from
another's (the discovery and feed models need a report's comparison from ``discrepancies``).
:func:`last_fact` keeps the last fact's rows, held by reference so that an identity check is safe
(the fact cannot be freed and its id reused), and gives them again, never changed by a reader: the
projector only extends its own lists with them, and the writes only encode them.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

R = TypeVar("R")


def last_fact(rows: Callable[[Any], R]) -> Callable[[Any], R]:
    last: list[Any] = [None, None]  # [fact, its rows]

    @wraps(rows)
    def once(fact: Any) -> R:
        if last[0] is not fact:
            last[1] = rows(fact)  # (an exception keeps the previous pair: this fact is asked again)
            last[0] = fact
        result: R = last[1]
        return result

    return once
