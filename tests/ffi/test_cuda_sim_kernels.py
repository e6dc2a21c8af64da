"""cuda-sim: modules and kernel launches with the portable kernels' host build."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import cffi
import numpy as np
import pytest
from _cudasim_support import (
    CUDA_ERROR_INVALID_HANDLE,
    CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_NOT_FOUND,
    Cuda,
    Gate,
    ffi,
    host_kernels_path,
)

PTX = Path(__file__).resolve().parents[2] / "aruntime" / "kernels" / "vector_ops.ptx"


def _ptr(a: np.ndarray) -> Any:
    return ffi.cast("void *", a.ctypes.data)


def _load(cu: Cuda, image: bytes) -> Any:
    mod = ffi.new("CUmodule *")
    buf = ffi.from_buffer(image + b"\0")  # PTX is a NUL-terminated string
    cu.check(cu.lib.cuModuleLoadData(mod, buf))
    return mod[0]


def _function(cu: Cuda, mod: Any, name: str) -> Any:
    fn = ffi.new("CUfunction *")
    cu.check(cu.lib.cuModuleGetFunction(fn, mod, name.encode()))
    return fn[0]


def _params(*values: Any) -> tuple[Any, list[Any]]:
    keep = list(values)
    arr = ffi.new("void *[]", [ffi.cast("void *", v) for v in keep])
    return arr, keep


def _saxpy(cu: Cuda, fn: Any, n: int, a: float, block: int = 128) -> None:
    lib = cu.lib
    x = np.arange(n, dtype=np.float32)
    y = np.full(n, 1.5, dtype=np.float32)
    dx, dy = cu.alloc(x.nbytes), cu.alloc(y.nbytes + 64)
    cu.check(lib.cuMemcpyHtoD_v2(dx, _ptr(x), x.nbytes))
    cu.check(lib.cuMemcpyHtoD_v2(dy, _ptr(y), y.nbytes))
    guard = np.full(16, 123.0, np.float32)  # past the end: the bound check keeps it
    cu.check(lib.cuMemcpyHtoD_v2(dy + y.nbytes, _ptr(guard), guard.nbytes))
    args, _keep = _params(
        ffi.new("unsigned int *", n),
        ffi.new("float *", a),
        ffi.new("CUdeviceptr *", dx),
        ffi.new("CUdeviceptr *", dy),
    )
    grid = (n + block - 1) // block
    cu.check(lib.cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, ffi.NULL, args, ffi.NULL))
    out = np.zeros(n + 16, np.float32)
    cu.check(lib.cuMemcpyDtoH_v2(_ptr(out), dy, out.nbytes))
    np.testing.assert_array_equal(out[:n], np.float32(a) * x + y)
    np.testing.assert_array_equal(out[n:], guard)


def test_saxpy_from_host_shared_object(cu: Cuda) -> None:
    mod = _load(cu, host_kernels_path().read_bytes())
    fn = _function(cu, mod, "saxpy")
    _saxpy(cu, fn, 1000, 2.5)  # not a multiple of the block size
    _saxpy(cu, fn, 7, -1.0, block=32)
    cu.check(cu.lib.cuModuleUnload(mod))
    assert (
        cu.lib.cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, ffi.NULL, ffi.NULL, ffi.NULL)
        == CUDA_ERROR_INVALID_HANDLE
    )


def test_ptx_image_runs_on_the_executor(cu: Cuda) -> None:
    """The committed PTX loads on the sim and its kernels run on the PTX executor."""
    mod = _load(cu, PTX.read_bytes())
    _saxpy(cu, _function(cu, mod, "saxpy"), 513, 0.5)
    cu.check(cu.lib.cuModuleUnload(mod))


@pytest.mark.parametrize("image", ["host", "ptx"])
def test_func_get_param_info(cu: Cuda, image: str) -> None:
    """cuFuncGetParamInfo: nvcc's offsets and sizes, INVALID_VALUE past the last one."""
    data = host_kernels_path().read_bytes() if image == "host" else PTX.read_bytes()
    mod = _load(cu, data)
    fn = _function(cu, mod, "saxpy")  # (u32 n, float a, const float *x, float *y)
    offset, size = ffi.new("size_t *"), ffi.new("size_t *")
    got = []
    for index in range(4):
        cu.check(cu.lib.cuFuncGetParamInfo(fn, index, offset, size))
        got.append((offset[0], size[0]))
    assert got == [(0, 4), (4, 4), (8, 8), (16, 8)]
    assert cu.lib.cuFuncGetParamInfo(fn, 4, offset, size) == CUDA_ERROR_INVALID_VALUE
    cu.check(cu.lib.cuFuncGetParamInfo(fn, 0, ffi.NULL, size))  # either output is optional
    cu.check(cu.lib.cuModuleUnload(mod))
    assert cu.lib.cuFuncGetParamInfo(fn, 0, offset, size) == CUDA_ERROR_INVALID_HANDLE


