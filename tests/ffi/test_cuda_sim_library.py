"""cuda-sim's context-independent loading, function attributes, cuLaunchKernelEx
and occupancy calculator: the driver calls cuda.core's ObjectCode, Kernel and
launch() make.  The image is the project's committed vector_ops.ptx, so these
run whichever way the sim executes PTX.
"""

from __future__ import annotations

import shutil
import subprocess
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
    CUDA_ERROR_NOT_FOUND,
    CUDA_SUCCESS,
    Cuda,
    cu,  # noqa: F401  (fixture)
    sim_library_path,
)

ROOT = Path(__file__).resolve().parents[2]
VECTOR_OPS = ROOT / "aruntime" / "kernels" / "vector_ops.ptx"

CUDA_ERROR_NO_BINARY_FOR_GPU = 209
CUDA_ERROR_FILE_NOT_FOUND = 301
CUDA_ERROR_NOT_SUPPORTED = 801

ffi = cffi.FFI()
ffi.cdef(
    """
typedef int CUresult;
typedef struct CUlib_st *CUlibrary;
typedef struct CUkern_st *CUkernel;
typedef struct CUfunc_st *CUfunction;
typedef struct CUmod_st *CUmodule;
typedef struct CUstream_st *CUstream;
typedef size_t (*CUoccupancyB2DSize)(int);
typedef union { char pad[64]; int cooperative; struct { unsigned x, y, z; } clusterDim;
                int priority; } CUlaunchAttributeValue;
typedef struct { int id; char pad[4]; CUlaunchAttributeValue value; } CUlaunchAttribute;
typedef struct {
    unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
    CUstream hStream; CUlaunchAttribute *attrs; unsigned numAttrs;
} CUlaunchConfig;

CUresult cuCtxGetCurrent(void **);
CUresult cuCtxSetCurrent(void *);
CUresult cuCtxSynchronize(void);
CUresult cuMemAlloc_v2(unsigned long long *, size_t);
CUresult cuMemFree_v2(unsigned long long);
CUresult cuMemcpyHtoD_v2(unsigned long long, const void *, size_t);
CUresult cuMemcpyDtoH_v2(void *, unsigned long long, size_t);
CUresult cuModuleGetFunction(CUfunction *, CUmodule, const char *);
CUresult cuModuleUnload(CUmodule);
CUresult cuLaunchKernel(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                        unsigned, CUstream, void **, void **);
CUresult cuGetProcAddress(const char *, void **, int, unsigned long long);

CUresult cuLibraryLoadData(CUlibrary *, const void *, int *, void **, unsigned, int *, void **,
                           unsigned);
CUresult cuLibraryLoadFromFile(CUlibrary *, const char *, int *, void **, unsigned, int *,
                               void **, unsigned);
CUresult cuLibraryUnload(CUlibrary);
CUresult cuLibraryGetKernel(CUkernel *, CUlibrary, const char *);
CUresult cuLibraryGetModule(CUmodule *, CUlibrary);
CUresult cuKernelGetFunction(CUfunction *, CUkernel);
CUresult cuKernelGetLibrary(CUlibrary *, CUkernel);
CUresult cuKernelGetName(const char **, CUkernel);
CUresult cuKernelGetParamInfo(CUkernel, size_t, size_t *, size_t *);
CUresult cuKernelGetAttribute(int *, int, CUkernel, int);
CUresult cuKernelSetAttribute(int, int, CUkernel, int);
CUresult cuFuncGetAttribute(int *, int, CUfunction);
CUresult cuFuncSetAttribute(CUfunction, int, int);
CUresult cuFuncSetCacheConfig(CUfunction, int);
CUresult cuFuncGetName(const char **, CUfunction);
CUresult cuFuncGetModule(CUmodule *, CUfunction);
CUresult cuFuncIsLoaded(int *, CUfunction);
CUresult cuFuncLoad(CUfunction);
CUresult cuLaunchKernelEx(const CUlaunchConfig *, CUfunction, void **, void **);
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *, CUfunction, int, size_t);
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *, CUfunction, int, size_t,
                                                              unsigned);
CUresult cuOccupancyMaxPotentialBlockSize(int *, int *, CUfunction, CUoccupancyB2DSize, size_t,
                                          int);
CUresult cuOccupancyAvailableDynamicSMemPerBlock(size_t *, CUfunction, int, int);
"""
)

