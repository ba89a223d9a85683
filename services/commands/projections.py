"""kwx projections rebuild [NAME …] | status | retry | follow: the read models (docs/projections.md).

``rebuild`` empties the named read models (when none is named, the kept ones: ``KWX_READ_MODELS``,
all by default) and their checkpoints in one transaction, then replays the whole log from position 0
into them. A running service keeps serving meanwhile; its background projector and this command
take turns on the projector lock, so nothing is applied twice. ``status`` prints each checkpoint
and how many stored events are after it (in the log's order, ``(epoch, tx_id, position)``), its
parked events (count, oldest), whether it is stale (ahead of anything the log can produce: restored
or copied read models) and whether this deployment keeps it (``kept``).
``retry [--model M] [--table ID] [--tenant T]`` applies parked events again after a fix (docs/projections.md
§1): the ones that apply leave the parked table, the ones still failing stay with tries + 1.
``follow`` runs the projector of the kept read models as its own process (for a service started
with ``KWX_PROJECTOR=off``) until Ctrl-C.
Output: for a person — ``status`` a table, ``rebuild`` what it did and a table per model, ``retry`` a
table of what each model applied and still has parked; ``--json`` for scripts (one JSON object per
model, or the rebuild's summary); a refused command says why on stderr (as JSON on stdout with
``--json``), exit status 2.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--init", action="store_true",
                        help="create the embedded database if there is none (else: an error)")  # fmt: skip
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    rebuild = sub.add_parser("rebuild", help="rebuild read models from position 0")
    rebuild.add_argument(
        "--refold", action="store_true", help="fold every event again, not taking the facts stored with it"
    )
    rebuild.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help="ledger, player_stats, discrepancies, snapshots, discovery, feed (default: KWX_READ_MODELS)",
    )
    rebuild.add_argument("--json", action="store_true", help="what it did as one JSON object (for scripts)")
    status = sub.add_parser("status", help="checkpoints, parked events and staleness of the read models")
    status.add_argument("--json", action="store_true", help="one JSON object per model (for scripts)")
    retry = sub.add_parser("retry", help="apply parked events again, in order (after a fix)")
    retry.add_argument("--model", metavar="NAME", help="only this read model's parked events")
    retry.add_argument("--table", metavar="ID", help="only this table's parked events")
    retry.add_argument("--tenant", metavar="TENANT", help="only this tenant's parked events")
    retry.add_argument("--json", action="store_true", help="one JSON object per model (for scripts)")
    sub.add_parser("follow", help="run the projector in this process until interrupted (LISTEN/NOTIFY)")


def run(args: argparse.Namespace) -> int:
    from projections import registry
    from projections.projector import Projector
    from services.bootstrap import bootstrap, command_database
    from services.settings import Settings

    settings = Settings.from_env()
    kept = settings.kept_models()
    named = tuple(getattr(args, "names", None) or ())
    names = named or kept  # rebuild: the kept models unless named (a model not kept may be named)
    model = getattr(args, "model", None)
    unknown = [n for n in (*names, *([model] if model else [])) if n not in registry.BY_NAME]
    as_json = getattr(args, "json", False)
    if unknown:
        return _refuse(f"unknown projection(s): {', '.join(unknown)}", as_json)
    if not names and args.action in ("rebuild", "follow"):
        what = "name the models to rebuild" if args.action == "rebuild" else "nothing to follow"
        return _refuse(f"KWX_READ_MODELS={settings.read_models}: no read model is kept here; {what}", as_json)
    container = bootstrap(settings, url=command_database(settings, "projections", init=args.init))
    try:
        refold = getattr(args, "refold", False)
        # follow: the kept models; status, retry: every model (status says which are kept)
        among = kept if args.action == "follow" else registry.NAMES
        projector = Projector(
            container.pool, container.store, names=among, **({"judge": None} if refold else {})
        )
        if args.action == "follow":
            return _follow(projector, container.database_url, settings.projector_gather)
        if args.action == "status":
            lines = [{**line, "kept": line["projection"] in kept} for line in projector.status()]
            if as_json:
                for line in lines:
                    print(json.dumps(line))
            else:
                print(_status_table(lines))
            return 0
        if args.action == "retry":
            done = projector.retry(model, args.table, args.tenant)
            retried = [{"projection": name, **done[name]} for name in registry.NAMES if name in done]
            if as_json:
                for line in retried:
                    print(json.dumps(line))
                if not done:
                    print(json.dumps({"retried": 0, "message": "no parked events matched"}))
            else:
                print(_retried_table(retried, model, args.table, args.tenant))
            return 0
        from services import heap

        heap.settle()
        started = time.perf_counter()
        events = projector.rebuild(names)
        seconds = time.perf_counter() - started
        rebuilt = _rebuilt(container.pool, projector, names, events, seconds)
        print(json.dumps(rebuilt) if as_json else _rebuilt_text(rebuilt))
        return 0
    finally:
        container.close()


def _refuse(message: str, as_json: bool) -> int:
    from projections import registry

    if as_json:
        print(json.dumps({"error": message, "known": list(registry.NAMES)}))
    else:
        print(f"kwx projections: {message} (the read models: {', '.join(registry.NAMES)})", file=sys.stderr)
    return 2


def _table(columns: tuple[str, ...], rows: list[tuple[str, ...]], right: set[int]) -> list[str]:
    """Rows under their headings, each column as wide as its widest cell (``right``: the columns
    aligned right, numbers)."""
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(columns)]

    def fmt(cells: tuple[str, ...]) -> str:
        return "  ".join(
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    return [fmt(columns), *(fmt(r) for r in rows)]


def _rebuilt_text(done: dict[str, Any]) -> str:
    """``rebuild`` for a person: what this run applied and how fast, where the facts came from,
    and per model what its checkpoint counts and what is still after it."""
    rate = f", {done['events_per_second']:,} events/s" if done["events_per_second"] else ""
    out = [
        f"rebuilt {', '.join(done['rebuilt'])} from position 0: {done['events']:,} events in "
        f"{done['seconds']:.2f} s{rate}",
        f"  facts taken as the append stored them: {done['from_stored_facts']:,} events; folded here: "
        f"{done['folded']:,} ({done['refolds']:,} tables refolded)",
    ]
    if done["by_running_service"]:
        out.append(f"  a running service's projector applied {done['by_running_service']:,} more meanwhile")
    rows = [(n, f"{m['applied']:,}", f"{m['behind']:,}") for n, m in done["models"].items()]
    out += _table(("model", "applied", "behind"), rows, {1, 2})
    out.append(f"the log holds {done['stored']:,} events")
    return "\n".join(out)


def _retried_table(
    lines: list[dict[str, Any]], model: str | None, table: str | None, tenant: str | None
) -> str:
    """``retry`` for a person: per model, the parked events it applied and those still parked."""
    if not lines:
        among = [f"{k} {v}" for k, v in (("model", model), ("table", table), ("tenant", tenant)) if v]
        return "no parked events matched" + (f" ({', '.join(among)})" if among else "")
    rows = [(line["projection"], f"{line['applied']:,}", f"{line['parked']:,}") for line in lines]
    out = _table(("model", "applied", "still parked"), rows, {1, 2})
    if any(line["parked"] for line in lines):
        out.append("still parked: each waits with its error and tries (kwx projections status; "
                   "GET /v1/projections/parked)")  # fmt: skip
    return "\n".join(out)


_STATUS_COLUMNS = (
    "model",
    "kept",
    "behind",
    "parked",
    "oldest parked",
    "stale",
    "checkpoint (epoch/tx/position)",
)


def _status_table(lines: list[dict[str, Any]]) -> str:
    """``status`` for a person: a row per model (numbers right-aligned), then each stale model's
    message. ``behind``: stored events after the checkpoint; a model not kept here is behind on
    purpose (``KWX_READ_MODELS``)."""
    rows = [
        (
            line["projection"], "yes" if line["kept"] else "no", f"{line['behind']:,}", f"{line['parked']:,}",
            line["oldest_parked"] or "-", "STALE" if line["stale"] else "no",
            f"{line['epoch']}/{line['tx_id']}/{line['position']}",
        )
        for line in lines
    ]  # fmt: skip
    out = _table(_STATUS_COLUMNS, rows, {2, 3})
    out += [f"{line['projection']}: {line['message']}" for line in lines if line.get("message")]
    if any(not line["kept"] for line in lines):
        out.append("a model not kept (KWX_READ_MODELS) is not projected here: its 'behind' grows on purpose")
    return "\n".join(out)


def _rebuilt(
    pool: Any, projector: Any, names: tuple[str, ...], events: int, seconds: float
) -> dict[str, Any]:
    """What a rebuild did, truthfully beside a running service: the events this run applied
    (``events``: how many it passed over in the log; ``from_stored_facts`` of them had facts judged
    by this build, ``folded`` were folded here), what each model's checkpoint counts since the reset
    (``applied``: this run's plus what a running service's projector took meanwhile, under the
    same lock), how many events the log holds and how many are still after each checkpoint."""
    from projections.log import fence

    with pool.connection() as conn:
        stored = int(conn.execute(f"SELECT count(*) FROM events e WHERE {fence('e')}").fetchone()[0])
        counted = dict(
            conn.execute(
                "SELECT name, events FROM projection_checkpoints WHERE name = ANY(%s)", (list(names),)
            ).fetchall()
        )
    behind = {
        line["projection"]: line["behind"] for line in projector.status() if line["projection"] in names
    }
    models = {n: {"applied": int(counted.get(n, 0)), "behind": int(behind.get(n, 0))} for n in names}
    by_others = max((m["applied"] for m in models.values()), default=0) - events
    return {
        "rebuilt": list(names), "events": events, "by_running_service": max(0, by_others),
        "stored": stored, "models": models,
        "from_stored_facts": projector.stored_facts, "folded": projector.folded, "refolds": projector.refolds,
        "seconds": round(seconds, 3), "events_per_second": round(events / seconds) if seconds else None,
    }  # fmt: skip


def _follow(projector: object, conninfo: str, gather: float) -> int:
    from projections.projector import ProjectorRunner
    from services import heap, metrics

    projector.on_batch = metrics.observe_projection  # type: ignore[attr-defined]
    metrics.mark_build()
    runner = ProjectorRunner(projector, conninfo, heartbeat=_heartbeat(), gather_seconds=gather)  # type: ignore[arg-type]
    heap.settle()  # what the process keeps: never traversed by the collector again
    runner.start()
    import structlog

    # one line of the process's log (stdout, JSON, as kwx serve's): a person and a log shipper alike
    models = list(projector.names)  # type: ignore[attr-defined]
    structlog.get_logger("kwx.projector").info("projector_following", models=models, gather_seconds=gather)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        runner.stop()
    return 0


def _heartbeat() -> Callable[[], None] | None:
    """A byte on the pipe ``kwx serve`` passed (``KWX_PROJECTOR_HEARTBEAT_FD``) per turn of the
    runner's loop: the supervisor's watchdog (services/projector_process.py). Never blocks: a full
    pipe (a supervisor not reading) or a closed one (it is gone) costs the beat, nothing else."""
    fd_text = os.environ.get("KWX_PROJECTOR_HEARTBEAT_FD", "")
    if not fd_text.isdigit():
        return None
    fd = int(fd_text)
    try:
        os.set_blocking(fd, False)
    except OSError:
        return None

    def beat() -> None:
        with contextlib.suppress(OSError):  # BlockingIOError (full), BrokenPipeError (gone)
            os.write(fd, b".")

    return beat
