"""PTX that numba-cuda's runtime pieces and CUDA's half-precision headers
write: directives glued to their type (cuda_fp16's inline asm), WARP_SZ,
isspacep (NRT's allocator), set with 16-bit destinations, .relu, calls through
function addresses (NRT's destructors) and __assertfail.  Each kernel's
output is compared with a value computed here."""

from __future__ import annotations

from typing import Any

import numpy as np
from _cudasim_support import Cuda
from test_ptx_exec import load_ex
from test_ptx_numba_limits import Module, read

CUDA_ERROR_INVALID_PTX = 218
CUDA_ERROR_LAUNCH_FAILED = 719
P = "unsigned long long"
HEAD = ".version 8.5\n.target sm_80\n.address_size 64\n"

# k(out): out[tid] = some 32-bit value per lane, computed by BODY from %r0 = tid.
STORE = """
.visible .entry k(.param .u64 out)
{{
.reg .b32 %r<8>;
.reg .b64 %rd<8>;
.reg .pred %p<4>;
.reg .b16 %rs<8>;
mov.u32 %r0, %tid.x;
{body}
ld.param.u64 %rd0, [out];
cvta.to.global.u64 %rd0, %rd0;
mul.wide.u32 %rd1, %r0, 4;
add.s64 %rd1, %rd0, %rd1;
st.global.u32 [%rd1], %r1;
ret;
}}
"""


def run(cu: Cuda, text: str, n: int = 4) -> list[int]:
    module = Module(cu, text)
    out = cu.alloc(4 * n)
    cu.check(module.launch([(P, out)], block=n))
    return [int(v) for v in read(cu, out, np.zeros(n, np.uint32))]


def test_a_directive_glued_to_its_type_and_warp_sz(cu: Cuda) -> None:
    body = "{ .reg.f32 f;\n  cvt.rn.f32.u32 f, %r0;\n  cvt.rzi.u32.f32 %r1, f;\n}\n"
    body += "add.u32 %r1, %r1, WARP_SZ;\n"
    assert run(cu, STORE.format(body=body)) == [32, 33, 34, 35]


def test_isspacep_tells_each_window(cu: Cuda) -> None:
    text = ".global .align 4 .u32 g;\n.const .align 4 .u32 c;\n" + STORE.format(
        body="""
.local .align 4 .b8 depot[4];
.shared .align 4 .b8 sh[4];
mov.u64 %rd2, depot;
cvta.local.u64 %rd2, %rd2;
mov.u64 %rd3, sh;
cvta.shared.u64 %rd3, %rd3;
mov.u64 %rd4, g;
cvta.global.u64 %rd4, %rd4;
mov.u64 %rd5, c;
cvta.const.u64 %rd5, %rd5;
setp.eq.u32 %p0, %r0, 1;
selp.b64 %rd6, %rd3, %rd2, %p0;
setp.eq.u32 %p0, %r0, 2;
selp.b64 %rd6, %rd4, %rd6, %p0;
setp.eq.u32 %p0, %r0, 3;
selp.b64 %rd6, %rd5, %rd6, %p0;
isspacep.local %p0, %rd6;
selp.u32 %r1, 1, 0, %p0;
isspacep.shared %p0, %rd6;
selp.u32 %r2, 2, 0, %p0;
or.b32 %r1, %r1, %r2;
isspacep.global %p0, %rd6;
selp.u32 %r2, 4, 0, %p0;
or.b32 %r1, %r1, %r2;
isspacep.const %p0, %rd6;
selp.u32 %r2, 8, 0, %p0;
or.b32 %r1, %r1, %r2;
"""
    )
    # local, shared, global, and const (which lies in the global window).
    assert run(cu, text) == [1, 2, 4, 4 | 8]


def test_set_with_16_bit_destinations_and_relu(cu: Cuda) -> None:
    body = """
cvt.rn.f16.u32 %rs0, %r0;
mov.b16 %rs1, 0x4000;
set.le.f16.f16 %rs2, %rs0, %rs1;
set.gt.u16.f16 %rs3, %rs0, %rs1;
mov.b16 %rs4, 0xBC00;
fma.rn.relu.f16 %rs5, %rs0, %rs4, %rs1;
mov.b32 %r1, {%rs2, %rs3};
mov.b32 %r2, {%rs5, %rs5};
xor.b32 %r1, %r1, %r2;
"""
    # tid <= 2 as 1.0 (0x3c00); tid > 2 as 0xffff; relu(2 - tid) as f16, xored in.
    want = []
    for t in range(4):
        le = 0x3C00 if t <= 2 else 0
        gt = 0xFFFF if t > 2 else 0
        relu = int(np.float16(max(2.0 - t, 0.0)).view(np.uint16))
        want.append((le | gt << 16) ^ (relu | relu << 16))
    assert run(cu, STORE.format(body=body)) == want


