"""cuda-sim's context limits and profiler switches, beside the printf FIFO's
size (tested with printf in test_ptx_printf.py)."""

from __future__ import annotations

from _cudasim_support import CUDA_ERROR_INVALID_CONTEXT, CUDA_SUCCESS, Cuda, ffi, load_sim

CU_LIMIT_STACK_SIZE, CU_LIMIT_PRINTF_FIFO_SIZE, CU_LIMIT_MALLOC_HEAP_SIZE, CU_LIMIT_MAX = (
    0,
    1,
    2,
    10,
)
CUDA_ERROR_INVALID_VALUE = 1
CUDA_ERROR_UNSUPPORTED_LIMIT = 215


def test_limits_the_sim_does_not_have_are_unsupported(cu: Cuda) -> None:
    size = ffi.new("size_t *")
    for limit in (CU_LIMIT_STACK_SIZE, CU_LIMIT_MALLOC_HEAP_SIZE):
        assert cu.lib.cuCtxGetLimit(size, limit) == CUDA_ERROR_UNSUPPORTED_LIMIT
        assert cu.lib.cuCtxSetLimit(limit, 4096) == CUDA_ERROR_UNSUPPORTED_LIMIT
    assert cu.lib.cuCtxGetLimit(size, CU_LIMIT_MAX) == CUDA_ERROR_INVALID_VALUE
    assert cu.lib.cuCtxGetLimit(ffi.NULL, CU_LIMIT_PRINTF_FIFO_SIZE) == CUDA_ERROR_INVALID_VALUE


def test_a_limit_belongs_to_its_context(cu: Cuda) -> None:
    size = ffi.new("size_t *")
    cu.check(cu.lib.cuCtxSetLimit(CU_LIMIT_PRINTF_FIFO_SIZE, 4096))
    other = ffi.new("CUcontext *")
    cu.check(cu.lib.cuCtxCreate_v2(other, 0, 0))
    cu.check(cu.lib.cuCtxGetLimit(size, CU_LIMIT_PRINTF_FIFO_SIZE))
    assert size[0] == 1 << 20  # the new context has the default
    cu.check(cu.lib.cuCtxDestroy_v2(other[0]))
    cu.check(cu.lib.cuCtxSetCurrent(cu.ctx[0]))
    cu.check(cu.lib.cuCtxGetLimit(size, CU_LIMIT_PRINTF_FIFO_SIZE))
    assert size[0] == 4096


def test_without_a_context_the_limit_calls_say_so() -> None:
    lib = load_sim()
    lib.cuCtxSetCurrent(ffi.NULL)
    size = ffi.new("size_t *")
    assert lib.cuCtxGetLimit(size, CU_LIMIT_PRINTF_FIFO_SIZE) == CUDA_ERROR_INVALID_CONTEXT


def test_the_profiler_switches_succeed_and_do_nothing(cu: Cuda) -> None:
    # No profiler is attached to the sim; NVIDIA's driver then answers success.
    assert cu.lib.cuProfilerStart() == CUDA_SUCCESS
    assert cu.lib.cuProfilerStop() == CUDA_SUCCESS
    assert cu.lib.cuProfilerStop() == CUDA_SUCCESS