# CUfunction_attribute
MAX_THREADS_PER_BLOCK, SHARED_SIZE_BYTES, NUM_REGS, PTX_VERSION = 0, 1, 4, 5
MAX_DYNAMIC_SHARED, CARVEOUT, REQUIRED_CLUSTER_WIDTH = 8, 9, 11
# CUlaunchAttributeID
ATTR_COOPERATIVE, ATTR_CLUSTER_DIMENSION, ATTR_PROGRAMMATIC_EVENT, ATTR_PRIORITY = 2, 4, 7, 8

NEW_ENTRY_POINTS = [
    "cuLibraryLoadData",
    "cuLibraryLoadFromFile",
    "cuLibraryUnload",
    "cuLibraryGetKernel",
    "cuLibraryGetModule",
    "cuKernelGetFunction",
    "cuKernelGetLibrary",
    "cuKernelGetName",
    "cuKernelGetParamInfo",
    "cuKernelGetAttribute",
    "cuKernelSetAttribute",
    "cuKernelSetCacheConfig",
    "cuFuncGetAttribute",
    "cuFuncSetAttribute",
    "cuFuncSetCacheConfig",
    "cuFuncGetName",
    "cuFuncGetModule",
    "cuFuncIsLoaded",
    "cuFuncLoad",
    "cuLaunchKernelEx",
    "cuOccupancyMaxActiveBlocksPerMultiprocessor",
    "cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags",
    "cuOccupancyMaxPotentialBlockSize",
    "cuOccupancyMaxPotentialBlockSizeWithFlags",
    "cuOccupancyAvailableDynamicSMemPerBlock",
]


class Sim:
    """This file's view of the driver (the shared cffi view lacks these calls)."""

    def __init__(self) -> None:
        self.lib: Any = ffi.dlopen(str(sim_library_path()))

    def check(self, rc: int) -> None:
        assert rc == CUDA_SUCCESS, f"CUDA call failed: {rc}"

    def load(self, image: bytes) -> Any:
        out = ffi.new("CUlibrary *")
        self.check(
            self.lib.cuLibraryLoadData(out, image, ffi.NULL, ffi.NULL, 0, ffi.NULL, ffi.NULL, 0)
        )
        return out[0]

    def kernel(self, library: Any, name: bytes) -> Any:
        out = ffi.new("CUkernel *")
        self.check(self.lib.cuLibraryGetKernel(out, library, name))
        return out[0]

    def attribute(self, func: Any, attrib: int) -> int:
        out = ffi.new("int *")
        self.check(self.lib.cuFuncGetAttribute(out, attrib, ffi.cast("CUfunction", func)))
        return int(out[0])


@pytest.fixture
def sim(cu: Cuda) -> Iterator[Sim]:  # noqa: F811  (cu: the context fixture)
    yield Sim()


@pytest.fixture
def scale(sim: Sim) -> Iterator[tuple[Any, Any]]:
    """vector_ops.ptx as a library, and its scale_f32(n, a, y) kernel: y *= a."""
    library = sim.load(VECTOR_OPS.read_bytes() + b"\0")
    yield library, sim.kernel(library, b"scale_f32")
    sim.lib.cuLibraryUnload(library)


def _scaled(sim: Sim, launch: Any, n: int = 1000, a: float = 3.0) -> np.ndarray:
    """Uploads 0..n-1, lets launch(args) run scale_f32 on it, returns the result."""
    host = np.arange(n, dtype=np.float32)
    dptr = ffi.new("unsigned long long *")
    sim.check(sim.lib.cuMemAlloc_v2(dptr, host.nbytes))
    try:
        sim.check(sim.lib.cuMemcpyHtoD_v2(dptr[0], ffi.from_buffer(host), host.nbytes))
        values = [ffi.new("unsigned int *", n), ffi.new("float *", a), dptr]
        args = ffi.new("void *[3]", [ffi.cast("void *", v) for v in values])
        launch(args)
        sim.check(sim.lib.cuCtxSynchronize())
        out = np.empty_like(host)
        sim.check(sim.lib.cuMemcpyDtoH_v2(ffi.from_buffer(out), dptr[0], out.nbytes))
        return out
    finally:
        sim.lib.cuMemFree_v2(dptr[0])


