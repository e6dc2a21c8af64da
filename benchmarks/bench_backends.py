"""The completion and overlap benchmarks on cuda-sim and levelzero-sim, side by side in one table.

Each backend runs in its own subprocess (the Level Zero loader fixes its
driver list per process), then one table is printed with a column per backend:

1. wake latency of ``await`` on a tiny op on an idle stream against
   ``await anyio.to_thread.run_sync(completion.wait)``, medians of runs in
   alternating blocks of 10, asyncio and trio, once with the ops back to back
   and once with each op 1 ms after the previous one (so that every thread
   involved is asleep when it starts); target at most 0.5x.  Beside it, the physical floor: one
   round trip between two threads over a mutex and condition variable (what
   wakes the sim's engine threads and the host's waiters), measured by the
   sim in C; target: the await within 2x of it.  Beside them, the mock's
   await in the same rounds: a backend with no thread and no driver, so what
   the core's Python and one loop turn cost on this machine;
2. CPU while awaiting one 200 ms op, as % of one core over its wall time: the
   event-loop thread (target at most 5%), the stream's waiter thread, and the
   whole process (the sim's own engine threads included);
3. 10,000 tasks each awaiting one op, over 64 streams: all complete, threads
   added (target at most 64 + 4), ops per second, and against the mock
   backend in the same process;
5. H2D -> kernel -> D2H over 3 streams against 1 stream, every op about
   ``--stage-ms`` long through the sim's timing model.  The ideal overlap
   bound, with N chunks, stage time s and the three stages on three engines
   (H2D copy, compute, D2H copy: both sims have 2 copy engines by default,
   ``ARUNTIME_SIM_COPY_ENGINES``), is (N + 2) * s; one stream takes 3 * N * s.
   Efficiency = bound / achieved; target at least 0.9;
6. (cuda-sim only) the event loop's longest stall during a 64 MiB pageable
   ``copy_h2d_async`` at 4 GB/s, against the naive binding's.

Nothing is asserted about time.  The waiter policy in force
(``ARUNTIME_WAITER_SPIN_US``, ``ARUNTIME_AWAIT_QUERY``: see aruntime/_waiter.py)
is printed in the title.

    PYTHONPATH=. python benchmarks/bench_backends.py [--quick] [--backends cuda-sim,levelzero-sim]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import anyio
from _harness import NOISE, mark, run_worker, worker_result

QUICK_ARGV = ["--quick"]
BACKENDS = ("cuda-sim", "levelzero-sim")
_HERE = Path(__file__).resolve().parent
#: Row 1 twice: ops back to back, and each op 1 ms after the last (every thread asleep).
_GAPS_MS = (0, 1)


def _sizes(quick: bool) -> dict[str, Any]:
    if quick:
        return {"runs": 20, "op_ms": 50.0, "tasks": 500, "chunks": 4, "stage_ms": 2.0, "mib": 8}
    return {"runs": 400, "op_ms": 200.0, "tasks": 10_000, "chunks": 24, "stage_ms": 2.0, "mib": 64}


def _measure(backend: str, quick: bool) -> dict[str, Any]:
    """Everything for one backend, in this process."""
    sys.path.insert(0, str(_HERE))
    import _simbench as sb

    size = _sizes(quick)
    out: dict[str, Any] = {"backend": backend, "size": size}
    for loop in ("asyncio", "trio"):
        for gap_ms in _GAPS_MS:
            out[f"wake_{loop}_{gap_ms}"] = anyio.run(
                sb.wake_latency, backend, size["runs"], gap_ms * 1e-3, backend=loop
            )
            # The same rounds on the mock: no thread, no driver, only the core's
            # Python and the loop's turn, as near to the floor as Python gets here.
            out[f"mock_{loop}_{gap_ms}"] = anyio.run(
                sb.wake_latency, "mock", size["runs"], gap_ms * 1e-3, backend=loop
            )[0]
    for gap_ms in _GAPS_MS:
        out[f"floor_{gap_ms}"] = sb.handoff_floor_us(backend, size["runs"], gap_ms * 1e-3)
    cpu = anyio.run(sb.loop_cpu, backend, size["op_ms"])
    out["cpu"] = [cpu.loop, cpu.waiter, cpu.process, cpu.wall_ms]
    sim = anyio.run(sb.many, backend, size["tasks"], 64)
    mock = anyio.run(sb.many, "mock", size["tasks"], 64)
    out["many"] = [sim.done, sim.threads_added, sim.ops_per_s, mock.ops_per_s]
    one = anyio.run(sb.pipeline_ms, backend, size["chunks"], size["stage_ms"], 1)
    three = anyio.run(sb.pipeline_ms, backend, size["chunks"], size["stage_ms"], 3)
    out["pipeline"] = [one, three, sb.ideal_overlap_ms(size["chunks"], size["stage_ms"])]
    if backend == "cuda-sim":
        staged = asyncio.run(sb.pageable_stall(size["mib"], 4.0))
        naive = asyncio.run(sb.pageable_stall(size["mib"], 4.0, naive=True))
        out["stall"] = [*staged, *naive]
    return out


def _run_worker(backend: str, quick: bool) -> dict[str, Any] | str:
    """Measure ``backend`` in a subprocess; its results, or why there are none."""
    return run_worker(__file__, [backend, *(["--quick"] if quick else [])])


def _rows(r: dict[str, Any]) -> dict[str, str]:
    rows: dict[str, str] = {}
    for gap_ms in _GAPS_MS:
        when = f"{gap_ms} ms apart" if gap_ms else "back to back"
        rows[f"1. floor: thread round trip us [{when}]"] = f"{r[f'floor_{gap_ms}']:.0f}"
    for loop in ("asyncio", "trio"):
        for gap_ms in _GAPS_MS:
            direct, threaded = r[f"wake_{loop}_{gap_ms}"]
            when = f"{gap_ms} ms apart" if gap_ms else "back to back"
            ratio = direct / threaded
            floor = direct / r[f"floor_{gap_ms}"]
            rows[f"1. wake, {loop}, {when}: await / thread us"] = f"{direct:.0f} / {threaded:.0f}"
            rows[f"1. ... ratio (<= 0.5x)    [{loop}, {when}]"] = (
                f"{ratio:.2f}x {mark(ratio <= 0.5)}"
            )
            rows[f"1. ... await / floor (<= 2x) [{loop}, {when}]"] = (
                f"{floor:.2f}x {mark(floor <= 2.0)}"
            )
            mock = r[f"mock_{loop}_{gap_ms}"]
            rows[f"1. ... mock's await us, / floor [{loop}, {when}]"] = (
                f"{mock:.0f}, {mock / r[f'floor_{gap_ms}']:.2f}x"
            )
            rows[f"1. ... await / mock's await [{loop}, {when}]"] = f"{direct / mock:.2f}x"
    loop_pct, waiter_pct, proc_pct, _wall = r["cpu"]
    size = r["size"]
    rows[f"2. CPU awaiting a {size['op_ms']:.0f} ms op: loop thread (<= 5%)"] = (
        f"{loop_pct:.2f}% {mark(loop_pct <= 5.0)}"
    )
    rows["2. ... waiter thread"] = "n/a" if waiter_pct is None else f"{waiter_pct:.2f}%"
    rows["2. ... whole process"] = f"{proc_pct:.2f}%"
    done, added, rate, mock = r["many"]
    rows[f"3. {done} awaits / 64 streams: threads added (<= 68)"] = f"{added} {mark(added <= 68)}"
    rows["3. ... ops/s (vs mock)"] = f"{rate:,.0f} ({rate / mock:.2f}x)"
    one, three, ideal = r["pipeline"]
    rows["5. pipeline ms: 1 stream / 3 streams / bound"] = f"{one:.1f} / {three:.1f} / {ideal:.1f}"
    # The bound is the least time the work can take, so the fraction is at most
    # 1; a timer's rounding must not print more.
    efficiency = min(1.0, ideal / three)
    rows["5. ... overlap: bound / 3-stream time (1 = ideal, >= 0.9)"] = (
        f"{efficiency:.2f} {mark(efficiency >= 0.9)}"
    )
    stall = r.get("stall")
    rows[f"6. pageable {size['mib']} MiB H2D: longest loop stall ms"] = (
        "n/a" if stall is None else f"{stall[0]:.1f} (naive {stall[2]:.1f})"
    )
    return rows


def _print_table(results: dict[str, dict[str, Any] | str], quick: bool) -> None:
    spin = os.environ.get("ARUNTIME_WAITER_SPIN_US", "default")
    query = os.environ.get("ARUNTIME_AWAIT_QUERY", "default")
    mode = " (quick: small sizes)" if quick else ""
    print(
        f"aruntime benchmarks{mode}; ARUNTIME_WAITER_SPIN_US={spin}, ARUNTIME_AWAIT_QUERY={query}"
    )
    columns = list(results)
    rows: dict[str, dict[str, str]] = {}
    for backend, r in results.items():
        if isinstance(r, str):
            continue
        for label, value in _rows(r).items():
            rows.setdefault(label, {})[backend] = value
    width = max([len(label) for label in rows] + [10])
    cols = [max([len(c)] + [len(v.get(c, "")) for v in rows.values()]) for c in columns]
    print(f"{'':{width}}  " + "  ".join(f"{c:>{w}}" for c, w in zip(columns, cols, strict=True)))
    for label, values in rows.items():
        cells = "  ".join(f"{values.get(c, '-'):>{w}}" for c, w in zip(columns, cols, strict=True))
        print(f"{label:{width}}  {cells}")
    for backend, r in results.items():
        if isinstance(r, str):
            print(f"{backend}: {r}")
    print(f"A target's row ends in met or MISSED.  {NOISE}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--worker", metavar="BACKEND", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker_result(_measure(args.worker, args.quick))
        return 0
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    results = {b: _run_worker(b, args.quick) for b in backends}
    _print_table(results, args.quick)
    return 0 if all(not isinstance(r, str) for r in results.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
