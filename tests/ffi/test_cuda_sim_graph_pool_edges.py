"""Two answers cuda-sim used to get wrong, as cuda.core's suite found: an
empty graph instantiates (also through cuGraphInstantiateWithParams, which
cuda.core's GraphBuilder calls) and launching it does nothing, and a
zero-byte stream-ordered allocation succeeds with a pointer that frees."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cffi
import pytest
from _cudasim_support import (
    CUDA_ERROR_INVALID_HANDLE,
    CUDA_ERROR_INVALID_VALUE,
    CUDA_SUCCESS,
    Cuda,
    cu,  # noqa: F401  (fixture)
    sim_library_path,
)

ffi = cffi.FFI()
ffi.cdef(
    """
typedef int CUresult;
typedef struct CUstream_st *CUstream;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphNode_st *CUgraphNode;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUmemPool_st *CUmemoryPool;
typedef struct {
    unsigned long long flags;
    CUstream hUploadStream;
    CUgraphNode hErrNode_out;
    int result_out;
} CUDA_GRAPH_INSTANTIATE_PARAMS;
CUresult cuStreamCreate(CUstream *, unsigned int);
CUresult cuStreamDestroy_v2(CUstream);
CUresult cuStreamSynchronize(CUstream);
CUresult cuStreamBeginCapture_v2(CUstream, int);
CUresult cuStreamEndCapture(CUstream, CUgraph *);
CUresult cuGraphCreate(CUgraph *, unsigned int);
CUresult cuGraphDestroy(CUgraph);
CUresult cuGraphInstantiateWithParams(CUgraphExec *, CUgraph, CUDA_GRAPH_INSTANTIATE_PARAMS *);
CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *, CUgraph,
                                           CUDA_GRAPH_INSTANTIATE_PARAMS *);
