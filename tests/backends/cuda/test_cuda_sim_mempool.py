"""cuda-sim's memory pools, called through the CUDA backend's own cffi declarations.

cuMemPoolCreate/Destroy, the default and current pools, attributes, TrimTo,
cuMemAllocAsync/cuMemAllocFromPoolAsync/cuMemFreeAsync with stream-ordered
reuse.  "Work still pending" states come from a host function that holds a
stream until the test releases it, never from timing.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from aruntime.backends.cuda._library import CudaLibrary, load_library

ROOT = Path(__file__).resolve().parents[3]

SUCCESS = 0
INVALID_VALUE = 1
OUT_OF_MEMORY = 2
NOT_SUPPORTED = 801
STREAM_CAPTURE_UNSUPPORTED = 900

ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES = 1
ATTR_REUSE_ALLOW_OPPORTUNISTIC = 2
ATTR_RELEASE_THRESHOLD = 4
ATTR_RESERVED_MEM_CURRENT = 5
ATTR_RESERVED_MEM_HIGH = 6
ATTR_USED_MEM_CURRENT = 7
ATTR_USED_MEM_HIGH = 8
POINTER_ATTRIBUTE_MEMPOOL_HANDLE = 17
DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED = 115


@dataclass
class Sim:
    lib: Any
    ffi: Any
    gates: list[threading.Event] = field(default_factory=list)
    keep: list[Any] = field(default_factory=list)

    def ok(self, rc: int) -> None:
        assert rc == SUCCESS, f"CUDA call failed with {rc}"

    def stream(self) -> Any:
        s = self.ffi.new("CUstream *")
        self.ok(self.lib.cuStreamCreateWithPriority(s, 0, 0))
        return s[0]

    def default_pool(self) -> Any:
        p = self.ffi.new("CUmemoryPool *")
        self.ok(self.lib.cuDeviceGetDefaultMemPool(p, 0))
        return p[0]

    def new_pool(self, max_size: int = 0) -> Any:
        props = self.ffi.new("CUmemPoolProps *")
        props.allocType = 1  # PINNED
        props.location.type = 1  # DEVICE
        props.location.id = 0
        props.maxSize = max_size
        p = self.ffi.new("CUmemoryPool *")
        self.ok(self.lib.cuMemPoolCreate(p, props))
        return p[0]

    def alloc(self, n: int, stream: Any, pool: Any = None) -> int:
        d = self.ffi.new("CUdeviceptr *")
        if pool is None:
            self.ok(self.lib.cuMemAllocAsync(d, n, stream))
        else:
            self.ok(self.lib.cuMemAllocFromPoolAsync(d, n, pool, stream))
        return int(d[0])

    def attr(self, pool: Any, which: int) -> int:
        v = self.ffi.new("cuuint64_t *")
        self.ok(self.lib.cuMemPoolGetAttribute(pool, which, v))
        return int(v[0])

    def set_attr(self, pool: Any, which: int, value: int) -> int:
        v = self.ffi.new("cuuint64_t *", value)
        return int(self.lib.cuMemPoolSetAttribute(pool, which, v))

    def hold(self, stream: Any) -> threading.Event:
        """Hold ``stream`` in a host function until the returned event is set."""
        gate = threading.Event()

        @self.ffi.callback("void(void *)")
        def wait(_user: Any) -> None:
            gate.wait()

        self.keep.append(wait)
        self.gates.append(gate)
        self.ok(self.lib.cuLaunchHostFunc(stream, wait, self.ffi.NULL))
        return gate


@pytest.fixture
def sim() -> Iterator[Sim]:
    if not (ROOT / "ffi" / "cuda" / "sim").is_dir():
        pytest.skip("the software CUDA driver is not in this checkout")
    loaded: CudaLibrary = load_library(sim=True)
    lib, ffi = loaded.lib, loaded.ffi
    ctx = ffi.new("CUcontext *")
    assert lib.cuDevicePrimaryCtxRetain(ctx, 0) == SUCCESS
    assert lib.cuCtxSetCurrent(ctx[0]) == SUCCESS
    s = Sim(lib, ffi)
    pool = s.default_pool()
    try:
        yield s
    finally:
        for gate in s.gates:
            gate.set()
        assert lib.cuCtxSynchronize() == SUCCESS
        # Leave the default pool as a fresh process has it.
        s.set_attr(pool, ATTR_RELEASE_THRESHOLD, 0)
        lib.cuMemPoolTrimTo(pool, 0)
        lib.cuDeviceSetMemPool(0, pool)
        assert lib.cuDevicePrimaryCtxRelease_v2(0) == SUCCESS


def test_device_reports_pools_and_default_pool_is_current(sim: Sim) -> None:
    v = sim.ffi.new("int *")
    sim.ok(sim.lib.cuDeviceGetAttribute(v, DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 0))
    assert v[0] == 1
    default = sim.default_pool()
    assert default == sim.default_pool()
    current = sim.ffi.new("CUmemoryPool *")
    sim.ok(sim.lib.cuDeviceGetMemPool(current, 0))
    assert current[0] == default
    # The default pool cannot be destroyed.
    assert sim.lib.cuMemPoolDestroy(default) == INVALID_VALUE
    assert sim.lib.cuDeviceGetDefaultMemPool(current, 7) == 101  # INVALID_DEVICE
    assert sim.lib.cuDeviceGetDefaultMemPool(sim.ffi.NULL, 0) == INVALID_VALUE


def test_set_mem_pool_redirects_alloc_async_and_destroy_restores_default(sim: Sim) -> None:
    s = sim.stream()
    pool = sim.new_pool()
    sim.ok(sim.lib.cuDeviceSetMemPool(0, pool))
    current = sim.ffi.new("CUmemoryPool *")
    sim.ok(sim.lib.cuDeviceGetMemPool(current, 0))
    assert current[0] == pool
    p = sim.alloc(4096, s)
    handle = sim.ffi.new("void **")
    sim.ok(sim.lib.cuPointerGetAttribute(handle, POINTER_ATTRIBUTE_MEMPOOL_HANDLE, p))
    assert int(sim.ffi.cast("uintptr_t", handle[0])) == int(sim.ffi.cast("uintptr_t", pool))
    assert sim.attr(pool, ATTR_USED_MEM_CURRENT) == 4096
    # Destroying a pool with an allocation outstanding succeeds; the current
    # pool falls back to the default, and the allocation can still be freed.
    sim.ok(sim.lib.cuMemPoolDestroy(pool))
    sim.ok(sim.lib.cuDeviceGetMemPool(current, 0))
    assert current[0] == sim.default_pool()
    assert (
        sim.lib.cuMemPoolGetAttribute(pool, ATTR_USED_MEM_CURRENT, sim.ffi.new("cuuint64_t *"))
        == INVALID_VALUE
    )
    sim.ok(sim.lib.cuMemFreeAsync(p, s))
    sim.ok(sim.lib.cuStreamSynchronize(s))
    sim.ok(sim.lib.cuStreamDestroy_v2(s))


def test_pool_props_are_validated(sim: Sim) -> None:
    props = sim.ffi.new("CUmemPoolProps *")
    out = sim.ffi.new("CUmemoryPool *")
    props.allocType = 0
    props.location.type = 1
    assert sim.lib.cuMemPoolCreate(out, props) == INVALID_VALUE
    props.allocType = 1
    props.location.id = 5
    assert sim.lib.cuMemPoolCreate(out, props) == INVALID_VALUE
    props.location.id = 0
    props.reserved[3] = 1
    assert sim.lib.cuMemPoolCreate(out, props) == INVALID_VALUE
    props.reserved[3] = 0
    props.handleTypes = 1  # POSIX file descriptor: no IPC in the sim
    assert sim.lib.cuMemPoolCreate(out, props) == NOT_SUPPORTED
    assert sim.lib.cuMemPoolCreate(out, sim.ffi.NULL) == INVALID_VALUE


def test_counters_threshold_and_trim(sim: Sim) -> None:
    s = sim.stream()
    pool = sim.new_pool()
    a = sim.alloc(1 << 20, s, pool)
    b = sim.alloc(1 << 20, s, pool)
    assert sim.attr(pool, ATTR_RESERVED_MEM_CURRENT) == 2 << 20
    assert sim.attr(pool, ATTR_USED_MEM_CURRENT) == 2 << 20
    # Keep up to 4 MiB after frees complete: memory stays reserved.
    assert sim.set_attr(pool, ATTR_RELEASE_THRESHOLD, 4 << 20) == SUCCESS
    assert sim.attr(pool, ATTR_RELEASE_THRESHOLD) == 4 << 20
    sim.ok(sim.lib.cuMemFreeAsync(a, s))
    sim.ok(sim.lib.cuMemFreeAsync(b, s))
    sim.ok(sim.lib.cuStreamSynchronize(s))
    assert sim.attr(pool, ATTR_USED_MEM_CURRENT) == 0
    assert sim.attr(pool, ATTR_USED_MEM_HIGH) == 2 << 20
    assert sim.attr(pool, ATTR_RESERVED_MEM_CURRENT) == 2 << 20
    # Trim keeps at least what was asked for.
    sim.ok(sim.lib.cuMemPoolTrimTo(pool, 1 << 20))
    assert sim.attr(pool, ATTR_RESERVED_MEM_CURRENT) == 1 << 20
    sim.ok(sim.lib.cuMemPoolTrimTo(pool, 0))
    assert sim.attr(pool, ATTR_RESERVED_MEM_CURRENT) == 0
    assert sim.attr(pool, ATTR_RESERVED_MEM_HIGH) == 2 << 20
    # High watermarks reset only to the current value; current is read-only.
    assert sim.set_attr(pool, ATTR_RESERVED_MEM_HIGH, 5) == INVALID_VALUE
    assert sim.set_attr(pool, ATTR_RESERVED_MEM_HIGH, 0) == SUCCESS
    assert sim.set_attr(pool, ATTR_USED_MEM_HIGH, 0) == SUCCESS
    assert sim.attr(pool, ATTR_RESERVED_MEM_HIGH) == 0
    assert sim.attr(pool, ATTR_USED_MEM_HIGH) == 0
    assert sim.set_attr(pool, ATTR_USED_MEM_CURRENT, 0) == INVALID_VALUE
    # With the default threshold (0), a completed free gives memory back.
    sim.ok(
        sim.lib.cuMemPoolSetAttribute(pool, ATTR_RELEASE_THRESHOLD, sim.ffi.new("cuuint64_t *", 0))
    )
    c = sim.alloc(1 << 20, s, pool)
    sim.ok(sim.lib.cuMemFreeAsync(c, s))
    sim.ok(sim.lib.cuStreamSynchronize(s))
    assert sim.attr(pool, ATTR_RESERVED_MEM_CURRENT) == 0
    flag = sim.ffi.new("int *")
    sim.ok(sim.lib.cuMemPoolGetAttribute(pool, ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES, flag))
    assert flag[0] == 1
    sim.ok(sim.lib.cuMemPoolDestroy(pool))
    sim.ok(sim.lib.cuStreamDestroy_v2(s))


def test_free_async_is_stream_ordered(sim: Sim) -> None:
    """A freed block is reused by the freeing stream at once, by others only once the free ran."""
    a, b = sim.stream(), sim.stream()
    pool = sim.new_pool()
    assert sim.set_attr(pool, ATTR_RELEASE_THRESHOLD, 1 << 30) == SUCCESS
    n = 64 * 1024
    gate = sim.hold(a)
    p = sim.alloc(n, a, pool)
    sim.ok(sim.lib.cuMemsetD8Async(p, 7, n, a))  # queued behind the gate
    sim.ok(sim.lib.cuMemFreeAsync(p, a))
    assert sim.attr(pool, ATTR_USED_MEM_CURRENT) == 0
    # Stream b must not get memory that stream a's queued memset still writes.
    q = sim.alloc(n, b, pool)
    assert q != p
    # Stream a itself may: its later work runs after its free.
    r = sim.alloc(n, a, pool)
    assert r == p
    assert sim.attr(pool, ATTR_RESERVED_MEM_CURRENT) == 2 * n
    sim.ok(sim.lib.cuMemFreeAsync(r, a))
    assert sim.lib.cuMemFreeAsync(r, a) == INVALID_VALUE  # double free
    assert sim.lib.cuStreamQuery(a) == 600  # NOT_READY: still held
    gate.set()
    sim.ok(sim.lib.cuStreamSynchronize(a))
    # Now the free has run: any stream may reuse the block.
    s2 = sim.alloc(n, b, pool)
    assert s2 == p
    out = np.zeros(n, dtype=np.uint8)
    sim.ok(sim.lib.cuMemsetD8Async(s2, 9, n, b))
    sim.ok(sim.lib.cuStreamSynchronize(b))
    sim.ok(sim.lib.cuMemcpyDtoH_v2(sim.ffi.cast("void *", out.ctypes.data), s2, n))
    assert (out == 9).all()
    for ptr in (q, s2):
        sim.ok(sim.lib.cuMemFreeAsync(ptr, b))
    sim.ok(sim.lib.cuStreamSynchronize(b))
    sim.ok(sim.lib.cuMemPoolDestroy(pool))
    for st in (a, b):
        sim.ok(sim.lib.cuStreamDestroy_v2(st))


def test_opportunistic_reuse_can_be_switched_off(sim: Sim) -> None:
    a, b = sim.stream(), sim.stream()
    pool = sim.new_pool()
    assert sim.set_attr(pool, ATTR_RELEASE_THRESHOLD, 1 << 30) == SUCCESS
    flag = sim.ffi.new("int *", 0)
    sim.ok(sim.lib.cuMemPoolSetAttribute(pool, ATTR_REUSE_ALLOW_OPPORTUNISTIC, flag))
    p = sim.alloc(4096, a, pool)
    sim.ok(sim.lib.cuMemFreeAsync(p, a))
    sim.ok(sim.lib.cuStreamSynchronize(a))
    q = sim.alloc(4096, b, pool)
    assert q != p
    sim.ok(sim.lib.cuMemFreeAsync(q, b))
    sim.ok(sim.lib.cuStreamSynchronize(b))
    sim.ok(sim.lib.cuMemPoolDestroy(pool))
    for st in (a, b):
        sim.ok(sim.lib.cuStreamDestroy_v2(st))


def test_max_size_and_device_memory(sim: Sim) -> None:
    s = sim.stream()
    pool = sim.new_pool(max_size=1 << 20)
    p = sim.alloc(1 << 20, s, pool)
    d = sim.ffi.new("CUdeviceptr *")
    assert sim.lib.cuMemAllocFromPoolAsync(d, 1, pool, s) == OUT_OF_MEMORY
    assert sim.lib.cuMemAllocFromPoolAsync(d, 0, pool, s) == INVALID_VALUE
    free_before, total = sim.ffi.new("size_t *"), sim.ffi.new("size_t *")
    sim.ok(sim.lib.cuMemGetInfo_v2(free_before, total))
    # Pool memory is device memory: cuMemFree returns it to the pool.
    sim.ok(sim.lib.cuMemFree_v2(p))
    assert sim.attr(pool, ATTR_USED_MEM_CURRENT) == 0
    free_after = sim.ffi.new("size_t *")
    sim.ok(sim.lib.cuMemGetInfo_v2(free_after, total))
    assert free_after[0] == free_before[0] + (1 << 20)  # threshold 0: released
    sim.ok(sim.lib.cuMemPoolDestroy(pool))
    assert sim.lib.cuMemPoolDestroy(pool) == INVALID_VALUE
    sim.ok(sim.lib.cuStreamDestroy_v2(s))


def test_free_async_of_plain_memory(sim: Sim) -> None:
    s = sim.stream()
    d = sim.ffi.new("CUdeviceptr *")
    sim.ok(sim.lib.cuMemAlloc_v2(d, 4096))
    gate = sim.hold(s)
    sim.ok(sim.lib.cuMemFreeAsync(d[0], s))
    assert sim.lib.cuMemFreeAsync(d[0], s) == INVALID_VALUE  # already being freed
    # Still allocated until the stream reaches the free.
    base = sim.ffi.new("CUdeviceptr *")
    size = sim.ffi.new("size_t *")
    sim.ok(sim.lib.cuPointerGetAttribute(size, 12, d[0]))  # RANGE_SIZE
    gate.set()
    sim.ok(sim.lib.cuStreamSynchronize(s))
    assert sim.lib.cuPointerGetAttribute(base, 11, d[0]) == INVALID_VALUE
    assert sim.lib.cuMemFreeAsync(12345, s) == INVALID_VALUE
    sim.ok(sim.lib.cuStreamDestroy_v2(s))


def test_alloc_async_during_capture_is_refused(sim: Sim) -> None:
    if not hasattr(sim.lib, "cuStreamBeginCapture_v2"):
        pytest.skip("capture is not declared for the backend")
    s = sim.stream()
    sim.ok(sim.lib.cuStreamBeginCapture_v2(s, 0))
    d = sim.ffi.new("CUdeviceptr *")
    assert sim.lib.cuMemAllocAsync(d, 256, s) == STREAM_CAPTURE_UNSUPPORTED
    g = sim.ffi.new("CUgraph *")
    assert sim.lib.cuStreamEndCapture(s, g) == 901  # invalidated
    sim.ok(sim.lib.cuStreamDestroy_v2(s))
