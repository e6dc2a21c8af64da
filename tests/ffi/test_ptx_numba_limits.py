"""The PTX that numba-cuda writes, beyond the sizes nvcc's examples reach.

numba passes every array as several scalars (meminfo, parent, sizes, data,
shape, strides), so its kernels and device functions take dozens of
parameters; it declares registers in nested blocks; and its kernels call
``vprintf`` and use ``bar.red``.  Each test runs a hand-written PTX kernel on
cuda-sim and compares its output with a value computed here.
"""

from __future__ import annotations

from typing import Any

import cffi
import numpy as np
from _cudasim_support import CUDA_SUCCESS, Cuda, ffi, sim_library_path
from test_ptx_exec import load_ex

HEAD = ".version 8.5\n.target sm_80\n.address_size 64\n"


class Module:
    """One PTX text loaded on the sim, launched with (C type, value) arguments."""

    def __init__(self, cu: Cuda, text: str) -> None:
        self.cu = cu
        rc, self.mod, log = load_ex(cu, (HEAD + text).encode())
        assert rc == CUDA_SUCCESS, log

    def function(self, name: str = "k") -> Any:
        fn = ffi.new("CUfunction *")
        self.cu.check(self.cu.lib.cuModuleGetFunction(fn, self.mod, name.encode()))
        return fn[0]

    def launch(
        self,
        args: list[tuple[str, Any]],
        grid: int = 1,
        block: int = 1,
        name: str = "k",
    ) -> int:
        keep = [ffi.new(f"{ctype} *", value) for ctype, value in args]
        argv = ffi.new("void *[]", [ffi.cast("void *", k) for k in keep])
        fn = self.function(name)
        rc = self.cu.lib.cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, ffi.NULL, argv, ffi.NULL)
        if rc == CUDA_SUCCESS:
            rc = self.cu.lib.cuCtxSynchronize()
        return int(rc)


def read(cu: Cuda, ptr: int, like: np.ndarray) -> np.ndarray:
    out = np.empty_like(like)
    cu.check(cu.lib.cuMemcpyDtoH_v2(ffi.cast("void *", out.ctypes.data), ptr, out.nbytes))
    return out


def write(cu: Cuda, a: np.ndarray) -> int:
    ptr = cu.alloc(max(a.nbytes, 1))
    cu.check(cu.lib.cuMemcpyHtoD_v2(ptr, ffi.cast("void *", a.ctypes.data), a.nbytes))
    return ptr


def test_a_kernel_of_200_parameters_sees_each_one(cu: Cuda) -> None:
    n = 200
    params = ", ".join(f".param .u32 a{i}" for i in range(n))
    body = "".join(
        f"ld.param.u32 %r1, [a{i}];\nmad.lo.u32 %r0, %r1, {i + 1}, %r0;\n" for i in range(n)
    )
    text = (
        f".visible .entry k(.param .u64 out, {params})\n{{\n"
        ".reg .b32 %r<2>;\n.reg .b64 %rd<2>;\nmov.u32 %r0, 0;\n"
        f"{body}ld.param.u64 %rd0, [out];\ncvta.to.global.u64 %rd0, %rd0;\n"
        "st.global.u32 [%rd0], %r0;\nret;\n}\n"
    )
    module = Module(cu, text)
    values = [(7919 * i + 13) % 1000 for i in range(n)]
    out = cu.alloc(4)
    args = [("unsigned long long", out)] + [("unsigned int", v) for v in values]
    cu.check(module.launch(args))
    expect = sum((i + 1) * v for i, v in enumerate(values)) % (1 << 32)
    assert int(read(cu, out, np.zeros(1, np.uint32))[0]) == expect

    offset, size = ffi.new("size_t *"), ffi.new("size_t *")
    cu.check(cu.lib.cuFuncGetParamInfo(module.function(), n, offset, size))
    assert (offset[0], size[0]) == (8 + 4 * (n - 1), 4)


