"""``GET /metrics`` (issue 15): the Prometheus text format, counted by every worker and the
projector child of ``kwx serve`` (prometheus_client's multiprocess mode), route templates as labels
(never raw paths), append outcomes and refusals by rule, the read models' lag and parked events,
the pools; no tenant data in any label; moved to a port of its own or turned off by a setting; and
every metric the shipped Grafana dashboard and alert rules name exists. Against a real PostgreSQL."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from services.settings import Settings, SettingsError
from tests.service.serving import free_port, serving, wait_for
from tests.service.streams import legal_table, relabel

pytestmark = pytest.mark.db

ROOT = Path(__file__).resolve().parents[2]
Headers = dict[str, str]


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """(sample name, sorted labels) → value of an exposition."""
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def total(found: dict[Any, float], name: str, **labels: str) -> float:
    wanted = set(labels.items())
    return sum(v for (n, ls), v in found.items() if n == name and wanted <= set(ls))


def scrape(client: Any) -> dict[Any, float]:
    answer = client.get("/metrics")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain")
    return samples(answer.text)


def test_appends_are_counted_by_outcome_and_rule(client: Any, platform: Headers, table_id: str) -> None:
    before = scrape(client)
    wire = legal_table(71)
    url = f"/v1/tables/{table_id}/events"
    first = {"events": wire[:20], "expected_version": 0}
    assert client.post(url, json=first, headers=platform).status_code == 201
    assert client.post(url, json=first, headers=platform).status_code == 201  # a replay
    stale = client.post(url, json={"events": wire[20:25], "expected_version": 3}, headers=platform)
    assert stale.status_code == 409
    illegal = client.post(url, json={"events": [dict(wire[0], id="again")], "expected_version": 20},
                          headers=platform)  # fmt: skip
    assert illegal.status_code == 422
    rule = illegal.json()["rule"]
    after = scrape(client)

    def delta(name: str, **labels: str) -> float:
        return total(after, name, **labels) - total(before, name, **labels)

    assert delta("kwx_events_appended_total") == 20
    assert delta("kwx_append_batches_total", outcome="stored") == 1
    assert delta("kwx_append_batches_total", outcome="replayed") == 1
    assert delta("kwx_append_batches_total", outcome="version_conflict") == 1
    assert delta("kwx_append_batches_total", outcome="illegal") == 1
    assert delta("kwx_append_refusals_total", rule=rule) == 1
    assert delta("kwx_append_duration_seconds_count") == 4
    route = "/v1/tables/{table_id}/events"
    assert delta("kwx_http_requests_total", route=route, method="POST", status="201") == 2
    assert delta("kwx_http_requests_total", route=route, method="POST", status="422") == 1
    assert delta("kwx_http_request_duration_seconds_count", route=route, method="POST") == 4
    assert total(after, "kwx_database_up") == 1


def test_a_thousand_random_paths_are_one_label(client: Any, platform: Headers) -> None:
    def unmatched(found: dict[Any, float]) -> set[Any]:
        return {ls for (n, ls) in found if n == "kwx_http_requests_total" and ("route", "unmatched") in ls}

    before = scrape(client)
    rng = random.Random(7)
    for _ in range(1000):
        path = "/" + "/".join("".join(rng.choices("abcxyz019-_", k=rng.randint(1, 12))) for _ in range(3))
        client.get(path, headers=platform)
    client.request("BREW", "/coffee")
    found = samples(client.get("/metrics").text)
    routes = {dict(ls).get("route") for (n, ls) in found if n == "kwx_http_requests_total"}
    templates = set(json.loads((ROOT / "openapi" / "openapi.json").read_text())["paths"]) | {"unmatched"}
    assert routes <= templates, routes - templates
    new = unmatched(found) - unmatched(before)
    assert len(new) <= 2  # GET 404 and OTHER's answer: by method and status, never by path
    methods = {"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "OTHER"}
    assert {dict(ls)["method"] for ls in unmatched(found)} <= methods
    assert total(found, "kwx_http_requests_total", route="unmatched") - total(
        before, "kwx_http_requests_total", route="unmatched") == 1001  # fmt: skip


def test_no_tenant_data_in_any_label(client: Any, make_key: Any) -> None:
    tenant = "tenant-secretive-42"
    key = make_key(tenant, "platform")
    table = "table-private-9f3"
    wire = relabel(legal_table(72), "player-hidden-")
    body = {"events": wire, "expected_version": 0}
    answer = client.post(f"/v1/tables/{table}/events", json=body, headers=key)
    assert answer.status_code == 201, answer.text
    client.get(f"/v1/tables/{table}/state", headers=key)
    text = client.get("/metrics").text
    for secret in (tenant, table, "player-hidden-", key["Authorization"].split()[-1][:16]):
        assert secret not in text


def test_read_models_are_reported_per_model(client: Any) -> None:
    from projections import registry

    found = scrape(client)
    for name in ("kwx_projection_lag_seconds", "kwx_projection_behind_events", "kwx_projection_parked_events",
                 "kwx_projection_stale"):  # fmt: skip
        models = {dict(ls)["model"] for (n, ls) in found if n == name}
        assert models == set(registry.NAMES), name


def test_the_setting() -> None:
    assert Settings.from_env({}).metrics == "on"
    assert Settings.from_env({"KWX_METRICS": "9102"}).metrics_port() == 9102
    assert Settings.from_env({"KWX_METRICS": "off"}).metrics_port() is None
    for bad in ("sometimes", "0", "70000"):
        with pytest.raises(SettingsError, match="KWX_METRICS"):
            Settings.from_env({"KWX_METRICS": bad})


def test_off_removes_the_route(pg_cluster: Any) -> None:
    from fastapi.testclient import TestClient

    from services.api.app import create_app

    assert "/metrics" not in create_app(Settings(metrics="off")).openapi()["paths"]
    with TestClient(create_app(Settings(metrics="off"), container=None)) as client:  # type: ignore[arg-type]
        assert client.get("/metrics").status_code == 404


# ------------------------------------------------------------------------------ kwx serve, for real
def _key(url: str, tenant: str) -> Headers:
    from services.bootstrap import bootstrap

    keys = bootstrap(Settings(database_url=url, pool_size=1, log_level="warning"), migrate=False)
    try:
        return {"Authorization": f"Bearer {keys.keys.create(tenant, 'platform')}"}
    finally:
        keys.close()


def test_every_worker_and_the_projector_are_counted(pg_cluster: Any, tmp_path: Path) -> None:
    """Two workers and the projector child: whichever worker answers a scrape, the counts are every
    process's, summed; the projector's applied events show up too; the dashboard's and the alert
    rules' metrics all exist."""
    url = pg_cluster.create_database("kwx_metrics_multi")
    out = tmp_path / "serve.out"
    with serving(url, out, workers=2, KWX_LOG_LEVEL="warning", KWX_POOL_SIZE="2") as (_, base, _):
        banner = out.read_text()
        assert f"metrics: {base}/metrics" in banner, banner
        headers = _key(url, "multi")
        appended = 0
        with httpx.Client(base_url=base, headers=headers, timeout=60) as client:
            for t in range(4):
                wire = legal_table(80 + t, hands=1)
                for k in range(0, len(wire), 25):
                    answer = client.post(f"/v1/tables/m-{t}/events",
                                         json={"events": wire[k:k + 25], "expected_version": k})  # fmt: skip
                    assert answer.status_code == 201, answer.text
                    appended += len(wire[k : k + 25])
            # a recorded violation (violations: "record") and a refused event: their series exist too
            from tests.service.streams import GOLDEN, load

            wire = load(GOLDEN / "lou-hu-rejected.jsonl")
            recorded = [dict(wire[0], violations="record"), *wire[1:]]
            assert client.post("/v1/tables/m-rec/events", json={"events": recorded}).status_code == 201
            appended += len(recorded)
            again = dict(legal_table(80)[0], id="x")  # a second table_opened
            refused = client.post("/v1/tables/m-0/events", json={"events": [again]})
            assert refused.status_code == 422
            counted = [total(samples(client.get("/metrics").text), "kwx_events_appended_total")
                       for _ in range(6)]  # fmt: skip
            assert counted == [appended] * 6  # every scrape, whichever worker: all of them

            def projected() -> dict[Any, float] | None:
                found = samples(client.get("/metrics").text)
                applied = total(found, "kwx_projection_events_total", model="ledger")
                caught_up = total(found, "kwx_projection_lag_seconds") == 0
                return found if applied >= appended and caught_up else None

            found = wait_for(projected, 120, "the projector child's counts did not reach /metrics")
        assert total(found, "kwx_db_pool_connections") >= 1
        batches = total(found, "kwx_projection_batches_total")
        assert 1 <= batches <= total(found, "kwx_projection_events_total", model="ledger")
        names = {n for (n, _) in found}
        for expr in _dashboard_and_alert_exprs():
            for metric in re.findall(r"\bkwx_[a-z_]+\b", expr):
                assert metric in names, f"{metric} (in {expr!r}) is not exported"


