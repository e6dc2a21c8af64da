"""Where an awaited tiny launch's host time goes, beside a cuda.core user's polling loop.

``bench_peers.py`` times the whole ``await gpu.launch(...)`` against
cuda.core's ``launch`` and ``stream.record()`` polled with ``await
anyio.sleep(0)``.  This splits both into the pieces that differ, each timed
alone in one process, on cuda-sim (or ``--backend cuda`` on a GPU):

1. an ask while the kernel runs: ``done()`` of aruntime's op, the stream's
   unmarked last op (its ``ask_tail``, one C call, where the compiled
   enqueue is built), against ``Event.is_done``;
2. one loop step of each await while the kernel runs: aruntime's
   checkpoint and ask (what ``Completion._await_tail`` does per step)
   against ``await anyio.sleep(0)`` and ``Event.is_done``;
3. the await of a launch the device has already finished: ``await op``
   (the ask that finds the stream done, its synchronize, the op's finish)
   against ``await anyio.sleep(0)`` and ``Event.is_done``;
4. that last ask alone, without the loop step: ``done()`` of a launch the
   device has finished (the query, the synchronize and the op's finish)
   against ``Event.is_done`` of an event the device has passed.

For 1 and 2 the kernel must outlast the measurement without taking the
host's cores: on cuda-sim it is one block of ``iota_u32`` that the sim's
timing model holds for 20 ms (``arsim_set_timing``: its engine sleeps, where
200,000 real blocks would keep both cores of a small machine busy and
preempt the loop); on a GPU it is 200,000 blocks.  For 3 and 4 the device is
found done by asking the driver directly, through cuda-bindings, before the timed
part starts.  A figure is the median
over ``--rounds`` rounds of the mean of ``--block`` repetitions.  Nothing is
asserted about time.

    PYTHONPATH=. python benchmarks/bench_await_pieces.py [--quick] [--backend cuda]
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import numpy as np
from _harness import NOISE, SKIPPED, reason

import aruntime as ar
from aruntime._loop import stepper

QUICK_ARGV = ["--rounds", "3", "--block", "50"]
KERNEL, THREADS = "iota_u32", 32
LONG_GRID = 200_000  # blocks, on a GPU: far longer than the asks and steps timed beside it
HELD_US = 20_000.0  # on cuda-sim: how long the sim holds each op, the same purpose


def _ptx() -> bytes:
    return (Path(ar.__file__).resolve().parent / "kernels" / "vector_ops.ptx").read_bytes()


def _long_ops(backend: str) -> tuple[int, Callable[[], contextlib.AbstractContextManager[None]]]:
    """The grid of a launch that outlasts the measurement, and what holds it that long."""
    if backend != "cuda-sim":
        return LONG_GRID, contextlib.nullcontext
    from aruntime._native import native_library_path

    sim = ctypes.CDLL(str(native_library_path("libcuda.so.1")))
    sim.arsim_set_timing.argtypes = [ctypes.c_double, ctypes.c_double]

    @contextlib.contextmanager
    def held() -> Iterator[None]:
        sim.arsim_set_timing(0.0, HELD_US)
        try:
            yield
        finally:
            sim.arsim_set_timing(0.0, 0.0)

    return 1, held


class _Steps:
    """``steps`` loop steps of ``Completion._await_tail`` on a running op, without its end."""

    def __init__(self, op: Any, steps: int) -> None:
        self._op, self._steps = op, steps

    def __await__(self) -> Any:
        op = self._op
        probe = op.hooks.ask_tail or op.hooks.probe_tail
        step = stepper()
        for _ in range(self._steps):
            yield from step()
            probe(op)
            time.perf_counter()  # the window's clock, read at each step


async def _rounds(
    pieces: dict[str, Callable[[], Awaitable[float]]], rounds: int
) -> dict[str, float]:
    """Each piece's median over ``rounds`` of its own per-repetition time, in us."""
    samples: dict[str, list[float]] = {name: [] for name in pieces}
    for _ in range(rounds + 1):  # the first round warms every path up
        for name, piece in pieces.items():
            samples[name].append(await piece())
    return {name: statistics.median(values[1:]) * 1e6 for name, values in samples.items()}


