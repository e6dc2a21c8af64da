"""cuda-sim: graphs built node by node (cuGraphAdd*Node), graph memory nodes
(by hand and from a captured cuMemAllocAsync), edges, child graphs, user
objects, conditional handles, and the pool calls cuda.core's suite needs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cffi
import numpy as np
import pytest
from _cudasim_support import (
    CUDA_ERROR_ILLEGAL_STATE,
    CUDA_ERROR_INVALID_VALUE,
    CUDA_SUCCESS,
    Cuda,
    cu,  # noqa: F401  (fixture)
    sim_library_path,
)

CUDA_ERROR_INVALID_DEVICE = 101
CUDA_ERROR_NOT_SUPPORTED = 801
CUDA_ERROR_INVALID_HANDLE = 400

ffi = cffi.FFI()
ffi.cdef(
    """
typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUkern_st *CUkernel;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphNode_st *CUgraphNode;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUmemPool_st *CUmemoryPool;
typedef struct CUarray_st *CUarray;
typedef struct CUuserObject_st *CUuserObject;
typedef void (*CUhostFn)(void *);
typedef struct { int type; int id; } CUmemLocation;
typedef struct { CUmemLocation location; int flags; } CUmemAccessDesc;
typedef struct {
    int allocType; int handleTypes; CUmemLocation location; void *win32SecurityAttributes;
    size_t maxSize; unsigned short usage; unsigned char reserved[54];
} CUmemPoolProps;
typedef struct {
    CUmemPoolProps poolProps; const CUmemAccessDesc *accessDescs; size_t accessDescCount;
    size_t bytesize; CUdeviceptr dptr;
} CUDA_MEM_ALLOC_NODE_PARAMS;
typedef struct {
    CUdeviceptr dst; size_t pitch; unsigned int value; unsigned int elementSize;
    size_t width; size_t height;
} CUDA_MEMSET_NODE_PARAMS;
typedef struct {
    CUfunction func; unsigned int gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ;
    unsigned int sharedMemBytes; void **kernelParams; void **extra; CUkernel kern; CUcontext ctx;
} CUDA_KERNEL_NODE_PARAMS;
typedef struct {
    size_t srcXInBytes, srcY, srcZ, srcLOD; int srcMemoryType; const void *srcHost;
    CUdeviceptr srcDevice; CUarray srcArray; void *reserved0; size_t srcPitch, srcHeight;
    size_t dstXInBytes, dstY, dstZ, dstLOD; int dstMemoryType; void *dstHost;
    CUdeviceptr dstDevice; CUarray dstArray; void *reserved1; size_t dstPitch, dstHeight;
    size_t WidthInBytes, Height, Depth;
} CUDA_MEMCPY3D;
typedef struct { int type; int reserved0[3]; long long reserved1[29]; long long reserved2; }
    CUgraphNodeParams;
typedef struct {
    unsigned long long handle; int type; unsigned int size; CUgraph *phGraph_out; CUcontext ctx;
} CUDA_CONDITIONAL_NODE_PARAMS;
CUresult cuGraphNodeGetParams(CUgraphNode, CUgraphNodeParams *);
CUresult cuStreamCreate(CUstream *, unsigned int);
CUresult cuStreamDestroy_v2(CUstream);
CUresult cuStreamSynchronize(CUstream);
CUresult cuStreamBeginCapture_v2(CUstream, int);
CUresult cuStreamEndCapture(CUstream, CUgraph *);
CUresult cuStreamGetCaptureInfo_v2(CUstream, int *, unsigned long long *, CUgraph *,
                                   const CUgraphNode **, size_t *);
CUresult cuStreamUpdateCaptureDependencies(CUstream, CUgraphNode *, size_t, unsigned int);
CUresult cuModuleLoadData(CUmodule *, const void *);
CUresult cuModuleGetFunction(CUfunction *, CUmodule, const char *);
CUresult cuMemAlloc_v2(CUdeviceptr *, size_t);
CUresult cuMemFree_v2(CUdeviceptr);
CUresult cuMemAllocAsync(CUdeviceptr *, size_t, CUstream);
CUresult cuMemAllocFromPoolAsync(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
CUresult cuMemFreeAsync(CUdeviceptr, CUstream);
CUresult cuMemsetD32Async(CUdeviceptr, unsigned int, size_t, CUstream);
CUresult cuMemcpyDtoHAsync_v2(void *, CUdeviceptr, size_t, CUstream);
CUresult cuLaunchKernel(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int,
                        unsigned int, unsigned int, unsigned int, CUstream, void **, void **);
CUresult cuDeviceGetMemPool(CUmemoryPool *, int);
CUresult cuMemGetMemPool(CUmemoryPool *, CUmemLocation *, int);
CUresult cuMemPoolCreate(CUmemoryPool *, const CUmemPoolProps *);
CUresult cuMemPoolDestroy(CUmemoryPool);
CUresult cuMemPoolSetAccess(CUmemoryPool, const CUmemAccessDesc *, size_t);
CUresult cuMemPoolGetAccess(int *, CUmemoryPool, CUmemLocation *);
CUresult cuArray3DCreate_v2(CUarray *, const void *);
CUresult cuGraphCreate(CUgraph *, unsigned int);
CUresult cuGraphDestroy(CUgraph);
CUresult cuGraphClone(CUgraph *, CUgraph);
CUresult cuGraphInstantiateWithFlags(CUgraphExec *, CUgraph, unsigned long long);
CUresult cuGraphLaunch(CUgraphExec, CUstream);
CUresult cuGraphExecDestroy(CUgraphExec);
CUresult cuGraphGetNodes(CUgraph, CUgraphNode *, size_t *);
CUresult cuGraphGetRootNodes(CUgraph, CUgraphNode *, size_t *);
CUresult cuGraphGetEdges(CUgraph, CUgraphNode *, CUgraphNode *, size_t *);
CUresult cuGraphGetEdges_v2(CUgraph, CUgraphNode *, CUgraphNode *, void *, size_t *);
CUresult cuGraphNodeGetDependencies(CUgraphNode, CUgraphNode *, size_t *);
CUresult cuGraphNodeGetDependentNodes(CUgraphNode, CUgraphNode *, size_t *);
CUresult cuGraphAddDependencies(CUgraph, const CUgraphNode *, const CUgraphNode *, size_t);
CUresult cuGraphRemoveDependencies(CUgraph, const CUgraphNode *, const CUgraphNode *, size_t);
CUresult cuGraphNodeGetType(CUgraphNode, int *);
CUresult cuGraphDestroyNode(CUgraphNode);
CUresult cuGraphAddEmptyNode(CUgraphNode *, CUgraph, const CUgraphNode *, size_t);
CUresult cuGraphAddKernelNode_v2(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                                 const CUDA_KERNEL_NODE_PARAMS *);
CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode, CUDA_KERNEL_NODE_PARAMS *);
CUresult cuGraphAddMemsetNode(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                              const CUDA_MEMSET_NODE_PARAMS *, CUcontext);
CUresult cuGraphMemsetNodeGetParams(CUgraphNode, CUDA_MEMSET_NODE_PARAMS *);
CUresult cuGraphAddMemcpyNode(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                              const CUDA_MEMCPY3D *, CUcontext);
CUresult cuGraphAddHostNode(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, const void *);
CUresult cuGraphAddChildGraphNode(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, CUgraph);
CUresult cuGraphChildGraphNodeGetGraph(CUgraphNode, CUgraph *);
CUresult cuGraphAddMemAllocNode(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                                CUDA_MEM_ALLOC_NODE_PARAMS *);
CUresult cuGraphMemAllocNodeGetParams(CUgraphNode, CUDA_MEM_ALLOC_NODE_PARAMS *);
CUresult cuGraphAddMemFreeNode(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, CUdeviceptr);
CUresult cuGraphMemFreeNodeGetParams(CUgraphNode, CUdeviceptr *);
CUresult cuGraphAddNode_v2(CUgraphNode *, CUgraph, const CUgraphNode *, const void *, size_t,
                           CUgraphNodeParams *);