def test_each_process_says_its_cpu_and_memory_and_a_dead_workers_gauges_are_forgotten(
    pg_cluster: Any, tmp_path: Path
) -> None:
    """Under ``kwx serve --workers 2``: every scrape has each live process's CPU and memory by role
    (the supervisor, two workers, the projector child: the pids /proc shows). A worker killed and
    replaced leaves the sums of live gauges (the pools' connections) at the next scrape — its file
    was summed into every later scrape before — and leaves the counted totals."""
    import os
    import signal

    from tests.service.serving import alive, descendants

    url = pg_cluster.create_database("kwx_metrics_procs")
    folder = tmp_path / "mp"
    folder.mkdir()
    with serving(url, tmp_path / "serve.out", workers=2, KWX_LOG_LEVEL="warning", KWX_POOL_SIZE="2",
                 PROMETHEUS_MULTIPROC_DIR=str(folder)) as (proc, base, _):  # fmt: skip
        headers = _key(url, "procs")

        def processes() -> dict[int, tuple[str, float, float]] | None:
            found = samples(httpx.get(f"{base}/metrics", timeout=30).text)
            cpu = {int(dict(ls)["pid"]): (dict(ls)["role"], v) for (n, ls), v in found.items()
                   if n == "kwx_process_cpu_seconds_total"}  # fmt: skip
            rss = {
                int(dict(ls)["pid"]): v
                for (n, ls), v in found.items()
                if n == "kwx_process_resident_memory_bytes"
            }
            roles = sorted(role for role, _ in cpu.values())
            if roles != ["projector", "supervisor", "worker", "worker"]:
                return None  # the projector child or a worker still starting
            return {pid: (role, seconds, rss[pid]) for pid, (role, seconds) in cpu.items()}

        seen = wait_for(processes, 60, "not every process of kwx serve was reported")
        family = descendants(proc.pid)
        assert {pid for pid, (role, _, _) in seen.items() if role == "supervisor"} == {proc.pid}
        assert {pid for pid in seen if pid != proc.pid} <= family
        assert all(seconds > 0 and rss > 10_000_000 for _, seconds, rss in seen.values()), seen
        (projector,) = [pid for pid, (role, _, _) in seen.items() if role == "projector"]
        from projections.stored_facts import JUDGE

        scraped = samples(httpx.get(f"{base}/metrics", timeout=30).text).items()
        builds = {
            int(dict(ls)["pid"]): dict(ls) for (n, ls), v in scraped if n == "kwx_build_info" and v == 1
        }
        assert {pid for pid, (role, _, _) in seen.items() if role != "supervisor"} <= set(builds), builds
        assert {b["judge"] for b in builds.values()} == {str(JUDGE)}  # the one build, whichever process
        assert len({(b["version"], b["engine"]) for b in builds.values()}) == 1
        with open(f"/proc/{projector}/cmdline", "rb") as f:
            assert f.read().split(b"\0")[-3:-1] == [b"projections", b"follow"]

        workers = sorted(pid for pid, (role, _, _) in seen.items() if role == "worker")
        with httpx.Client(base_url=base, headers=headers, timeout=60) as client:

            def both_counted() -> bool:  # both workers answered something: each has its files
                client.get("/v1/tables/none/events")
                files = [folder / f"{kind}_{w}.db" for w in workers for kind in ("gauge_livesum", "counter")]
                return all(f.exists() for f in files)

            wait_for(both_counted, 60, "a worker never counted")
            victim = workers[0]
            os.kill(victim, signal.SIGKILL)
            wait_for(lambda: not alive(victim), 30, "the killed worker is still there")

            def replaced() -> dict[int, tuple[str, float, float]] | None:
                now = processes()
                return now if now and victim not in now else None

            after = wait_for(replaced, 60, "the killed worker was not replaced")
        assert not (folder / f"gauge_livesum_{victim}.db").exists()  # forgotten at the scrape
        assert (folder / f"counter_{victim}.db").exists()  # its counts stay in the totals
        assert len([pid for pid, (role, _, _) in after.items() if role == "worker"]) == 2


