"""CI: an installed aruntime (wheel or sdist) runs a saxpy and a gemm on one backend.

Run from a folder outside the checkout, so that only the installed copy can
be imported:  python installed_check.py BACKEND [--trio]
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import numpy as np

import aruntime as ar


async def check(backend: str) -> None:
    async with ar.open_backend(backend) as gpu:
        n = 1 << 16
        host = np.arange(n, dtype=np.float32)
        x, y = gpu.alloc(host.nbytes), gpu.alloc(host.nbytes)
        stream = gpu.create_stream()
        gpu.copy_h2d_async(host, x, stream=stream)
        gpu.copy_h2d_async(np.ones_like(host), y, stream=stream)
        saxpy = gpu.kernel(gpu.builtin_module("vector_ops"), "saxpy")
        gpu.launch(saxpy, n // 256, 256, [np.uint32(n), np.float32(2), x, y], stream=stream)
        out = await gpu.copy_d2h_async(y, np.empty_like(host), stream=stream)
        np.testing.assert_allclose(out, 2 * host + 1)
        stream.close()
        gpu.free(x)
        gpu.free(y)
        assert gpu.live_bytes() == 0, gpu.alloc_report()
        if backend == "levelzero-sim":  # the install built its compiled op-path calls
            assert gpu.driver._calls is not None, "levelzero-sim runs in ABI mode"
        print(f"{gpu.name} ({gpu.device.name}): saxpy checked")


def main() -> int:
    package = Path(ar.__file__).resolve().parent
    # The point of this check: the import is the installed copy, not a checkout.
    if "site-packages" not in package.parts:
        print(f"aruntime imported from {package}, not from site-packages", file=sys.stderr)
        return 1
    loop = "trio" if "--trio" in sys.argv[2:] else "asyncio"
    anyio.run(check, sys.argv[1], backend=loop)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