CUresult cuGraphConditionalHandleCreate(unsigned long long *, CUgraph, CUcontext, unsigned int,
                                        unsigned int);
CUresult cuDeviceGetGraphMemAttribute(int, int, void *);
CUresult cuUserObjectCreate(CUuserObject *, void *, CUhostFn, unsigned int, unsigned int);
CUresult cuUserObjectRetain(CUuserObject, unsigned int);
CUresult cuUserObjectRelease(CUuserObject, unsigned int);
CUresult cuGraphRetainUserObject(CUgraph, CUuserObject, unsigned int, unsigned int);
CUresult cuGraphReleaseUserObject(CUgraph, CUuserObject, unsigned int);
CUresult cuGraphNodeFindInClone(CUgraphNode *, CUgraphNode, CUgraph);
CUresult cuGraphDebugDotPrint(CUgraph, const char *, unsigned int);
typedef struct { int result; CUgraphNode errorNode; CUgraphNode errorFromNode; }
    CUgraphExecUpdateResultInfo;
CUresult cuGraphExecUpdate_v2(CUgraphExec, CUgraph, CUgraphExecUpdateResultInfo *);
CUresult cuGetProcAddress(const char *, void **, int, unsigned long long);
typedef struct { CUhostFn fn; void *userData; } CUDA_HOST_NODE_PARAMS;
CUresult cuGraphHostNodeGetParams(CUgraphNode, CUDA_HOST_NODE_PARAMS *);
CUresult cuLaunchHostFunc(CUstream, CUhostFn, void *);
CUresult cuArrayDestroy(void *);
CUresult cuArray3DGetDescriptor_v2(void *, void *);
CUresult cuMipmappedArrayCreate(void **, const void *, unsigned int);
CUresult cuMipmappedArrayGetLevel(CUarray *, void *, unsigned int);
CUresult cuMipmappedArrayDestroy(void *);
CUresult cuTexObjectCreate(unsigned long long *, const void *, const void *, const void *);
CUresult cuTexObjectDestroy(unsigned long long);
CUresult cuSurfObjectCreate(unsigned long long *, const void *);
CUresult cuSurfObjectDestroy(unsigned long long);
"""
)

KERNEL, MEMCPY, MEMSET, HOST, GRAPH, EMPTY = 0, 1, 2, 3, 4, 5
MEM_ALLOC, MEM_FREE, CONDITIONAL = 10, 11, 13
PINNED, DEVICE_LOCATION, HOST_LOCATION = 1, 1, 2
MEMORYTYPE_HOST, MEMORYTYPE_DEVICE = 1, 2
RELAXED = 2
N = 64
PTX = Path(__file__).resolve().parents[2] / "aruntime" / "kernels" / "vector_ops.ptx"


@pytest.fixture
def lib(cu: Cuda) -> Iterator[Any]:  # noqa: F811  (cu: the context fixture)
    yield ffi.dlopen(str(sim_library_path()))


@pytest.fixture
def stream(lib: Any) -> Iterator[Any]:
    s = ffi.new("CUstream *")
    assert lib.cuStreamCreate(s, 0) == CUDA_SUCCESS
    yield s[0]
    lib.cuStreamDestroy_v2(s[0])


def _ok(rc: int) -> None:
    assert rc == CUDA_SUCCESS, rc


def _graph(lib: Any) -> Any:
    g = ffi.new("CUgraph *")
    _ok(lib.cuGraphCreate(g, 0))
    return g[0]


def _deps(*nodes: Any) -> tuple[Any, int]:
    return (ffi.new("CUgraphNode[]", list(nodes)) if nodes else ffi.NULL), len(nodes)


def _one(node: Any) -> Any:
    return ffi.new("CUgraphNode[]", [node])


def _alloc_params(nbytes: int) -> Any:
    p = ffi.new("CUDA_MEM_ALLOC_NODE_PARAMS *")
    p.poolProps.allocType = PINNED
    p.poolProps.location.type = DEVICE_LOCATION
    p.poolProps.location.id = 0
    p.bytesize = nbytes
    return p


def _add_alloc(lib: Any, g: Any, nbytes: int, *deps: Any) -> tuple[Any, int]:
    node = ffi.new("CUgraphNode *")
    p = _alloc_params(nbytes)
    _ok(lib.cuGraphAddMemAllocNode(node, g, *_deps(*deps), p))
    return node[0], int(p.dptr)


def _add_memset(lib: Any, g: Any, dst: int, value: int, count: int, *deps: Any) -> Any:
    node = ffi.new("CUgraphNode *")
    p = ffi.new(
        "CUDA_MEMSET_NODE_PARAMS *",
        {"dst": dst, "value": value, "elementSize": 4, "width": count, "height": 1},
    )
    _ok(lib.cuGraphAddMemsetNode(node, g, *_deps(*deps), p, ffi.NULL))
    return node[0]


def _add_d2h(lib: Any, g: Any, host: np.ndarray, src: int, *deps: Any) -> Any:
    node = ffi.new("CUgraphNode *")
    c = ffi.new("CUDA_MEMCPY3D *")
    c.srcMemoryType = MEMORYTYPE_DEVICE
    c.srcDevice = src
    c.dstMemoryType = MEMORYTYPE_HOST
    c.dstHost = ffi.cast("void *", host.ctypes.data)
    c.WidthInBytes = host.nbytes
    c.Height = c.Depth = 1
    _ok(lib.cuGraphAddMemcpyNode(node, g, *_deps(*deps), c, ffi.NULL))
    return node[0]


def _scale_function(lib: Any) -> Any:
    mod = ffi.new("CUmodule *")
    _ok(lib.cuModuleLoadData(mod, ffi.from_buffer(PTX.read_bytes() + b"\0")))
    fn = ffi.new("CUfunction *")
    _ok(lib.cuModuleGetFunction(fn, mod[0], b"scale_f32"))
    return fn[0]


def _run(lib: Any, g: Any, stream: Any, times: int = 1) -> None:
    exe = ffi.new("CUgraphExec *")
    _ok(lib.cuGraphInstantiateWithFlags(exe, g, 0))
    for _ in range(times):
        _ok(lib.cuGraphLaunch(exe[0], stream))
    _ok(lib.cuStreamSynchronize(stream))
    _ok(lib.cuGraphExecDestroy(exe[0]))


def _types(lib: Any, g: Any) -> list[int]:
    n = ffi.new("size_t *")
    _ok(lib.cuGraphGetNodes(g, ffi.NULL, n))
    nodes = ffi.new("CUgraphNode[]", n[0])
    _ok(lib.cuGraphGetNodes(g, nodes, n))
    out = []
    for i in range(n[0]):
        t = ffi.new("int *")
        _ok(lib.cuGraphNodeGetType(nodes[i], t))
        out.append(t[0])
    return out


def test_a_hand_built_graph_allocates_sets_scales_copies_and_frees(lib: Any, stream: Any) -> None:
    g = _graph(lib)
    alloc, dptr = _add_alloc(lib, g, N * 4)
    memset = _add_memset(lib, g, dptr, int(np.float32(3).view(np.uint32)), N, alloc)
    fn = _scale_function(lib)
    n, a, p = ffi.new("unsigned int *", N), ffi.new("float *", 2.0), ffi.new("CUdeviceptr *", dptr)
    args = ffi.new("void *[]", [n, a, p])
    kp = ffi.new(
        "CUDA_KERNEL_NODE_PARAMS *",
        {
            "func": fn,
            "gridDimX": 1,
            "gridDimY": 1,
            "gridDimZ": 1,
            "blockDimX": N,
            "blockDimY": 1,
            "blockDimZ": 1,
            "kernelParams": args,
        },
    )
    kernel = ffi.new("CUgraphNode *")
    _ok(lib.cuGraphAddKernelNode_v2(kernel, g, *_deps(memset), kp))
    a[0] = 5.0  # the node copied the values when it was made
    host = np.zeros(N, np.float32)
    copy = _add_d2h(lib, g, host, dptr, kernel[0])
    free = ffi.new("CUgraphNode *")
    _ok(lib.cuGraphAddMemFreeNode(free, g, *_deps(copy), dptr))
    assert _types(lib, g) == [MEM_ALLOC, MEMSET, KERNEL, MEMCPY, MEM_FREE]
    _run(lib, g, stream, times=2)  # freed inside: it may launch again
    assert (host == 6.0).all()
    # Each node reads back what it was made with.
    back = ffi.new("CUDA_KERNEL_NODE_PARAMS *")
    _ok(lib.cuGraphKernelNodeGetParams_v2(kernel[0], back))
    assert back.func == fn and back.blockDimX == N
    assert ffi.cast("float *", back.kernelParams[1])[0] == 2.0
    ap = ffi.new("CUDA_MEM_ALLOC_NODE_PARAMS *")
    _ok(lib.cuGraphMemAllocNodeGetParams(alloc, ap))
    assert (ap.bytesize, ap.dptr) == (N * 4, dptr)
    fp = ffi.new("CUdeviceptr *")
    _ok(lib.cuGraphMemFreeNodeGetParams(free[0], fp))
    assert fp[0] == dptr
    mp = ffi.new("CUDA_MEMSET_NODE_PARAMS *")
    assert lib.cuGraphKernelNodeGetParams_v2(memset, back) == CUDA_ERROR_INVALID_VALUE
    _ok(lib.cuGraphMemsetNodeGetParams(memset, mp))
    assert (mp.dst, mp.width, mp.elementSize) == (dptr, N, 4)
    _ok(lib.cuGraphDestroy(g))


def test_the_edges_order_the_launch_not_the_order_nodes_were_made(lib: Any, stream: Any) -> None:
    d = ffi.new("CUdeviceptr *")
    _ok(lib.cuMemAlloc_v2(d, 16))
    g = _graph(lib)
    second = _add_memset(lib, g, d[0], 2, 4)
    first = _add_memset(lib, g, d[0], 1, 4)
    host = np.zeros(4, np.uint32)
    _add_d2h(lib, g, host, d[0], second)
    _ok(lib.cuGraphAddDependencies(g, _one(first), _one(second), 1))
    _run(lib, g, stream)
    assert (host == 2).all()
    # The edge is reported from both of its ends and in the edge list.
    out = ffi.new("CUgraphNode[4]")
    count = ffi.new("size_t *", 4)
    _ok(lib.cuGraphNodeGetDependencies(second, out, count))
    assert count[0] == 1 and out[0] == first
    count[0] = 4
    _ok(lib.cuGraphNodeGetDependentNodes(first, out, count))
    assert count[0] == 1 and out[0] == second
    count[0] = 0
    _ok(lib.cuGraphGetEdges(g, ffi.NULL, ffi.NULL, count))
    assert count[0] == 2
    count[0] = 4
    _ok(lib.cuGraphGetRootNodes(g, out, count))
    assert count[0] == 1 and out[0] == first
    # A cycle cannot be laid out.
    _ok(lib.cuGraphAddDependencies(g, _one(second), _one(first), 1))
    exe = ffi.new("CUgraphExec *")
    assert lib.cuGraphInstantiateWithFlags(exe, g, 0) == CUDA_ERROR_INVALID_VALUE
    _ok(lib.cuGraphRemoveDependencies(g, _one(second), _one(first), 1))
    assert lib.cuGraphRemoveDependencies(g, _one(second), _one(first), 1) == (
        CUDA_ERROR_INVALID_VALUE
    )
    # Destroying a node takes its edges with it.
    _ok(lib.cuGraphDestroyNode(first))
    count[0] = 0
    _ok(lib.cuGraphGetEdges(g, ffi.NULL, ffi.NULL, count))
    assert count[0] == 1
    _ok(lib.cuGraphDestroy(g))
    _ok(lib.cuMemFree_v2(d[0]))


def test_child_graphs_run_in_place_and_are_copies(lib: Any, stream: Any) -> None:
    d = ffi.new("CUdeviceptr *")
    _ok(lib.cuMemAlloc_v2(d, 16))
    child = _graph(lib)
    _add_memset(lib, child, d[0], 7, 4)
    g = _graph(lib)
    start = ffi.new("CUgraphNode *")
    _ok(lib.cuGraphAddEmptyNode(start, g, ffi.NULL, 0))
    node = ffi.new("CUgraphNode *")
    _ok(lib.cuGraphAddChildGraphNode(node, g, _one(start[0]), 1, child))
    _add_memset(lib, child, d[0], 9, 4)  # after the copy was taken: not in g
    host = np.zeros(4, np.uint32)
    _add_d2h(lib, g, host, d[0], node[0])
    assert _types(lib, g) == [EMPTY, GRAPH, MEMCPY]
    _run(lib, g, stream)
    assert (host == 7).all()
    inner = ffi.new("CUgraph *")
    _ok(lib.cuGraphChildGraphNodeGetGraph(node[0], inner))
    assert _types(lib, inner[0]) == [MEMSET]
    assert lib.cuGraphDestroy(inner[0]) == CUDA_ERROR_ILLEGAL_STATE  # its node owns it
    # A clone is a graph of its own.
    clone = ffi.new("CUgraph *")
    _ok(lib.cuGraphClone(clone, g))
    _ok(lib.cuGraphDestroy(g))
    host[:] = 0
    _run(lib, clone[0], stream)
    assert (host == 7).all()
    for x in (clone[0], child):
        _ok(lib.cuGraphDestroy(x))
    _ok(lib.cuMemFree_v2(d[0]))


def test_graph_memory_stays_allocated_until_freed(lib: Any, stream: Any) -> None:
    g = _graph(lib)
    alloc, dptr = _add_alloc(lib, g, 256)
    _add_memset(lib, g, dptr, 5, 64, alloc)
    exe = ffi.new("CUgraphExec *")
    _ok(lib.cuGraphInstantiateWithFlags(exe, g, 0))
    _ok(lib.cuGraphLaunch(exe[0], stream))
    used = ffi.new("unsigned long long *")
    _ok(lib.cuDeviceGetGraphMemAttribute(0, 0, used))  # USED_MEM_CURRENT
    assert used[0] >= 256
    # Its allocation is still live: launching again would hand out the same
    # memory twice, which CUDA refuses.
    assert lib.cuGraphLaunch(exe[0], stream) == CUDA_ERROR_INVALID_VALUE
    host = np.zeros(64, np.uint32)
    _ok(lib.cuMemcpyDtoHAsync_v2(ffi.cast("void *", host.ctypes.data), dptr, 256, stream))
    _ok(lib.cuMemFreeAsync(dptr, stream))
    assert lib.cuMemFreeAsync(dptr, stream) == CUDA_ERROR_INVALID_VALUE  # twice
    _ok(lib.cuGraphLaunch(exe[0], stream))
    _ok(lib.cuStreamSynchronize(stream))
    assert (host == 5).all()
    _ok(lib.cuMemFree_v2(dptr))
    _ok(lib.cuGraphExecDestroy(exe[0]))
    _ok(lib.cuGraphDestroy(g))
    # What a memory node refuses.
    g = _graph(lib)
    node = ffi.new("CUgraphNode *")
    assert lib.cuGraphAddMemAllocNode(node, g, ffi.NULL, 0, _alloc_params(0)) == (
        CUDA_ERROR_INVALID_VALUE
    )
    bad = _alloc_params(64)
    bad.poolProps.location.id = 99
    assert lib.cuGraphAddMemAllocNode(node, g, ffi.NULL, 0, bad) == CUDA_ERROR_INVALID_DEVICE
    plain = ffi.new("CUdeviceptr *")
    _ok(lib.cuMemAlloc_v2(plain, 64))
    assert lib.cuGraphAddMemFreeNode(node, g, ffi.NULL, 0, plain[0]) == CUDA_ERROR_INVALID_VALUE
    _ok(lib.cuMemFree_v2(plain[0]))
    _ok(lib.cuGraphDestroy(g))


@pytest.mark.parametrize("from_pool", [False, True])
def test_stream_ordered_allocation_in_a_capture_becomes_memory_nodes(
    lib: Any, stream: Any, from_pool: bool
) -> None:
    pool = ffi.new("CUmemoryPool *")
    _ok(lib.cuDeviceGetMemPool(pool, 0))
    host = np.zeros(N, np.uint32)
    _ok(lib.cuStreamBeginCapture_v2(stream, RELAXED))
    d = ffi.new("CUdeviceptr *")
    if from_pool:
        _ok(lib.cuMemAllocFromPoolAsync(d, N * 4, pool[0], stream))
    else:
        _ok(lib.cuMemAllocAsync(d, N * 4, stream))
    _ok(lib.cuMemsetD32Async(d[0], 0xABCD, N, stream))
    _ok(lib.cuMemcpyDtoHAsync_v2(ffi.cast("void *", host.ctypes.data), d[0], N * 4, stream))
    _ok(lib.cuMemFreeAsync(d[0], stream))
    g = ffi.new("CUgraph *")
    _ok(lib.cuStreamEndCapture(stream, g))
    assert _types(lib, g[0]) == [MEM_ALLOC, MEMSET, MEMCPY, MEM_FREE]
    assert (host == 0).all()  # captured, not run
    _run(lib, g[0], stream, times=2)
    assert (host == 0xABCD).all()
    _ok(lib.cuGraphDestroy(g[0]))


def test_a_capture_can_free_only_what_a_graph_allocated(lib: Any, stream: Any) -> None:
    d = ffi.new("CUdeviceptr *")
    _ok(lib.cuMemAllocAsync(d, 64, stream))
    _ok(lib.cuStreamBeginCapture_v2(stream, RELAXED))
    assert lib.cuMemFreeAsync(d[0], stream) == 900  # STREAM_CAPTURE_UNSUPPORTED
    g = ffi.new("CUgraph *")
    assert lib.cuStreamEndCapture(stream, g) == 901  # the capture was invalidated
    _ok(lib.cuMemFreeAsync(d[0], stream))
    _ok(lib.cuStreamSynchronize(stream))


def test_capture_dependencies_let_a_node_join_the_capture(lib: Any, stream: Any) -> None:
    d = ffi.new("CUdeviceptr *")
    _ok(lib.cuMemAlloc_v2(d, 16))
    child = _graph(lib)
    _add_memset(lib, child, d[0], 4, 4)
    _ok(lib.cuStreamBeginCapture_v2(stream, RELAXED))
    _ok(lib.cuMemsetD32Async(d[0], 3, 4, stream))
    status = ffi.new("int *")
    graph = ffi.new("CUgraph *")
    deps = ffi.new("CUgraphNode **")
    ndeps = ffi.new("size_t *")
    _ok(lib.cuStreamGetCaptureInfo_v2(stream, status, ffi.NULL, graph, deps, ndeps))
    assert status[0] == 1 and ndeps[0] == 1  # ACTIVE, after the memset
    node = ffi.new("CUgraphNode *")
    _ok(lib.cuGraphAddChildGraphNode(node, graph[0], deps[0], ndeps[0], child))
    _ok(lib.cuStreamUpdateCaptureDependencies(stream, node, 1, 1))  # SET
    host = np.zeros(4, np.uint32)
    _ok(lib.cuMemcpyDtoHAsync_v2(ffi.cast("void *", host.ctypes.data), d[0], 16, stream))
    g = ffi.new("CUgraph *")
    _ok(lib.cuStreamEndCapture(stream, g))
    assert g[0] == graph[0]
    assert _types(lib, g[0]) == [MEMSET, GRAPH, MEMCPY]
    _run(lib, g[0], stream)
    assert (host == 4).all()
    for x in (g[0], child):
        _ok(lib.cuGraphDestroy(x))
    _ok(lib.cuMemFree_v2(d[0]))


def test_user_objects_live_as_long_as_their_last_holder(lib: Any, stream: Any) -> None:
    destroyed: list[int] = []

    @ffi.callback("void(void *)")
    def destroy(user: Any) -> None:
        destroyed.append(int(ffi.cast("uintptr_t", user)))

    obj = ffi.new("CUuserObject *")
    _ok(lib.cuUserObjectCreate(obj, ffi.cast("void *", 42), destroy, 1, 1))
    assert lib.cuUserObjectCreate(obj, ffi.NULL, destroy, 1, 0) == CUDA_ERROR_INVALID_VALUE
    g = _graph(lib)
    _ok(lib.cuGraphRetainUserObject(g, obj[0], 1, 1))  # MOVE: the graph takes ours
    exe = ffi.new("CUgraphExec *")
    _ok(lib.cuGraphInstantiateWithFlags(exe, g, 0))
    _ok(lib.cuGraphLaunch(exe[0], stream))
    _ok(lib.cuGraphDestroy(g))
    assert destroyed == []  # the executable graph still holds it
    _ok(lib.cuGraphExecDestroy(exe[0]))
    _ok(lib.cuStreamSynchronize(stream))
    assert destroyed == [42]
    # Counted references: retain twice, release three times.
    _ok(lib.cuUserObjectCreate(obj, ffi.cast("void *", 7), destroy, 1, 1))
    _ok(lib.cuUserObjectRetain(obj[0], 2))
    _ok(lib.cuUserObjectRelease(obj[0], 2))
    assert destroyed == [42]
    g = _graph(lib)
    _ok(lib.cuGraphRetainUserObject(g, obj[0], 1, 0))
    assert lib.cuGraphReleaseUserObject(g, obj[0], 2) == CUDA_ERROR_INVALID_VALUE
    _ok(lib.cuUserObjectRelease(obj[0], 1))
    assert destroyed == [42]
    _ok(lib.cuGraphReleaseUserObject(g, obj[0], 1))
    assert destroyed == [42, 7]
    _ok(lib.cuGraphDestroy(g))


IF, WHILE, SWITCH = 0, 1, 2
UNSET = 0xEE


def _conditional(lib: Any, g: Any, kind: int, size: int, default: int) -> list[Any]:
    """A conditional node of g on a new handle; its body graphs."""
    h = ffi.new("unsigned long long *")
    _ok(lib.cuGraphConditionalHandleCreate(h, g, ffi.NULL, default, 1))  # ASSIGN_DEFAULT
    params = ffi.new("CUgraphNodeParams *")
    params.type = CONDITIONAL
    cond = ffi.cast("CUDA_CONDITIONAL_NODE_PARAMS *", params.reserved1)
    cond.handle, cond.type, cond.size = h[0], kind, size
    node = ffi.new("CUgraphNode *")
    _ok(lib.cuGraphAddNode_v2(node, g, ffi.NULL, ffi.NULL, 0, params))
    back = ffi.new("CUgraphNodeParams *")
    _ok(lib.cuGraphNodeGetParams(node[0], back))
    got = ffi.cast("CUDA_CONDITIONAL_NODE_PARAMS *", back.reserved1)
    assert (got.handle, got.type, got.size) == (h[0], kind, size)
    return [cond.phGraph_out[i] for i in range(size)]


@pytest.mark.parametrize(
    ("kind", "size", "default", "runs"),
    [
        (IF, 1, 1, 0),
        (IF, 1, 0, None),
        (IF, 2, 0, 1),
        (SWITCH, 3, 2, 2),
        (SWITCH, 2, 5, None),
        (WHILE, 1, 0, None),
    ],
)
def test_conditional_nodes_run_the_body_their_condition_picks(
    lib: Any, stream: Any, kind: int, size: int, default: int, runs: int | None
) -> None:
    # Only device code could change a condition (through the device runtime,
    # which the sim has not), so each launch sees the handle's default value.
    d = ffi.new("CUdeviceptr *")
    _ok(lib.cuMemAlloc_v2(d, 4 * size))
    host = np.zeros(size, np.uint32)
    g = _graph(lib)
    first = _add_memset(lib, g, d[0], UNSET, size)
    bodies = _conditional(lib, g, kind, size, default)
    for i, body in enumerate(bodies):
        _add_memset(lib, body, d[0] + 4 * i, i + 1, 1)
        assert lib.cuGraphDestroy(body) == CUDA_ERROR_ILLEGAL_STATE  # its node owns it
    nodes = ffi.new("CUgraphNode[2]")
    count = ffi.new("size_t *", 2)
    _ok(lib.cuGraphGetNodes(g, nodes, count))
    _ok(lib.cuGraphAddDependencies(g, _one(first), _one(nodes[1]), 1))
    _add_d2h(lib, g, host, d[0], nodes[1])
    _run(lib, g, stream)
    expect = np.full(size, UNSET, np.uint32)
    if runs is not None:
        expect[runs] = runs + 1
    assert (host == expect).all()
    _ok(lib.cuGraphDestroy(g))
    _ok(lib.cuMemFree_v2(d[0]))


def test_a_while_loop_nothing_can_end_is_refused(lib: Any) -> None:
    g = _graph(lib)
    _conditional(lib, g, WHILE, 1, 1)
    exe = ffi.new("CUgraphExec *")
    assert lib.cuGraphInstantiateWithFlags(exe, g, 0) == CUDA_ERROR_NOT_SUPPORTED
    params = ffi.new("CUgraphNodeParams *")
    params.type = CONDITIONAL
    cond = ffi.cast("CUDA_CONDITIONAL_NODE_PARAMS *", params.reserved1)
    cond.handle, cond.type, cond.size = 12345, IF, 1  # no such handle
    node = ffi.new("CUgraphNode *")
    assert lib.cuGraphAddNode_v2(node, g, ffi.NULL, ffi.NULL, 0, params) == (
        CUDA_ERROR_INVALID_VALUE
    )
    params.type = KERNEL  # made through cuGraphAddKernelNode instead
    assert lib.cuGraphAddNode_v2(node, g, ffi.NULL, ffi.NULL, 0, params) == (
        CUDA_ERROR_NOT_SUPPORTED
    )
    _ok(lib.cuGraphDestroy(g))


def test_captured_nodes_do_not_invent_parameters(lib: Any, stream: Any) -> None:
    d = ffi.new("CUdeviceptr *")
    _ok(lib.cuMemAlloc_v2(d, 16))
    _ok(lib.cuStreamBeginCapture_v2(stream, RELAXED))
    _ok(lib.cuMemsetD32Async(d[0], 1, 4, stream))
    g = ffi.new("CUgraph *")
    _ok(lib.cuStreamEndCapture(stream, g))
    nodes = ffi.new("CUgraphNode[1]")
    count = ffi.new("size_t *", 1)
    _ok(lib.cuGraphGetNodes(g[0], nodes, count))
    mp = ffi.new("CUDA_MEMSET_NODE_PARAMS *")
    assert lib.cuGraphMemsetNodeGetParams(nodes[0], mp) == CUDA_ERROR_NOT_SUPPORTED
    _ok(lib.cuGraphDestroy(g[0]))
    _ok(lib.cuMemFree_v2(d[0]))


def test_mem_get_mem_pool_and_pool_access(lib: Any) -> None:
    current = ffi.new("CUmemoryPool *")
    _ok(lib.cuDeviceGetMemPool(current, 0))
    got = ffi.new("CUmemoryPool *")
    loc = ffi.new("CUmemLocation *", {"type": DEVICE_LOCATION, "id": 0})
    _ok(lib.cuMemGetMemPool(got, loc, PINNED))
    assert got[0] == current[0]
    loc.type = HOST_LOCATION
    _ok(lib.cuMemGetMemPool(got, loc, PINNED))  # the host's own pool
    assert got[0] != current[0]
    loc.type = DEVICE_LOCATION
    flags = ffi.new("int *")
    _ok(lib.cuMemPoolGetAccess(flags, current[0], loc))
    assert flags[0] == 3  # its own device reads and writes
    desc = ffi.new("CUmemAccessDesc *", {"location": {"type": DEVICE_LOCATION, "id": 0}})
    desc.flags = 0
    assert lib.cuMemPoolSetAccess(current[0], desc, 1) == CUDA_ERROR_INVALID_DEVICE
    desc.flags = 3
    _ok(lib.cuMemPoolSetAccess(current[0], desc, 1))
    desc.location.id = 99
    assert lib.cuMemPoolSetAccess(current[0], desc, 1) == CUDA_ERROR_INVALID_DEVICE


def test_cuda_arrays_textures_and_surfaces_are_refused(lib: Any) -> None:
    arr = ffi.new("CUarray *")
    desc = ffi.new("char[64]")
    assert lib.cuArray3DCreate_v2(arr, desc) == CUDA_ERROR_NOT_SUPPORTED
    mip = ffi.new("void **")
    assert lib.cuMipmappedArrayCreate(mip, desc, 2) == CUDA_ERROR_NOT_SUPPORTED
    obj = ffi.new("unsigned long long *")
    res = ffi.new("char[256]")
    assert lib.cuTexObjectCreate(obj, res, res, ffi.NULL) == CUDA_ERROR_NOT_SUPPORTED
    assert lib.cuSurfObjectCreate(obj, res) == CUDA_ERROR_NOT_SUPPORTED
    # None is ever made: any handle is unknown.
    bogus = ffi.cast("void *", 0x1234)
    assert lib.cuArrayDestroy(bogus) == CUDA_ERROR_INVALID_HANDLE
    assert lib.cuArray3DGetDescriptor_v2(desc, bogus) == CUDA_ERROR_INVALID_HANDLE
    assert lib.cuMipmappedArrayGetLevel(arr, bogus, 0) == CUDA_ERROR_INVALID_HANDLE
    assert lib.cuMipmappedArrayDestroy(bogus) == CUDA_ERROR_INVALID_HANDLE
    assert lib.cuTexObjectDestroy(7) == CUDA_ERROR_INVALID_HANDLE
    assert lib.cuSurfObjectDestroy(7) == CUDA_ERROR_INVALID_HANDLE


@pytest.mark.parametrize(
    ("name", "version", "symbol"),
    [
        ("cuGraphAddMemAllocNode", 11040, "cuGraphAddMemAllocNode"),
        ("cuGraphAddKernelNode", 12000, "cuGraphAddKernelNode_v2"),
        ("cuGraphGetEdges", 12030, "cuGraphGetEdges_v2"),
        ("cuGraphAddNode", 12030, "cuGraphAddNode_v2"),
        ("cuGraphNodeGetParams", 13020, "cuGraphNodeGetParams"),
        ("cuUserObjectCreate", 11030, "cuUserObjectCreate"),
        ("cuGraphConditionalHandleCreate", 12030, "cuGraphConditionalHandleCreate"),
        ("cuMemGetMemPool", 13000, "cuMemGetMemPool"),
        ("cuArray3DCreate", 3020, "cuArray3DCreate_v2"),
        ("cuMipmappedArrayCreate", 5000, "cuMipmappedArrayCreate"),
        ("cuTexObjectCreate", 5000, "cuTexObjectCreate"),
        ("cuSurfObjectCreate", 5000, "cuSurfObjectCreate"),
    ],
)
def test_get_proc_address_finds_the_graph_calls(
    lib: Any, name: str, version: int, symbol: str
) -> None:
    fn = ffi.new("void **")
    _ok(lib.cuGetProcAddress(name.encode(), fn, version, 0))
    assert fn[0] == ffi.cast("void *", getattr(lib, symbol))


def test_clones_find_their_nodes_and_graphs_print_as_dot(lib: Any, tmp_path: Path) -> None:
    g = _graph(lib)
    a = ffi.new("CUgraphNode *")
    _ok(lib.cuGraphAddEmptyNode(a, g, ffi.NULL, 0))
    b = ffi.new("CUgraphNode *")
    _ok(lib.cuGraphAddEmptyNode(b, g, a, 1))
    clone = ffi.new("CUgraph *")
    _ok(lib.cuGraphClone(clone, g))
    found = ffi.new("CUgraphNode *")
    _ok(lib.cuGraphNodeFindInClone(found, b[0], clone[0]))
    deps = ffi.new("CUgraphNode[1]")
    count = ffi.new("size_t *", 1)
    _ok(lib.cuGraphNodeGetDependencies(found[0], deps, count))
    other = ffi.new("CUgraphNode *")
    _ok(lib.cuGraphNodeFindInClone(other, a[0], clone[0]))
    assert count[0] == 1 and deps[0] == other[0] != a[0]
    assert lib.cuGraphNodeFindInClone(found, b[0], g) == CUDA_ERROR_INVALID_VALUE
    dot = tmp_path / "g.dot"
    _ok(lib.cuGraphDebugDotPrint(g, str(dot).encode(), 0))
    text = dot.read_text()
    assert text.startswith("digraph") and text.count("->") == 1 and text.count("empty") == 2
    for x in (clone[0], g):
        _ok(lib.cuGraphDestroy(x))


def test_exec_update_swaps_in_a_graph_of_the_same_shape(lib: Any, stream: Any) -> None:
    d = ffi.new("CUdeviceptr *")
    _ok(lib.cuMemAlloc_v2(d, 16))
    host = np.zeros(4, np.uint32)
    graphs = []
    for value in (1, 2):
        g = _graph(lib)
        _add_d2h(lib, g, host, d[0], _add_memset(lib, g, d[0], value, 4))
        graphs.append(g)
    exe = ffi.new("CUgraphExec *")
    _ok(lib.cuGraphInstantiateWithFlags(exe, graphs[0], 0))
    info = ffi.new("CUgraphExecUpdateResultInfo *")
    _ok(lib.cuGraphExecUpdate_v2(exe[0], graphs[1], info))
    assert info.result == 0
    _ok(lib.cuGraphLaunch(exe[0], stream))
    _ok(lib.cuStreamSynchronize(stream))
    assert (host == 2).all()
    # Another shape: refused, and the executable graph keeps its work.
    _add_memset(lib, graphs[0], d[0], 3, 4)
    assert lib.cuGraphExecUpdate_v2(exe[0], graphs[0], info) == 910  # UPDATE_FAILURE
    assert info.result == 2  # TOPOLOGY_CHANGED
    _ok(lib.cuGraphLaunch(exe[0], stream))
    _ok(lib.cuStreamSynchronize(stream))
    assert (host == 2).all()
    _ok(lib.cuGraphExecDestroy(exe[0]))
    for g in graphs:
        _ok(lib.cuGraphDestroy(g))
    _ok(lib.cuMemFree_v2(d[0]))


def test_graphs_with_memory_nodes_keep_their_nodes_and_edges(lib: Any, stream: Any) -> None:
    g = _graph(lib)
    alloc, dptr = _add_alloc(lib, g, 64)
    memset = _add_memset(lib, g, dptr, 1, 16, alloc)
    # CUDA: no node or edge of such a graph may be deleted, and it is not cloned.
    assert lib.cuGraphDestroyNode(memset) == CUDA_ERROR_INVALID_VALUE
    assert lib.cuGraphRemoveDependencies(g, _one(alloc), _one(memset), 1) == (
        CUDA_ERROR_INVALID_VALUE
    )
    clone = ffi.new("CUgraph *")
    assert lib.cuGraphClone(clone, g) == CUDA_ERROR_NOT_SUPPORTED
    assert _types(lib, g) == [MEM_ALLOC, MEMSET]
    # Auto-free-on-launch: each launch frees what the last one left allocated.
    exe = ffi.new("CUgraphExec *")
    _ok(lib.cuGraphInstantiateWithFlags(exe, g, 1))
    for _ in range(2):
        _ok(lib.cuGraphLaunch(exe[0], stream))
    _ok(lib.cuStreamSynchronize(stream))
    _ok(lib.cuMemFree_v2(dptr))
    _ok(lib.cuGraphExecDestroy(exe[0]))
    _ok(lib.cuGraphDestroy(g))


def test_a_condition_serves_only_its_own_graph(lib: Any) -> None:
    mine, other = _graph(lib), _graph(lib)
    h = ffi.new("unsigned long long *")
    _ok(lib.cuGraphConditionalHandleCreate(h, mine, ffi.NULL, 1, 0))
    params = ffi.new("CUgraphNodeParams *")
    params.type = CONDITIONAL
    cond = ffi.cast("CUDA_CONDITIONAL_NODE_PARAMS *", params.reserved1)
    cond.handle, cond.type, cond.size = h[0], IF, 1
    node = ffi.new("CUgraphNode *")
    assert lib.cuGraphAddNode_v2(node, other, ffi.NULL, ffi.NULL, 0, params) == (
        CUDA_ERROR_INVALID_VALUE
    )
    _ok(lib.cuGraphAddNode_v2(node, mine, ffi.NULL, ffi.NULL, 0, params))
    # A body graph of `mine` may use it too (a nested conditional).
    body = cond.phGraph_out[0]
    cond.phGraph_out = ffi.NULL
    _ok(lib.cuGraphAddNode_v2(node, body, ffi.NULL, ffi.NULL, 0, params))
    for g in (mine, other):
        _ok(lib.cuGraphDestroy(g))


def _only_node(lib: Any, g: Any) -> Any:
    nodes = ffi.new("CUgraphNode[1]")
    count = ffi.new("size_t *", 1)
    _ok(lib.cuGraphGetNodes(g, nodes, count))
    assert count[0] == 1
    return nodes[0]


@ffi.callback("void(void *)")
def _noop(_: Any) -> None:
    pass


def test_clones_and_child_graphs_keep_their_nodes_parameters(lib: Any) -> None:
    d = ffi.new("CUdeviceptr *")
    _ok(lib.cuMemAlloc_v2(d, 4 * N))
    g = _graph(lib)
    memset = _add_memset(lib, g, d[0], 7, N)
    host = ffi.new("CUgraphNode *")
    token = ffi.new("int *")
    hp = ffi.new("CUDA_HOST_NODE_PARAMS *", {"fn": _noop, "userData": token})
    _ok(lib.cuGraphAddHostNode(host, g, *_deps(memset), hp))
    fn = _scale_function(lib)
    n, a, p = ffi.new("unsigned int *", N), ffi.new("float *", 3.0), ffi.new("CUdeviceptr *", d[0])
    args = ffi.new("void *[]", [n, a, p])
    kp = ffi.new("CUDA_KERNEL_NODE_PARAMS *")
    kp.func = fn
    kp.gridDimX = kp.gridDimY = kp.gridDimZ = kp.blockDimY = kp.blockDimZ = 1
    kp.blockDimX = N
    kp.kernelParams = args
    kernel = ffi.new("CUgraphNode *")
    _ok(lib.cuGraphAddKernelNode_v2(kernel, g, *_deps(host[0]), kp))
    clone = ffi.new("CUgraph *")
    _ok(lib.cuGraphClone(clone, g))
    parent = _graph(lib)
    child = ffi.new("CUgraphNode *")
    _ok(lib.cuGraphAddChildGraphNode(child, parent, ffi.NULL, 0, g))
    embedded = ffi.new("CUgraph *")
    _ok(lib.cuGraphChildGraphNodeGetGraph(child[0], embedded))
    for copy in (clone[0], embedded[0]):
        nodes = ffi.new("CUgraphNode[3]")
        count = ffi.new("size_t *", 3)
        _ok(lib.cuGraphGetNodes(copy, nodes, count))
        mp = ffi.new("CUDA_MEMSET_NODE_PARAMS *")
        _ok(lib.cuGraphMemsetNodeGetParams(nodes[0], mp))
        assert (mp.dst, mp.value, mp.width) == (d[0], 7, N)
        back_host = ffi.new("CUDA_HOST_NODE_PARAMS *")
        _ok(lib.cuGraphHostNodeGetParams(nodes[1], back_host))
        assert back_host.fn == _noop and back_host.userData == token
        back = ffi.new("CUDA_KERNEL_NODE_PARAMS *")
        _ok(lib.cuGraphKernelNodeGetParams_v2(nodes[2], back))
        assert back.func == fn and back.blockDimX == N
        assert ffi.cast("float *", back.kernelParams[1])[0] == 3.0
    # The copies' argument values are their own: the original's going changes nothing.
    _ok(lib.cuGraphDestroy(g))
    nodes = ffi.new("CUgraphNode[3]")
    _ok(lib.cuGraphGetNodes(clone[0], nodes, ffi.new("size_t *", 3)))
    back = ffi.new("CUDA_KERNEL_NODE_PARAMS *")
    _ok(lib.cuGraphKernelNodeGetParams_v2(nodes[2], back))
    assert ffi.cast("float *", back.kernelParams[1])[0] == 3.0
    for x in (clone[0], parent):
        _ok(lib.cuGraphDestroy(x))
    _ok(lib.cuMemFree_v2(d[0]))


def test_a_captured_host_function_reads_back(lib: Any, stream: Any) -> None:
    token = ffi.new("int *")
    _ok(lib.cuStreamBeginCapture_v2(stream, RELAXED))
    _ok(lib.cuLaunchHostFunc(stream, _noop, token))
    g = ffi.new("CUgraph *")
    _ok(lib.cuStreamEndCapture(stream, g))
    hp = ffi.new("CUDA_HOST_NODE_PARAMS *")
    _ok(lib.cuGraphHostNodeGetParams(_only_node(lib, g[0]), hp))
    assert hp.fn == _noop and hp.userData == token
    _ok(lib.cuGraphDestroy(g[0]))


def test_a_captured_host_pool_allocation_reports_its_pool(lib: Any, stream: Any) -> None:
    pool = ffi.new("CUmemoryPool *")
    _ok(lib.cuMemGetMemPool(pool, ffi.new("CUmemLocation *", {"type": HOST_LOCATION}), PINNED))
    d = ffi.new("CUdeviceptr *")
    _ok(lib.cuStreamBeginCapture_v2(stream, RELAXED))
    _ok(lib.cuMemAllocFromPoolAsync(d, 64, pool[0], stream))
    g = ffi.new("CUgraph *")
    _ok(lib.cuStreamEndCapture(stream, g))
    ap = ffi.new("CUDA_MEM_ALLOC_NODE_PARAMS *")
    _ok(lib.cuGraphMemAllocNodeGetParams(_only_node(lib, g[0]), ap))
    assert (ap.poolProps.allocType, ap.poolProps.location.type) == (PINNED, HOST_LOCATION)
    assert (ap.bytesize, ap.dptr) == (64, d[0])
    _ok(lib.cuGraphDestroy(g[0]))
