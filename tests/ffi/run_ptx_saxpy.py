"""Runs the committed PTX's saxpy through cuda-bindings on whatever libcuda.so.1
this process gets: the real driver, or the sim when its path is given.

    python run_ptx_saxpy.py PTX [SIM_LIBCUDA]

Prints OK, or NOGPU when there is no CUDA device; exits non-zero on failure.
"""

from __future__ import annotations

import ctypes
import sys
from pathlib import Path
from typing import Any

import numpy as np

if len(sys.argv) > 2:
    ctypes.CDLL(sys.argv[2])  # preload the sim as libcuda.so.1

from cuda.bindings import driver as d


def ok(res: Any) -> Any:
    err = res[0] if isinstance(res, tuple) else res
    if int(err) != 0:
        raise SystemExit(f"CUDA error {err!r}")
    return res[1:] if isinstance(res, tuple) and len(res) > 1 else None


try:
    err = d.cuInit(0)[0]
    n_dev = d.cuDeviceGetCount()[1] if int(err) == 0 else 0
except Exception:  # no driver at all
    n_dev = 0
if n_dev == 0:
    print("NOGPU")
    raise SystemExit(0)
(dev,) = ok(d.cuDeviceGet(0))
(ctx,) = ok(d.cuDevicePrimaryCtxRetain(dev))
ok(d.cuCtxSetCurrent(ctx))
ptx = Path(sys.argv[1]).read_bytes() + b"\0"
(mod,) = ok(d.cuModuleLoadData(ptx))
(fn,) = ok(d.cuModuleGetFunction(mod, b"saxpy"))
n, a = 100_003, np.float32(1.75)
x = np.random.default_rng(1).standard_normal(n).astype(np.float32)
y = np.random.default_rng(2).standard_normal(n).astype(np.float32)
(dx,) = ok(d.cuMemAlloc(x.nbytes))
(dy,) = ok(d.cuMemAlloc(y.nbytes))
ok(d.cuMemcpyHtoD(dx, x, x.nbytes))
ok(d.cuMemcpyHtoD(dy, y, y.nbytes))
values = [
    np.array([n], np.uint32),
    np.array([a], np.float32),
    np.array([int(dx)], np.uint64),
    np.array([int(dy)], np.uint64),
]
params = np.array([v.ctypes.data for v in values], dtype=np.uint64)
block = 256
ok(d.cuLaunchKernel(fn, (n + block - 1) // block, 1, 1, block, 1, 1, 0, 0, params.ctypes.data, 0))
ok(d.cuCtxSynchronize())
out = np.empty_like(y)
ok(d.cuMemcpyDtoH(out, dy, out.nbytes))
np.testing.assert_allclose(out, a * x + y, rtol=1e-6, atol=1e-6)
ok(d.cuMemFree(dx))
ok(d.cuMemFree(dy))
ok(d.cuModuleUnload(mod))
ok(d.cuDevicePrimaryCtxRelease(dev))
print("OK")
