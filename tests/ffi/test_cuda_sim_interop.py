"""cuda-sim: NVIDIA's cuda-bindings runs on the sim, in the same process."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from _cudasim_support import Cuda, ffi, sim_library_path

driver = pytest.importorskip(
    "cuda.bindings.driver", reason="cuda-bindings is not installed (pip install cuda-bindings)"
)


def _ok(result: tuple[object, ...]) -> tuple[object, ...]:
    assert int(result[0]) == 0, result  # type: ignore[call-overload]
    return result[1:]


def test_cuda_bindings_reads_what_the_sim_wrote(cu: Cuda) -> None:
    # This process loaded the sim as libcuda.so.1 first, so cuda-bindings'
    # own dlopen("libcuda.so.1") finds it and resolves everything through
    # the sim's cuGetProcAddress_v2.
    data = (np.arange(4096, dtype=np.uint64) * 2654435761 % 2**32).astype(np.uint32)
    d = cu.alloc(data.nbytes)
    cu.check(cu.lib.cuMemcpyHtoD_v2(d, ffi.cast("void *", data.ctypes.data), data.nbytes))
    _ok(driver.cuInit(0))
    (version,) = _ok(driver.cuDriverGetVersion())
    assert version >= 12000
    (ctx,) = _ok(driver.cuCtxGetCurrent())
    assert int(ctx) == int(ffi.cast("uintptr_t", cu.ctx[0]))  # the same primary context
    out = np.zeros_like(data)
    _ok(driver.cuMemcpyDtoH(out, d, data.nbytes))
    assert np.array_equal(out, data)
    # And the other way: memory and a stream from cuda-bindings, used here.
    (p,) = _ok(driver.cuMemAlloc(64))
    (s,) = _ok(driver.cuStreamCreate(0))
    _ok(driver.cuMemsetD8Async(p, 0x5A, 64, s))
    cu.check(cu.lib.cuStreamSynchronize(ffi.cast("CUstream", int(s))))
    back = np.zeros(64, np.uint8)
    cu.check(cu.lib.cuMemcpyDtoH_v2(ffi.cast("void *", back.ctypes.data), int(p), 64))
    assert (back == 0x5A).all()
    _ok(driver.cuStreamDestroy(s))
    _ok(driver.cuMemFree(p))


def test_exit_with_work_in_flight() -> None:
    """A process that exits with queued work neither crashes nor hangs."""
    script = textwrap.dedent(
        f"""
        import cffi
        ffi = cffi.FFI()
        ffi.cdef('''
        int cuInit(unsigned); int cuDevicePrimaryCtxRetain(void **, int);
        int cuCtxSetCurrent(void *); int cuMemAlloc_v2(unsigned long long *, size_t);
        int cuStreamCreate(void **, unsigned);
        int cuMemsetD8Async(unsigned long long, unsigned char, size_t, void *);
        void arsim_set_timing(double, double);
        ''')
        lib = ffi.dlopen({str(sim_library_path())!r})
        ctx, s, d = ffi.new("void **"), ffi.new("void **"), ffi.new("unsigned long long *")
        assert lib.cuInit(0) == 0
        assert lib.cuDevicePrimaryCtxRetain(ctx, 0) == 0
        assert lib.cuCtxSetCurrent(ctx[0]) == 0
        assert lib.cuMemAlloc_v2(d, 1 << 20) == 0
        lib.arsim_set_timing(0.0, 100000.0)
        for _ in range(4):
            assert lib.cuStreamCreate(s, 0) == 0
            for _ in range(50):
                assert lib.cuMemsetD8Async(d[0], 1, 1 << 20, s[0]) == 0
        print("queued")
        """
    )
    for _ in range(3):
        proc = subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            timeout=30,
            env=dict(os.environ),
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == "queued"
