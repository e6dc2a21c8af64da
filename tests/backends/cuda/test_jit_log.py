"""A refused module's JIT log reaches the DriverError (issue 30).

``load_module`` loads through ``cuModuleLoadDataEx`` with the JIT's error
and info log buffers, and a failed load's message ends with the error log:
``ptx line N: ...`` on cuda-sim, ptxas's own words on a GPU.  The
``cuda`` run carries the ``gpu`` marker and skips where no device is visible.
"""

from __future__ import annotations

import pytest

import aruntime as ar
from aruntime import _exceptions as exc

HEAD = ".version 8.0\n.target sm_80\n.address_size 64\n"


def _kernel(body: str) -> str:
    """A kernel whose body starts on line 8 of the module."""
    return HEAD + (
        ".visible .entry k(.param .u64 p)\n{\n"
        "    .reg .b32 %r<4>;\n    .reg .b64 %rd<4>;\n"
        f"{body}\n    ret;\n}}\n"
    )


@pytest.fixture
def gpu(sim_or_gpu: ar.Backend) -> ar.Backend:
    return sim_or_gpu


def test_an_unknown_instruction_is_named_with_its_line(gpu: ar.Backend) -> None:
    bad = _kernel("    frobnicate.b32 %r1, %r2;")
    assert bad.splitlines()[7].strip().startswith("frobnicate")
    with pytest.raises(exc.DriverError, match="CUDA_ERROR_INVALID_PTX") as info:
        gpu.load_module("bad", bad)
    message = str(info.value)
    assert "cuModuleLoadDataEx" in message
    assert "JIT error log" in message
    assert "line 8" in message
    assert "frobnicate" in message


def test_a_bad_operand_is_named_with_its_line(gpu: ar.Backend) -> None:
    bad = _kernel("    ld.param.u64 %rd1, [p];\n    ld.global.b32 %r1, [%rd9];")
    with pytest.raises(exc.DriverError, match="CUDA_ERROR_INVALID_PTX") as info:
        gpu.load_module("bad", bad)
    assert "line 9" in str(info.value)
    assert "%rd9" in str(info.value)


def test_the_sim_names_the_construct(gpu: ar.Backend) -> None:
    """cuda-sim's log names what it refused; Hopper's L2 bulk prefetch with a cache hint,
    for one."""
    if gpu.name != "cuda-sim":
        pytest.skip("a GPU runs this instruction")
    bad = _kernel("    cp.async.bulk.prefetch.L2.global.L2::cache_hint [%rd1], 16, %rd1;")
    with pytest.raises(exc.DriverError) as info:
        gpu.load_module("bad", bad)
    want = "ptx line 8: unsupported instruction 'cp.async.bulk.prefetch.L2.global.L2::cache_hint'"
    assert want in str(info.value)


def test_a_good_module_still_loads(gpu: ar.Backend) -> None:
    module = gpu.load_module("good", _kernel("    mov.u32 %r1, 0x0;"))
    assert gpu.kernel(module, "k") is not None
