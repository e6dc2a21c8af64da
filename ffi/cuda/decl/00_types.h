/* Types of the CUDA driver API, as cuda.h (CUDA 12 and 13) defines them.
 *
 * Enumerations are spelled as `unsigned int`: every enum used here has only
 * non-negative values, so C gives it that underlying type, and the binding
 * keeps its constants in Python.  tests/ffi/test_cuda_decl.py checks each
 * typedef and struct below against the real cuda.h with gcc, and
 * tests/ffi/test_abi_headers.py against the sim's ffi/cuda/sim/cuda_types.h.
 */
typedef unsigned int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef uint64_t cuuint64_t;
typedef unsigned int CUdevice_attribute;
typedef unsigned int CUpointer_attribute;
typedef unsigned int CUmemorytype;
typedef unsigned int CUstreamCaptureMode;
typedef unsigned int CUstreamCaptureStatus;
typedef unsigned int CUdriverProcAddressQueryResult;
typedef unsigned int CUjit_option;
typedef unsigned int CUfunction_attribute;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUgraphNode_st *CUgraphNode;
typedef struct CUarray_st *CUarray;
typedef void (*CUhostFn)(void *userData);

typedef struct CUDA_MEMCPY2D_st {
    size_t srcXInBytes;
    size_t srcY;
    CUmemorytype srcMemoryType;
    const void *srcHost;
    CUdeviceptr srcDevice;
    CUarray srcArray;
    size_t srcPitch;
    size_t dstXInBytes;
    size_t dstY;
    CUmemorytype dstMemoryType;
    void *dstHost;
    CUdeviceptr dstDevice;
    CUarray dstArray;
    size_t dstPitch;
    size_t WidthInBytes;
    size_t Height;
} CUDA_MEMCPY2D_v2;

/* Memory pools (25_mempool.h). */
typedef struct CUmemPoolHandle_st *CUmemoryPool;
typedef unsigned int CUmemPool_attribute;
typedef unsigned int CUmemAllocationType;
typedef unsigned int CUmemAllocationHandleType;
typedef unsigned int CUmemLocationType;
typedef struct CUmemLocation_st {
    CUmemLocationType type;
    int id;
} CUmemLocation_v1;
typedef CUmemLocation_v1 CUmemLocation;
typedef struct CUmemPoolProps_st {
    CUmemAllocationType allocType;
    CUmemAllocationHandleType handleTypes;
    CUmemLocation location;
    void *win32SecurityAttributes;
    size_t maxSize;
    unsigned short usage;
    unsigned char reserved[54];
} CUmemPoolProps_v1;
typedef CUmemPoolProps_v1 CUmemPoolProps;
