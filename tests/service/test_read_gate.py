"""The read gate's turns (services/api/gate.py): at most N run, the others wait round robin by
tenant, the queue is bounded (a newcomer takes the place of the biggest other tenant's newest
waiter), a wait is bounded; every outcome is an order or a refusal, never a duration."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from services.api.gate import Turns, _Refused


def _run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 30))


async def _settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


def test_turns_go_round_robin_between_tenants_not_first_come_first_served() -> None:
    async def scenario() -> list[str]:
        turns = Turns(concurrency=1, queue=100, wait=30)
        order: list[str] = []
        await turns.take("holder")

        async def read(who: str, i: int) -> None:
            await turns.take(who)
            order.append(f"{who}{i}")
            turns.give()

        flood = [asyncio.create_task(read("a", i)) for i in range(5)]
        await _settle()
        other = [asyncio.create_task(read("b", i)) for i in range(2)]
        await _settle()
        turns.give()  # the holder is done: the waiting start
        await asyncio.gather(*flood, *other)
        assert turns.running == 0 and turns.queued == 0 and not turns.waiting
        return order

    # b's two reads came after a's five, and get the second and fourth turns, not the sixth and seventh
    assert _run(scenario()) == ["a0", "b0", "a1", "b1", "a2", "a3", "a4"]


def test_a_full_queue_refuses_the_flooding_tenant_and_makes_room_for_another() -> None:
    async def scenario() -> None:
        turns = Turns(concurrency=1, queue=3, wait=30)
        await turns.take("holder")
        waiting = [asyncio.create_task(turns.take("a")) for _ in range(3)]
        await _settle()
        with pytest.raises(_Refused, match="KWX_READ_QUEUE") as refused:
            await turns.take("a")  # a's fourth: refused at once
        assert refused.value.message_zh.startswith("本进程等待中的读取太多（KWX_READ_QUEUE=3）")
        b = asyncio.create_task(turns.take("b"))  # b's first: takes the place of a's newest
        await _settle()
        with pytest.raises(_Refused, match="the most") as evicted:
            await waiting[2]
        assert "本租户等待的最多" in evicted.value.message_zh
        assert turns.queued == 3
        turns.give()
        await waiting[0]  # a0's turn, then b's (round robin), then a1's
        turns.give()
        await b
        turns.give()
        await waiting[1]
        turns.give()
        assert turns.running == 0 and turns.queued == 0

    _run(scenario())


def test_a_wait_is_bounded_and_a_refused_waiter_leaves_no_trace() -> None:
    async def scenario() -> None:
        turns = Turns(concurrency=1, queue=10, wait=0.05)
        await turns.take("holder")
        with pytest.raises(_Refused, match="KWX_READ_WAIT") as refused:
            await turns.take("a")
        assert refused.value.message_zh == "0.05 秒内没有轮到读取（KWX_READ_WAIT），请重试"
        assert turns.queued == 0 and not turns.waiting
        turns.give()
        await turns.take("a")  # free again: at once
        assert turns.running == 1

    _run(scenario())


def test_a_cancelled_waiter_gives_back_a_turn_it_was_given() -> None:
    async def scenario() -> None:
        turns = Turns(concurrency=1, queue=10, wait=30)
        await turns.take("holder")
        gone = asyncio.create_task(turns.take("a"))
        await _settle()
        gone.cancel()  # the client left while waiting
        with pytest.raises(asyncio.CancelledError):
            await gone
        assert turns.queued == 0
        turns.give()
        assert turns.running == 0

    _run(scenario())
