"""cuda-sim's peer API on three devices, driven through cffi (run by test_cuda_sim_peer.py).

Needs ``ARUNTIME_SIM_DEVICES=3``, read when the library loads.  Prints ``OK``.
"""

from __future__ import annotations

import cffi

from aruntime._native import native_library_path

ffi = cffi.FFI()
ffi.cdef(
    """
typedef int CUresult; typedef int CUdevice; typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext; typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
CUresult cuInit(unsigned int);
CUresult cuDevicePrimaryCtxRetain(CUcontext *, CUdevice);
CUresult cuCtxSetCurrent(CUcontext);
CUresult cuDeviceCanAccessPeer(int *, CUdevice, CUdevice);
CUresult cuCtxEnablePeerAccess(CUcontext, unsigned int);
CUresult cuCtxDisablePeerAccess(CUcontext);
CUresult cuMemAlloc_v2(CUdeviceptr *, size_t);
CUresult cuMemFree_v2(CUdeviceptr);
CUresult cuMemcpyHtoD_v2(CUdeviceptr, const void *, size_t);
CUresult cuMemcpyDtoH_v2(void *, CUdeviceptr, size_t);
CUresult cuMemcpyPeer(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t);
CUresult cuMemcpyPeerAsync(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t, CUstream);
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr, CUdeviceptr, size_t, CUstream);
CUresult cuStreamCreate(CUstream *, unsigned int);
CUresult cuStreamSynchronize(CUstream);
CUresult cuStreamWaitEvent(CUstream, CUevent, unsigned int);
CUresult cuEventCreate(CUevent *, unsigned int);
CUresult cuEventRecord(CUevent, CUstream);
CUresult cuEventSynchronize(CUevent);
CUresult cuEventElapsedTime(float *, CUevent, CUevent);
CUresult cuMemsetD8Async(CUdeviceptr, unsigned char, size_t, CUstream);
void arsim_set_peer_gbps(double);
void arsim_set_timing(double, double);
"""
)
lib = ffi.dlopen(str(native_library_path("libcuda.so.1")))
INVALID_VALUE, INVALID_DEVICE, ALREADY, NOT_ENABLED = 1, 101, 704, 705


def ok(rc: int, what: str) -> None:
    assert rc == 0, f"{what}: {rc}"


ok(lib.cuInit(0), "cuInit")
ctx = []
for d in range(3):
    c = ffi.new("CUcontext *")
    ok(lib.cuDevicePrimaryCtxRetain(c, d), "retain")
    ctx.append(c[0])
can = ffi.new("int *")
ok(lib.cuDeviceCanAccessPeer(can, 0, 1), "can")
assert can[0] == 1
ok(lib.cuDeviceCanAccessPeer(can, 1, 1), "can self")
assert can[0] == 0

# Peer access is bookkeeping on the current context.
ok(lib.cuCtxSetCurrent(ctx[0]), "current")
ok(lib.cuCtxEnablePeerAccess(ctx[1], 0), "enable")
assert lib.cuCtxEnablePeerAccess(ctx[1], 0) == ALREADY
assert lib.cuCtxEnablePeerAccess(ctx[0], 0) == INVALID_DEVICE
ok(lib.cuCtxDisablePeerAccess(ctx[1]), "disable")
assert lib.cuCtxDisablePeerAccess(ctx[1]) == NOT_ENABLED


def alloc(device: int, n: int) -> int:
    ok(lib.cuCtxSetCurrent(ctx[device]), "current")
    p = ffi.new("CUdeviceptr *")
    ok(lib.cuMemAlloc_v2(p, n), "alloc")
    return int(p[0])


N = 4 << 20
a0, b1, c0, d1 = alloc(0, N), alloc(1, N), alloc(0, N), alloc(1, N)
data = bytes(range(256)) * (N // 256)
ok(lib.cuCtxSetCurrent(ctx[0]), "current")
ok(lib.cuMemcpyHtoD_v2(a0, data, N), "upload")
ok(lib.cuMemcpyPeer(b1, ctx[1], a0, ctx[0], N), "cuMemcpyPeer")
out = ffi.new("char[]", N)
ok(lib.cuMemcpyDtoH_v2(out, b1, N), "download")
assert ffi.buffer(out, N)[:] == data
# A pointer with the wrong context is refused.
assert lib.cuMemcpyPeer(b1, ctx[0], a0, ctx[0], N) == INVALID_VALUE


def stream(device: int) -> object:
    ok(lib.cuCtxSetCurrent(ctx[device]), "current")
    s = ffi.new("CUstream *")
    ok(lib.cuStreamCreate(s, 1), "stream")
    return s[0]


def event(device: int) -> object:
    ok(lib.cuCtxSetCurrent(ctx[device]), "current")
    e = ffi.new("CUevent *")
    ok(lib.cuEventCreate(e, 0), "event")
    return e[0]


# A third device's stream cannot run a copy between devices 0 and 1: refused.
s2 = stream(2)
assert lib.cuMemcpyPeerAsync(b1, ctx[1], a0, ctx[0], N, s2) == INVALID_VALUE
assert lib.cuMemcpyDtoDAsync_v2(b1, a0, N, s2) == INVALID_VALUE

# Two copies 0 -> 1, one pushed from device 0's stream and one pulled by
# device 1's, from one start: they use different local engines, but each
# books the other device's engine too, so they take turns on the 0.25 GB/s link.
lib.arsim_set_peer_gbps(0.25)
s0, s1 = stream(0), stream(1)
start, end0, end1 = event(0), event(0), event(1)
# A 50 ms memset first holds device 0's stream, so that everything below is
# queued before it starts: the events then time the model, not this host.
lib.arsim_set_timing(0.0, 50_000.0)
ok(lib.cuMemsetD8Async(a0, 0, 1, s0), "gate")
lib.arsim_set_timing(0.0, 0.0)
ok(lib.cuEventRecord(start, s0), "record")
ok(lib.cuStreamWaitEvent(s1, start, 0), "wait")
ok(lib.cuMemcpyPeerAsync(b1, ctx[1], a0, ctx[0], N, s0), "push")
ok(lib.cuMemcpyPeerAsync(d1, ctx[1], c0, ctx[0], N, s1), "pull")
ok(lib.cuEventRecord(end0, s0), "record")
ok(lib.cuEventRecord(end1, s1), "record")
ok(lib.cuEventSynchronize(end0), "sync")
ok(lib.cuEventSynchronize(end1), "sync")
ms0, ms1 = ffi.new("float *"), ffi.new("float *")
ok(lib.cuEventElapsedTime(ms0, start, end0), "elapsed")
ok(lib.cuEventElapsedTime(ms1, start, end1), "elapsed")
one = N / 0.25e9 * 1e3  # the model's milliseconds for one copy
# Device time (the model), not the wall clock: never shorter than the model.
assert max(ms0[0], ms1[0]) >= 2 * one * 0.999, (ms0[0], ms1[0], one)
assert min(ms0[0], ms1[0]) >= one * 0.999, (ms0[0], ms1[0], one)
print("OK")