def test_fill_and_2d_grid(cu: Cuda) -> None:
    lib = cu.lib
    mod = _load(cu, host_kernels_path().read_bytes())
    n = 300
    d = cu.alloc(n * 4)
    args, _keep = _params(
        ffi.new("unsigned int *", n), ffi.new("unsigned int *", 10), ffi.new("CUdeviceptr *", d)
    )
    iota = _function(cu, mod, "iota_u32")
    cu.check(lib.cuLaunchKernel(iota, 5, 1, 1, 64, 1, 1, 0, ffi.NULL, args, ffi.NULL))
    out = np.zeros(n, np.uint32)
    cu.check(lib.cuMemcpyDtoH_v2(_ptr(out), d, out.nbytes))
    np.testing.assert_array_equal(out, np.arange(10, 10 + n, dtype=np.uint32))
    fill = _function(cu, mod, "fill_f32")
    args, _keep = _params(
        ffi.new("unsigned int *", n), ffi.new("float *", 3.25), ffi.new("CUdeviceptr *", d)
    )
    cu.check(lib.cuLaunchKernel(fill, 3, 1, 1, 128, 1, 1, 0, ffi.NULL, args, ffi.NULL))
    outf = np.zeros(n, np.float32)
    cu.check(lib.cuMemcpyDtoH_v2(_ptr(outf), d, outf.nbytes))
    assert (outf == 3.25).all()


def test_arguments_are_copied_at_launch(cu: Cuda) -> None:
    lib = cu.lib
    mod = _load(cu, host_kernels_path().read_bytes())
    fill = _function(cu, mod, "fill_f32")
    s = ffi.new("CUstream *")
    cu.check(lib.cuStreamCreate(s, 0))
    d = cu.alloc(64)
    value = ffi.new("float *", 1.0)
    args, _keep = _params(ffi.new("unsigned int *", 16), value, ffi.new("CUdeviceptr *", d))
    gate = Gate(cu, s[0])  # the launch waits behind this
    cu.check(lib.cuLaunchKernel(fill, 1, 1, 1, 16, 1, 1, 0, s[0], args, ffi.NULL))
    value[0] = 99.0  # too late to matter
    gate.release()
    cu.check(lib.cuStreamSynchronize(s[0]))
    out = np.zeros(16, np.float32)
    cu.check(lib.cuMemcpyDtoH_v2(_ptr(out), d, 64))
    assert (out == 1.0).all()


