"""cuda-sim's driver linker (cuLinkCreate/AddData/AddFile/Complete/Destroy):
PTX inputs that call each other, fatbins that hold PTX, the refusals for
machine code, the JIT log options, and every invalid argument's code."""

from __future__ import annotations

import ctypes.util
import os
import shutil
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cffi
import numpy as np
import pytest
from _cudasim_support import (
    CUDA_ERROR_INVALID_CONTEXT,
    CUDA_ERROR_INVALID_HANDLE,
    CUDA_ERROR_INVALID_VALUE,
    CUDA_SUCCESS,
    Cuda,
    cu,  # noqa: F401  (fixture)
    sim_library_path,
)

CUDA_ERROR_INVALID_IMAGE = 200
CUDA_ERROR_NO_BINARY_FOR_GPU = 209
CUDA_ERROR_INVALID_PTX = 218
CUDA_ERROR_FILE_NOT_FOUND = 301
CUDA_ERROR_NOT_SUPPORTED = 801

# CUjit_option
THREADS_PER_BLOCK, WALL_TIME, INFO_LOG, INFO_LOG_SIZE, ERROR_LOG, ERROR_LOG_SIZE = 1, 2, 3, 4, 5, 6
OPTIMIZATION_LEVEL, TARGET, LOG_VERBOSE, NUM_OPTIONS = 7, 9, 12, 35
# CUjitInputType
CUBIN, PTX, FATBINARY, OBJECT, LIBRARY, NVVM = 0, 1, 2, 3, 4, 5

NVCC = Path("/usr/local/cuda/bin/nvcc")
NEEDS_NVCC = pytest.mark.skipif(not NVCC.exists(), reason="nvcc is not installed here")

ffi = cffi.FFI()
ffi.cdef(
    """
typedef int CUresult;
typedef struct CUlinkState_st *CUlinkState;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUlib_st *CUlibrary;
typedef struct CUkern_st *CUkernel;
CUresult cuLinkCreate_v2(unsigned, int *, void **, CUlinkState *);
CUresult cuLinkCreate(unsigned, int *, void **, CUlinkState *);
CUresult cuLinkAddData_v2(CUlinkState, int, void *, size_t, const char *, unsigned, int *,
                          void **);
CUresult cuLinkAddData(CUlinkState, int, void *, size_t, const char *, unsigned, int *, void **);
CUresult cuLinkAddFile_v2(CUlinkState, int, const char *, unsigned, int *, void **);
CUresult cuLinkAddFile(CUlinkState, int, const char *, unsigned, int *, void **);
CUresult cuLinkComplete(CUlinkState, void **, size_t *);
CUresult cuLinkDestroy(CUlinkState);
CUresult cuCtxGetCurrent(void **);
CUresult cuCtxSetCurrent(void *);
CUresult cuCtxSynchronize(void);
CUresult cuMemAlloc_v2(unsigned long long *, size_t);
CUresult cuMemFree_v2(unsigned long long);
CUresult cuMemcpyDtoH_v2(void *, unsigned long long, size_t);
CUresult cuModuleLoadData(CUmodule *, const void *);
CUresult cuModuleLoadDataEx(CUmodule *, const void *, unsigned, int *, void **);
CUresult cuModuleLoad(CUmodule *, const char *);
CUresult cuModuleUnload(CUmodule);
CUresult cuModuleGetFunction(CUfunction *, CUmodule, const char *);
CUresult cuLaunchKernel(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                        unsigned, void *, void **, void **);
CUresult cuLibraryLoadData(CUlibrary *, const void *, int *, void **, unsigned, int *, void **,
                           unsigned);
CUresult cuLibraryGetKernel(CUkernel *, CUlibrary, const char *);
CUresult cuLibraryUnload(CUlibrary);
CUresult cuGetProcAddress(const char *, void **, int, unsigned long long);
"""
)

HEADER = ".version 8.0\n.target sm_80\n.address_size 64\n"

# k(out): out[tid] = helper(tid), with helper defined in another input.
CALLER = (
    HEADER
    + """
.extern .func (.param .b32 func_retval0) helper
(
    .param .b32 helper_param_0
)
;

.visible .entry k(
    .param .u64 k_param_0
)
{
    .reg .b32 %r<3>;
    .reg .b64 %rd<5>;

    ld.param.u64 %rd1, [k_param_0];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, %tid.x;
    {
    .param .b32 param0;
    st.param.b32 [param0+0], %r1;
    .param .b32 retval0;
    call.uni (retval0), helper, (param0);
    ld.param.b32 %r2, [retval0+0];
    }
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd4, %rd2, %rd3;
    st.global.u32 [%rd4], %r2;
    ret;
}
"""
)