def test_a_call_of_40_arguments_passes_each_one(cu: Cuda) -> None:
    n = 40
    formals = ", ".join(f".param .b32 f{i}" for i in range(n))
    sum_body = "".join(
        f"ld.param.b32 %r1, [f{i}];\nmad.lo.u32 %r0, %r1, {3 * i + 1}, %r0;\n" for i in range(n)
    )
    decls = "".join(f".param .b32 p{i};\n" for i in range(n))
    stores = "".join(f"add.u32 %r1, %r0, {i * i};\nst.param.b32 [p{i}], %r1;\n" for i in range(n))
    args = ", ".join(f"p{i}" for i in range(n))
    text = (
        f".func (.param .b32 ret, .param .b32 twice) weighted({formals})\n{{\n"
        ".reg .b32 %r<2>;\nmov.u32 %r0, 0;\n"
        f"{sum_body}st.param.b32 [ret], %r0;\nshl.b32 %r0, %r0, 1;\n"
        "st.param.b32 [twice], %r0;\nret;\n}\n"
        ".visible .entry k(.param .u64 out)\n{\n.reg .b32 %r<4>;\n.reg .b64 %rd<2>;\n"
        "mov.u32 %r0, %tid.x;\n{\n"
        f"{decls}.param .b32 r0;\n.param .b32 r1;\n{stores}"
        f"call.uni (r0, r1), weighted, ({args});\n"
        "ld.param.b32 %r2, [r0];\nld.param.b32 %r3, [r1];\n}\n"
        "ld.param.u64 %rd0, [out];\ncvta.to.global.u64 %rd0, %rd0;\n"
        "mul.wide.u32 %rd1, %r0, 8;\nadd.s64 %rd0, %rd0, %rd1;\n"
        "st.global.v2.u32 [%rd0], {%r2, %r3};\nret;\n}\n"
    )
    module = Module(cu, text)
    block = 8
    out = cu.alloc(8 * block)
    cu.check(module.launch([("unsigned long long", out)], block=block))
    got = read(cu, out, np.zeros((block, 2), np.uint32))
    for t in range(block):
        weighted = sum((3 * i + 1) * (t + i * i) for i in range(n)) % (1 << 32)
        assert list(got[t]) == [weighted, (2 * weighted) % (1 << 32)]


# The calls below are not in the shared cffi view; this file declares its own.
_ffi = cffi.FFI()
_ffi.cdef(
    """
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUlib_st *CUlibrary;
int cuFuncGetAttribute(int *, int, CUfunction);
int cuModuleGetGlobal_v2(unsigned long long *, size_t *, CUmodule, const char *);
int cuLibraryLoadData(CUlibrary *, const void *, int *, void **, unsigned, int *, void **,
                      unsigned);
int cuLibraryGetGlobal(unsigned long long *, size_t *, CUlibrary, const char *);
int cuLibraryUnload(CUlibrary);
int cuMemsetD8_v2(unsigned long long, unsigned char, size_t);
int cuMemFree_v2(unsigned long long);
"""
)
# CUfunction_attribute
MAX_THREADS, SHARED_SIZE, CONST_SIZE, LOCAL_SIZE = 0, 1, 2, 3
CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_NOT_FOUND = 1, 500


def _lib() -> Any:
    return _ffi.dlopen(str(sim_library_path()))


def attribute(module: Module, attrib: int, name: str = "k") -> int:
    out = _ffi.new("int *")
    fn = _ffi.cast("CUfunction", int(ffi.cast("uintptr_t", module.function(name))))
    assert _lib().cuFuncGetAttribute(out, attrib, fn) == CUDA_SUCCESS
    return int(out[0])


SIZES = """
.const .align 8 .b8 table[80] = {1, 2, 3};
.global .align 4 .u32 counter = 5;
.shared .align 4 .b8 tile[400];
.shared .align 4 .b8 edge[40];
.func (.param .b32 r) helper(.param .b32 x)
{
.local .align 8 .b8 scratch[3000];
.reg .b32 %r<2>;
ld.param.b32 %r0, [x];
st.param.b32 [r], %r0;
ret;
}
.visible .entry k(.param .u64 out)
.maxntid 128, 2, 1
{
.local .align 16 .b8 depot[1000];
.reg .b32 %r<2>;
{
.param .b32 a0;
.param .b32 r0;
st.param.b32 [a0], 1;
call.uni (r0), helper, (a0);
}
ret;
}
.visible .entry plain()
{
ret;
}
"""


def test_function_attributes_are_the_sizes_the_ptx_declares(cu: Cuda) -> None:
    module = Module(cu, SIZES)
    # What the variables take, not rounded up (numba checks 10 floats are 40).
    assert attribute(module, SHARED_SIZE) == 440
    assert attribute(module, CONST_SIZE) == 80
    # The kernel's depot plus its callee's, each started on a 16-byte boundary.
    assert attribute(module, LOCAL_SIZE) == 1008 + 3008
    assert attribute(module, MAX_THREADS) == 256
    assert attribute(module, MAX_THREADS, "plain") == 1024
    assert attribute(module, LOCAL_SIZE, "plain") == 0