def test_a_library_kernel_launches_as_a_function_and_as_itself(
    sim: Sim, scale: tuple[Any, Any]
) -> None:
    _, kernel = scale
    func = ffi.new("CUfunction *")
    sim.check(sim.lib.cuKernelGetFunction(func, kernel))
    expected = 3.0 * np.arange(1000, dtype=np.float32)
    grid = (1000 + 255) // 256
    for handle in (func[0], ffi.cast("CUfunction", kernel)):  # a CUkernel is a CUfunction
        out = _scaled(
            sim,
            lambda args, h=handle: sim.check(
                sim.lib.cuLaunchKernel(h, grid, 1, 1, 256, 1, 1, 0, ffi.NULL, args, ffi.NULL)
            ),
        )
        np.testing.assert_array_equal(out, expected)


def test_launch_kernel_ex_runs_the_config(sim: Sim, scale: tuple[Any, Any]) -> None:
    _, kernel = scale
    config = ffi.new("CUlaunchConfig *")
    config.gridDimX, config.gridDimY, config.gridDimZ = 4, 1, 1
    config.blockDimX, config.blockDimY, config.blockDimZ = 256, 1, 1
    attrs = ffi.new("CUlaunchAttribute[2]")
    attrs[0].id = ATTR_PRIORITY
    attrs[1].id = ATTR_COOPERATIVE  # value 0: an ordinary launch
    config.attrs, config.numAttrs = attrs, 2
    func = ffi.cast("CUfunction", kernel)
    out = _scaled(
        sim, lambda args: sim.check(sim.lib.cuLaunchKernelEx(config, func, args, ffi.NULL))
    )
    np.testing.assert_array_equal(out, 3.0 * np.arange(1000, dtype=np.float32))


@pytest.mark.parametrize(
    ("attr_id", "field", "value", "expected"),
    [
        (ATTR_COOPERATIVE, "cooperative", 1, CUDA_ERROR_NOT_SUPPORTED),
        (ATTR_CLUSTER_DIMENSION, "clusterDim", (2, 1, 1), CUDA_ERROR_NOT_SUPPORTED),
        (ATTR_PROGRAMMATIC_EVENT, None, None, CUDA_ERROR_NOT_SUPPORTED),
        (99, None, None, CUDA_ERROR_INVALID_VALUE),
    ],
)
def test_launch_attributes_that_change_semantics_are_refused(
    sim: Sim, scale: tuple[Any, Any], attr_id: int, field: str | None, value: Any, expected: int
) -> None:
    _, kernel = scale
    config = ffi.new("CUlaunchConfig *")
    config.gridDimX = config.gridDimY = config.gridDimZ = 1
    config.blockDimX = config.blockDimY = config.blockDimZ = 1
    attr = ffi.new("CUlaunchAttribute *")
    attr.id = attr_id
    if field == "cooperative":
        attr.value.cooperative = value
    elif field == "clusterDim":
        attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = value
    config.attrs, config.numAttrs = attr, 1
    args = ffi.new("void *[3]")  # never read: the launch is refused first
    rc = sim.lib.cuLaunchKernelEx(config, ffi.cast("CUfunction", kernel), args, ffi.NULL)
    assert rc == expected


def test_launch_kernel_ex_argument_errors(sim: Sim, scale: tuple[Any, Any]) -> None:
    _, kernel = scale
    func = ffi.cast("CUfunction", kernel)
    assert sim.lib.cuLaunchKernelEx(ffi.NULL, func, ffi.NULL, ffi.NULL) == CUDA_ERROR_INVALID_VALUE
    config = ffi.new("CUlaunchConfig *")
    config.gridDimX = config.gridDimY = config.gridDimZ = 1
    config.blockDimX = config.blockDimY = config.blockDimZ = 1
    config.numAttrs = 1  # and attrs NULL
    args = ffi.new("void *[3]")
    assert sim.lib.cuLaunchKernelEx(config, func, args, ffi.NULL) == CUDA_ERROR_INVALID_VALUE
    config.numAttrs = 0
    config.blockDimX = 2048  # past the 1024-thread limit, as cuLaunchKernel checks
    assert sim.lib.cuLaunchKernelEx(config, func, args, ffi.NULL) == CUDA_ERROR_INVALID_VALUE