# helper(x) = 3x + 1
HELPER = (
    HEADER
    + """
.visible .func (.param .b32 func_retval0) helper(
    .param .b32 helper_param_0
)
{
    .reg .b32 %r<3>;

    ld.param.u32 %r1, [helper_param_0];
    mad.lo.s32 %r2, %r1, 3, 1;
    st.param.b32 [func_retval0+0], %r2;
    ret;
}
"""
)

# The same kernel and helper as CUDA C, for nvcc's fatbins.
KERNEL_CU = """
extern "C" __device__ int helper(int x) { return 3 * x + 1; }
extern "C" __global__ void k(int *o) { o[threadIdx.x] = helper(threadIdx.x); }
"""

EXPECTED = 3 * np.arange(64, dtype=np.int32) + 1

# An ELF64 object with no sections: a library member without device code.
EMPTY_ELF = b"\x7fELF\x02\x01\x01".ljust(16, b"\0") + struct.pack(
    "<HHIQQQIHHHHHH", 1, 62, 1, 0, 0, 0, 0, 64, 0, 0, 64, 0, 0
)


class Linker:
    """This file's view of the driver, with the log buffers of one link."""

    def __init__(self) -> None:
        self.lib: Any = ffi.dlopen(str(sim_library_path()))

    def create(self, options: dict[int, Any] | None = None) -> tuple[Any, Any, Any]:
        """A link state; returns it with the option arrays (kept alive: the
        driver writes the output options back into them)."""
        opts = options or {}
        keys = ffi.new("int[]", list(opts)) if opts else ffi.NULL
        values = ffi.new("void *[]", [ffi.cast("void *", v) for v in opts.values()])
        state = ffi.new("CUlinkState *")
        rc = self.lib.cuLinkCreate_v2(len(opts), keys, values if opts else ffi.NULL, state)
        assert rc == CUDA_SUCCESS, rc
        return state[0], keys, values

    def add(self, state: Any, data: bytes, name: bytes = b"", kind: int = PTX) -> int:
        buf = ffi.from_buffer(data)
        return int(
            self.lib.cuLinkAddData_v2(
                state, kind, buf, len(data), name or ffi.NULL, 0, ffi.NULL, ffi.NULL
            )
        )

    def complete(self, state: Any) -> bytes:
        image = ffi.new("void **")
        size = ffi.new("size_t *")
        assert self.lib.cuLinkComplete(state, image, size) == CUDA_SUCCESS
        return bytes(ffi.buffer(image[0], size[0]))

    def run(self, module: Any) -> np.ndarray:
        func = ffi.new("CUfunction *")
        assert self.lib.cuModuleGetFunction(func, module, b"k") == CUDA_SUCCESS
        return self.launch(func[0])

    def launch(self, func: Any) -> np.ndarray:
        out = np.zeros(64, dtype=np.int32)
        dptr = ffi.new("unsigned long long *")
        assert self.lib.cuMemAlloc_v2(dptr, out.nbytes) == CUDA_SUCCESS
        try:
            args = ffi.new("void *[1]", [ffi.cast("void *", dptr)])
            rc = self.lib.cuLaunchKernel(func, 1, 1, 1, 64, 1, 1, 0, ffi.NULL, args, ffi.NULL)
            assert rc == CUDA_SUCCESS
            assert self.lib.cuCtxSynchronize() == CUDA_SUCCESS
            rc = self.lib.cuMemcpyDtoH_v2(ffi.from_buffer(out), dptr[0], out.nbytes)
            assert rc == CUDA_SUCCESS
        finally:
            self.lib.cuMemFree_v2(dptr[0])
        return out

    def load(self, image: bytes) -> Any:
        module = ffi.new("CUmodule *")
        assert self.lib.cuModuleLoadData(module, image) == CUDA_SUCCESS
        return module[0]


@pytest.fixture
def lk(cu: Cuda) -> Iterator[Linker]:  # noqa: F811  (cu: the context fixture)
    yield Linker()


def _logs(size: int = 1024) -> tuple[Any, Any, dict[int, Any]]:
    info = ffi.new("char[]", size)
    err = ffi.new("char[]", size)
    return info, err, {INFO_LOG: info, INFO_LOG_SIZE: size, ERROR_LOG: err, ERROR_LOG_SIZE: size}


def _text(buf: Any) -> str:
    return str(ffi.string(buf).decode())


