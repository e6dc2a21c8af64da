"""The mock against the software drivers: one behaviour table, the same checks on each.

A test that passes on the mock and fails on a GPU is the failure users fear
most (issue 32).  Each row runs one check on ``mock``, ``cuda-sim`` and
``levelzero-sim`` and records what happened: ``"ok"`` or the exception's
class name.  Every row must read the same on all three, or name in
:data:`REASONS` why one backend differs (docs/testing.md repeats them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pytest

import aruntime as ar

BACKENDS = ("mock", "cuda-sim", "levelzero-sim")
KIB = 1024


def _scale_kernel(gpu: ar.Backend) -> ar.Kernel:
    return gpu.kernel(gpu.builtin_module(), "scale_f32")


def _asarray(gpu: ar.Backend) -> None:
    with gpu.array_from_numpy(np.arange(4, dtype=np.float32)) as a:
        np.asarray(a)


def _from_dlpack(gpu: ar.Backend) -> None:
    with gpu.array_from_numpy(np.arange(4, dtype=np.float32)) as a:
        np.from_dlpack(a)


def _shared_mem(nbytes: int) -> Callable[[ar.Backend], None]:
    def check(gpu: ar.Backend) -> None:
        ptr = gpu.alloc(64)
        try:
            args = [np.uint32(16), np.float32(2), ptr]
            gpu.launch(_scale_kernel(gpu), 1, 16, args, shared_mem=nbytes).wait()
        finally:
            gpu.free(ptr)

    return check


def _block_of_1025(gpu: ar.Backend) -> None:
    ptr = gpu.alloc(64)
    try:
        gpu.launch(_scale_kernel(gpu), 1, (1025, 1, 1), [np.uint32(0), np.float32(2), ptr])
    finally:
        gpu.free(ptr)


def _past_the_shared_mem_limit(gpu: ar.Backend) -> None:
    _shared_mem(gpu.limits.max_launch_shared_mem + 1)(gpu)


def _live_allocations(count: int) -> Callable[[ar.Backend], None]:
    def check(gpu: ar.Backend) -> None:
        ptrs = []
        try:
            for _ in range(count):
                ptrs.append(gpu.alloc(256))
            assert len({int(p) for p in ptrs}) == count
        finally:
            for ptr in ptrs:
                gpu.free(ptr)

    return check


def _past_the_largest_allocation(gpu: ar.Backend) -> None:
    gpu.free(gpu.alloc(gpu.limits.max_allocation + 1))


def _allocations_256_aligned(gpu: ar.Backend) -> None:
    ptrs = [gpu.alloc(n) for n in (1, 3, 255, 257, 4097)]
    try:
        assert all(int(p) % 256 == 0 for p in ptrs), [hex(int(p)) for p in ptrs]
    finally:
        for p in ptrs:
            gpu.free(p)


def _f32_op_one_byte_off(gpu: ar.Backend) -> None:
    x, y = gpu.alloc(256), gpu.alloc(256)
    try:
        gpu.unary(x.offset(1), y, 16, "relu").wait()
    finally:
        gpu.free(x)
        gpu.free(y)


def _kernel_one_byte_off(gpu: ar.Backend) -> None:
    """A builtin kernel's f32 load at a pointer one byte off (cuda-sim's PTX,
    levelzero-sim's SPIR-V, the mock's checked views)."""
    ptr = gpu.alloc(64)
    try:
        gpu.launch(_scale_kernel(gpu), 1, 4, [np.uint32(4), np.float32(2), ptr.offset(1)]).wait()
    finally:
        _recover(gpu)
        gpu.free(ptr)


def _recover(gpu: ar.Backend) -> None:
    from aruntime.backends._sim_faults import recover_lost_sim

    if gpu.name == "mock":
        gpu.driver.clear_faults()  # type: ignore[attr-defined]
    else:
        recover_lost_sim(gpu.name)


def _freed_address_reused(gpu: ar.Backend) -> None:
    first = gpu.alloc(256)
    address = int(first)
    gpu.free(first)
    again = gpu.alloc(256)
    try:
        assert int(again) == address, f"0x{int(again):x} after freeing 0x{address:x}"
    finally:
        gpu.free(again)


def _raw_pointer_bytes(gpu: ar.Backend) -> None:
    ptr = gpu.alloc(64)
    try:
        gpu.copy_h2d(np.arange(16, dtype=np.float32), ptr)
        raw = int(ptr).to_bytes(8, "little")
        gpu.launch(_scale_kernel(gpu), 1, 16, [np.uint32(16), np.float32(2), raw]).wait()
        out = np.empty(16, np.float32)
        gpu.copy_d2h(ptr, out)
        np.testing.assert_array_equal(out, np.arange(16, dtype=np.float32) * 2)
    finally:
        gpu.free(ptr)


#: row -> (the check, what it gives on every backend, exceptions by backend).
TABLE: dict[str, tuple[Callable[[ar.Backend], None], str, dict[str, str]]] = {
    "implicit view: np.asarray(DeviceArray)": (_asarray, "TypeError", {}),
    "implicit view: np.from_dlpack(DeviceArray)": (_from_dlpack, "RuntimeError", {}),
    "limit: shared_mem 48 KiB": (
        _shared_mem(48 * KIB),
        "ok",
        {"levelzero-sim": "InvalidArgumentError"},
    ),
    "limit: shared_mem 48 KiB + 1, which opts the kernel in": (
        _shared_mem(48 * KIB + 1),
        "ok",
        {"levelzero-sim": "InvalidArgumentError"},
    ),
    "limit: shared_mem 160 KiB, inside both CUDA parts' opt-in": (
        _shared_mem(160 * KIB),
        "ok",
        {"levelzero-sim": "InvalidArgumentError"},
    ),
    "limit: a block of 1025 threads": (_block_of_1025, "InvalidArgumentError", {}),
    "limit: shared_mem one past the device's own": (
        _past_the_shared_mem_limit,
        "InvalidArgumentError",
        {},
    ),
    "limit: one byte past the largest allocation": (
        _past_the_largest_allocation,
        "InvalidArgumentError",
        {},
    ),
    "allocation count: 40,000 live 256-byte allocations": (_live_allocations(40_000), "ok", {}),
    "alignment: allocations on 256 bytes": (_allocations_256_aligned, "ok", {}),
    "alignment: an f32 op one byte off": (_f32_op_one_byte_off, "InvalidArgumentError", {}),
    "alignment: a kernel's f32 load one byte off": (_kernel_one_byte_off, "DeviceLostError", {}),
    "address reuse: a freed address comes back": (_freed_address_reused, "ok", {}),
    "raw argument bytes: 8 bytes are the address": (_raw_pointer_bytes, "ok", {}),
}

#: Why a backend's entry differs from a row's common outcome.
REASONS: dict[tuple[str, str], str] = {
    ("limit: shared_mem 48 KiB", "levelzero-sim"): (
        "Level Zero has no per-launch dynamic shared memory (its limits say 0 bytes): a "
        "kernel declares its local memory or takes a __local argument"
    ),
    ("limit: shared_mem 48 KiB + 1, which opts the kernel in", "levelzero-sim"): (
        "the same: no per-launch dynamic shared memory on Level Zero"
    ),
    ("limit: shared_mem 160 KiB, inside both CUDA parts' opt-in", "levelzero-sim"): (
        "the same: no per-launch dynamic shared memory on Level Zero"
    ),
}


@pytest.fixture(params=BACKENDS)
def gpu(request: pytest.FixtureRequest) -> Iterator[ar.Backend]:
    try:
        backend = ar.open_backend(str(request.param))
    except ar.BackendUnavailableError as exc:
        pytest.skip(f"{request.param} unavailable: {exc}")
    try:
        yield backend
        assert backend.live_alloc_count() == 0
    finally:
        backend.close()


def _outcome(check: Callable[[ar.Backend], None], gpu: ar.Backend) -> str:
    try:
        check(gpu)
    except Exception as exc:
        return type(exc).__name__
    return "ok"


@pytest.mark.parametrize("row", list(TABLE))
def test_row(gpu: ar.Backend, row: str) -> None:
    check, common, exceptions = TABLE[row]
    want = exceptions.get(gpu.name, common)
    assert _outcome(check, gpu) == want, f"{row} on {gpu.name}"


def test_every_difference_has_a_reason() -> None:
    for row, (_check, _common, exceptions) in TABLE.items():
        for backend in exceptions:
            assert backend in BACKENDS
            assert (row, backend) in REASONS, f"{row} on {backend} differs with no reason"
    for row, backend in REASONS:
        assert backend in TABLE[row][2], f"a reason for {row} on {backend}, which agrees"
