"""Graph replay: capture a chain of ops once, replay it many times.

Each iteration uploads an input, runs ``CHAIN`` kernels on it and downloads
the result.  Issued op by op, every iteration pays the host cost of
validating and enqueueing ``CHAIN + 2`` ops; captured into a graph, it is one
``launch_graph`` call.  The program prints the host cost per iteration both
ways, and checks the result of the last replay against numpy.

    python examples/graph_replay.py [--trio]
"""

from __future__ import annotations

import os
import sys
import time

import anyio
import numpy as np

import aruntime as ar

CHAIN = 8  # kernels per iteration
ITERATIONS = 200
N = 1 << 14  # float32 elements


async def main() -> None:
    async with ar.open_backend("auto") as gpu:
        host = np.linspace(0, 1, N, dtype=np.float32)
        out = np.zeros_like(host)
        x = gpu.alloc(host.nbytes)
        scale = gpu.kernel(gpu.builtin_module("vector_ops"), "scale_f32")
        args = [np.uint32(N), np.float32(1.5), x]
        stream = gpu.create_stream()

        def issue() -> ar.Completion:
            """One iteration, op by op (recorded instead when the stream captures)."""
            gpu.copy_h2d_async(host, x, stream=stream)
            for _ in range(CHAIN):
                gpu.launch(scale, -(-N // 256), 256, args, stream=stream)
            return gpu.copy_d2h_async(x, out, stream=stream)

        start = time.perf_counter()
        for _ in range(ITERATIONS):
            issue()
        one_by_one = (time.perf_counter() - start) / ITERATIONS
        await stream  # let the device finish before timing the other way

        with gpu.capture(stream) as graph:
            issue()
        out[:] = 0
        start = time.perf_counter()
        for _ in range(ITERATIONS):
            gpu.launch_graph(graph, stream=stream)
        replayed = (time.perf_counter() - start) / ITERATIONS
        await stream

        expected = host.copy()
        for _ in range(CHAIN):
            expected *= np.float32(1.5)
        assert np.allclose(out, expected, rtol=1e-6), "the replayed chain computed a wrong result"
        graph.close()
        stream.close()
        gpu.free(x)

        print(f"{gpu.name}: {ITERATIONS} iterations of {CHAIN + 2} ops (H2D, {CHAIN} kernels, D2H)")
        print(f"  host cost per iteration, op by op:  {one_by_one * 1e6:9.1f} us")
        print(f"  host cost per iteration, replayed:  {replayed * 1e6:9.1f} us")
        print(f"  graph replay / op by op:            {replayed / one_by_one:9.2f}x")
        if gpu.name == "mock":
            print("  (the mock runs every op inside the enqueueing call, so both include the work)")


if __name__ == "__main__":
    loop = "trio" if "--trio" in sys.argv[1:] else os.environ.get("ARUNTIME_LOOP", "asyncio")
    anyio.run(main, backend=loop)