def test_two_ptx_inputs_link_and_the_call_across_them_runs(lk: Linker) -> None:
    state, _, _ = lk.create()
    assert lk.add(state, CALLER.encode(), b"caller.ptx") == CUDA_SUCCESS
    assert lk.add(state, HELPER.encode(), b"helper.ptx") == CUDA_SUCCESS
    image = lk.complete(state)
    module = lk.load(image)
    try:
        np.testing.assert_array_equal(lk.run(module), EXPECTED)
    finally:
        lk.lib.cuModuleUnload(module)
        assert lk.lib.cuLinkDestroy(state) == CUDA_SUCCESS


def test_the_image_is_no_ptx_and_loads_every_way_this_driver_loads(
    lk: Linker, tmp_path: Path
) -> None:
    state, _, _ = lk.create()
    assert lk.add(state, HELPER.encode()) == CUDA_SUCCESS
    assert lk.add(state, CALLER.encode()) == CUDA_SUCCESS
    image = lk.complete(state)
    assert lk.lib.cuLinkDestroy(state) == CUDA_SUCCESS  # the copy outlives the state
    assert not image.startswith((b".version", b"\x7fELF", b"//")) and image[0] >= 0x80
    module = ffi.new("CUmodule *")
    assert lk.lib.cuModuleLoadDataEx(module, image, 0, ffi.NULL, ffi.NULL) == CUDA_SUCCESS
    np.testing.assert_array_equal(lk.run(module[0]), EXPECTED)
    lk.lib.cuModuleUnload(module[0])
    path = tmp_path / "linked.cubin"
    path.write_bytes(image)
    assert lk.lib.cuModuleLoad(module, str(path).encode()) == CUDA_SUCCESS
    np.testing.assert_array_equal(lk.run(module[0]), EXPECTED)
    lk.lib.cuModuleUnload(module[0])
    library = ffi.new("CUlibrary *")
    rc = lk.lib.cuLibraryLoadData(library, image, ffi.NULL, ffi.NULL, 0, ffi.NULL, ffi.NULL, 0)
    assert rc == CUDA_SUCCESS
    kernel = ffi.new("CUkernel *")
    assert lk.lib.cuLibraryGetKernel(kernel, library[0], b"k") == CUDA_SUCCESS
    np.testing.assert_array_equal(lk.launch(ffi.cast("CUfunction", kernel[0])), EXPECTED)
    lk.lib.cuLibraryUnload(library[0])
    # An image links again, as a driver's own cubin does.
    again, _, _ = lk.create()
    assert lk.add(again, image, b"linked.cubin", kind=CUBIN) == CUDA_SUCCESS
    module2 = lk.load(lk.complete(again))
    np.testing.assert_array_equal(lk.run(module2), EXPECTED)
    lk.lib.cuModuleUnload(module2)
    lk.lib.cuLinkDestroy(again)


def test_add_file_and_the_legacy_names(lk: Linker, tmp_path: Path) -> None:
    (tmp_path / "caller.ptx").write_text(CALLER)
    (tmp_path / "helper.ptx").write_text(HELPER)
    state = ffi.new("CUlinkState *")
    assert lk.lib.cuLinkCreate(0, ffi.NULL, ffi.NULL, state) == CUDA_SUCCESS
    for name in ("caller.ptx", "helper.ptx"):
        path = str(tmp_path / name).encode()
        assert lk.lib.cuLinkAddFile(state[0], PTX, path, 0, ffi.NULL, ffi.NULL) == CUDA_SUCCESS
    module = lk.load(lk.complete(state[0]))
    np.testing.assert_array_equal(lk.run(module), EXPECTED)
    lk.lib.cuModuleUnload(module)
    lk.lib.cuLinkDestroy(state[0])


@pytest.mark.parametrize(
    ("name", "version", "symbol"),
    [
        ("cuLinkCreate", 12000, "cuLinkCreate_v2"),
        ("cuLinkCreate", 6000, "cuLinkCreate"),
        ("cuLinkAddData", 12000, "cuLinkAddData_v2"),
        ("cuLinkAddData", 5050, "cuLinkAddData"),
        ("cuLinkAddFile", 13000, "cuLinkAddFile_v2"),
        ("cuLinkComplete", 12000, "cuLinkComplete"),
        ("cuLinkDestroy", 12000, "cuLinkDestroy"),
    ],
)
def test_get_proc_address_finds_the_linker(
    lk: Linker, name: str, version: int, symbol: str
) -> None:
    fn = ffi.new("void **")
    assert lk.lib.cuGetProcAddress(name.encode(), fn, version, 0) == CUDA_SUCCESS
    assert fn[0] == ffi.cast("void *", getattr(lk.lib, symbol))


