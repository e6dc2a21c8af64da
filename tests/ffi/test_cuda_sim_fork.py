"""cuda-sim in a child forked after cuInit: every call fails at once, as on NVIDIA's driver.

The child inherits a stream whose work is still queued (a host function
holds it) and an event recorded behind it; the engine threads that would
run them stayed in the parent.  Waiting on either must not hang.
"""

from __future__ import annotations

import numpy as np
from _cudasim_support import CUDA_SUCCESS, Cuda, Gate, ffi, run_alone

from tests.test_fork import _fork

CUDA_ERROR_NOT_INITIALIZED = 3


def test_every_call_in_a_forked_child_is_not_initialized() -> None:
    # In a fresh interpreter: the test process itself is never forked.
    run_alone(__file__, "_fork_scenario")


def _fork_scenario(cu: Cuda) -> None:
    lib = cu.lib
    s = ffi.new("CUstream *")
    cu.check(lib.cuStreamCreate(s, 0))
    d = cu.alloc(64)
    gate = Gate(cu, s[0])  # the stream's work waits on the parent's host function
    cu.check(lib.cuMemsetD8Async(d, 1, 64, s[0]))
    done = cu.event()
    cu.check(lib.cuEventRecord(done, s[0]))

    def child() -> list[str]:
        p = ffi.new("CUdeviceptr *")
        host = np.zeros(64, np.uint8)
        calls = {
            "cuInit": lambda: lib.cuInit(0),
            "cuStreamSynchronize": lambda: lib.cuStreamSynchronize(s[0]),
            "cuEventSynchronize": lambda: lib.cuEventSynchronize(done),
            "cuCtxSynchronize": lambda: lib.cuCtxSynchronize(),
            "cuMemAlloc_v2": lambda: lib.cuMemAlloc_v2(p, 16),
            "cuMemsetD8_v2": lambda: lib.cuMemsetD8_v2(d, 0, 64),
            "cuMemcpyDtoH_v2": lambda: lib.cuMemcpyDtoH_v2(
                ffi.cast("void *", host.ctypes.data), d, 64
            ),
        }
        return [f"{name} {int(call())}" for name, call in calls.items()]

    lines = _fork(child)
    assert lines == [
        f"{name} {CUDA_ERROR_NOT_INITIALIZED}"
        for name in (
            "cuInit",
            "cuStreamSynchronize",
            "cuEventSynchronize",
            "cuCtxSynchronize",
            "cuMemAlloc_v2",
            "cuMemsetD8_v2",
            "cuMemcpyDtoH_v2",
        )
    ], lines
    gate.release()  # the parent's own work runs on, untouched
    assert lib.cuEventSynchronize(done) == CUDA_SUCCESS