def _dashboard_and_alert_exprs() -> list[str]:
    dashboard = json.loads((ROOT / "docs" / "grafana" / "kwx.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    alerts = yaml.safe_load((ROOT / "docs" / "prometheus" / "alerts.yml").read_text())
    exprs += [r["expr"] for g in alerts["groups"] for r in g["rules"]]
    assert len(exprs) >= 15
    return exprs


def test_a_port_of_its_own(pg_cluster: Any, tmp_path: Path) -> None:
    url = pg_cluster.create_database("kwx_metrics_port")
    port = free_port()
    with serving(
        url,
        tmp_path / "serve.out",
        workers=1,
        KWX_METRICS=str(port),
        KWX_PROJECTOR="off",
        KWX_LOG_LEVEL="warning",
    ) as (_, base, _):
        assert httpx.get(f"{base}/metrics").status_code == 404  # not on the service's port
        text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=30).text
        assert "kwx_http_requests_total" in text and "kwx_database_up 1.0" in text


@pytest.mark.parametrize("proc", [True, False], ids=["/proc", "no /proc"])
def test_a_process_is_gone_once_it_has_exited_and_been_reaped(
    proc: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the live gauges' pruning asks before it forgets a process's files: this process is
    there; a child that exited and was waited for is gone. Without ``/proc`` (not Linux) signal 0
    answers, so a scrape there never forgets a live process's gauges."""
    import os
    import subprocess
    import sys

    from services import metrics

    if not proc:
        real = os.path.isdir
        monkeypatch.setattr(metrics.os.path, "isdir", lambda p: False if p == "/proc/self" else real(p))
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(60)
    assert metrics._gone(os.getpid()) is False
    assert metrics._gone(child.pid) is True


def test_a_killed_servers_metrics_folder_is_removed_by_the_next(tmp_path: Path) -> None:
    """``kwx serve`` killed with SIGKILL runs no exit handler and leaves its metrics folder; the next
    one removes the folders whose owner no longer runs, and no other folder."""
    import os
    import subprocess
    import sys

    from services.metrics_dir import PREFIX, sweep

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait(60)
    left = tmp_path / f"{PREFIX}{gone.pid}-abc"
    running = tmp_path / f"{PREFIX}{os.getpid()}-def"
    unnamed = tmp_path / f"{PREFIX}ghi"  # a folder of a kwx before the pid was in the name
    other = tmp_path / "something-else"
    for folder in (left, running, unnamed, other):
        folder.mkdir()
        (folder / "counter_1.db").write_bytes(b"\0" * 16)
    assert sweep(tmp_path) == [left]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in (running, unnamed, other))
