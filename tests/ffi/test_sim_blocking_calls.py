"""The software drivers model the real drivers' blocking and in-use rules.

- cuda-sim: cuMemFree, cuMemFreeHost and cuMemHostUnregister synchronize
  implicitly, as the CUDA documentation says: they return only once the
  device's queued work has finished.
- cuEventSynchronize waits for the record that was current when it was
  called: neither a later record that finishes first nor one still queued
  changes that.
- levelzero-sim: zeMemFree of memory that queued work still uses fails with
  ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE instead of freeing it under the work.

"Still blocked" is checked while a host function holds a stream, so the
only timing assumption is in the safe direction: a call that wrongly
returns early is seen as returned.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Callable
from typing import Any

import anyio
import numpy as np
import pytest
from _cudasim_support import CUDA_SUCCESS, Cuda, Gate, ffi

import aruntime as ar
from aruntime._exceptions import DriverError

BLOCKED_FOR_S = 0.2


def _call_in_thread(fn: Callable[[], int]) -> tuple[threading.Thread, list[int]]:
    result: list[int] = []
    t = threading.Thread(target=lambda: result.append(fn()), daemon=True)
    t.start()
    return t, result


def _assert_blocks_until_released(cu: Cuda, fn: Callable[[], int]) -> None:
    s = cu.stream()
    gate = Gate(cu, s)
    cu.check(cu.lib.cuMemsetD8Async(cu.alloc(64), 1, 64, s))  # queued behind the gate
    t, result = _call_in_thread(fn)
    t.join(BLOCKED_FOR_S)
    assert t.is_alive() and not result, "returned while the device still had work"
    gate.release()
    t.join(30)
    assert result == [CUDA_SUCCESS]
    cu.check(cu.lib.cuStreamDestroy_v2(s))


def test_cumemfree_synchronizes(cu: Cuda) -> None:
    d = cu.alloc(4096)
    _assert_blocks_until_released(cu, lambda: int(cu.lib.cuMemFree_v2(d)))


def test_cumemfreehost_synchronizes(cu: Cuda) -> None:
    p = ffi.new("void **")
    cu.check(cu.lib.cuMemAllocHost_v2(p, 4096))
    _assert_blocks_until_released(cu, lambda: int(cu.lib.cuMemFreeHost(p[0])))


def test_cumemhostunregister_synchronizes(cu: Cuda) -> None:
    host = np.zeros(4096, np.uint8)
    ptr = ffi.cast("void *", host.ctypes.data)
    register = _register_fn(cu)
    assert register(ptr, host.nbytes, 0) == CUDA_SUCCESS
    unregister = _unregister_fn(cu)
    _assert_blocks_until_released(cu, lambda: int(unregister(ptr)))
    assert unregister(ptr) == 713  # CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED: it is gone


def _proc(cu: Cuda, name: str, signature: str) -> Any:
    fn = ffi.new("void **")
    status = ffi.new("int *")
    cu.check(cu.lib.cuGetProcAddress_v2(name.encode(), fn, 12000, 0, status))
    return ffi.cast(signature, fn[0])


def _register_fn(cu: Cuda) -> Any:
    return _proc(cu, "cuMemHostRegister", "CUresult (*)(void *, size_t, unsigned int)")


def _unregister_fn(cu: Cuda) -> Any:
    return _proc(cu, "cuMemHostUnregister", "CUresult (*)(void *)")


def test_event_synchronize_waits_for_the_record_current_at_the_call(cu: Cuda) -> None:
    held, free = cu.stream(), cu.stream()
    ev = cu.event(0)
    gate = Gate(cu, held)
    cu.check(cu.lib.cuEventRecord(ev, held))  # record 1: behind the gate
    t, result = _call_in_thread(lambda: int(cu.lib.cuEventSynchronize(ev)))
    t.join(BLOCKED_FOR_S)
    assert t.is_alive()
    # Record 2 on an idle stream finishes at once: the wait is still for record 1.
    cu.check(cu.lib.cuEventRecord(ev, free))
    cu.check(cu.lib.cuStreamSynchronize(free))
    t.join(BLOCKED_FOR_S)
    assert t.is_alive() and not result, "returned on a later record"
    gate.release()
    t.join(30)
    assert result == [CUDA_SUCCESS]
    # The other way round: a re-record still queued does not hold a wait made before it.
    gate2 = Gate(cu, held)
    cu.check(cu.lib.cuEventRecord(ev, free))  # record 3: completes at once
    cu.check(cu.lib.cuStreamSynchronize(free))
    cu.check(cu.lib.cuEventRecord(ev, held))  # record 4: behind gate2
    assert cu.lib.cuEventQuery(ev) == 600  # NOT_READY: the latest record is pending
    gate2.release()
    cu.check(cu.lib.cuEventSynchronize(ev))
    for s in (held, free):
        cu.check(cu.lib.cuStreamDestroy_v2(s))
    cu.check(cu.lib.cuEventDestroy_v2(ev))


def test_lz_mem_free_of_memory_in_use_is_refused() -> None:
    """zeMemFree while a queued memset still writes the buffer: IN_USE, then fine once done."""

    async def main() -> None:
        async with ar.open_backend("levelzero-sim") as gpu:
            # The test hooks of the very driver library the backend loaded.
            hooks = ctypes.CDLL(_lz_library(), mode=os.RTLD_NOLOAD)
            hooks.arsim_set_timing.argtypes = [ctypes.c_double, ctypes.c_double]
            ptr = gpu.alloc(1 << 16)
            s = gpu.create_stream()
            hooks.arsim_set_timing(0.0, 300_000.0)  # each op lasts 300 ms
            try:
                gpu.memset_async(ptr, 7, 1 << 16, stream=s)
                with pytest.raises(DriverError) as info:
                    gpu._driver.mem_free(ptr.address)
                assert info.value.name == "ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE"
            finally:
                hooks.arsim_set_timing(0.0, 0.0)
            await s.synchronize()
            out = await gpu.copy_d2h_async(ptr, np.empty(1 << 16, np.uint8), stream=s)
            assert (out == 7).all()  # the memset ran on memory that was not freed
            s.close()
            gpu.free(ptr)

    anyio.run(main)


def _lz_library() -> str:
    from aruntime._native import native_library_path

    return str(native_library_path("libze_aruntime_sim.so"))