async def _measure(backend: str, rounds: int, block: int) -> dict[str, float] | str:
    try:
        from cuda.bindings import driver as cb  # type: ignore[import-untyped]
        from cuda.core import Buffer, Device, LaunchConfig, ObjectCode, launch  # type: ignore[import-untyped]
    except ImportError as exc:
        return (
            f"cuda.core and cuda-bindings are needed ({exc}); pip install cuda-core cuda-bindings"
        )
    clock = time.perf_counter
    async with ar.open_backend(backend) as gpu:
        stream = gpu.create_stream()  # aruntime's own: never handed out
        shared = gpu.create_stream()  # the poller's, wrapped by cuda.core
        out = gpu.alloc(THREADS * 4)
        kernel = gpu.kernel(gpu.load_module("pieces", _ptx()), KERNEL)
        args = [np.uint32(THREADS), np.uint32(0), out]
        device = Device(gpu.driver.ordinal)
        device.set_current()
        cstream = device.create_stream(shared)
        ckernel = ObjectCode.from_ptx(_ptx()).get_kernel(KERNEL)
        cargs = (np.uint32(THREADS), np.uint32(0), Buffer.from_handle(int(out), THREADS * 4))
        raw = cb.CUstream(stream.handle.address)  # type: ignore[attr-defined]
        grid, held = _long_ops(backend)

        def long_core() -> Any:
            launch(cstream, LaunchConfig(grid=grid, block=THREADS), ckernel, *cargs)
            return cstream.record()

        async def ar_ask() -> float:
            with held():
                op = gpu.launch(kernel, grid, THREADS, args, stream=stream)
                start = clock()
                for _ in range(block):
                    op.done()
                elapsed = clock() - start
                assert not op.done(), "the kernel ended before its asks did"
            await op
            return elapsed / block

        async def core_ask() -> float:
            with held():
                event = long_core()
                start = clock()
                for _ in range(block):
                    event.is_done  # noqa: B018 - the property is the ask
                elapsed = clock() - start
                assert not event.is_done, "the kernel ended before its asks did"
            cstream.sync()
            return elapsed / block

        async def ar_step() -> float:
            with held():
                op = gpu.launch(kernel, grid, THREADS, args, stream=stream)
                start = clock()
                await _Steps(op, block)
                elapsed = clock() - start
                assert not op.done(), "the kernel ended before its steps did"
            await op
            return elapsed / block

        async def core_step() -> float:
            with held():
                event = long_core()
                start = clock()
                for _ in range(block):
                    await anyio.sleep(0)
                    event.is_done  # noqa: B018
                elapsed = clock() - start
                assert not event.is_done, "the kernel ended before its steps did"
            cstream.sync()
            return elapsed / block

        shared_raw = cb.CUstream(shared.__cuda_stream__()[1])

        def finished_launch() -> ar.Completion:
            """aruntime's launch, once the driver says the device is done with it."""
            op = gpu.launch(kernel, 1, THREADS, args, stream=stream)
            while cb.cuStreamQuery(raw)[0] != cb.CUresult.CUDA_SUCCESS:
                pass
            return op

        def finished_event() -> Any:
            """cuda.core's launch and its event, once the driver says the device is done."""
            launch(cstream, LaunchConfig(grid=1, block=THREADS), ckernel, *cargs)
            event = cstream.record()
            while cb.cuStreamQuery(shared_raw)[0] != cb.CUresult.CUDA_SUCCESS:
                pass
            return event

        async def ar_done() -> float:
            total = 0.0
            for _ in range(block):
                op = finished_launch()
                start = clock()
                await op
                total += clock() - start
            return total / block

        async def core_done() -> float:
            total = 0.0
            for _ in range(block):
                event = finished_event()
                start = clock()
                await anyio.sleep(0)
                event.is_done  # noqa: B018
                total += clock() - start
            return total / block

        async def ar_last() -> float:
            total = 0.0
            for _ in range(block):
                op = finished_launch()
                start = clock()
                finished = op.done()
                total += clock() - start
                assert finished, "the ask did not find the launch done"
            return total / block

        async def core_last() -> float:
            total = 0.0
            for _ in range(block):
                event = finished_event()
                start = clock()
                finished = event.is_done
                total += clock() - start
                assert finished, "the ask did not find the event done"
            return total / block

        try:
            figures = await _rounds(
                {
                    "ask:ar": ar_ask,
                    "ask:core": core_ask,
                    "step:ar": ar_step,
                    "step:core": core_step,
                    "done:ar": ar_done,
                    "done:core": core_done,
                    "last:ar": ar_last,
                    "last:core": core_last,
                },
                rounds,
            )
        finally:
            await stream.synchronize()
            cstream.close()
            shared.close()
            stream.close()
            gpu.free(out)
    return figures


ROWS = (
    ("ask", "1. an ask, kernel running", "op.done()", "Event.is_done"),
    ("step", "2. a loop step, kernel running", "checkpoint + ask", "sleep(0) + is_done"),
    ("done", "3. await, device already done", "await op", "sleep(0) + is_done"),
    ("last", "4. the ask that finds it done", "op.done()", "Event.is_done"),
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="cuda-sim", help="cuda-sim, or cuda on a GPU")
    parser.add_argument("--rounds", type=int, default=21, help="rounds to take the median of")
    parser.add_argument("--block", type=int, default=500, help="repetitions per round")
    args = parser.parse_args(argv)
    print(f"{args.backend}: median of {args.rounds} rounds of {args.block}, us each")
    print(f"{'piece':34s} {'loop':8s} {'aruntime':>20s} {'cuda.core':>24s}  ratio")
    for loop in ("asyncio", "trio"):
        try:
            got = anyio.run(_measure, args.backend, args.rounds, args.block, backend=loop)
        except ar.BackendUnavailableError as exc:
            print(f"{args.backend} unavailable: {reason(exc)}")
            return SKIPPED
        if isinstance(got, str):
            print(f"skipped: {got}")
            return SKIPPED
        for key, title, ours, theirs in ROWS:
            a, c = got[f"{key}:ar"], got[f"{key}:core"]
            print(
                f"{title:34s} {loop:8s} {ours:>11s} {a:8.2f} {theirs:>15s} {c:8.2f}  {a / c:.2f}x"
            )
    print(f"\n{NOISE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