def test_a_block_over_maxntid_does_not_launch(cu: Cuda) -> None:
    module = Module(cu, SIZES)
    out = cu.alloc(8)
    arg = [("unsigned long long", out)]
    fn = module.function()
    keep = ffi.new("unsigned long long *", out)
    argv = ffi.new("void *[]", [ffi.cast("void *", keep)])
    for block, rc in (((128, 2, 1), CUDA_SUCCESS), ((256, 1, 1), CUDA_SUCCESS), ((257, 1, 1), 1)):
        got = cu.lib.cuLaunchKernel(fn, 1, 1, 1, *block, 0, ffi.NULL, argv, ffi.NULL)
        assert got == rc, block
    cu.check(cu.lib.cuCtxSynchronize())
    assert module.launch(arg, block=64) == CUDA_SUCCESS


def test_a_block_other_than_reqntid_does_not_launch(cu: Cuda) -> None:
    module = Module(cu, ".visible .entry k()\n.reqntid 32, 2\n{\nret;\n}\n")
    fn = module.function()
    assert cu.lib.cuLaunchKernel(fn, 1, 1, 1, 64, 1, 1, 0, ffi.NULL, ffi.NULL, ffi.NULL) == 1
    assert cu.lib.cuLaunchKernel(fn, 1, 1, 1, 32, 2, 1, 0, ffi.NULL, ffi.NULL, ffi.NULL) == 0
    cu.check(cu.lib.cuCtxSynchronize())


GLOBALS = """
.global .align 4 .u32 flag;
.const .align 4 .u32 scale[2] = {3, 7};
.visible .entry k(.param .u32 v)
{
.reg .b32 %r<3>;
ld.param.u32 %r0, [v];
ld.const.u32 %r1, [scale+4];
mul.lo.u32 %r0, %r0, %r1;
ld.global.u32 %r2, [flag];
add.u32 %r0, %r0, %r2;
st.global.u32 [flag], %r0;
ret;
}
"""


def test_a_module_global_is_device_memory_the_host_can_copy_and_set(cu: Cuda) -> None:
    module = Module(cu, GLOBALS)
    lib = _lib()
    ptr, size = _ffi.new("unsigned long long *"), _ffi.new("size_t *")
    mod = _ffi.cast("CUmodule", int(ffi.cast("uintptr_t", module.mod)))
    assert lib.cuModuleGetGlobal_v2(ptr, size, mod, b"flag") == CUDA_SUCCESS
    assert size[0] == 4
    flag = int(ptr[0])
    ten = np.array([10], np.uint32)
    cu.check(cu.lib.cuMemcpyHtoD_v2(flag, ffi.cast("void *", ten.ctypes.data), 4))
    cu.check(module.launch([("unsigned int", 5)]))
    assert int(read(cu, flag, np.zeros(1, np.uint32))[0]) == 10 + 5 * 7
    assert lib.cuMemsetD8_v2(flag, 0, 4) == CUDA_SUCCESS
    assert int(read(cu, flag, np.zeros(1, np.uint32))[0]) == 0
    assert lib.cuModuleGetGlobal_v2(ptr, size, mod, b"scale") == CUDA_SUCCESS
    assert size[0] == 8
    assert list(read(cu, int(ptr[0]), np.zeros(2, np.uint32))) == [3, 7]
    # Freeing a module's variable is the caller's error, not a free.
    assert lib.cuMemFree_v2(flag) == CUDA_ERROR_INVALID_VALUE
    assert lib.cuModuleGetGlobal_v2(ptr, size, mod, b"missing") == CUDA_ERROR_NOT_FOUND


def test_a_library_global_is_found_through_the_library(cu: Cuda) -> None:
    lib = _lib()
    library = _ffi.new("CUlibrary *")
    image = (HEAD + GLOBALS).encode() + b"\0"
    assert (
        lib.cuLibraryLoadData(library, image, _ffi.NULL, _ffi.NULL, 0, _ffi.NULL, _ffi.NULL, 0)
        == CUDA_SUCCESS
    )
    try:
        ptr, size = _ffi.new("unsigned long long *"), _ffi.new("size_t *")
        assert lib.cuLibraryGetGlobal(ptr, size, library[0], b"scale") == CUDA_SUCCESS
        assert size[0] == 8
        assert list(read(cu, int(ptr[0]), np.zeros(2, np.uint32))) == [3, 7]
        assert lib.cuLibraryGetGlobal(ptr, size, library[0], b"nope") == CUDA_ERROR_NOT_FOUND
    finally:
        lib.cuLibraryUnload(library[0])


