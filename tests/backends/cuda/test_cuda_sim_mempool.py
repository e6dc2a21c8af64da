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


def test_alloc_async_during_capture_becomes_graph_memory(sim: Sim) -> None:
    if not hasattr(sim.lib, "cuStreamBeginCapture_v2"):
        pytest.skip("capture is not declared for the backend")
    s = sim.stream()
    sim.ok(sim.lib.cuStreamBeginCapture_v2(s, 0))
    d = sim.ffi.new("CUdeviceptr *")
    # A graph memory alloc node: the address is fixed now, the memory is the graph's.
    sim.ok(sim.lib.cuMemAllocAsync(d, 256, s))
    sim.ok(sim.lib.cuMemsetD8Async(d[0], 7, 256, s))
    sim.ok(sim.lib.cuMemFreeAsync(d[0], s))
    g = sim.ffi.new("CUgraph *")
    sim.ok(sim.lib.cuStreamEndCapture(s, g))
    exe = sim.ffi.new("CUgraphExec *")
    sim.ok(sim.lib.cuGraphInstantiateWithFlags(exe, g[0], 0))
    for _ in range(2):  # freed inside the graph: it launches again
        sim.ok(sim.lib.cuGraphLaunch(exe[0], s))
    sim.ok(sim.lib.cuStreamSynchronize(s))
    sim.ok(sim.lib.cuGraphExecDestroy(exe[0]))
    sim.ok(sim.lib.cuGraphDestroy(g[0]))
    sim.ok(sim.lib.cuStreamDestroy_v2(s))


POINTER_ATTRIBUTE_RANGE_START = 11
POINTER_ATTRIBUTE_RANGE_SIZE = 12
KiB, MiB = 1 << 10, 1 << 20


def _range(sim: Sim, ptr: int) -> tuple[int, int]:
    """(start, size) of the allocation holding ``ptr``, as the driver's bounds checks see it."""
    start, size = sim.ffi.new("CUdeviceptr *"), sim.ffi.new("size_t *")
    sim.ok(sim.lib.cuPointerGetAttribute(start, POINTER_ATTRIBUTE_RANGE_START, ptr))
    sim.ok(sim.lib.cuPointerGetAttribute(size, POINTER_ATTRIBUTE_RANGE_SIZE, ptr))
    return int(start[0]), int(size[0])


def _keeping_pool(sim: Sim) -> Any:
    pool = sim.new_pool()
    assert sim.set_attr(pool, ATTR_RELEASE_THRESHOLD, 1 << 40) == SUCCESS
    return pool


def test_a_freed_block_serves_smaller_requests_best_fit_first(sim: Sim) -> None:
    s = sim.stream()
    pool = _keeping_pool(sim)
    small, mid, big = (sim.alloc(n, s, pool) for n in (256 * KiB, 512 * KiB, 3 * MiB))
    for ptr in (small, mid, big):
        sim.ok(sim.lib.cuMemFreeAsync(ptr, s))
    sim.ok(sim.lib.cuStreamSynchronize(s))
    reserved = sim.attr(pool, ATTR_RESERVED_MEM_CURRENT)
    assert reserved == 256 * KiB + 512 * KiB + 3 * MiB
    # 300 KiB: the 512 KiB block is the smallest that fits.
    a = sim.alloc(300 * KiB, s, pool)
    assert a == mid
    # Bounds checks see the request, not the block: a byte past it is refused.
    assert _range(sim, a) == (a, 300 * KiB)
    sim.ok(sim.lib.cuMemsetD8Async(a, 1, 300 * KiB, s))
    assert sim.lib.cuMemsetD8Async(a, 1, 300 * KiB + 1, s) == INVALID_VALUE
    # The counters count blocks: what is reserved, and what is in use.
    assert sim.attr(pool, ATTR_USED_MEM_CURRENT) == 512 * KiB
    # 2 MiB leaves 1 MiB of the 3 MiB block unused: within max(2 MiB, 1 MiB).
    b = sim.alloc(2 * MiB, s, pool)
    assert b == big and _range(sim, b) == (b, 2 * MiB)
    # 1 KiB takes the 256 KiB block; 100 KiB then finds none left: a new block.
    c = sim.alloc(KiB, s, pool)
    assert c == small and _range(sim, c) == (c, KiB)
    d = sim.alloc(100 * KiB, s, pool)
    assert d not in (small, mid, big)
    assert sim.attr(pool, ATTR_RESERVED_MEM_CURRENT) == reserved + 100 * KiB
    for ptr in (a, b, c, d):
        sim.ok(sim.lib.cuMemFreeAsync(ptr, s))
    sim.ok(sim.lib.cuStreamSynchronize(s))
    # A block reused for a larger request again (up to its size) fits it again.
    e = sim.alloc(512 * KiB, s, pool)
    assert e == mid and _range(sim, e) == (e, 512 * KiB)
    sim.ok(sim.lib.cuMemsetD8Async(e, 2, 512 * KiB, s))
    sim.ok(sim.lib.cuMemFreeAsync(e, s))
    # Too much to spare: an 8 MiB block is not handed out for 2 MiB.
    f = sim.alloc(8 * MiB, s, pool)
    sim.ok(sim.lib.cuMemFreeAsync(f, s))
    sim.ok(sim.lib.cuStreamSynchronize(s))
    g = sim.alloc(2 * MiB, s, pool)
    assert g == big
    h = sim.alloc(2 * MiB, s, pool)
    assert h != f
    for ptr in (g, h):
        sim.ok(sim.lib.cuMemFreeAsync(ptr, s))
    sim.ok(sim.lib.cuStreamSynchronize(s))
    sim.ok(sim.lib.cuMemPoolDestroy(pool))
    sim.ok(sim.lib.cuStreamDestroy_v2(s))