def test_logs_wall_time_and_log_sizes_are_written(lk: Linker) -> None:
    info, err, opts = _logs()
    nan_bits = 0x7FC00001  # a float NaN: the driver must overwrite it
    opts.update({LOG_VERBOSE: 1, WALL_TIME: nan_bits, OPTIMIZATION_LEVEL: 4})
    state, keys, values = lk.create(opts)
    assert lk.add(state, CALLER.encode(), b"caller.ptx") == CUDA_SUCCESS
    assert lk.add(state, HELPER.encode(), b"helper.ptx") == CUDA_SUCCESS
    lk.complete(state)
    log = _text(info)
    assert "added PTX 'caller.ptx'" in log and "added PTX 'helper.ptx'" in log
    assert "linked 2 inputs" in log
    assert _text(err) == ""
    slots = {int(keys[i]): values[i] for i in range(len(opts))}
    assert int(ffi.cast("uintptr_t", slots[INFO_LOG_SIZE])) == len(log)
    assert int(ffi.cast("uintptr_t", slots[ERROR_LOG_SIZE])) == 0
    wall = struct.unpack(
        "<f", struct.pack("<I", int(ffi.cast("uintptr_t", slots[WALL_TIME])) & 0xFFFFFFFF)
    )[0]
    assert wall == wall and wall >= 0.0  # a number, not the NaN it held
    lk.lib.cuLinkDestroy(state)


def test_a_bad_input_is_refused_when_added_with_its_line(lk: Linker) -> None:
    _info, err, opts = _logs()
    state, _, _ = lk.create(opts)
    bad = HEADER + ".visible .entry k()\n{\n    frobnicate.u32 %r1;\n    ret;\n}\n"
    assert lk.add(state, bad.encode(), b"bad.ptx") == CUDA_ERROR_INVALID_PTX
    assert _text(err).startswith("bad.ptx: ptx line 6:")
    assert lk.add(state, b"this is not ptx", b"junk.ptx") == CUDA_ERROR_INVALID_PTX
    assert "junk.ptx: not PTX text" in _text(err)
    lk.lib.cuLinkDestroy(state)


def test_an_error_found_when_linking_names_the_input_and_its_own_line(lk: Linker) -> None:
    _info, err, opts = _logs()
    state, _, _ = lk.create(opts)
    assert lk.add(state, HELPER.encode(), b"helper.ptx") == CUDA_SUCCESS
    # Calls an external function, so it is checked only when linked.
    lines = CALLER.splitlines()
    at = next(i for i, line in enumerate(lines) if "mov.u32" in line)
    lines.insert(at, "    frobnicate.u32 %r1;")
    assert lk.add(state, "\n".join(lines).encode(), b"caller.ptx") == CUDA_SUCCESS
    image = ffi.new("void **")
    assert lk.lib.cuLinkComplete(state, image, ffi.NULL) == CUDA_ERROR_INVALID_PTX
    assert _text(err).startswith(f"caller.ptx: ptx line {at + 1}:"), _text(err)
    assert "frobnicate" in _text(err)
    lk.lib.cuLinkDestroy(state)


def test_an_unresolved_function_is_refused_naming_it(lk: Linker) -> None:
    _info, err, opts = _logs()
    state, _, _ = lk.create(opts)
    assert lk.add(state, CALLER.encode(), b"caller.ptx") == CUDA_SUCCESS
    image = ffi.new("void **")
    assert lk.lib.cuLinkComplete(state, image, ffi.NULL) == CUDA_ERROR_INVALID_PTX
    # In the driver's own words (cuda.core's suite compares the log whole).
    assert _text(err) == "error   : Undefined reference to 'helper' in 'caller.ptx'"
    lk.lib.cuLinkDestroy(state)