def test_launch_with_extra_parameter_buffer(cu: Cuda) -> None:
    lib = cu.lib
    mod = _load(cu, host_kernels_path().read_bytes())
    scale = _function(cu, mod, "scale_f32")
    y = np.arange(8, dtype=np.float32)
    d = cu.alloc(y.nbytes)
    cu.check(lib.cuMemcpyHtoD_v2(d, _ptr(y), y.nbytes))
    packed = struct.pack("<IfQ", 8, 2.0, d)  # u32, f32, then an 8-aligned pointer
    buf = ffi.from_buffer(packed)
    size = ffi.new("size_t *", len(packed))
    extra = ffi.new("void *[]", [ffi.cast("void *", 1), buf, ffi.cast("void *", 2), size, ffi.NULL])
    cu.check(lib.cuLaunchKernel(scale, 1, 1, 1, 8, 1, 1, 0, ffi.NULL, ffi.NULL, extra))
    out = np.zeros(8, np.float32)
    cu.check(lib.cuMemcpyDtoH_v2(_ptr(out), d, out.nbytes))
    np.testing.assert_array_equal(out, 2 * y)


def test_module_errors(cu: Cuda) -> None:
    lib = cu.lib
    mod = _load(cu, host_kernels_path().read_bytes())
    fn = ffi.new("CUfunction *")
    assert lib.cuModuleGetFunction(fn, mod, b"no_such_kernel") == CUDA_ERROR_NOT_FOUND
    saxpy = _function(cu, mod, "saxpy")
    assert _function(cu, mod, "saxpy") == saxpy  # one handle per kernel
    args, _keep = _params(*(ffi.new("unsigned long long *", 0) for _ in range(4)))
    assert (
        lib.cuLaunchKernel(saxpy, 1, 1, 1, 2048, 1, 1, 0, ffi.NULL, args, ffi.NULL)
        == CUDA_ERROR_INVALID_VALUE
    )
    assert (
        lib.cuLaunchKernel(saxpy, 0, 1, 1, 1, 1, 1, 0, ffi.NULL, args, ffi.NULL)
        == CUDA_ERROR_INVALID_VALUE
    )
    m = ffi.new("CUmodule *")
    assert lib.cuModuleLoadData(m, ffi.from_buffer(b"garbage\0")) == 200  # INVALID_IMAGE
    fatbin = struct.pack("<IHHQ", 0xBA55ED50, 1, 16, 0) + b"\0" * 48  # no PTX in it
    assert lib.cuModuleLoadData(m, ffi.from_buffer(fatbin)) == 209  # NO_BINARY_FOR_GPU
    cu.check(lib.cuModuleUnload(mod))
    assert lib.cuModuleUnload(mod) == CUDA_ERROR_INVALID_HANDLE


KERNELS = ["saxpy", "fill_f32", "scale_f32", "add_f32", "iota_u32"]


@pytest.mark.parametrize("name", KERNELS)
def test_every_ptx_entry_has_a_host_build(name: str) -> None:
    assert f".entry {name}(" in PTX.read_text()
    kffi = cffi.FFI()
    kffi.cdef(f"extern const unsigned int __ar_kinfo_{name}[34];")
    info = getattr(kffi.dlopen(str(host_kernels_path())), f"__ar_kinfo_{name}")
    assert info[0] == 1 and 1 <= info[1] <= 32  # ABI version, parameter count


def test_two_different_modules_stay_distinct(cu: Cuda, tmp_path: Path) -> None:
    # Each module is dlopen'ed from its own memfd; if the sim closed that fd
    # right away, the next load would reuse its "/proc/self/fd/N" path and
    # glibc would hand back the first module instead of the second.
    import subprocess

    src = tmp_path / "other.c"
    src.write_text(
        '#include <stdint.h>\n__attribute__((visibility("default"))) int only_here(void) '
        "{ return 0; }\n"
    )
    other = tmp_path / "libother.so"
    subprocess.run(["cc", "-shared", "-fPIC", str(src), "-o", str(other)], check=True)
    first = _load(cu, host_kernels_path().read_bytes())
    second = _load(cu, other.read_bytes())
    _function(cu, first, "saxpy")
    fn = ffi.new("CUfunction *")
    # "saxpy" is not in the second image: finding it there means we got the first.
    assert cu.lib.cuModuleGetFunction(fn, second, b"saxpy") == CUDA_ERROR_NOT_FOUND
    cu.check(cu.lib.cuModuleUnload(second))
    cu.check(cu.lib.cuModuleUnload(first))