def test_kernel_queries(sim: Sim, scale: tuple[Any, Any]) -> None:
    library, kernel = scale
    name = ffi.new("const char **")
    sim.check(sim.lib.cuKernelGetName(name, kernel))
    assert ffi.string(name[0]) == b"scale_f32"
    owner = ffi.new("CUlibrary *")
    sim.check(sim.lib.cuKernelGetLibrary(owner, kernel))
    assert owner[0] == library
    offset, size = ffi.new("size_t *"), ffi.new("size_t *")
    layout = []
    for index in range(3):
        sim.check(sim.lib.cuKernelGetParamInfo(kernel, index, offset, size))
        layout.append((offset[0], size[0]))
    assert layout == [(0, 4), (4, 4), (8, 8)]  # (u32 n, f32 a, u64 y)
    assert sim.lib.cuKernelGetParamInfo(kernel, 3, offset, size) == CUDA_ERROR_INVALID_VALUE
    # The same kernel again is the same handle.
    assert sim.kernel(library, b"scale_f32") == kernel
    module, func_module = ffi.new("CUmodule *"), ffi.new("CUmodule *")
    sim.check(sim.lib.cuLibraryGetModule(module, library))
    sim.check(sim.lib.cuFuncGetModule(func_module, ffi.cast("CUfunction", kernel)))
    assert module[0] == func_module[0]
    sim.check(sim.lib.cuFuncGetName(name, ffi.cast("CUfunction", kernel)))
    assert ffi.string(name[0]) == b"scale_f32"
    state = ffi.new("int *")
    sim.check(sim.lib.cuFuncIsLoaded(state, ffi.cast("CUfunction", kernel)))
    assert state[0] == 1  # CU_FUNCTION_LOADING_STATE_LOADED
    sim.check(sim.lib.cuFuncLoad(ffi.cast("CUfunction", kernel)))


def test_library_lookups_fail_cleanly(sim: Sim, scale: tuple[Any, Any]) -> None:
    library, _ = scale
    out = ffi.new("CUkernel *")
    assert sim.lib.cuLibraryGetKernel(out, library, b"no_such_kernel") == CUDA_ERROR_NOT_FOUND
    assert sim.lib.cuLibraryGetKernel(out, library, ffi.NULL) == CUDA_ERROR_INVALID_VALUE
    bogus = ffi.cast("CUlibrary", 0xDEAD)
    assert sim.lib.cuLibraryGetKernel(out, bogus, b"scale_f32") == CUDA_ERROR_INVALID_HANDLE
    # A CUfunction from cuModuleGetFunction is not a CUkernel.
    module, func = ffi.new("CUmodule *"), ffi.new("CUfunction *")
    sim.check(sim.lib.cuLibraryGetModule(module, library))
    sim.check(sim.lib.cuModuleGetFunction(func, module[0], b"add_f32"))
    name = ffi.new("const char **")
    plain = ffi.cast("CUkernel", func[0])
    assert sim.lib.cuKernelGetName(name, plain) == CUDA_ERROR_INVALID_HANDLE
    assert sim.lib.cuKernelGetFunction(ffi.new("CUfunction *"), plain) == CUDA_ERROR_INVALID_HANDLE


def test_unload_invalidates_the_library_and_its_kernels(sim: Sim) -> None:
    library = sim.load(VECTOR_OPS.read_bytes() + b"\0")
    kernel = sim.kernel(library, b"saxpy")
    sim.check(sim.lib.cuLibraryUnload(library))
    name = ffi.new("const char **")
    assert sim.lib.cuKernelGetName(name, kernel) == CUDA_ERROR_INVALID_HANDLE
    assert sim.lib.cuLibraryUnload(library) == CUDA_ERROR_INVALID_HANDLE
    assert sim.lib.cuLibraryGetKernel(ffi.new("CUkernel *"), library, b"saxpy") == (
        CUDA_ERROR_INVALID_HANDLE
    )


def test_load_from_file(sim: Sim, tmp_path: Path) -> None:
    library = ffi.new("CUlibrary *")
    args = (ffi.NULL, ffi.NULL, 0, ffi.NULL, ffi.NULL, 0)
    path = str(VECTOR_OPS).encode()
    sim.check(sim.lib.cuLibraryLoadFromFile(library, path, *args))
    assert sim.kernel(library[0], b"iota_u32") != ffi.NULL
    sim.check(sim.lib.cuLibraryUnload(library[0]))
    missing = str(tmp_path / "missing.ptx").encode()
    assert sim.lib.cuLibraryLoadFromFile(library, missing, *args) == CUDA_ERROR_FILE_NOT_FOUND
    assert sim.lib.cuLibraryLoadFromFile(library, ffi.NULL, *args) == CUDA_ERROR_INVALID_VALUE


