"""Every backend states its device's limits, and the core holds launches and allocations to them.

``gpu.limits`` comes from the driver (CUDA's device attributes, Level Zero's
compute and device properties) or the mock's profile.  Up to a limit a call
runs; one past it is an InvalidArgumentError at the call, before any driver
sees it, whose message names the call, the value and the limit, and says how
the limit is lifted.
"""

from __future__ import annotations

import numpy as np
import pytest

import aruntime as ar
from aruntime._ops import launch_config

from ..helpers import sim_sanitizing

pytestmark = pytest.mark.anyio

N = 16


def _scale(gpu: ar.Backend) -> ar.Kernel:
    return gpu.kernel(gpu.builtin_module(), "scale_f32")


def _is_level_zero(gpu: ar.Backend) -> bool:
    return gpu.name.startswith("levelzero")


def test_the_limits_are_the_device_s_own(backend: ar.Backend) -> None:
    limits = backend.limits
    assert isinstance(limits, ar.DeviceLimits)
    assert 1 <= limits.max_block_threads <= np.prod(limits.max_block)
    assert all(n >= 1 for n in (*limits.max_block, *limits.max_grid))
    assert 0 <= limits.max_shared_mem <= limits.max_shared_mem_optin
    assert (
        limits.alloc_alignment >= 1 and limits.alloc_alignment & (limits.alloc_alignment - 1) == 0
    )
    assert limits.max_allocation >= 1 << 20
    assert limits.max_allocations is None  # memory alone bounds the count (the behaviour table)
    if _is_level_zero(backend):
        assert limits.max_shared_mem == 0  # no per-launch dynamic shared memory
        assert limits.max_shared_mem_optin > 0  # maxSharedLocalMemory
    elif backend.name.startswith("cuda"):
        assert limits.max_allocation == backend.total_memory()
    assert backend.limits is limits  # asked once, at open


async def test_a_block_up_to_the_limit_runs_and_one_past_it_is_refused(
    backend: ar.Backend,
) -> None:
    most = backend.limits.max_block_threads
    kern = _scale(backend)
    ptr = backend.alloc(N * 4)
    try:
        await backend.memset_async(ptr, 0, N * 4)
        await backend.launch(
            kern, 1, min(most, backend.limits.max_block[0]), [np.uint32(N), np.float32(2), ptr]
        )
        over = (most + 1, 1, 1) if most < backend.limits.max_block[0] else (most, 2, 1)
        with pytest.raises(ar.InvalidArgumentError) as caught:
            backend.launch(kern, 1, over, [np.uint32(N), np.float32(2), ptr])
        text = str(caught.value)
        assert text.startswith("launch: block of ") and f"limit of {most} threads" in text, text
    finally:
        backend.free(ptr)


def test_each_axis_is_held_to_the_device_s_limit(backend: ar.Backend) -> None:
    limits = backend.limits
    kern = _scale(backend)
    ptr = backend.alloc(N * 4)
    try:
        for what, most in (("grid", limits.max_grid), ("block", limits.max_block)):
            for axis in (1, 2):
                shape = [1, 1, 1]
                shape[axis] = most[axis] + 1
                kwargs = {"grid": 1, "block": 1, what: tuple(shape)}
                with pytest.raises(ar.InvalidArgumentError) as caught:
                    backend.launch(kern, args=[np.uint32(N), np.float32(2), ptr], **kwargs)
                text = str(caught.value)
                assert (
                    f"launch: {what}[{axis}] = {most[axis] + 1} is outside 1..{most[axis]}" in text
                )
    finally:
        backend.free(ptr)


def test_the_grid_limit_is_the_backend_s_not_cuda_s(backend: ar.Backend) -> None:
    """Level Zero's group count along x goes to 2**32 - 1, past CUDA's 2**31 - 1."""
    limits = backend.limits
    widest = limits.max_grid[0]
    assert launch_config((widest, 1, 1), 1, 0, limits).grid == (widest, 1, 1)
    assert launch_config(widest, 1, 0, limits).grid == (widest, 1, 1)
    with pytest.raises(ar.InvalidArgumentError, match=f"outside 1..{widest}"):
        launch_config(widest + 1, 1, 0, limits)
    if _is_level_zero(backend):
        assert widest > 2**31 - 1