CUresult cuGraphLaunch(CUgraphExec, CUstream);
CUresult cuGraphExecDestroy(CUgraphExec);
CUresult cuMemAlloc_v2(unsigned long long *, size_t);
CUresult cuMemAllocAsync(unsigned long long *, size_t, CUstream);
CUresult cuMemAllocFromPoolAsync(unsigned long long *, size_t, CUmemoryPool, CUstream);
CUresult cuMemFreeAsync(unsigned long long, CUstream);
CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *, int);
CUresult cuGetProcAddress(const char *, void **, int, unsigned long long);
"""
)

UPLOAD = 2  # CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD
PER_THREAD = 2  # CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM


@pytest.fixture
def lib(cu: Cuda) -> Iterator[Any]:  # noqa: F811  (cu: the context fixture)
    yield ffi.dlopen(str(sim_library_path()))


@pytest.fixture
def stream(lib: Any) -> Iterator[Any]:
    s = ffi.new("CUstream *")
    assert lib.cuStreamCreate(s, 0) == CUDA_SUCCESS
    yield s[0]
    lib.cuStreamDestroy_v2(s[0])


def _instantiate(lib: Any, graph: Any, flags: int = 0, upload: Any = None) -> Any:
    params = ffi.new("CUDA_GRAPH_INSTANTIATE_PARAMS *")
    params.flags = flags
    params.hUploadStream = upload if upload is not None else ffi.NULL
    params.result_out = -1
    exe = ffi.new("CUgraphExec *")
    assert lib.cuGraphInstantiateWithParams(exe, graph, params) == CUDA_SUCCESS
    assert params.result_out == 0  # CUDA_GRAPH_INSTANTIATE_SUCCESS
    return exe[0]


def test_an_empty_graph_instantiates_and_its_launch_does_nothing(lib: Any, stream: Any) -> None:
    graph = ffi.new("CUgraph *")
    assert lib.cuGraphCreate(graph, 0) == CUDA_SUCCESS
    captured = ffi.new("CUgraph *")
    assert lib.cuStreamBeginCapture_v2(stream, 2) == CUDA_SUCCESS  # relaxed
    assert lib.cuStreamEndCapture(stream, captured) == CUDA_SUCCESS
    for g in (graph[0], captured[0]):
        for flags in (0, UPLOAD):
            exe = _instantiate(lib, g, flags, stream)
            for _ in range(2):
                assert lib.cuGraphLaunch(exe, stream) == CUDA_SUCCESS
            assert lib.cuStreamSynchronize(stream) == CUDA_SUCCESS
            assert lib.cuGraphExecDestroy(exe) == CUDA_SUCCESS
        assert lib.cuGraphDestroy(g) == CUDA_SUCCESS


def test_instantiate_with_params_checks_its_arguments(lib: Any) -> None:
    graph = ffi.new("CUgraph *")
    assert lib.cuGraphCreate(graph, 0) == CUDA_SUCCESS
    exe = ffi.new("CUgraphExec *")
    assert lib.cuGraphInstantiateWithParams(exe, graph[0], ffi.NULL) == CUDA_ERROR_INVALID_VALUE
    params = ffi.new("CUDA_GRAPH_INSTANTIATE_PARAMS *")
    assert lib.cuGraphInstantiateWithParams(ffi.NULL, graph[0], params) == (
        CUDA_ERROR_INVALID_VALUE
    )
    assert params.result_out == 1  # CUDA_GRAPH_INSTANTIATE_ERROR: see the return value
    bogus = ffi.cast("CUgraph", 0xDEAD0000)
    assert lib.cuGraphInstantiateWithParams(exe, bogus, params) == CUDA_ERROR_INVALID_HANDLE
    params.flags = UPLOAD
    params.hUploadStream = ffi.cast("CUstream", 0xDEAD0000)
    assert lib.cuGraphInstantiateWithParams(exe, graph[0], params) == CUDA_ERROR_INVALID_HANDLE
    # Stream 0 is an upload stream like any other; the _ptsz variant too.
    params.hUploadStream = ffi.NULL
    for call in (lib.cuGraphInstantiateWithParams, lib.cuGraphInstantiateWithParams_ptsz):
        assert call(exe, graph[0], params) == CUDA_SUCCESS
        assert lib.cuGraphExecDestroy(exe[0]) == CUDA_SUCCESS
    assert lib.cuGraphDestroy(graph[0]) == CUDA_SUCCESS


@pytest.mark.parametrize(
    ("flags", "symbol"),
    [(0, "cuGraphInstantiateWithParams"), (PER_THREAD, "cuGraphInstantiateWithParams_ptsz")],
)
def test_get_proc_address_finds_instantiate_with_params(lib: Any, flags: int, symbol: str) -> None:
    fn = ffi.new("void **")
    name = b"cuGraphInstantiateWithParams"
    assert lib.cuGetProcAddress(name, fn, 12000, flags) == CUDA_SUCCESS
    assert fn[0] == ffi.cast("void *", getattr(lib, symbol))


def test_zero_byte_stream_ordered_allocations_get_distinct_freeable_pointers(
    lib: Any, stream: Any
) -> None:
    pool = ffi.new("CUmemoryPool *")
    assert lib.cuDeviceGetDefaultMemPool(pool, 0) == CUDA_SUCCESS
    a = ffi.new("unsigned long long *")
    b = ffi.new("unsigned long long *")
    assert lib.cuMemAllocAsync(a, 0, stream) == CUDA_SUCCESS
    assert lib.cuMemAllocFromPoolAsync(b, 0, pool[0], stream) == CUDA_SUCCESS
    assert a[0] != 0 and b[0] != 0 and a[0] != b[0]
    assert lib.cuMemFreeAsync(a[0], stream) == CUDA_SUCCESS
    assert lib.cuMemFreeAsync(b[0], stream) == CUDA_SUCCESS
    assert lib.cuStreamSynchronize(stream) == CUDA_SUCCESS
    # The rest of the arguments are still checked, and cuMemAlloc still
    # refuses zero bytes, as cuda.h documents.
    assert lib.cuMemAllocAsync(ffi.NULL, 0, stream) == CUDA_ERROR_INVALID_VALUE
    assert lib.cuMemAllocFromPoolAsync(a, 0, ffi.NULL, stream) == CUDA_ERROR_INVALID_VALUE
    assert lib.cuMemAlloc_v2(a, 0) == CUDA_ERROR_INVALID_VALUE


CORE_SCRIPT = """
import aruntime as ar

gpu = ar.open_backend("cuda-sim")  # first: cuda-bindings then finds the sim as libcuda.so.1
from cuda.core import Device

device = Device(0)
device.set_current()
stream = device.create_stream()
buffer = device.allocate(0, stream=stream)
assert buffer.size == 0
buffer.close(stream)
stream.sync()
stream.close()
gpu.close()
print("ok")
"""


def test_cuda_core_allocates_zero_bytes() -> None:
    # (cuda.core's GraphBuilder.complete() also needs cuUserObjectCreate,
    # which the sim does not have yet, so its empty graph is tested above.)
    pytest.importorskip("cuda.core", reason="pip install cuda-core")
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        [sys.executable, "-W", "error", "-c", CORE_SCRIPT],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(root)),
        cwd=root,
        timeout=120,
    )
    assert proc.returncode == 0, f"rc={proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert proc.stdout.split() == ["ok"]