def test_one_name_in_two_inputs_is_resolved_when_linked(lk: Linker) -> None:
    _info, err, opts = _logs()
    state, _, _ = lk.create(opts)
    var = HEADER + ".global .align 4 .u32 counter = 7;\n.global .u32 other[4];\n"
    assert lk.add(state, var.encode(), b"one.ptx") == CUDA_SUCCESS
    # one.ptx's counter is its own; two.ptx's is the linked one
    # (test_cuda_sim_link_symbols.py runs such pairs).
    again = HEADER + ".visible .global .align 4 .b8 buf[16], counter[4] = {1, 2, 3, 4};\n"
    assert lk.add(state, again.encode(), b"two.ptx") == CUDA_SUCCESS
    # Dynamic shared memory is one window: every input may declare it.
    dyn = HEADER + ".extern .shared .align 16 .b8 smem[];\n"
    assert lk.add(state, dyn.encode(), b"three.ptx") == CUDA_SUCCESS
    assert lk.add(state, dyn.encode(), b"four.ptx") == CUDA_SUCCESS
    image, size = ffi.new("void **"), ffi.new("size_t *")
    assert lk.lib.cuLinkComplete(state, image, size) == CUDA_SUCCESS, _text(err)
    # A .weak name declared beside other variables cannot be dropped alone.
    weak = HEADER + ".weak .global .align 4 .u32 w1, counter;\n"
    assert lk.add(state, weak.encode(), b"five.ptx") == CUDA_SUCCESS
    assert lk.lib.cuLinkComplete(state, image, size) == CUDA_ERROR_NOT_SUPPORTED
    assert "'five.ptx' declares 'counter' in one statement with other variables" in _text(err)
    lk.lib.cuLinkDestroy(state)


def _nvcc(tmp_path: Path, *args: str) -> bytes:
    src = tmp_path / "k.cu"
    src.write_text(KERNEL_CU)
    out = tmp_path / "k.fatbin"
    subprocess.run(
        [str(NVCC), "-fatbin", *args, str(src), "-o", str(out)], check=True, capture_output=True
    )
    return out.read_bytes()


@NEEDS_NVCC
@pytest.mark.parametrize(
    "compress",
    [
        pytest.param(("-no-compress",), id="plain"),
        pytest.param(
            (),
            id="zstd",
            marks=pytest.mark.skipif(
                ctypes.util.find_library("zstd") is None, reason="libzstd is not installed"
            ),
        ),
    ],
)
def test_a_fatbin_holding_ptx_links_and_runs(
    lk: Linker, tmp_path: Path, compress: tuple[str, ...]
) -> None:
    fatbin = _nvcc(tmp_path, *compress, "-gencode", "arch=compute_80,code=compute_80")
    state, _, _ = lk.create()
    assert lk.add(state, fatbin, b"k.fatbin", kind=FATBINARY) == CUDA_SUCCESS
    module = lk.load(lk.complete(state))
    np.testing.assert_array_equal(lk.run(module), EXPECTED)
    lk.lib.cuModuleUnload(module)
    lk.lib.cuLinkDestroy(state)
    state, _, _ = lk.create()
    path = str(tmp_path / "k.fatbin").encode()
    assert lk.lib.cuLinkAddFile_v2(state, FATBINARY, path, 0, ffi.NULL, ffi.NULL) == CUDA_SUCCESS
    module = lk.load(lk.complete(state))
    np.testing.assert_array_equal(lk.run(module), EXPECTED)
    lk.lib.cuModuleUnload(module)
    lk.lib.cuLinkDestroy(state)


@NEEDS_NVCC
def test_a_fatbin_holding_ptx_loads_as_a_module(lk: Linker, tmp_path: Path) -> None:
    """cuModuleLoadData of a fatbin with no machine code for the device JITs its PTX, as a
    driver does; one with machine code only has no binary for the device."""
    fatbin = _nvcc(tmp_path, "-no-compress", "-gencode", "arch=compute_80,code=compute_80")
    module = lk.load(fatbin)
    np.testing.assert_array_equal(lk.run(module), EXPECTED)
    lk.lib.cuModuleUnload(module)
    sass = _nvcc(tmp_path, "-gencode", "arch=compute_80,code=sm_80")
    out = ffi.new("CUmodule *")
    assert lk.lib.cuModuleLoadData(out, sass) == CUDA_ERROR_NO_BINARY_FOR_GPU


@NEEDS_NVCC
def test_a_fatbin_with_only_machine_code_is_refused(lk: Linker, tmp_path: Path) -> None:
    fatbin = _nvcc(tmp_path, "-gencode", "arch=compute_80,code=sm_80")
    _info, err, opts = _logs()
    state, _, _ = lk.create(opts)
    assert lk.add(state, fatbin, b"k.fatbin", kind=FATBINARY) == CUDA_ERROR_NO_BINARY_FOR_GPU
    assert "k.fatbin" in _text(err) and "cubin for sm_80" in _text(err)
    lk.lib.cuLinkDestroy(state)