async def test_shared_mem_up_to_the_limit_runs_and_one_past_it_is_refused(
    backend: ar.Backend,
) -> None:
    limits = backend.limits
    limit = limits.max_launch_shared_mem
    kern = _scale(backend)
    ptr = backend.alloc(N * 4)
    args = [np.uint32(N), np.float32(2), ptr]
    try:
        if limits.max_shared_mem:
            # the default, then past it (the opt-in), then the opt-in's whole limit
            for nbytes in (limits.max_shared_mem, limits.max_shared_mem + 1, limit):
                await backend.launch(kern, 1, N, args, shared_mem=nbytes)
            assert limit == limits.max_shared_mem_optin
        else:
            assert limit == 0
        with pytest.raises(ar.InvalidArgumentError) as caught:
            backend.launch(kern, 1, N, args, shared_mem=limit + 1)
        text = str(caught.value)
        assert f"launch: shared_mem {limit + 1} bytes" in text, text
        assert f"limit of {limit} bytes" in text, text
        if _is_level_zero(backend):
            assert "__local" in text and f"{limits.max_shared_mem_optin} bytes" in text, text
        elif limits.max_shared_mem_optin > limits.max_shared_mem:
            assert "MAX_DYNAMIC_SHARED_SIZE_BYTES" in text, text
            assert f"more than {limits.max_shared_mem} bytes" in text, text
    finally:
        backend.free(ptr)


@pytest.mark.parametrize("call", ["alloc", "alloc_arena", "alloc_async"])
def test_an_allocation_past_the_largest_is_refused_at_the_call(
    backend: ar.Backend, call: str
) -> None:
    limits = backend.limits
    n = limits.max_allocation + 1
    before = backend.live_alloc_count()
    with pytest.raises(ar.InvalidArgumentError) as caught:
        getattr(backend, call)(n)
    text = str(caught.value)
    assert text.startswith(f"{call}: {n} bytes exceeds the largest single allocation of "), text
    assert f"{limits.max_allocation} bytes" in text, text
    if _is_level_zero(backend):
        assert "maxMemAllocSize" in text, text
        assert "ze_relaxed_allocation_limits_exp_desc_t" in text, text
    assert backend.live_alloc_count() == before


def test_allocations_start_on_the_stated_alignment(backend: ar.Backend) -> None:
    if sim_sanitizing(backend):
        pytest.skip("the sims' sanitizer ends each allocation at its guard page, unaligned")
    align = backend.limits.alloc_alignment
    ptrs = [backend.alloc(n) for n in (1, 3, align - 1, align + 1, 3 * align + 5)]
    try:
        assert all(int(p) % align == 0 for p in ptrs), [hex(int(p)) for p in ptrs]
    finally:
        for p in ptrs:
            backend.free(p)


def test_a_level_zero_shared_allocation_past_the_limit_names_it(backend: ar.Backend) -> None:
    """Managed memory is left to the driver (CUDA may oversubscribe it); Level Zero's
    refusal still names maxMemAllocSize and the descriptor that lifts it."""
    if not _is_level_zero(backend):
        pytest.skip("a CUDA device may oversubscribe managed memory")
    with pytest.raises(ar.NotSupportedError) as caught:
        backend.alloc_managed(backend.limits.max_allocation + 1)
    text = str(caught.value)
    assert "zeMemAllocShared" in text and "maxMemAllocSize" in text, text
    assert "ze_relaxed_allocation_limits_exp_desc_t" in text, text


#: What each software driver states (ffi/cuda/sim/cusim_core.c's device
#: attributes, ffi/levelzero/sim/lz_driver.c's compute properties): the
#: limits must be read from the right attribute or field, in the right order.
SIM_LIMITS = {
    "cuda-sim": (1024, (1024, 1024, 64), (2**31 - 1, 65535, 65535), 48 * 1024, 163 * 1024),
    "levelzero-sim": (1024, (1024, 1024, 64), (2**32 - 1, 65535, 65535), 0, 64 * 1024),
    "mock": (1024, (1024, 1024, 64), (2**31 - 1, 65535, 65535), 48 * 1024, 227 * 1024),
}


@pytest.mark.parametrize("name", list(SIM_LIMITS))
def test_each_software_driver_s_limits_are_read_from_the_right_place(name: str) -> None:
    try:
        gpu = ar.open_backend(name)
    except ar.BackendUnavailableError as exc:
        pytest.skip(f"{name} unavailable: {exc}")
    with gpu:
        got = gpu.limits
        threads, block, grid, shared, optin = SIM_LIMITS[name]
        assert (got.max_block_threads, got.max_block, got.max_grid) == (threads, block, grid)
        assert (got.max_shared_mem, got.max_shared_mem_optin) == (shared, optin)
        assert got.alloc_alignment == 256
        if name == "mock":
            assert got.max_allocation == 80 << 30  # the H100 profile's
        else:  # cuDeviceTotalMem on cuda-sim; maxMemAllocSize, the same there, on levelzero-sim
            assert got.max_allocation == gpu.total_memory()