def test_options_are_checked(sim: Sim) -> None:
    image = VECTOR_OPS.read_bytes() + b"\0"
    library = ffi.new("CUlibrary *")
    # Both library options are accepted (they only permit the driver to keep pointers).
    options = ffi.new("int[2]", [0, 1])
    values = ffi.new("void *[2]")
    sim.check(sim.lib.cuLibraryLoadData(library, image, ffi.NULL, ffi.NULL, 0, options, values, 2))
    sim.check(sim.lib.cuLibraryUnload(library[0]))
    bad = ffi.new("int[1]", [7])
    rc = sim.lib.cuLibraryLoadData(library, image, ffi.NULL, ffi.NULL, 0, bad, values, 1)
    assert rc == CUDA_ERROR_INVALID_VALUE
    rc = sim.lib.cuLibraryLoadData(library, image, ffi.NULL, ffi.NULL, 2, ffi.NULL, ffi.NULL, 0)
    assert rc == CUDA_ERROR_INVALID_VALUE
    rc = sim.lib.cuLibraryLoadData(ffi.NULL, image, ffi.NULL, ffi.NULL, 0, ffi.NULL, ffi.NULL, 0)
    assert rc == CUDA_ERROR_INVALID_VALUE


def test_gpu_binaries_are_refused(sim: Sim) -> None:
    library = ffi.new("CUlibrary *")
    no_options = (ffi.NULL, ffi.NULL, 0, ffi.NULL, ffi.NULL, 0)
    cubin = bytearray(64)  # an ELF64 header for EM_CUDA (190), as nvcc writes cubins
    cubin[:6] = b"\x7fELF\x02\x01"
    cubin[18:20] = (190).to_bytes(2, "little")
    assert sim.lib.cuLibraryLoadData(library, bytes(cubin), *no_options) == (
        CUDA_ERROR_NO_BINARY_FOR_GPU
    )
    fatbin = bytes.fromhex("50ed55ba") + bytes.fromhex("01001000") + bytes(56)  # no PTX in it
    assert sim.lib.cuLibraryLoadData(library, fatbin, *no_options) == CUDA_ERROR_NO_BINARY_FOR_GPU


def test_a_library_loads_without_a_current_context(sim: Sim) -> None:
    current = ffi.new("void **")
    sim.check(sim.lib.cuCtxGetCurrent(current))
    sim.check(sim.lib.cuCtxSetCurrent(ffi.NULL))
    try:
        library = sim.load(VECTOR_OPS.read_bytes() + b"\0")
        kernel = sim.kernel(library, b"fill_f32")
        # Getting the function needs a context, as on the driver.
        func = ffi.new("CUfunction *")
        assert sim.lib.cuKernelGetFunction(func, kernel) == CUDA_ERROR_INVALID_CONTEXT
    finally:
        sim.check(sim.lib.cuCtxSetCurrent(current[0]))
    sim.check(sim.lib.cuKernelGetFunction(func, kernel))
    sim.check(sim.lib.cuLibraryUnload(library))