def test_relu_on_a_float_type_is_refused(cu: Cuda) -> None:
    body = ".reg .f32 %f<2>;\nfma.rn.relu.f32 %f0, %f0, %f0, %f0;\nmov.b32 %r1, %f0;\n"
    rc, _mod, log = load_ex(cu, (HEAD + STORE.format(body=body)).encode())
    assert rc == CUDA_ERROR_INVALID_PTX and "modifier .relu" in log, log


# Two functions whose addresses a kernel keeps in a register and calls.
INDIRECT = """
.func (.param .b32 r) twice(.param .b32 x)
{
.reg .b32 %r<2>;
ld.param.u32 %r0, [x];
add.u32 %r1, %r0, %r0;
st.param.b32 [r], %r1;
ret;
}
.func (.param .b32 r) plus100(.param .b32 x)
{
.reg .b32 %r<2>;
ld.param.u32 %r0, [x];
add.u32 %r1, %r0, 100;
st.param.b32 [r], %r1;
ret;
}
"""


def indirect_call(target: str) -> str:
    return INDIRECT + STORE.format(
        body=f"""
mov.u64 %rd2, twice;
mov.u64 %rd3, plus100;
and.b32 %r2, %r0, 1;
setp.eq.u32 %p0, %r2, 1;
selp.b64 %rd4, %rd3, %rd2, %p0;
{target}
{{
.param .b32 param0;
st.param.b32 [param0], %r0;
.param .b32 retval0;
proto: .callprototype (.param .b32 _) _ (.param .b32 _);
call (retval0), %rd4, (param0), proto;
ld.param.b32 %r1, [retval0];
}}
"""
    )


def test_a_call_through_a_function_address_runs_each_lanes_callee(cu: Cuda) -> None:
    assert run(cu, indirect_call(""), n=6) == [0, 101, 4, 103, 8, 105]


def test_a_call_through_an_address_that_is_no_function_fails_the_launch(
    cu: Cuda, capfd: Any
) -> None:
    module = Module(cu, indirect_call("add.u64 %rd4, %rd4, 8;"))
    assert module.launch([(P, cu.alloc(16))], block=4) == CUDA_ERROR_LAUNCH_FAILED
    assert "which is no function of this module" in capfd.readouterr().err


CUDA_ERROR_ASSERT = 710
ASSERT = """
.extern .func __assertfail(.param .b64 m, .param .b64 f, .param .b32 l, .param .b64 fn,
                           .param .b64 cs);
.global .align 1 .b8 msg[6] = {120, 32, 62, 32, 48, 0};
.global .align 1 .b8 file[5] = {107, 46, 99, 117, 0};
.global .align 1 .b8 fn[2] = {107, 0};
"""


def test_a_failed_assert_fails_the_launch_and_says_where(cu: Cuda, capfd: Any) -> None:
    """CUDA_ERROR_ASSERT, sticky as on a GPU: the context is unusable afterwards."""
    body = """
setp.ne.u32 %p0, %r0, 2;
@%p0 bra DONE;
mov.u64 %rd2, msg;
cvta.global.u64 %rd2, %rd2;
mov.u64 %rd3, file;
cvta.global.u64 %rd3, %rd3;
mov.u64 %rd4, fn;
cvta.global.u64 %rd4, %rd4;
{
.param .b64 p0;
st.param.b64 [p0], %rd2;
.param .b64 p1;
st.param.b64 [p1], %rd3;
.param .b32 p2;
st.param.b32 [p2], 42;
.param .b64 p3;
st.param.b64 [p3], %rd4;
.param .b64 p4;
st.param.b64 [p4], 1;
call.uni __assertfail, (p0, p1, p2, p3, p4);
}
DONE:
mov.u32 %r1, 0;
"""
    module = Module(cu, ASSERT + STORE.format(body=body))
    assert module.launch([(P, cu.alloc(16))], block=4) == CUDA_ERROR_ASSERT
    err = capfd.readouterr().err
    assert "k.cu:42: k: block: [0,0,0], thread: [2,0,0] Assertion `x > 0` failed." in err
    assert cu.lib.cuCtxSynchronize() == CUDA_ERROR_ASSERT  # every later call, as on a GPU