@pytest.mark.parametrize("held", [False, True], ids=["running", "held"])
def test_varying_sizes_keep_reserved_memory_bounded(sim: Sim, held: bool) -> None:
    """1,000 alloc/free pairs of random sizes in [1 KiB, 1 MiB] on one stream.

    Held: the stream never reaches a free, so only the freeing stream's own
    reuse (in stream order) is at work; running: frees execute meanwhile.
    """
    s = sim.stream()
    pool = _keeping_pool(sim)
    gate = sim.hold(s) if held else None
    rng = np.random.default_rng(1234)
    sizes = [int(n) for n in rng.integers(KiB, MiB, size=1000, endpoint=True)]
    for n in sizes:
        p = sim.alloc(n, s, pool)
        # Exactly n once the stream reaches the previous free (tested below).
        assert _range(sim, p)[1] >= n
        sim.ok(sim.lib.cuMemFreeAsync(p, s))
    # A pool reusing blocks for equal sizes only would hold one per size
    # (~500 MiB); here a new block is needed only for a request larger than
    # every block so far, a handful of times.
    high = sim.attr(pool, ATTR_RESERVED_MEM_HIGH)
    assert max(sizes) <= high <= 16 * MiB, high
    if gate is not None:
        gate.set()
    sim.ok(sim.lib.cuStreamSynchronize(s))
    assert sim.attr(pool, ATTR_USED_MEM_CURRENT) == 0
    # Trim gives every idle block back.
    free_before, total = sim.ffi.new("size_t *"), sim.ffi.new("size_t *")
    sim.ok(sim.lib.cuMemGetInfo_v2(free_before, total))
    reserved = sim.attr(pool, ATTR_RESERVED_MEM_CURRENT)
    sim.ok(sim.lib.cuMemPoolTrimTo(pool, 0))
    assert sim.attr(pool, ATTR_RESERVED_MEM_CURRENT) == 0
    free_after = sim.ffi.new("size_t *")
    sim.ok(sim.lib.cuMemGetInfo_v2(free_after, total))
    assert free_after[0] == free_before[0] + reserved
    sim.ok(sim.lib.cuMemPoolDestroy(pool))
    sim.ok(sim.lib.cuStreamDestroy_v2(s))


def test_no_block_is_handed_out_twice_while_in_use(sim: Sim) -> None:
    """Random allocations and frees on three streams, one held: live ranges never overlap."""
    streams = [sim.stream() for _ in range(3)]
    pool = _keeping_pool(sim)
    gate = sim.hold(streams[0])
    rng = np.random.default_rng(99)
    live: dict[int, tuple[int, int, int]] = {}  # ptr -> (size, stream index, fill)
    for step in range(600):
        if live and (len(live) > 12 or rng.random() < 0.45):
            ptr = list(live)[int(rng.integers(len(live)))]
            _, si, _ = live.pop(ptr)
            sim.ok(sim.lib.cuMemFreeAsync(ptr, streams[si]))  # after its memset
            continue
        n = int(rng.integers(KiB, MiB, endpoint=True))
        si = int(rng.integers(3))
        ptr = sim.alloc(n, streams[si], pool)
        start, size = _range(sim, ptr)
        assert start == ptr and size >= n  # n once the stream reaches an earlier free
        for other, (m, _, _) in live.items():
            assert ptr + n <= other or other + m <= ptr, f"step {step}: overlap"
        fill = step % 251
        live[ptr] = (n, si, fill)
        sim.ok(sim.lib.cuMemsetD8Async(ptr, fill, n, streams[si]))
    gate.set()
    for st in streams:
        sim.ok(sim.lib.cuStreamSynchronize(st))
    # Every live allocation still holds what its own stream wrote.
    for ptr, (n, _, fill) in live.items():
        out = np.empty(n, np.uint8)
        sim.ok(sim.lib.cuMemcpyDtoH_v2(sim.ffi.cast("void *", out.ctypes.data), ptr, n))
        assert (out == fill).all()
        sim.ok(sim.lib.cuMemFreeAsync(ptr, streams[0]))
    sim.ok(sim.lib.cuStreamSynchronize(streams[0]))
    sim.ok(sim.lib.cuMemPoolDestroy(pool))
    for st in streams:
        sim.ok(sim.lib.cuStreamDestroy_v2(st))