def test_function_attributes(sim: Sim, scale: tuple[Any, Any]) -> None:
    _, kernel = scale
    func = ffi.cast("CUfunction", kernel)
    assert sim.attribute(func, MAX_THREADS_PER_BLOCK) == 1024
    assert sim.attribute(func, SHARED_SIZE_BYTES) == 0
    assert sim.attribute(func, NUM_REGS) == 32
    assert sim.attribute(func, PTX_VERSION) == 80
    assert sim.attribute(func, MAX_DYNAMIC_SHARED) == 49152
    assert sim.attribute(func, CARVEOUT) == -1
    assert sim.attribute(func, REQUIRED_CLUSTER_WIDTH) == 0
    out = ffi.new("int *")
    assert sim.lib.cuFuncGetAttribute(out, 99, func) == CUDA_ERROR_INVALID_VALUE
    assert sim.lib.cuFuncGetAttribute(ffi.NULL, 0, func) == CUDA_ERROR_INVALID_VALUE
    assert sim.lib.cuKernelGetAttribute(out, NUM_REGS, kernel, 0) == CUDA_SUCCESS
    assert out[0] == 32
    assert sim.lib.cuKernelGetAttribute(out, NUM_REGS, kernel, 7) == 101  # INVALID_DEVICE

    sim.check(sim.lib.cuFuncSetAttribute(func, CARVEOUT, 50))
    assert sim.attribute(func, CARVEOUT) == 50
    assert sim.lib.cuFuncSetAttribute(func, CARVEOUT, 101) == CUDA_ERROR_INVALID_VALUE
    assert sim.lib.cuFuncSetAttribute(func, NUM_REGS, 16) == CUDA_ERROR_INVALID_VALUE  # read-only
    assert sim.lib.cuFuncSetAttribute(func, REQUIRED_CLUSTER_WIDTH, 2) == CUDA_ERROR_NOT_SUPPORTED
    # the opt-in: past 48 KiB up to an A100's 163 KiB per block, static included
    sim.check(sim.lib.cuFuncSetAttribute(func, MAX_DYNAMIC_SHARED, 49153))
    sim.check(sim.lib.cuFuncSetAttribute(func, MAX_DYNAMIC_SHARED, 166912))
    assert sim.attribute(func, MAX_DYNAMIC_SHARED) == 166912
    assert sim.lib.cuFuncSetAttribute(func, MAX_DYNAMIC_SHARED, 166913) == CUDA_ERROR_INVALID_VALUE
    sim.check(sim.lib.cuFuncSetCacheConfig(func, 1))
    assert sim.lib.cuFuncSetCacheConfig(func, 4) == CUDA_ERROR_INVALID_VALUE


def test_max_dynamic_shared_size_limits_launches(sim: Sim, scale: tuple[Any, Any]) -> None:
    _, kernel = scale
    func = ffi.cast("CUfunction", kernel)
    sim.check(sim.lib.cuKernelSetAttribute(MAX_DYNAMIC_SHARED, 1024, kernel, 0))
    assert sim.attribute(func, MAX_DYNAMIC_SHARED) == 1024

    def launch(shared: int) -> int:
        rcs = []
        _scaled(
            sim,
            lambda args: rcs.append(
                sim.lib.cuLaunchKernel(func, 4, 1, 1, 256, 1, 1, shared, ffi.NULL, args, ffi.NULL)
            ),
        )
        return int(rcs[0])

    assert launch(1024) == CUDA_SUCCESS
    assert launch(1025) == CUDA_ERROR_INVALID_VALUE
    sim.check(sim.lib.cuFuncSetAttribute(func, MAX_DYNAMIC_SHARED, 49152))
    assert launch(49152) == CUDA_SUCCESS
    assert launch(49153) == CUDA_ERROR_INVALID_VALUE
    sim.check(sim.lib.cuFuncSetAttribute(func, MAX_DYNAMIC_SHARED, 166912))
    assert launch(166912) == CUDA_SUCCESS


@pytest.mark.parametrize(
    ("block", "shared", "blocks"),
    [
        (32, 0, 32),  # the 32-block limit
        (256, 0, 8),  # 2048 threads (and 65536 registers at 32 a thread)
        (1024, 0, 2),
        (1000, 0, 2),  # rounded up to whole warps
        (128, 40000, 4),  # 167936 bytes of shared memory
        (128, 49153, 0),  # more than a block may have
        (1025, 0, 0),  # more threads than a block may have
    ],
)
def test_occupancy(sim: Sim, scale: tuple[Any, Any], block: int, shared: int, blocks: int) -> None:
    func = ffi.cast("CUfunction", scale[1])
    out = ffi.new("int *")
    sim.check(sim.lib.cuOccupancyMaxActiveBlocksPerMultiprocessor(out, func, block, shared))
    assert out[0] == blocks
    sim.check(
        sim.lib.cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(out, func, block, shared, 1)
    )
    assert out[0] == blocks


def test_occupancy_argument_errors(sim: Sim, scale: tuple[Any, Any]) -> None:
    func = ffi.cast("CUfunction", scale[1])
    out = ffi.new("int *")
    lib = sim.lib
    assert (
        lib.cuOccupancyMaxActiveBlocksPerMultiprocessor(out, func, 0, 0) == CUDA_ERROR_INVALID_VALUE
    )
    rc = lib.cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(out, func, 32, 0, 2)
    assert rc == CUDA_ERROR_INVALID_VALUE
    bogus = ffi.cast("CUfunction", 0xDEAD)
    assert lib.cuOccupancyMaxActiveBlocksPerMultiprocessor(out, bogus, 32, 0) == (
        CUDA_ERROR_INVALID_HANDLE
    )