def test_local_and_shared_arrays_start_at_their_declared_alignment(cu: Cuda) -> None:
    text = """
.visible .entry k(.param .u64 out)
{
.local .align 256 .b8 depot[24];
.shared .align 512 .b8 first[3];
.shared .align 1024 .b8 second[8];
.reg .b64 %rd<6>;
ld.param.u64 %rd0, [out];
cvta.to.global.u64 %rd0, %rd0;
mov.u64 %rd1, depot;
cvta.local.u64 %rd1, %rd1;
mov.u64 %rd2, first;
cvta.shared.u64 %rd2, %rd2;
mov.u64 %rd3, second;
cvta.shared.u64 %rd3, %rd3;
mov.u32 %r0, %tid.x;
mul.wide.u32 %rd4, %r0, 24;
add.s64 %rd0, %rd0, %rd4;
st.global.u64 [%rd0], %rd1;
st.global.u64 [%rd0+8], %rd2;
st.global.u64 [%rd0+16], %rd3;
ret;
}
""".replace(".reg .b64 %rd<6>;", ".reg .b64 %rd<6>;\n.reg .b32 %r<1>;")
    module = Module(cu, text)
    block = 40
    out = cu.alloc(24 * block)
    cu.check(module.launch([("unsigned long long", out)], block=block))
    got = read(cu, out, np.zeros((block, 3), np.uint64))
    assert all(int(a) % 256 == 0 for a in got[:, 0])
    assert len({int(a) for a in got[:, 0]}) == block  # each thread its own
    assert all(int(a) % 512 == 0 for a in got[:, 1])
    assert all(int(a) % 1024 == 0 for a in got[:, 2])


def test_a_register_declared_in_a_block_ends_with_it(cu: Cuda) -> None:
    # The inner %v shadows the outer one only inside its block; after the
    # block the outer %v (still 7) is what the store reads.
    text = """
.visible .entry k(.param .u64 out)
{
.reg .b32 %v;
.reg .b64 %rd<2>;
mov.u32 %v, 7;
{
.reg .b32 %v;
mov.u32 %v, 100;
}
{
.reg .b64 %v;
mov.u64 %v, 200;
}
ld.param.u64 %rd0, [out];
cvta.to.global.u64 %rd0, %rd0;
st.global.u32 [%rd0], %v;
ret;
}
"""
    module = Module(cu, text)
    out = cu.alloc(4)
    cu.check(module.launch([("unsigned long long", out)]))
    assert int(read(cu, out, np.zeros(1, np.uint32))[0]) == 7


def test_a_register_of_a_closed_block_is_unknown(cu: Cuda) -> None:
    text = ".visible .entry k()\n{\n{\n.reg .b32 %w;\nmov.u32 %w, 1;\n}\n"
    text += "add.u32 %w, %w, 1;\nret;\n}\n"
    rc, _mod, log = load_ex(cu, (HEAD + text).encode())
    assert rc == 218 and "%w" in log, log


def test_set_writes_one_point_zero_or_all_ones(cu: Cuda) -> None:
    text = """
.visible .entry k(.param .u64 x, .param .u64 out)
{
.reg .b32 %r<6>;
.reg .f32 %f<4>;
.reg .b64 %rd<4>;
.reg .pred %p<2>;
ld.param.u64 %rd0, [x];
cvta.to.global.u64 %rd0, %rd0;
ld.param.u64 %rd1, [out];
cvta.to.global.u64 %rd1, %rd1;
mov.u32 %r0, %tid.x;
mul.wide.u32 %rd2, %r0, 4;
add.s64 %rd3, %rd0, %rd2;
ld.global.f32 %f0, [%rd3];
set.lt.f32.f32 %f1, %f0, 0f40000000;
set.gtu.u32.f32 %r1, %f0, 0f40000000;
setp.eq.u32 %p0, %r0, 3;
set.ne.and.s32.f32 %r2, %f0, 0f00000000, %p0;
mul.wide.u32 %rd2, %r0, 12;
add.s64 %rd3, %rd1, %rd2;
st.global.f32 [%rd3], %f1;
st.global.u32 [%rd3+4], %r1;
st.global.u32 [%rd3+8], %r2;
ret;
}
"""
    module = Module(cu, text)
    x = np.array([1.0, 2.0, 3.0, 5.0, np.nan, -1.0, 0.0, 2.5], np.float32)
    n = x.size
    out = cu.alloc(12 * n)
    args = [("unsigned long long", write(cu, x)), ("unsigned long long", out)]
    cu.check(module.launch(args, block=n))
    raw = read(cu, out, np.zeros((n, 3), np.uint32))
    with np.errstate(invalid="ignore"):
        lt = np.where(x < 2.0, 1.0, 0.0).astype(np.float32)
        gtu = np.where((x > 2.0) | np.isnan(x), 0xFFFFFFFF, 0).astype(np.uint32)
        ne_and = np.where((x != 0.0) & ~np.isnan(x) & (np.arange(n) == 3), 0xFFFFFFFF, 0)
    assert list(raw[:, 0].view(np.float32)) == list(lt)
    assert list(raw[:, 1]) == list(gtu)
    assert list(raw[:, 2]) == list(ne_and.astype(np.uint32))