@NEEDS_NVCC
@pytest.mark.parametrize("rdc", [False, True], ids=["whole", "relocatable"])
def test_a_host_object_links_through_its_fatbin(lk: Linker, tmp_path: Path, rdc: bool) -> None:
    src = tmp_path / "k.cu"
    src.write_text(KERNEL_CU)
    obj = tmp_path / "k.o"
    gencode = ["-gencode", "arch=compute_80,code=compute_80"]
    subprocess.run(
        [str(NVCC), "-c", *(["-rdc=true"] if rdc else []), *gencode, str(src), "-o", str(obj)],
        check=True,
        capture_output=True,
    )
    state, _, _ = lk.create()
    path = str(obj).encode()
    assert lk.lib.cuLinkAddFile_v2(state, OBJECT, path, 0, ffi.NULL, ffi.NULL) == CUDA_SUCCESS
    module = lk.load(lk.complete(state))
    np.testing.assert_array_equal(lk.run(module), EXPECTED)
    lk.lib.cuModuleUnload(module)
    lk.lib.cuLinkDestroy(state)
    # A library of it links the same (a member without device code is skipped).
    if shutil.which("ar"):
        (tmp_path / "empty.o").write_bytes(EMPTY_ELF)
        library = tmp_path / "libk.a"
        subprocess.run(["ar", "rcs", str(library), str(tmp_path / "empty.o"), str(obj)], check=True)
        state, _, _ = lk.create()
        rc = lk.lib.cuLinkAddFile_v2(state, LIBRARY, str(library).encode(), 0, ffi.NULL, ffi.NULL)
        assert rc == CUDA_SUCCESS
        module = lk.load(lk.complete(state))
        np.testing.assert_array_equal(lk.run(module), EXPECTED)
        lk.lib.cuModuleUnload(module)
        lk.lib.cuLinkDestroy(state)
    # An object with machine code only is refused like its fatbin.
    subprocess.run(
        [str(NVCC), "-c", "-gencode", "arch=compute_80,code=sm_80", str(src), "-o", str(obj)],
        check=True,
        capture_output=True,
    )
    _info, err, opts = _logs()
    state, _, _ = lk.create(opts)
    rc = lk.lib.cuLinkAddFile_v2(state, OBJECT, path, 0, ffi.NULL, ffi.NULL)
    assert rc == CUDA_ERROR_NO_BINARY_FOR_GPU
    assert "cubin for sm_80" in _text(err)
    lk.lib.cuLinkDestroy(state)


def test_a_fatbin_with_ptx_newer_than_the_device_is_refused(lk: Linker) -> None:
    fatbin = _fatbin([(1, 90, HEADER.encode() + b"\0")])
    _info, err, opts = _logs()
    state, _, _ = lk.create(opts)
    assert lk.add(state, fatbin, b"new.fatbin", kind=FATBINARY) == CUDA_ERROR_NO_BINARY_FOR_GPU
    assert "compute_90" in _text(err)
    # The newest PTX the device runs is the one linked.
    good = HELPER.encode() + b"\0"
    fatbin = _fatbin([(1, 75, b"junk\0"), (1, 80, good), (1, 90, b"junk\0"), (2, 80, b"x" * 8)])
    assert lk.add(state, fatbin, b"mixed.fatbin", kind=FATBINARY) == CUDA_SUCCESS
    lk.lib.cuLinkDestroy(state)


def _fatbin(entries: list[tuple[int, int, bytes]]) -> bytes:
    """A fatbin of uncompressed entries (kind, architecture, payload)."""
    body = b""
    for kind, arch, payload in entries:
        head = struct.pack(
            "<HHIQIIHHIIIQQQ", kind, 0x101, 64, len(payload), 0, 0, 0, 8, arch, 0, 0, 0x11, 0, 0
        )
        body += head + payload
    return struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(body)) + body


def test_machine_code_inputs_are_refused(lk: Linker) -> None:
    _info, err, opts = _logs()
    state, _, _ = lk.create(opts)
    elf = b"\x7fELF\x02\x01\x01" + b"\0" * 57
    assert lk.add(state, elf, b"k.cubin", kind=CUBIN) == CUDA_ERROR_NO_BINARY_FOR_GPU
    assert "k.cubin: a cubin" in _text(err)
    assert lk.add(state, elf, b"k.o", kind=OBJECT) == CUDA_ERROR_INVALID_IMAGE
    assert "k.o: not a host object" in _text(err)
    assert lk.add(state, b"!<arch>\n", b"k.a", kind=LIBRARY) == CUDA_ERROR_NO_BINARY_FOR_GPU
    assert "k.a: no member of the library holds device code" in _text(err)
    assert lk.add(state, b"not an archive", b"k.a", kind=LIBRARY) == CUDA_ERROR_INVALID_IMAGE
    truncated = b"!<arch>\n" + b"k.o/".ljust(48) + b"999".ljust(10) + b"`\n" + b"x" * 8
    assert lk.add(state, truncated, b"k.a", kind=LIBRARY) == CUDA_ERROR_INVALID_IMAGE
    assert lk.add(state, b"BC\xc0\xde", b"k.ltoir", kind=NVVM) == CUDA_ERROR_NOT_SUPPORTED
    assert lk.add(state, HELPER.encode(), kind=6) == CUDA_ERROR_INVALID_VALUE
    assert lk.add(state, HELPER.encode(), kind=-1) == CUDA_ERROR_INVALID_VALUE
    lk.lib.cuLinkDestroy(state)


