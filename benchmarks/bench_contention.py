"""The server pattern on the sims, alone and beside two busy processes: throughput and memory.

Each round of ``_soak.soak`` starts a burst of requests (alloc -> upload ->
``scale_f32`` -> download -> free, each step awaited, every answer checked)
over 8 shared streams, 64 holding device memory at a time, and waits for
the backlog to drain.  Per backend (each in a fresh process, so that its
memory figures are its own), after one warm-up round:

1. requests per second alone, then beside two ``while True: pass``
   processes that the benchmark starts and always ends (median of the
   rounds); target: beside them, at least 30% of alone;
2. levelzero-sim's throughput against cuda-sim's, alone and beside the
   busy processes; target: within 2x;
3. once the backlog has drained and the garbage collector has run: the
   resident set against its size after the warm-up (target: within 10%),
   the Python objects the collector tracks against theirs (target: back
   to their start, give or take the bounded pools' churn), and the
   backend's live allocations and pending ops;
4. the same after one more round with no admission control (every request
   holding its memory at once): what a backlog without a bound leaves.

``--nice`` runs the whole table again with the sim's engine threads that
many nice levels below the main thread (``ARUNTIME_SIM_ENGINE_NICE``), the
measurement behind the default (0: the application's own level).  Nothing
is asserted about time.

    PYTHONPATH=. python benchmarks/bench_contention.py [--quick] [--rounds N] [--nice 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
from _harness import NOISE, mark, run_worker, worker_result

BACKENDS = ("cuda-sim", "levelzero-sim")
QUICK_ARGV = ["--quick"]
NEIGHBOURS = 2
OBJECT_SLACK = 400
_HERE = Path(__file__).resolve().parent


def _measure(backend: str, requests: int, rounds: int) -> dict[str, Any]:
    """Everything for one backend, in this process."""
    sys.path.insert(0, str(_HERE))
    import _soak

    import aruntime as ar

    gpu = ar.open_backend(backend)
    try:
        anyio.run(_soak.soak, gpu, requests)  # warm-up: threads, pools, caches
        rss0, objs0 = _soak.rss_mb(), _soak.objects()
        alone = [anyio.run(_soak.soak, gpu, requests).per_s for _ in range(rounds)]
        rss_alone = _soak.rss_mb()
        with _soak.busy_neighbours(NEIGHBOURS):
            busy = [anyio.run(_soak.soak, gpu, requests) for _ in range(rounds)]
        last = busy[-1]
        rss1, objs1 = _soak.rss_mb(), _soak.objects()
        burst = anyio.run(_soak.soak, gpu, requests, requests)  # no admission control
        rss2, objs2 = _soak.rss_mb(), _soak.objects()
    finally:
        gpu.close()
    return {
        "alone": statistics.median(alone),
        "busy": statistics.median(r.per_s for r in busy),
        "rss": [rss0, rss_alone, rss1, rss2],
        "objects": [objs0, objs1, objs2],
        "left": [last.live_allocations, last.pending_ops],
        "burst_left": [burst.live_allocations, burst.pending_ops],
        "requests": requests,
    }


def _run_worker(backend: str, requests: int, rounds: int, nice: str) -> dict[str, Any] | str:
    env = {"ARUNTIME_SIM_ENGINE_NICE": nice} if nice else {}
    return run_worker(
        __file__, [backend, "--requests", str(requests), "--rounds", str(rounds)], env
    )


def _rows(r: dict[str, Any]) -> dict[str, str]:
    alone, busy = r["alone"], r["busy"]
    share = busy / alone
    rss0, rss_alone, rss1, rss2 = r["rss"]
    objs0, objs1, objs2 = r["objects"]
    grown = rss1 / rss0 - 1.0
    # "Back to their start": the pools that grow with the work in flight are
    # bounded (64 free markers of 1 to 3 objects, two spare ze event pools of
    # 64 on levelzero-sim), so up to OBJECT_SLACK objects come and go; a leak
    # of one object a request would show as rounds x requests.
    slack = OBJECT_SLACK
    return {
        "1. requests/s alone": f"{alone:,.0f}",
        f"1. ... beside {NEIGHBOURS} busy processes": f"{busy:,.0f}",
        "1. ... beside / alone (>= 30%)": f"{share:.0%} {mark(share >= 0.30)}",
        "3. RSS MiB: warm / after alone / after busy": f"{rss0:.0f} / {rss_alone:.0f} / {rss1:.0f}",
        "3. ... growth after the drain (<= 10%)": f"{grown:+.0%} {mark(grown <= 0.10)}",
        f"3. Python objects: warm / after (within {slack})": (
            f"{objs0:,} / {objs1:,} {mark(objs1 - objs0 <= slack)}"
        ),
        "3. live allocations / pending ops after": f"{r['left'][0]} / {r['left'][1]}",
        "4. one burst, all in flight: RSS MiB after": f"{rss2:.0f} ({rss2 / rss0 - 1.0:+.0%})",
        "4. ... Python objects after": f"{objs2:,} ({objs2 - objs0:+,})",
        "4. ... live allocations / pending ops after": (
            f"{r['burst_left'][0]} / {r['burst_left'][1]}"
        ),
    }


def _print_table(title: str, results: dict[str, dict[str, Any] | str]) -> None:
    print(title)
    rows: dict[str, dict[str, str]] = {}
    for backend, r in results.items():
        if isinstance(r, str):
            continue
        for label, value in _rows(r).items():
            rows.setdefault(label, {})[backend] = value
    cuda, lz = results.get("cuda-sim"), results.get("levelzero-sim")
    if isinstance(cuda, dict) and isinstance(lz, dict):
        for when in ("alone", "busy"):
            ratio = lz[when] / cuda[when]
            rows.setdefault(f"2. levelzero-sim / cuda-sim, {when} (>= 0.5x)", {})[
                "levelzero-sim"
            ] = f"{ratio:.2f}x {mark(ratio >= 0.5)}"
    columns = list(results)
    width = max([len(label) for label in rows] + [10])
    cols = [max([len(c)] + [len(v.get(c, "")) for v in rows.values()]) for c in columns]
    print(f"{'':{width}}  " + "  ".join(f"{c:>{w}}" for c, w in zip(columns, cols, strict=True)))
    for label in sorted(rows, key=lambda s: s.split(".")[0]):
        values = rows[label]
        cells = "  ".join(f"{values.get(c, '-'):>{w}}" for c, w in zip(columns, cols, strict=True))
        print(f"{label:{width}}  {cells}")
    for backend, r in results.items():
        if isinstance(r, str):
            print(f"{backend}: {r}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    parser.add_argument("--rounds", type=int, default=None, help="rounds per phase")
    parser.add_argument("--requests", type=int, default=None, help="requests per round")
    parser.add_argument("--nice", default="", help="also run with the engine threads this nice")
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--worker", metavar="BACKEND", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    requests = args.requests or (200 if args.quick else 2000)
    rounds = args.rounds or (1 if args.quick else 3)
    if args.worker:
        worker_result(_measure(args.worker, requests, rounds))
        return 0
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    settings = [("", "default")] + ([(args.nice, f"+{args.nice}")] if args.nice else [])
    ok = True
    for nice, label in settings:
        results = {b: _run_worker(b, requests, rounds, nice) for b in backends}
        ok = ok and all(not isinstance(r, str) for r in results.values())
        _print_table(
            f"server pattern, {requests} requests a round, median of {rounds} rounds; "
            f"engine threads' nice: {label}",
            results,
        )
    print(f"A target's row ends in met or MISSED.  {NOISE}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
