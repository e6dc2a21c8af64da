"""A kernel of your own, in OpenCL C, compiled to SPIR-V and run on Level Zero.

``kernels/sum_and_histogram.cl`` (its header shows the clang + llvm-spirv
command; the built ``.spv`` is committed beside it) sums each work-group's
slice of the input with a sub-group reduction, __local memory and barriers,
and builds a histogram with atomics.  ``load_module`` takes the SPIR-V as a
real Level Zero driver would; without an Intel GPU it runs on levelzero-sim,
whose SPIR-V executor interprets the same file.  The results are checked
against numpy.

    python examples/custom_kernel_spirv.py [--trio]

It opens the Level Zero backend that ``ARUNTIME_BACKEND`` names (levelzero or
levelzero-sim), else levelzero-sim.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import numpy as np

import aruntime as ar

SPIRV = Path(__file__).resolve().parent / "kernels" / "sum_and_histogram.spv"
GROUP = 256  # the kernel's __local arrays hold at most 256 work-items
BINS = 16


async def main() -> None:
    forced = os.environ.get("ARUNTIME_BACKEND", "")
    name = forced if forced.startswith("levelzero") else "levelzero-sim"
    rng = np.random.default_rng(0)
    n = 100_000
    # Whole numbers: every sum is exact in float32, whatever the order.
    x = rng.integers(0, BINS + 4, n).astype(np.float32)
    groups = (n + GROUP - 1) // GROUP
    async with ar.open_backend(name) as gpu:
        module = gpu.load_module("sum_and_histogram", SPIRV.read_bytes())
        kernel = gpu.kernel(module, "sum_and_histogram")
        stream = gpu.create_stream()
        xs, sums, hist = gpu.alloc(x.nbytes), gpu.alloc(groups * 4), gpu.alloc(BINS * 4)
        gpu.copy_h2d_async(x, xs, stream=stream)
        gpu.memset_async(hist, 0, BINS * 4, stream=stream)
        gpu.launch(kernel, groups, GROUP, [xs, np.uint32(n), sums, hist], stream=stream)
        group_sums = await gpu.copy_d2h_async(sums, np.empty(groups, np.float32), stream=stream)
        histogram = await gpu.copy_d2h_async(hist, np.empty(BINS, np.uint32), stream=stream)
        stream.close(), gpu.free(xs), gpu.free(sums), gpu.free(hist)

    padded = np.zeros(groups * GROUP, np.float32)
    padded[:n] = x
    assert (group_sums == padded.reshape(groups, GROUP).sum(axis=1)).all()
    assert (histogram == np.bincount(np.minimum(x, BINS - 1).astype(int), minlength=BINS)).all()
    print(
        f"{name}: {groups} work-groups summed {n} floats to {group_sums.sum():.0f} and "
        f"binned them into {BINS} bins (checked against numpy)"
    )


if __name__ == "__main__":
    loop = "trio" if "--trio" in sys.argv[1:] else os.environ.get("ARUNTIME_LOOP", "asyncio")
    anyio.run(main, backend=loop)