def test_invalid_create_arguments(lk: Linker) -> None:
    state = ffi.new("CUlinkState *")
    keys = ffi.new("int[2]")
    values = ffi.new("void *[2]")
    assert lk.lib.cuLinkCreate_v2(0, ffi.NULL, ffi.NULL, ffi.NULL) == CUDA_ERROR_INVALID_VALUE
    assert lk.lib.cuLinkCreate_v2(1, ffi.NULL, values, state) == CUDA_ERROR_INVALID_VALUE
    assert lk.lib.cuLinkCreate_v2(1, keys, ffi.NULL, state) == CUDA_ERROR_INVALID_VALUE
    for bad in (NUM_OPTIONS, -1, 1000):
        keys[0] = bad
        assert lk.lib.cuLinkCreate_v2(1, keys, values, state) == CUDA_ERROR_INVALID_VALUE
    keys[0], keys[1] = THREADS_PER_BLOCK, TARGET  # cuda.h: cannot be combined
    assert lk.lib.cuLinkCreate_v2(2, keys, values, state) == CUDA_ERROR_INVALID_VALUE
    ctx = ffi.new("void **")
    assert lk.lib.cuCtxGetCurrent(ctx) == CUDA_SUCCESS
    assert lk.lib.cuCtxSetCurrent(ffi.NULL) == CUDA_SUCCESS
    try:
        assert lk.lib.cuLinkCreate_v2(0, ffi.NULL, ffi.NULL, state) == CUDA_ERROR_INVALID_CONTEXT
    finally:
        lk.lib.cuCtxSetCurrent(ctx[0])


def test_invalid_add_complete_and_destroy_arguments(lk: Linker, tmp_path: Path) -> None:
    _info, err, opts = _logs()
    state, _, _ = lk.create(opts)
    data = HELPER.encode()
    buf = ffi.from_buffer(data)
    add = lk.lib.cuLinkAddData_v2
    assert add(ffi.NULL, PTX, buf, len(data), ffi.NULL, 0, ffi.NULL, ffi.NULL) == (
        CUDA_ERROR_INVALID_HANDLE
    )
    assert add(state, PTX, ffi.NULL, len(data), ffi.NULL, 0, ffi.NULL, ffi.NULL) == (
        CUDA_ERROR_INVALID_VALUE
    )
    assert add(state, PTX, buf, 0, ffi.NULL, 0, ffi.NULL, ffi.NULL) == CUDA_ERROR_INVALID_VALUE
    assert add(state, PTX, buf, len(data), ffi.NULL, 1, ffi.NULL, ffi.NULL) == (
        CUDA_ERROR_INVALID_VALUE
    )
    keys = ffi.new("int[1]")
    values = ffi.new("void *[1]")
    # An input takes compiler options only (cuda.h lists the ones it refuses).
    for option in (WALL_TIME, INFO_LOG, ERROR_LOG, 8, TARGET, NUM_OPTIONS):
        keys[0] = option
        assert add(state, PTX, buf, len(data), ffi.NULL, 1, keys, values) == (
            CUDA_ERROR_INVALID_VALUE
        )
    keys[0] = OPTIMIZATION_LEVEL
    assert add(state, PTX, buf, len(data), ffi.NULL, 1, keys, values) == CUDA_SUCCESS
    add_file = lk.lib.cuLinkAddFile_v2
    assert add_file(state, PTX, ffi.NULL, 0, ffi.NULL, ffi.NULL) == CUDA_ERROR_INVALID_VALUE
    missing = str(tmp_path / "missing.ptx").encode()
    assert add_file(state, PTX, missing, 0, ffi.NULL, ffi.NULL) == CUDA_ERROR_FILE_NOT_FOUND
    assert add_file(ffi.NULL, PTX, missing, 0, ffi.NULL, ffi.NULL) == CUDA_ERROR_INVALID_HANDLE
    image = ffi.new("void **")
    assert lk.lib.cuLinkComplete(state, ffi.NULL, ffi.NULL) == CUDA_ERROR_INVALID_VALUE
    assert lk.lib.cuLinkComplete(ffi.NULL, image, ffi.NULL) == CUDA_ERROR_INVALID_HANDLE
    assert lk.lib.cuLinkComplete(state, image, ffi.NULL) == CUDA_SUCCESS  # sizeOut is optional
    assert lk.lib.cuLinkDestroy(state) == CUDA_SUCCESS
    # A destroyed state is no state.
    assert add(state, PTX, buf, len(data), ffi.NULL, 0, ffi.NULL, ffi.NULL) == (
        CUDA_ERROR_INVALID_HANDLE
    )
    assert lk.lib.cuLinkComplete(state, image, ffi.NULL) == CUDA_ERROR_INVALID_HANDLE
    assert lk.lib.cuLinkDestroy(state) == CUDA_ERROR_INVALID_HANDLE
    assert lk.lib.cuLinkDestroy(ffi.NULL) == CUDA_ERROR_INVALID_HANDLE
    # Completing with nothing added is refused, with the reason in the log.
    empty, _, _ = lk.create(opts)
    assert lk.lib.cuLinkComplete(empty, image, ffi.NULL) == CUDA_ERROR_INVALID_VALUE
    assert "nothing to link" in _text(err)
    lk.lib.cuLinkDestroy(empty)


