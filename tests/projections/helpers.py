"""Simulated tables for the projection tests, appended through the HTTP API."""

from __future__ import annotations

import random
from typing import Any

PRESETS = ("default", "platform_3d", "xiangyang", "shiyan", "xiaogan", "yunmeng", "uncapped")
PLAYERS = ("ann", "bo", "cy", "di", "ed")


def simulated(
    seed: int, hands: int = 2, preset: str | None = None, table_id: str | None = None
) -> list[dict[str, Any]]:
    """A legal simulated table; players drawn from a small pool so statistics add up across tables."""
    from domain.simulate import simulate_table

    rng = random.Random(seed)
    preset = preset or PRESETS[seed % len(PRESETS)]
    events = simulate_table(rng, hands, {"preset": preset}, table_id or f"s{seed}")
    players = rng.sample(PLAYERS, 3)
    events[0] = dict(events[0], players=players)
    return events


def append(
    client: Any, headers: dict[str, str], table_id: str, events: list[dict[str, Any]], size: int = 400
) -> int:
    version = 0
    for start in range(0, len(events), size):
        batch = events[start : start + size]
        r = client.post(f"/v1/tables/{table_id}/events", json={"expected_version": version, "events": batch},
                        headers=headers)  # fmt: skip
        assert r.status_code == 201, r.text
        version = r.json()["version"]
    return version
