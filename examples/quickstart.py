"""Quickstart: upload an array, scale it with a kernel, download it, every step awaited.

It opens the best backend here (``ARUNTIME_BACKEND`` picks one; the mock always
works) and runs under asyncio, or under trio with ``--trio`` (or
``ARUNTIME_LOOP=trio``).  The body of ``main`` is the README's example.

    python examples/quickstart.py [--trio]
"""

from __future__ import annotations

import os
import sys

import anyio
import numpy as np

import aruntime as ar


async def main() -> None:
    async with ar.open_backend("auto") as gpu:
        x = np.arange(1 << 20, dtype=np.float32)
        dx = gpu.alloc(x.nbytes)
        with gpu.create_stream() as stream:
            await gpu.copy_h2d_async(x, dx, stream=stream)  # the loop runs meanwhile
            scale = gpu.kernel(gpu.builtin_module("vector_ops"), "scale_f32")
            args = [np.uint32(x.size), np.float32(2.0), dx]  # explicit C types
            await gpu.launch(scale, grid=(x.size + 255) // 256, block=256, args=args, stream=stream)
            y = await gpu.copy_d2h_async(dx, np.empty_like(x), stream=stream)
        gpu.free(dx)
        assert np.array_equal(y, 2 * x), "the kernel's result differs from numpy"
        assert gpu.live_bytes() == 0
        print(f"{gpu.name} ({gpu.device.name}): scaled {x.size} floats, result checked")


if __name__ == "__main__":
    loop = "trio" if "--trio" in sys.argv[1:] else os.environ.get("ARUNTIME_LOOP", "asyncio")
    anyio.run(main, backend=loop)
