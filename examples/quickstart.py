"""Quickstart: the README's fifteen-line example, as a program.

Two uploads are queued without waiting, a saxpy kernel (y = 2*x + y) runs on
the same stream, and only the download is awaited; the event loop keeps
running meanwhile.  It opens the best backend here (``ARUNTIME_BACKEND``
picks one; the mock always works) and runs under asyncio, or under trio with
``--trio`` (or ``ARUNTIME_LOOP=trio``).

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
        host = np.arange(1 << 20, dtype=np.float32)
        x, y = gpu.alloc(host.nbytes), gpu.alloc(host.nbytes)
        stream = gpu.create_stream()
        gpu.copy_h2d_async(host, x, stream=stream)  # queued, not awaited
        gpu.copy_h2d_async(np.ones_like(host), y, stream=stream)
        saxpy = gpu.kernel(gpu.builtin_module("vector_ops"), "saxpy")
        gpu.launch(saxpy, 4096, 256, [np.uint32(host.size), np.float32(2), x, y], stream=stream)
        out = await gpu.copy_d2h_async(y, np.empty_like(host), stream=stream)
        assert np.allclose(out, 2 * host + 1)
        stream.close(), gpu.free(x), gpu.free(y)
        assert gpu.live_bytes() == 0, gpu.alloc_report()
        print(f"{gpu.name} ({gpu.device.name}): saxpy over {host.size} floats, result checked")


if __name__ == "__main__":
    loop = "trio" if "--trio" in sys.argv[1:] else os.environ.get("ARUNTIME_LOOP", "asyncio")
    anyio.run(main, backend=loop)
