"""CUDA's shared-memory opt-in counts a kernel's static shared memory (issue 32).

A launch asking for more dynamic shared memory than a kernel gets by default
raises the kernel's ``MAX_DYNAMIC_SHARED_SIZE_BYTES`` first; the device's
opt-in limit covers static and dynamic shared memory together, so a launch
that fits only without the kernel's own is refused naming both.  (The
conformance suite's test_limits checks the opt-in on every backend; static
shared memory is declared in PTX, so this part is the CUDA backends'.)
"""

from __future__ import annotations

import numpy as np
import pytest

import aruntime as ar

pytestmark = pytest.mark.anyio

#: A kernel with 4 KiB of static shared memory that stores %dynamic_smem_size.
STATIC_SHARED_PTX = """\
.version 7.0
.target sm_80
.address_size 64
.shared .align 4 .b8 static_buf[4096];
.visible .entry static_shared(.param .u64 out)
{
    .reg .b32 %r<3>;
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, %dynamic_smem_size;
    st.shared.u32 [static_buf], %r1;
    ld.shared.u32 %r2, [static_buf];
    st.global.u32 [%rd2], %r2;
    ret;
}
"""


@pytest.fixture
def gpu(sim_or_gpu: ar.Backend) -> ar.Backend:
    return sim_or_gpu


async def test_the_opt_in_counts_a_kernel_s_static_shared_memory(gpu: ar.Backend) -> None:
    """A launch whose dynamic shared memory fits the opt-in limit only without the
    kernel's static shared memory is refused naming both, and the kernel still runs."""
    limits = gpu.limits
    module = gpu.load_module("static_shared", STATIC_SHARED_PTX)
    kern = gpu.kernel(module, "static_shared")
    ptr = gpu.alloc(4)
    try:
        with pytest.raises(ar.InvalidArgumentError) as caught:
            gpu.launch(kern, 1, 1, [ptr], shared_mem=limits.max_shared_mem_optin)
        text = str(caught.value)
        assert f"shared_mem {limits.max_shared_mem_optin} bytes" in text, text
        assert "'static_shared''s 4096 bytes of static shared memory" in text, text
        fits = limits.max_shared_mem_optin - 4096
        await gpu.launch(kern, 1, 1, [ptr], shared_mem=fits)
        out = np.zeros(1, np.uint32)
        await gpu.copy_d2h_async(ptr, out)
        assert out[0] == fits  # %dynamic_smem_size
    finally:
        gpu.free(ptr)
