"""Graph replay: capture a chain of ops once, replay it many times.

A chain of small kernels (16 launches and a device-to-device copy) is issued
two ways, ``--iterations`` times each:

- one by one: every iteration validates and enqueues all 17 ops;
- as a graph: the chain is captured once (``with gpu.capture(stream)``) and
  each iteration enqueues a single ``launch_graph``.

It prints the host time each iteration costs to enqueue both ways (the time
the calling thread spends, not the device time) and their ratio, and checks
that both ways computed the same, exact result.

    python examples/graph_replay.py [--backend NAME] [--trio] [--iterations N]

``--backend`` (or ``ARUNTIME_BACKEND``) picks the backend; the default is the
best one here.  On the mock, ops run at enqueue, so its "host cost" includes
the (numpy) work itself.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable

import anyio
import numpy as np

import aruntime as ar

N = 4096
BLOCK = 256
STEPS = 4  # each step is 4 launches that add exactly 0.5 to every element


def chain(
    gpu: ar.Backend, stream: ar.Stream, acc: ar.DevicePtr, ones: ar.DevicePtr, out: ar.DevicePtr
) -> Callable[[], None]:
    """The ops of one iteration, as a function that enqueues them on ``stream``."""
    vector_ops = gpu.builtin_module("vector_ops")
    saxpy, scale = gpu.kernel(vector_ops, "saxpy"), gpu.kernel(vector_ops, "scale_f32")
    grid, n = (N + BLOCK - 1) // BLOCK, np.uint32(N)

    def enqueue() -> None:
        for _ in range(STEPS):
            gpu.launch(saxpy, grid, BLOCK, [n, np.float32(1), ones, acc], stream=stream)
            gpu.launch(scale, grid, BLOCK, [n, np.float32(2), acc], stream=stream)
            gpu.launch(saxpy, grid, BLOCK, [n, np.float32(-1), ones, acc], stream=stream)
            gpu.launch(scale, grid, BLOCK, [n, np.float32(0.5), acc], stream=stream)
        gpu.copy_d2d_async(acc, out, N * 4, stream=stream)

    return enqueue


async def main(backend: str = "auto", iterations: int = 200) -> None:
    async with ar.open_backend(backend) as gpu:
        acc, ones, out = (gpu.alloc(N * 4) for _ in range(3))
        try:
            with gpu.create_stream() as stream:
                await gpu.copy_h2d_async(np.ones(N, np.float32), ones, stream=stream)
                await gpu.copy_h2d_async(np.zeros(N, np.float32), acc, stream=stream)
                enqueue = chain(gpu, stream, acc, ones, out)
                ops = 4 * STEPS + 1

                with gpu.capture(stream) as graph:  # recorded, not run
                    enqueue()
                with graph:
                    # Warm both paths (first launches load and instantiate).
                    enqueue()
                    await gpu.launch_graph(graph, stream)

                    t0 = time.perf_counter()
                    for _ in range(iterations):
                        enqueue()
                    eager_host = (time.perf_counter() - t0) / iterations
                    await stream

                    t0 = time.perf_counter()
                    for _ in range(iterations):
                        gpu.launch_graph(graph, stream)
                    graph_host = (time.perf_counter() - t0) / iterations
                    await stream

                result = await gpu.copy_d2h_async(out, np.empty(N, np.float32), stream=stream)
                expected = 0.5 * STEPS * (2 * iterations + 2)  # +2 warm-up iterations
                assert np.array_equal(result, np.full(N, expected, np.float32)), result[:4]
        finally:
            for ptr in (acc, ones, out):
                gpu.free(ptr)

        print(f"{gpu.name} ({gpu.device.name}): a chain of {ops} ops, {iterations} iterations")
        print(f"one by one: {eager_host * 1e6:9.1f} us of host time per iteration")
        print(f"graph     : {graph_host * 1e6:9.1f} us of host time per iteration")
        print(f"ratio     : {eager_host / graph_host:9.1f}x less host time with the graph")


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default=os.environ.get("ARUNTIME_BACKEND", "auto"))
    parser.add_argument("--trio", action="store_true", help="run under trio, not asyncio")
    parser.add_argument("--iterations", type=int, default=200)
    return parser.parse_args(argv)


if __name__ == "__main__":
    args = parse_args(sys.argv[1:])
    anyio.run(main, args.backend, args.iterations, backend="trio" if args.trio else "asyncio")