BAR_RED = """
.visible .entry k(.param .u64 x, .param .u64 out)
{
.reg .b32 %r<4>;
.reg .b64 %rd<4>;
.reg .pred %p<4>;
ld.param.u64 %rd0, [x];
cvta.to.global.u64 %rd0, %rd0;
ld.param.u64 %rd1, [out];
cvta.to.global.u64 %rd1, %rd1;
mov.u32 %r0, %tid.x;
mul.wide.u32 %rd2, %r0, 4;
add.s64 %rd3, %rd0, %rd2;
ld.global.u32 %r1, [%rd3];
setp.ne.u32 %p0, %r1, 0;
bar.red.popc.u32 %r2, 0, %p0;
bar.red.and.pred %p1, 0, %p0;
bar.red.or.pred %p2, 0, !%p0;
selp.u32 %r3, 1, 0, %p1;
shl.b32 %r3, %r3, 1;
selp.u32 %r1, 1, 0, %p2;
or.b32 %r3, %r3, %r1;
mul.wide.u32 %rd2, %r0, 8;
add.s64 %rd3, %rd1, %rd2;
st.global.v2.u32 [%rd3], {%r2, %r3};
ret;
}
"""


def test_bar_red_reduces_the_predicate_over_the_whole_block(cu: Cuda) -> None:
    module = Module(cu, BAR_RED)
    rng = np.random.default_rng(19)
    for n, x in (
        (100, (rng.random(100) < 0.3).astype(np.uint32)),  # four warps, the last partial
        (64, np.ones(64, np.uint32)),
        (33, np.zeros(33, np.uint32)),
    ):
        out = cu.alloc(8 * n)
        args = [("unsigned long long", write(cu, x)), ("unsigned long long", out)]
        cu.check(module.launch(args, block=n))
        got = read(cu, out, np.zeros((n, 2), np.uint32))
        flags = (int(x.all()) << 1) | int((x == 0).any())
        assert list(got[:, 0]) == [int(x.sum())] * n
        assert list(got[:, 1]) == [flags] * n


def test_bar_red_mixed_with_bar_sync_fails_the_launch(cu: Cuda) -> None:
    # Warp 0 waits at bar.red while warp 1 waits at bar.sync: the sim does not
    # pair different barriers, so it refuses rather than guess.
    text = """
.visible .entry k()
{
.reg .b32 %r<2>;
.reg .pred %p<2>;
mov.u32 %r0, %tid.x;
setp.lt.u32 %p0, %r0, 32;
@%p0 bra $L_red;
bar.sync 0;
bra $L_end;
$L_red:
bar.red.popc.u32 %r1, 0, %p0;
$L_end:
ret;
}
"""
    module = Module(cu, text)
    assert module.launch([], block=64) != CUDA_SUCCESS


def test_the_address_range_of_pinned_memory_is_its_allocation(cu: Cuda) -> None:
    # The shared cffi view lacks these calls: this test declares them.
    range_ffi = cffi.FFI()
    range_ffi.cdef(
        "int cuMemHostAlloc(void **, size_t, unsigned int);\n"
        "int cuMemHostGetDevicePointer_v2(unsigned long long *, void *, unsigned int);\n"
        "int cuMemGetAddressRange_v2(unsigned long long *, size_t *, unsigned long long);\n"
        "int cuMemFreeHost(void *);\n"
    )
    sim = range_ffi.dlopen(str(sim_library_path()))
    host = range_ffi.new("void **")
    assert sim.cuMemHostAlloc(host, 4096, 0x2) == CUDA_SUCCESS  # CU_MEMHOSTALLOC_DEVICEMAP
    try:
        dev = range_ffi.new("unsigned long long *")
        assert sim.cuMemHostGetDevicePointer_v2(dev, host[0], 0) == CUDA_SUCCESS
        base, size = range_ffi.new("unsigned long long *"), range_ffi.new("size_t *")
        assert sim.cuMemGetAddressRange_v2(base, size, dev[0] + 100) == CUDA_SUCCESS
        assert (base[0], size[0]) == (dev[0], 4096)
    finally:
        sim.cuMemFreeHost(host[0])