def test_a_smaller_fit_waits_for_the_work_before_the_free(sim: Sim) -> None:
    """The freeing stream reuses a block for less at once; the bounds shrink in stream order."""
    a, b = sim.stream(), sim.stream()
    pool = _keeping_pool(sim)
    gate = sim.hold(a)
    p = sim.alloc(MiB, a, pool)
    sim.ok(sim.lib.cuMemsetD8Async(p, 7, MiB, a))  # queued behind the gate: all of it
    sim.ok(sim.lib.cuMemFreeAsync(p, a))
    q = sim.alloc(64 * KiB, a, pool)
    assert q == p
    # Another stream gets no part of it meanwhile, of any size.
    r = sim.alloc(64 * KiB, b, pool)
    assert r != p
    # Until the stream reaches the free, the queued memset's bytes stay valid.
    assert _range(sim, q) == (p, MiB)
    gate.set()
    sim.ok(sim.lib.cuStreamSynchronize(a))
    assert _range(sim, q) == (q, 64 * KiB)
    assert sim.lib.cuMemsetD8Async(q, 1, 64 * KiB + 1, a) == INVALID_VALUE
    out = np.empty(64 * KiB, np.uint8)
    sim.ok(sim.lib.cuMemcpyDtoH_v2(sim.ffi.cast("void *", out.ctypes.data), q, out.size))
    assert (out == 7).all()
    # Growing back within the block happens at once, even behind a held free.
    gate = sim.hold(a)
    sim.ok(sim.lib.cuMemFreeAsync(q, a))
    t = sim.alloc(MiB, a, pool)
    assert t == p and _range(sim, t) == (p, MiB)
    gate.set()
    for ptr, st in ((t, a), (r, b)):
        sim.ok(sim.lib.cuMemFreeAsync(ptr, st))
        sim.ok(sim.lib.cuStreamSynchronize(st))
    sim.ok(sim.lib.cuMemPoolDestroy(pool))
    for st in (a, b):
        sim.ok(sim.lib.cuStreamDestroy_v2(st))


def test_an_earlier_deferred_fit_never_shrinks_a_later_allocation(sim: Sim) -> None:
    """Freed, taken for less, freed, taken for a little more: the first free's
    deferred fit runs while the second allocation holds the block, and must
    leave its request valid for what the host enqueues meanwhile."""
    s = sim.stream()
    pool = _keeping_pool(sim)
    p1 = sim.alloc(MiB, s, pool)
    first = sim.hold(s)
    sim.ok(sim.lib.cuMemFreeAsync(p1, s))
    p2 = sim.alloc(256 * KiB, s, pool)  # the same block; its fit waits for that free
    assert p2 == p1
    reached, second = threading.Event(), threading.Event()

    @sim.ffi.callback("void(void *)")
    def hold_after_first_free(_user: Any) -> None:
        reached.set()
        second.wait()

    sim.keep.append(hold_after_first_free)
    sim.gates.append(second)
    sim.ok(sim.lib.cuLaunchHostFunc(s, hold_after_first_free, sim.ffi.NULL))
    sim.ok(sim.lib.cuMemFreeAsync(p2, s))
    p3 = sim.alloc(512 * KiB, s, pool)  # the same block again, its fit deferred too
    assert p3 == p1
    first.set()
    assert reached.wait(30)  # the first free has run; the second has not
    assert _range(sim, p3)[1] >= 512 * KiB
    sim.ok(sim.lib.cuMemsetD8Async(p3, 7, 512 * KiB, s))
    second.set()
    sim.ok(sim.lib.cuStreamSynchronize(s))
    assert _range(sim, p3) == (p3, 512 * KiB)  # exactly the request once its free ran
    sim.ok(sim.lib.cuMemFreeAsync(p3, s))
    sim.ok(sim.lib.cuStreamSynchronize(s))
    sim.ok(sim.lib.cuMemPoolDestroy(pool))
    sim.ok(sim.lib.cuStreamDestroy_v2(s))