def test_inputs_added_after_complete_make_a_new_image(lk: Linker) -> None:
    state, _, _ = lk.create()
    assert lk.add(state, HELPER.encode()) == CUDA_SUCCESS
    first = ffi.new("void **")
    assert lk.lib.cuLinkComplete(state, first, ffi.NULL) == CUDA_SUCCESS
    assert lk.add(state, CALLER.encode()) == CUDA_SUCCESS
    module = lk.load(lk.complete(state))
    np.testing.assert_array_equal(lk.run(module), EXPECTED)
    lk.lib.cuModuleUnload(module)
    # The first image is still the state's, and still loads.
    module = ffi.new("CUmodule *")
    assert lk.lib.cuModuleLoadData(module, first[0]) == CUDA_SUCCESS
    func = ffi.new("CUfunction *")
    assert lk.lib.cuModuleGetFunction(func, module[0], b"k") != CUDA_SUCCESS
    lk.lib.cuModuleUnload(module[0])
    lk.lib.cuLinkDestroy(state)


CORE_LINK = """
import sys, warnings
import numpy as np
import aruntime as ar

gpu = ar.open_backend("cuda-sim")  # first: cuda-bindings then finds the sim as libcuda.so.1
from cuda.bindings import driver
from cuda.core import Device, LaunchConfig, Linker, LinkerOptions, ObjectCode, launch

device = Device(0)
device.set_current()
caller, helper = (open(path, "rb").read() for path in sys.argv[1:3])
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    linker = Linker(ObjectCode.from_ptx(caller, name="caller"),
                    ObjectCode.from_ptx(helper, name="helper"),
                    options=LinkerOptions(arch="sm_" + device.arch))
if not any("driver APIs will be used" in str(w.message) for w in caught):
    print("nvjitlink")  # cuda.core links with nvJitLink here, not the driver
    sys.exit(0)
kernel = linker.link("cubin").get_kernel("k")
assert "linked 2 inputs" in linker.get_info_log(), linker.get_info_log()
stream = device.create_stream()
buffer = device.allocate(256, stream=stream)
launch(stream, LaunchConfig(grid=1, block=64), kernel, buffer)
stream.sync()
out = np.empty(64, np.int32)
assert driver.cuMemcpyDtoH(out.ctypes.data, int(buffer.handle), out.nbytes)[0] == 0
buffer.close(stream)
stream.close()
linker.close()
gpu.close()
print(" ".join(map(str, out)))
"""


def test_cuda_core_links_through_the_driver(tmp_path: Path) -> None:
    """cuda.core's Linker without nvJitLink: cuda-bindings' cuLink* on the sim."""
    pytest.importorskip("cuda.core", reason="pip install cuda-core")
    (tmp_path / "caller.ptx").write_text(CALLER)
    (tmp_path / "helper.ptx").write_text(HELPER)
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            CORE_LINK,
            str(tmp_path / "caller.ptx"),
            str(tmp_path / "helper.ptx"),
        ],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(root)),
        cwd=root,
        timeout=120,
    )
    assert proc.returncode == 0, f"rc={proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    last = proc.stdout.split("\n")[-2]
    if last == "nvjitlink":
        pytest.skip("cuda.core links with nvJitLink here (a cubin, which the sim refuses)")
    assert np.array_equal(np.array(last.split(), dtype=np.int32), EXPECTED)
