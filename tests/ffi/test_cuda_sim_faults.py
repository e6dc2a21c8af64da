"""cuda-sim: injected faults reach the calls and events they should."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _cudasim_support import (
    CU_EVENT_BLOCKING_SYNC,
    CUDA_ERROR_ILLEGAL_ADDRESS,
    CUDA_ERROR_LAUNCH_FAILED,
    CUDA_ERROR_OUT_OF_MEMORY,
    CUDA_SUCCESS,
    FAULT_ILLEGAL_ADDRESS,
    FAULT_LAUNCH_FAILED,
    FAULT_OUT_OF_MEMORY,
    Cuda,
    Gate,
    ffi,
    host_kernels_path,
    run_alone,
)


def _fill_kernel(cu: Cuda) -> tuple[Any, Any, Any]:
    mod = ffi.new("CUmodule *")
    cu.check(cu.lib.cuModuleLoadData(mod, ffi.from_buffer(host_kernels_path().read_bytes())))
    fn = ffi.new("CUfunction *")
    cu.check(cu.lib.cuModuleGetFunction(fn, mod[0], b"fill_f32"))
    d = cu.alloc(64)
    keep = [ffi.new("unsigned int *", 16), ffi.new("float *", 4.0), ffi.new("CUdeviceptr *", d)]
    args = ffi.new("void *[]", [ffi.cast("void *", k) for k in keep])
    return fn[0], args, (keep, d)


def _launch(cu: Cuda, fn: Any, args: Any, s: Any) -> int:
    return int(cu.lib.cuLaunchKernel(fn, 1, 1, 1, 16, 1, 1, 0, s, args, ffi.NULL))


def test_injected_out_of_memory(cu: Cuda) -> None:
    lib = cu.lib
    assert lib.arsim_inject_fault(0, FAULT_OUT_OF_MEMORY, 2) == 0
    p = ffi.new("CUdeviceptr *")
    assert lib.cuMemAlloc_v2(p, 16) == CUDA_ERROR_OUT_OF_MEMORY
    pp = ffi.new("void **")
    assert lib.cuMemHostAlloc(pp, 16, 0) == CUDA_ERROR_OUT_OF_MEMORY
    cu.check(lib.cuMemAlloc_v2(p, 16))  # only the next two failed
    assert lib.arsim_inject_fault(5, FAULT_OUT_OF_MEMORY, 1) == -1  # no such device
    assert lib.arsim_inject_fault(0, 99, 1) == -1  # no such kind


def test_launch_failure_reaches_the_next_event_only(cu: Cuda) -> None:
    lib = cu.lib
    fn, args, _keep = _fill_kernel(cu)
    s = ffi.new("CUstream *")
    cu.check(lib.cuStreamCreate(s, 0))
    failed, later = cu.event(CU_EVENT_BLOCKING_SYNC), cu.event()
    lib.arsim_inject_fault(0, FAULT_LAUNCH_FAILED, 1)
    assert _launch(cu, fn, args, s[0]) == CUDA_SUCCESS  # fails when it runs
    cu.check(lib.cuEventRecord(failed, s[0]))
    assert lib.cuEventSynchronize(failed) == CUDA_ERROR_LAUNCH_FAILED
    assert lib.cuEventQuery(failed) == CUDA_ERROR_LAUNCH_FAILED
    # Not sticky: the stream keeps working and later events are clean.
    assert _launch(cu, fn, args, s[0]) == CUDA_SUCCESS
    cu.check(lib.cuEventRecord(later, s[0]))
    assert lib.cuEventSynchronize(later) == CUDA_SUCCESS
    cu.check(lib.cuStreamSynchronize(s[0]))
    # With no event in between, the stream's synchronize reports it.
    lib.arsim_inject_fault(0, FAULT_LAUNCH_FAILED, 1)
    assert _launch(cu, fn, args, s[0]) == CUDA_SUCCESS
    assert lib.cuStreamSynchronize(s[0]) == CUDA_ERROR_LAUNCH_FAILED
    assert lib.cuStreamSynchronize(s[0]) == CUDA_SUCCESS  # reported once


def test_illegal_address_is_sticky(cu: Cuda) -> None:
    lib = cu.lib
    fn, args, (_keep, d) = _fill_kernel(cu)
    s = ffi.new("CUstream *")
    cu.check(lib.cuStreamCreate(s, 0))
    e = cu.event()
    lib.arsim_inject_fault(0, FAULT_ILLEGAL_ADDRESS, 1)
    gate = Gate(cu, s[0])  # the record is queued before the fault happens
    assert _launch(cu, fn, args, s[0]) == CUDA_SUCCESS
    cu.check(lib.cuEventRecord(e, s[0]))
    gate.release()
    assert lib.cuEventSynchronize(e) == CUDA_ERROR_ILLEGAL_ADDRESS
    # Every later call on the context reports it.
    p = ffi.new("CUdeviceptr *")
    host = np.zeros(16, np.uint8)
    assert lib.cuMemAlloc_v2(p, 16) == CUDA_ERROR_ILLEGAL_ADDRESS
    assert lib.cuMemcpyDtoH_v2(ffi.cast("void *", host.ctypes.data), d, 16) == 700
    assert lib.cuStreamSynchronize(s[0]) == CUDA_ERROR_ILLEGAL_ADDRESS
    assert lib.cuCtxSynchronize() == CUDA_ERROR_ILLEGAL_ADDRESS
    assert _launch(cu, fn, args, s[0]) == CUDA_ERROR_ILLEGAL_ADDRESS
    assert lib.cuStreamQuery(s[0]) == CUDA_ERROR_ILLEGAL_ADDRESS


def test_illegal_address_outlives_every_context(cu: Cuda) -> None:
    """cuda.h: to continue using CUDA the process must be terminated and relaunched."""
    lib = cu.lib
    fn, args, _keep = _fill_kernel(cu)
    lib.arsim_inject_fault(0, FAULT_ILLEGAL_ADDRESS, 1)
    assert _launch(cu, fn, args, ffi.NULL) == CUDA_SUCCESS
    assert lib.cuCtxSynchronize() == CUDA_ERROR_ILLEGAL_ADDRESS
    # Resetting the primary context frees what it owned, but the error stays.
    cu.check(lib.cuDevicePrimaryCtxReset_v2(0))
    ctx = ffi.new("CUcontext *")
    assert lib.cuDevicePrimaryCtxRetain(ctx, 0) == CUDA_ERROR_ILLEGAL_ADDRESS
    assert lib.cuCtxCreate_v2(ctx, 0, 0) == CUDA_ERROR_ILLEGAL_ADDRESS
    # Only the test hook that stands in for a relaunch clears it.
    lib.arsim_clear_faults()
    cu.check(lib.cuDevicePrimaryCtxRetain(ctx, 0))
    cu.check(lib.cuCtxSetCurrent(ctx[0]))
    p = ffi.new("CUdeviceptr *")
    cu.check(lib.cuMemAlloc_v2(p, 16))
    cu.check(lib.cuCtxSynchronize())
    cu.check(lib.cuMemFree_v2(p[0]))
    cu.check(lib.cuDevicePrimaryCtxRelease_v2(0))


def test_illegal_address_loses_every_device_of_the_process() -> None:
    """Any further CUDA work returns the error: on the other devices too."""
    run_alone(__file__, "_two_devices_scenario", env={"ARUNTIME_SIM_DEVICES": "2"})


def _two_devices_scenario(cu: Cuda) -> None:
    lib = cu.lib
    fn, args, _keep = _fill_kernel(cu)
    lib.arsim_inject_fault(0, FAULT_ILLEGAL_ADDRESS, 1)
    assert _launch(cu, fn, args, ffi.NULL) == CUDA_SUCCESS
    assert lib.cuCtxSynchronize() == CUDA_ERROR_ILLEGAL_ADDRESS
    ctx = ffi.new("CUcontext *")
    assert lib.cuDevicePrimaryCtxRetain(ctx, 1) == CUDA_ERROR_ILLEGAL_ADDRESS
    from aruntime.backends._sim_faults import fault_report

    report = fault_report("cuda-sim")
    assert "kernel fill_f32: injected illegal address on device 0" in report, report


def test_faults_reach_every_waiter(cu: Cuda) -> None:
    """Work queued behind a sticky fault still completes, with the error."""
    lib = cu.lib
    fn, args, (_keep, _d) = _fill_kernel(cu)
    gate_stream = ffi.new("CUstream *")
    cu.check(lib.cuStreamCreate(gate_stream, 0))
    gate_done = cu.event()
    streams = []
    for _ in range(3):
        s = ffi.new("CUstream *")
        cu.check(lib.cuStreamCreate(s, 0))
        streams.append(s[0])
    events = [cu.event(CU_EVENT_BLOCKING_SYNC) for _ in range(9)]
    # Everything queues behind a host function that holds the gate stream,
    # so it is all submitted before the fault happens.
    gate = Gate(cu, gate_stream[0])
    cu.check(lib.cuEventRecord(gate_done, gate_stream[0]))
    lib.arsim_inject_fault(0, FAULT_ILLEGAL_ADDRESS, 1)
    for i, s in enumerate(streams):
        cu.check(lib.cuStreamWaitEvent(s, gate_done, 0))
        for j in range(3):
            cu.check(int(lib.cuLaunchKernel(fn, 1, 1, 1, 16, 1, 1, 0, s, args, ffi.NULL)))
            cu.check(lib.cuEventRecord(events[3 * i + j], s))
    gate.release()
    results = [lib.cuEventSynchronize(e) for e in events]
    assert CUDA_ERROR_ILLEGAL_ADDRESS in results
    assert set(results) <= {CUDA_SUCCESS, CUDA_ERROR_ILLEGAL_ADDRESS}
    # On each stream, once an event carries the fault, every later one does.
    for i in range(3):
        mine = results[3 * i : 3 * i + 3]
        if CUDA_ERROR_ILLEGAL_ADDRESS in mine:
            k = mine.index(CUDA_ERROR_ILLEGAL_ADDRESS)
            assert all(r == CUDA_ERROR_ILLEGAL_ADDRESS for r in mine[k:])


CUDA_ERROR_MISALIGNED_ADDRESS = 716
VECTOR_OPS_PTX = Path(__file__).resolve().parents[2] / "aruntime" / "kernels" / "vector_ops.ptx"


@pytest.mark.parametrize(("kernel", "access"), [("fill_f32", "write"), ("scale_f32", "read")])
def test_misaligned_access_is_misaligned_address(cu: Cuda, kernel: str, access: str) -> None:
    """An f32 access at an address not 4-byte aligned: CUDA_ERROR_MISALIGNED_ADDRESS (716),
    not ILLEGAL_ADDRESS (700), and as sticky; the report says where."""
    from aruntime.backends._sim_faults import fault_report

    lib = cu.lib
    mod = ffi.new("CUmodule *")  # the PTX build: the interpreter checks each access
    cu.check(lib.cuModuleLoadData(mod, ffi.from_buffer(VECTOR_OPS_PTX.read_bytes() + b"\0")))
    fn = ffi.new("CUfunction *")
    cu.check(lib.cuModuleGetFunction(fn, mod[0], kernel.encode()))
    d = cu.alloc(64)
    keep = [ffi.new("unsigned int *", 8), ffi.new("float *", 2.0), ffi.new("CUdeviceptr *", d + 2)]
    args = ffi.new("void *[]", [ffi.cast("void *", k) for k in keep])
    assert lib.cuLaunchKernel(fn[0], 1, 1, 1, 8, 1, 1, 0, ffi.NULL, args, ffi.NULL) == 0
    assert lib.cuCtxSynchronize() == CUDA_ERROR_MISALIGNED_ADDRESS
    name = ffi.new("const char **")
    cu.check(lib.cuGetErrorName(CUDA_ERROR_MISALIGNED_ADDRESS, name))
    assert ffi.string(name[0]) == b"CUDA_ERROR_MISALIGNED_ADDRESS"
    p = ffi.new("CUdeviceptr *")
    assert lib.cuMemAlloc_v2(p, 16) == CUDA_ERROR_MISALIGNED_ADDRESS  # sticky
    report = fault_report("cuda-sim")
    want = f"kernel {kernel}: misaligned {access} of 4 bytes at {d + 2:#x} on device 0, "
    assert want in report, report
    assert f"offset 2 of the allocation {d:#x} (64 bytes)" in report, report
    # An aligned access outside every allocation is still an illegal address.
    lib.arsim_clear_faults()
    keep[2][0] = d + 64 * 1024 * 1024 * 1024
    assert lib.cuLaunchKernel(fn[0], 1, 1, 1, 8, 1, 1, 0, ffi.NULL, args, ffi.NULL) == 0
    assert lib.cuCtxSynchronize() == CUDA_ERROR_ILLEGAL_ADDRESS