def test_potential_block_size(sim: Sim, scale: tuple[Any, Any]) -> None:
    func = ffi.cast("CUfunction", scale[1])
    grid, block = ffi.new("int *"), ffi.new("int *")
    sm_count = ffi.new("int *")
    load = cffi.FFI()
    load.cdef("int cuDeviceGetAttribute(int *, int, int);")
    load.dlopen(str(sim_library_path())).cuDeviceGetAttribute(sm_count, 16, 0)
    sim.check(sim.lib.cuOccupancyMaxPotentialBlockSize(grid, block, func, ffi.NULL, 0, 0))
    assert (block[0], grid[0]) == (1024, 2 * sm_count[0])
    sim.check(sim.lib.cuOccupancyMaxPotentialBlockSize(grid, block, func, ffi.NULL, 0, 100))
    # 64 threads fill the multiprocessor (32 blocks); 100 and 96 reach 1600 and 2016.
    assert (block[0], grid[0]) == (64, 32 * sm_count[0])

    @ffi.callback("size_t(int)")
    def shared_for(size: int) -> int:
        return size * 128  # past 384 threads a block needs more than 49152 bytes

    sim.check(sim.lib.cuOccupancyMaxPotentialBlockSize(grid, block, func, shared_for, 0, 0))
    # 4 blocks of 320 (40960 bytes each) keep 1280 threads resident: as many
    # as 256, 160, 128 or 64 do, and the largest of them wins.
    assert (block[0], grid[0]) == (320, 4 * sm_count[0])


def test_available_dynamic_shared_memory(sim: Sim, scale: tuple[Any, Any]) -> None:
    func = ffi.cast("CUfunction", scale[1])
    out = ffi.new("size_t *")
    sim.check(sim.lib.cuOccupancyAvailableDynamicSMemPerBlock(out, func, 1, 256))
    assert out[0] == 49152  # capped by the per-block limit
    sim.check(sim.lib.cuOccupancyAvailableDynamicSMemPerBlock(out, func, 4, 256))
    assert out[0] == 167936 // 4
    sim.check(sim.lib.cuOccupancyAvailableDynamicSMemPerBlock(out, func, 9, 256))
    assert out[0] == 0  # 9 blocks of 256 threads never fit
    rc = sim.lib.cuOccupancyAvailableDynamicSMemPerBlock(out, func, 0, 256)
    assert rc == CUDA_ERROR_INVALID_VALUE


@pytest.mark.parametrize("name", NEW_ENTRY_POINTS)
def test_get_proc_address_finds_them(sim: Sim, name: str) -> None:
    pfn = ffi.new("void **")
    sim.check(sim.lib.cuGetProcAddress(name.encode(), pfn, 13050, 0))
    assert pfn[0] != ffi.NULL


LAYOUT_PROBE = """
#include <stddef.h>
#include <stdio.h>
#include HEADER
int main(void) {
    printf("%zu %zu %zu %zu %zu %zu %zu\\n", sizeof(CUlaunchConfig),
           offsetof(CUlaunchConfig, hStream), offsetof(CUlaunchConfig, attrs),
           offsetof(CUlaunchConfig, numAttrs), sizeof(CUlaunchAttribute),
           offsetof(CUlaunchAttribute, value), sizeof(CUlaunchAttributeValue));
    return 0;
}
"""


@pytest.mark.skipif(
    not Path("/usr/local/cuda/include/cuda.h").exists() or shutil.which("cc") is None,
    reason="no /usr/local/cuda/include/cuda.h or C compiler here",
)
def test_launch_config_layout_matches_cuda_h(tmp_path: Path) -> None:
    layouts = []
    for header, include in (
        ('"cuda_types.h"', ROOT / "ffi" / "cuda" / "sim"),
        ("<cuda.h>", Path("/usr/local/cuda/include")),
    ):
        src, exe = tmp_path / "probe.c", tmp_path / "probe"
        src.write_text(LAYOUT_PROBE.replace("HEADER", header))
        subprocess.run(["cc", f"-I{include}", str(src), "-o", str(exe)], check=True)
        layouts.append(subprocess.run([str(exe)], capture_output=True, text=True).stdout)
    assert layouts[0] == layouts[1]
