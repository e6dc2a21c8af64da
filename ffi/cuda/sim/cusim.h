/* Internals of the software CUDA driver (cuda-sim): the objects behind the
 * API handles, and the prototypes of every exported entry point. */
#ifndef CUSIM_H
#define CUSIM_H

#include <pthread.h>
#include <stdint.h>

#include "../../sim/engine.h"
#include "../../sim/ptx/ptx.h"
#include "cuda_types.h"

#define CUSIM_INTERNAL __attribute__((visibility("hidden")))

/* The version cuDriverGetVersion reports (ARUNTIME_SIM_DRIVER_VERSION overrides):
 * CUDA 13.5, the NVRTC the test extra installs.  Clients compare the two:
 * with an older driver cuda.core warns at every Program.compile that NVRTC
 * 13.5's PTX (ISA 9.5) will not load, which is what a real 13.0 driver does. */
#define CUSIM_DRIVER_VERSION 13050
/* ARSIM_ERR_READONLY_WRITE as a CUresult (engine.h): cuda-sim's own code. */
#define CUSIM_ERROR_READONLY_WRITE ARSIM_READONLY_WRITE_RESULT

/* Handle registry kinds. */
enum { HK_CTX = 1, HK_STREAM, HK_EVENT, HK_MODULE, HK_FUNCTION, HK_GRAPH, HK_GRAPH_EXEC, HK_CAPTURE, HK_POOL };
/* CUlibrary handles (cusim_library.c).  A CUkernel is the HK_FUNCTION handle
 * of its library's function: the sim has one device, one copy of the code. */
enum { HK_LIBRARY = HK_POOL + 1 };
/* Graph nodes and user objects (cusim_graph*.c). */
enum { HK_GRAPH_NODE = HK_LIBRARY + 1, HK_USER_OBJECT };
/* CUlinkState handles (cusim_link.c): a number well apart from the kinds
 * above, so kinds added beside it cannot take it by accident. */
enum { HK_LINK = 0x40 };

typedef struct cu_stream cu_stream;
typedef struct cu_capture cu_capture;

typedef struct cu_ctx {
    uint64_t handle;
    int device;
    int primary;
    unsigned flags;
    int retain_count; /* primary contexts: cuDevicePrimaryCtxRetain count */
    pthread_mutex_t mu; /* guards streams and unsafe_captures */
    cu_stream *streams; /* user and per-thread streams */
    cu_stream *legacy;  /* the NULL stream */
    int unsafe_captures; /* active captures in global or thread-local mode */
    int capturing_blocking; /* blocking streams in a capture (atomic) */
    uint64_t peers; /* devices whose memory it may access, a bit each (__atomic) */
} cu_ctx;

struct cu_stream {
    uint64_t handle; /* 0 for the legacy stream */
    cu_ctx *ctx;
    arsim_queue *q;
    unsigned flags;
    int priority;
    int is_legacy;
    cu_capture *cap; /* guarded by g_capture_mu */
    cu_stream *next, *prev;
};

#define CUSIM_MAX_CAPTURE_STREAMS 64
typedef struct cu_gnode cu_gnode;
struct cu_capture {
    uint64_t handle; /* events refer to a capture by handle: it may end */
    uint64_t graph_handle;
    int to_graph; /* cuStreamBeginCaptureToGraph: the graph is the caller's */
    /* The nodes the next captured node depends on (cuStreamGetCaptureInfo's
     * dependencies); each captured node replaces them. */
    cu_gnode **deps;
    size_t ndeps, depcap;
    CUgraphNode *dep_out; /* their handles, as cuStreamGetCaptureInfo hands them out */
    size_t dep_out_cap;
    cu_stream *origin;
    int mode;
    int invalidated;
    unsigned long long id;
    cu_stream *members[CUSIM_MAX_CAPTURE_STREAMS];
    int nmembers;
};

typedef struct cu_event {
    uint64_t handle;
    arsim_event *ev;
    unsigned flags;
    int recorded;         /* cuEventRecord was called at least once (outside capture) */
    uint64_t captured; /* handle of the capture it was last recorded in, or 0 */
} cu_event;

typedef struct cu_function {
    uint64_t handle;
    const arsim_kernel *k;
    struct cu_module *mod;
    struct cu_function *next;
    /* The library it was got from as a CUkernel, or 0 (atomic: set once by
     * cuLibraryGetKernel, read by the cuKernel* calls). */
    uint64_t library;
    /* cuFuncSetAttribute's settable attributes (atomic); 0 means "as loaded". */
    int max_dynamic_shared_set; /* 1 + the value set, so 0 stays "unset" */
    int carveout_set;           /* 1 + the value set (-1 allowed) */
    /* A PTX kernel's declared resources (set once, when the handle is made);
     * zeros for host code, which declares none. */
    ptx_kernel_attrs attrs;
} cu_function;

typedef struct cu_module {
    uint64_t handle;
    arsim_module *m;
    pthread_mutex_t mu;
    cu_function *funcs;
} cu_module;

/* Graphs are nodes with dependencies (cusim_graph.c).  Instantiation lays
 * them out in one order that respects every edge, as one op list: the sim
 * runs a launch on one queue, which is one of the orders the graph allows.
 * Structure is guarded by g_capture_mu, as captures fill graphs. */
typedef struct cu_gmem cu_gmem; /* graph memory (cusim_graph_mem.c) */
typedef struct cu_uobj cu_uobj; /* a user object (cusim_graph_mem.c) */
typedef struct cu_uref {
    cu_uobj *obj;
    unsigned count;
    struct cu_uref *next;
} cu_uref;

typedef struct cu_graph {
    uint64_t handle;
    uint64_t root; /* the top graph a body belongs to: its conditional handles serve it */
    cu_capture *capturing; /* non-NULL while a capture is filling it */
    cu_gnode **nodes;
    size_t n, cap;
    size_t next_order;
    int owned; /* a child or conditional body: its node owns it */
    cu_uref *urefs; /* user objects it holds references to */
    unsigned long long next_cond; /* conditional handles made for it */
} cu_graph;

struct cu_gnode {
    uint64_t handle;
    cu_graph *graph;
    CUgraphNodeType type;
    size_t order; /* creation order: the layout keeps it where edges allow */
    uint64_t origin; /* in a clone: the node it was copied from (cuGraphNodeFindInClone) */
    arsim_graph *body; /* the ops it runs (kernel, copy, memset, host, event) */
    cu_graph *child; /* CU_GRAPH_NODE_TYPE_GRAPH: its own copy */
    cu_graph **bodies; /* CU_GRAPH_NODE_TYPE_CONDITIONAL: its body graphs, which it owns */
    CUgraph *body_handles; /* the same, as phGraph_out hands them out */
    CUDA_CONDITIONAL_NODE_PARAMS cond;
    cu_gmem *mem; /* MEM_ALLOC: the allocation; MEM_FREE: the one it frees */
    CUevent event; /* EVENT_RECORD / WAIT_EVENT */
    union {
        CUDA_KERNEL_NODE_PARAMS kernel;
        CUDA_MEMSET_NODE_PARAMS memset;
        CUDA_HOST_NODE_PARAMS host;
        CUDA_MEMCPY3D copy;
        CUDA_MEM_ALLOC_NODE_PARAMS alloc;
    } p; /* what the node was made with, for the *GetParams calls */
    int has_params; /* p is set (a captured kernel, copy or memset has none) */
    void *kargs; /* kernel argument values or alloc access descriptors that p points to */
    cu_gnode **deps;
    size_t ndeps, depcap;
};

typedef struct cu_graph_exec {
    uint64_t handle;
    arsim_graph *g;
    cu_gmem **allocs, **frees; /* the graph memory its launches allocate and free */
    size_t nallocs, nfrees;
    cu_uref *urefs;
    char *shape; /* node types and edge counts in layout order: what an update must keep */
    int auto_free; /* each launch first frees what the last one left allocated */
} cu_graph_exec;

/* ---- graphs (cusim_graph.c); callers hold g_capture_mu */
CUSIM_INTERNAL cu_graph *cusim_graph_new(void);
/* A copy of kernel argument values: a kernelParams array followed by them. */
CUSIM_INTERNAL void **cusim_kernel_args_copy(const ar_kernel_info *info, void *const *params);
CUSIM_INTERNAL void cusim_graph_free(cu_graph *g); /* removes its handle too */
/* A node of graph g of the given type with deps; owns body (may be NULL). */
CUSIM_INTERNAL CUresult cusim_gnode_add(cu_graph *g, CUgraphNodeType type, arsim_graph *body,
                                        cu_gnode *const *deps, size_t ndeps, cu_gnode **out);
/* Appends op (owned) to the capture as a node after its dependencies. */
CUSIM_INTERNAL CUresult cusim_capture_add_op(cu_capture *cap, arsim_op *op);
/* cuMemAllocAsync / cuMemFreeAsync in a capture: a graph memory node (the
 * node takes its own reference to m); an allocation's node reports its
 * pool's type and location (pool; NULL for a free). */
CUSIM_INTERNAL CUresult cusim_capture_add_mem(cu_capture *cap, CUgraphNodeType type, cu_gmem *m,
                                              const CUmemPoolProps *pool);
/* cuGraphLaunch into a capture: a child graph node running ops. */
CUSIM_INTERNAL CUresult cusim_capture_add_exec(cu_capture *cap, const arsim_graph *ops);
/* The graph a capture fills (NULL if it is gone). */
CUSIM_INTERNAL cu_graph *cusim_capture_graph(cu_capture *cap);
/* Makes node, just added with the capture's dependencies, the one the next
 * captured node depends on. */
CUSIM_INTERNAL CUresult cusim_capture_advance(cu_capture *cap, cu_gnode *node);
/* A deep copy of g (a child graph node's). */
CUSIM_INTERNAL CUresult cusim_graph_clone(const cu_graph *g, cu_graph **out);
/* A conditional node's condition: the default value of its handle (the
 * value at each launch: only device code could change it, through the
 * device runtime, which the sim has not).  -1: no such handle. */
CUSIM_INTERNAL long long cusim_cond_value(CUgraphConditionalHandle h);
/* ---- graph memory and user objects (cusim_graph_mem.c) */
#define CUSIM_GRAPH_MEM 0x40000000u /* allocation flag: graph memory */
CUSIM_INTERNAL CUresult cusim_gmem_new(int device, arsim_mem_kind kind, size_t size,
                                       cu_gmem **out);
CUSIM_INTERNAL cu_gmem *cusim_gmem_of(CUdeviceptr p); /* NULL: no graph memory there */
CUSIM_INTERNAL void cusim_gmem_ref(cu_gmem *m);
CUSIM_INTERNAL void cusim_gmem_unref(cu_gmem *m);
CUSIM_INTERNAL CUdeviceptr cusim_gmem_ptr(const cu_gmem *m);
CUSIM_INTERNAL size_t cusim_gmem_size(const cu_gmem *m);
CUSIM_INTERNAL int cusim_gmem_device(const cu_gmem *m);
/* Launch bookkeeping: refuses a launch whose allocations are still live,
 * then marks them live and the frees' dead. */
CUSIM_INTERNAL CUresult cusim_gmem_launch(cu_graph_exec *x);
/* cuMemFree / cuMemFreeAsync of graph memory outside a graph: ``queued``
 * when a stream op (cusim_gmem_free_done) will release the backing. */
CUSIM_INTERNAL CUresult cusim_gmem_user_free(cu_gmem *m, int queued);
CUSIM_INTERNAL void cusim_gmem_free_done(void *m);
CUSIM_INTERNAL void cusim_urefs_release(cu_uref *list);
CUSIM_INTERNAL CUresult cusim_urefs_copy(const cu_uref *from, cu_uref **to);
/* A user object whose last reference goes is destroyed by the next flush on
 * the releasing thread, after it lets go of the driver's locks: its
 * destructor may drop client objects whose teardown calls back in. */
CUSIM_INTERNAL void cusim_uobj_release(cu_uobj *o, unsigned count);
CUSIM_INTERNAL void cusim_uobj_flush(void);
CUSIM_INTERNAL void cusim_exec_free(cu_graph_exec *x);

/* ---- entry-point preambles.  Every entry point starts with the same checks
 * (initialised, a current context or a live stream, then its handles), and
 * the real driver reports the first that fails; these keep that order in one
 * place.  CUSIM_TRY returns a failing check's code from the entry point. */
#define CUSIM_TRY(check)                                                                      \
    do {                                                                                      \
        CUresult cusim_try_ = (check);                                                        \
        if (cusim_try_ != CUDA_SUCCESS)                                                       \
            return cusim_try_;                                                                \
    } while (0)
/* Declares `T *var`, the live object behind handle `h` of kind `kind`, after
 * the init check: an unknown or destroyed handle is CUDA_ERROR_INVALID_HANDLE. */
#define CUSIM_GET(var, T, h, kind)                                                            \
    CUSIM_TRY(cusim_check_init());                                                            \
    T *var = arsim_handle_get((uint64_t)(uintptr_t)(h), (kind));                              \
    if (!var)                                                                                 \
        return CUDA_ERROR_INVALID_HANDLE
/* The stream of a call that writes through `out`: its checks, then `out`
 * non-NULL (CUDA_ERROR_INVALID_VALUE). */
CUSIM_INTERNAL CUresult cusim_stream_out(CUstream h, const void *out, cu_stream **s);

/* ---- engine status -> CUresult (cusim_errors.c) */
CUSIM_INTERNAL CUresult cusim_status(arsim_status s);
/* ---- streams and capture membership (cusim_stream.c) */
CUSIM_INTERNAL extern pthread_mutex_t g_capture_mu;
CUSIM_INTERNAL CUresult cusim_stream_new(cu_ctx *ctx, unsigned flags, int priority, int legacy,
                                         cu_stream **out);
CUSIM_INTERNAL void cusim_stream_free(cu_stream *s);
CUSIM_INTERNAL void cusim_capture_invalidate(cu_capture *cap);
CUSIM_INTERNAL void cusim_capture_detach(cu_stream *s);
/* ---- contexts, stream resolution, submission (cusim_core.c) */
CUSIM_INTERNAL CUresult cusim_check_init(void);
/* The current context (INVALID_CONTEXT if none), or the device's sticky error. */
CUSIM_INTERNAL CUresult cusim_current_ctx(cu_ctx **out);
CUSIM_INTERNAL cu_ctx *cusim_ctx_from_handle(CUcontext h);
/* A stream handle (including 0, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD) to
 * its object; checks the context's sticky error. */
CUSIM_INTERNAL CUresult cusim_resolve_stream(CUstream h, cu_stream **out);
/* Set while a _ptsz/_ptds entry point runs: stream 0 is the per-thread stream. */
CUSIM_INTERNAL extern __thread int cusim_tls_ptds;
/* The body of a _ptds/_ptsz entry point: `call`, the base entry point, with
 * stream 0 meaning this thread's per-thread default stream. */
#define PTDS_CALL(call)                                                             \
    do {                                                                            \
        int saved_ = cusim_tls_ptds;                                                \
        cusim_tls_ptds = 1;                                                         \
        CUresult r_ = (call);                                                       \
        cusim_tls_ptds = saved_;                                                    \
        return r_;                                                                  \
    } while (0)
/* Submits an op with the legacy-stream ordering rules and capture checks. */
CUSIM_INTERNAL CUresult cusim_submit(cu_stream *s, arsim_op *op, uint64_t *seq_out);
CUSIM_INTERNAL CUresult cusim_submit_graph(cu_stream *s, const arsim_graph *g);
CUSIM_INTERNAL CUresult cusim_ctx_synchronize(cu_ctx *ctx);
/* ---- the printf FIFOs (cusim_printf.c).  flush writes context ctx's held
 * records to stdout (0: every context's); forget also drops its FIFO (the
 * context is gone); seal fixes its size (a kernel that calls printf was
 * launched); init hands the PTX executor the FIFOs' sink (cuInit). */
CUSIM_INTERNAL void cusim_printf_init(void);
CUSIM_INTERNAL void cusim_printf_flush(uint64_t ctx);
CUSIM_INTERNAL void cusim_printf_forget(uint64_t ctx);
CUSIM_INTERNAL void cusim_printf_seal(uint64_t ctx);
/* Reads (get) or sets (set) context ctx's CU_LIMIT_PRINTF_FIFO_SIZE. */
CUSIM_INTERNAL CUresult cusim_printf_limit(uint64_t ctx, size_t *get, const size_t *set);
/* ---- copies (cusim_mem.c), peer copies and access (cusim_peer.c) */
/* Every 1-D copy; blocking: the synchronous API.  A device-to-device copy
 * between two devices' memory is a peer copy. */
CUSIM_INTERNAL CUresult cusim_copy1d(void *dst, const void *src, size_t n, arsim_copy_dir dir,
                                     CUstream h, int blocking);
/* Pools (cusim_pool.c): the allocation flag that marks a pool block, and the
 * synchronous free of one (cuMemFree of stream-ordered memory). */
#define CUSIM_POOL_BLOCK 0x80000000u
CUSIM_INTERNAL CUresult cusim_pool_free_now(void *p);
/* The pool a block belongs to, as a CUmemoryPool handle (0 if none). */
CUSIM_INTERNAL uint64_t cusim_pool_of(const void *p);
/* A pool of one allocation type at one location (checked by the caller; a
 * host location's id is ignored); NULL if out of memory. */
typedef struct cu_pool cu_pool;
CUSIM_INTERNAL cu_pool *cusim_pool_new(CUmemAllocationType type, const CUmemLocation *loc,
                                       size_t max_size, int is_default);
/* The live (not destroyed) pool behind a handle, or NULL. */
CUSIM_INTERNAL cu_pool *cusim_pool_get(CUmemoryPool h);
CUSIM_INTERNAL CUmemoryPool cusim_pool_handle(const cu_pool *p);
/* Whether p is a pool of this allocation type at this location. */
CUSIM_INTERNAL int cusim_pool_serves(const cu_pool *p, CUmemAllocationType type,
                                     const CUmemLocation *loc);
/* cuMemAllocFromPoolAsync's work once the stream and pool are resolved: in a
 * capture, a graph memory alloc node. */
CUSIM_INTERNAL CUresult cusim_pool_alloc_async(cu_pool *p, size_t bytesize, cu_stream *s,
                                               CUdeviceptr *out);

/* ---- the linker (cusim_link.c, cusim_fatbin.c, cusim_ptxsyms.c) */
/* If image is one cuLinkComplete made, the PTX text it holds; else NULL. */
CUSIM_INTERNAL const char *cusim_link_image_ptx(const void *image);
/* The PTX of a fatbin for a device of compute capability device_sm (80 for
 * 8.0), malloc'd and NUL-terminated; on failure why says what was wrong. */
CUSIM_INTERNAL CUresult cusim_fatbin_ptx(const void *data, size_t size, int device_sm,
                                         char **ptx_out, char *why, size_t why_size);
/* The bytes a fatbin at data spans (0 if none starts there). */
CUSIM_INTERNAL size_t cusim_fatbin_size(const void *data, size_t avail);
/* Where a host object (ELF) keeps its fatbins: 0 and the section's place,
 * 1 if it has none, -1 if it is no ELF64 object. */
CUSIM_INTERNAL int cusim_object_fatbins(const void *data, size_t size, size_t *off, size_t *len);
/* The module-scope definitions a PTX text makes (variables, and functions
 * with a body), with their linkage and where their text lies, and whether it
 * declares an external function (cusim_ptxsyms.c). */
enum { CUSIM_LINK_INTERNAL, CUSIM_LINK_VISIBLE, CUSIM_LINK_WEAK, CUSIM_LINK_COMMON };
typedef struct cusim_ptx_def {
    char *name;
    int is_func;
    int linkage;       /* CUSIM_LINK_* */
    size_t start, end; /* the statement: its first directive to its ';' or '}' */
    uint64_t size;     /* a variable's bytes, 0 where the text does not say */
    int initialized;
    int shared_stmt;   /* declared in one statement with other variables */
} cusim_ptx_def;
typedef struct cusim_ptx_syms {
    cusim_ptx_def *defs;
    size_t n;
    int has_extern_func;
} cusim_ptx_syms;
CUSIM_INTERNAL int cusim_ptx_scan_syms(const char *text, cusim_ptx_syms *out);
CUSIM_INTERNAL void cusim_ptx_syms_free(cusim_ptx_syms *syms);
/* Resolves the definitions of n PTX texts (syms[i] scanned from texts[i],
 * each named names[i]) as a linker does, rewriting texts[i] (malloc'd) so
 * that joined they make one module: 0; -1 with why where a linker refuses
 * them (two .visible definitions); -2 out of memory; -3 with why where the
 * sim cannot join them. */
CUSIM_INTERNAL int cusim_ptx_resolve(char **texts, const cusim_ptx_syms *syms,
                                     const char *const *names, size_t n, char *why,
                                     size_t why_size);

/* ---- functions (cusim_func.c): the model cuFuncGetAttribute and the
 * occupancy calculator share, since the sim has no compiled binary to read. */
#define CUSIM_FUNC_REGS 32         /* registers per thread */
#define CUSIM_SHARED_PER_BLOCK 49152 /* a block's shared memory without the opt-in */
/* With CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES raised: an A100's
 * 163 KiB, the compute capability 8.0 part the sim reports. */
#define CUSIM_SHARED_PER_BLOCK_OPTIN 166912
static inline cu_function *cusim_function_get(CUfunction h)
{
    return arsim_handle_get((uint64_t)(uintptr_t)h, HK_FUNCTION);
}
/* The most dynamic shared memory a launch of f may ask for.  Inline, so the
 * launch path (cusim_exec.c) need not call up into cusim_func.c, which calls
 * cuLaunchKernel for cuLaunchKernelEx. */
static inline int cusim_func_max_dynamic_shared(const cu_function *f)
{
    int set = __atomic_load_n(&f->max_dynamic_shared_set, __ATOMIC_RELAXED);
    return set ? set - 1 : CUSIM_SHARED_PER_BLOCK - (int)f->attrs.shared_static;
}

/* ---- exported API */
#define P CUSIM_API CUresult CUDAAPI
P cuInit(unsigned int Flags);
P cuDriverGetVersion(int *driverVersion);
P cuGetErrorName(CUresult error, const char **pStr);
P cuGetErrorString(CUresult error, const char **pStr);
P cuDeviceGet(CUdevice *device, int ordinal);
P cuDeviceGetCount(int *count);
P cuDeviceGetName(char *name, int len, CUdevice dev);
P cuDeviceGetUuid(CUuuid *uuid, CUdevice dev);
P cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev);
P cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev);
P cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev);
P cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev);
P cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev);
P cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev);
P cuDevicePrimaryCtxRelease_v2(CUdevice dev);
P cuDevicePrimaryCtxReset_v2(CUdevice dev);
P cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active);
P cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags);
P cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev);
P cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags,
                 CUdevice dev);
P cuCtxDestroy_v2(CUcontext ctx);
P cuCtxSetCurrent(CUcontext ctx);
P cuCtxGetCurrent(CUcontext *pctx);
P cuCtxPushCurrent_v2(CUcontext ctx);
P cuCtxPopCurrent_v2(CUcontext *pctx);
P cuCtxGetDevice(CUdevice *device);
P cuCtxGetFlags(unsigned int *flags);
P cuCtxSynchronize(void);
P cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority);
P cuCtxGetApiVersion(CUcontext ctx, unsigned int *version);
P cuCtxSetLimit(CUlimit limit, size_t value);
P cuCtxGetLimit(size_t *pvalue, CUlimit limit);
P cuProfilerStart(void);
P cuProfilerStop(void);

P cuMemGetInfo_v2(size_t *free, size_t *total);
P cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize);
P cuMemFree_v2(CUdeviceptr dptr);
P cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags);
P cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags);
P cuMemAllocHost_v2(void **pp, size_t bytesize);
P cuMemFreeHost(void *p);
P cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags);
P cuMemHostGetFlags(unsigned int *pFlags, void *p);
P cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags);
P cuMemHostUnregister(void *p);
P cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr);
P cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr);
P cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes,
                         void **data, CUdeviceptr ptr);
P cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev);
P cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev);
P cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool);
P cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps);
P cuMemPoolDestroy(CUmemoryPool pool);
P cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value);
P cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value);
P cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep);
P cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream);
P cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);
P cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream);
P cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount);
P cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream);
P cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount);
P cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount);
P cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount);
P cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount,
                       CUstream hStream);
P cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream);
P cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                       CUstream hStream);
P cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
               CUcontext srcContext, size_t ByteCount);
P cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                    CUcontext srcContext, size_t ByteCount, CUstream hStream);
P cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags);
P cuCtxDisablePeerAccess(CUcontext peerContext);
P cuMemcpy2D_v2(const CUDA_MEMCPY2D *pCopy);
P cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *pCopy, CUstream hStream);
P cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N);
P cuMemsetD16_v2(CUdeviceptr dstDevice, unsigned short us, size_t N);
P cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui, size_t N);
P cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream);
P cuMemsetD16Async(CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream);
P cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream);

P cuStreamCreate(CUstream *phStream, unsigned int Flags);
P cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority);
P cuStreamDestroy_v2(CUstream hStream);
P cuStreamSynchronize(CUstream hStream);
P cuStreamQuery(CUstream hStream);
P cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags);
P cuStreamGetPriority(CUstream hStream, int *priority);
P cuStreamGetFlags(CUstream hStream, unsigned int *flags);
P cuStreamGetCtx(CUstream hStream, CUcontext *pctx);
P cuStreamGetId(CUstream hStream, unsigned long long *streamId);
P cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode);
P cuStreamEndCapture(CUstream hStream, CUgraph *phGraph);
P cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus);
P cuStreamGetCaptureInfo_v2(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                            cuuint64_t *id_out, CUgraph *graph_out,
                            const CUgraphNode **dependencies_out, size_t *numDependencies_out);
P cuStreamGetCaptureInfo_v3(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                            cuuint64_t *id_out, CUgraph *graph_out,
                            const CUgraphNode **dependencies_out,
                            const CUgraphEdgeData **edgeData_out, size_t *numDependencies_out);
P cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode);
P cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData);

P cuEventCreate(CUevent *phEvent, unsigned int Flags);
P cuEventDestroy_v2(CUevent hEvent);
P cuEventRecord(CUevent hEvent, CUstream hStream);
P cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags);
P cuEventQuery(CUevent hEvent);
P cuEventSynchronize(CUevent hEvent);
P cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd);
P cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd);

P cuModuleLoadData(CUmodule *module, const void *image);
P cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
                     CUjit_option *options, void **optionValues);
P cuModuleLoad(CUmodule *module, const char *fname);
P cuModuleUnload(CUmodule hmod);
P cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name);
P cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t *paramOffset, size_t *paramSize);
P cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                 unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                 unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                 void **kernelParams, void **extra);

P cuGraphCreate(CUgraph *phGraph, unsigned int flags);
P cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes);
P cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags);
P cuGraphInstantiateWithParams(CUgraphExec *phGraphExec, CUgraph hGraph,
                               CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams);
P cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream);
P cuGraphExecDestroy(CUgraphExec hGraphExec);
P cuGraphDestroy(CUgraph hGraph);
P cuGraphClone(CUgraph *phGraphClone, CUgraph originalGraph);
P cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream);
P cuGraphExecUpdate_v2(CUgraphExec hGraphExec, CUgraph hGraph, CUgraphExecUpdateResultInfo *resultInfo);
P cuGraphNodeFindInClone(CUgraphNode *phNode, CUgraphNode hOriginalNode, CUgraph hClonedGraph);
P cuGraphDebugDotPrint(CUgraph hGraph, const char *path, unsigned int flags);
P cuGraphGetRootNodes(CUgraph hGraph, CUgraphNode *rootNodes, size_t *numRootNodes);
P cuGraphGetEdges(CUgraph hGraph, CUgraphNode *from, CUgraphNode *to, size_t *numEdges);
P cuGraphGetEdges_v2(CUgraph hGraph, CUgraphNode *from, CUgraphNode *to, CUgraphEdgeData *edgeData, size_t *numEdges);
P cuGraphNodeGetDependencies(CUgraphNode hNode, CUgraphNode *dependencies, size_t *numDependencies);
P cuGraphNodeGetDependencies_v2(CUgraphNode hNode, CUgraphNode *dependencies, CUgraphEdgeData *edgeData, size_t *numDependencies);
P cuGraphNodeGetDependentNodes(CUgraphNode hNode, CUgraphNode *dependentNodes, size_t *numDependentNodes);
P cuGraphNodeGetDependentNodes_v2(CUgraphNode hNode, CUgraphNode *dependentNodes, CUgraphEdgeData *edgeData, size_t *numDependentNodes);
P cuGraphAddDependencies(CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to, size_t numDependencies);
P cuGraphAddDependencies_v2(CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to, const CUgraphEdgeData *edgeData, size_t numDependencies);
P cuGraphRemoveDependencies(CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to, size_t numDependencies);
P cuGraphRemoveDependencies_v2(CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to, const CUgraphEdgeData *edgeData, size_t numDependencies);
P cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType *type);
P cuGraphDestroyNode(CUgraphNode hNode);
P cuGraphAddEmptyNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies, size_t numDependencies);
P cuGraphAddKernelNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies, size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS *nodeParams);
P cuGraphKernelNodeGetParams_v2(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS *nodeParams);
P cuGraphAddMemsetNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies, size_t numDependencies, const CUDA_MEMSET_NODE_PARAMS *memsetParams, CUcontext ctx);
P cuGraphMemsetNodeGetParams(CUgraphNode hNode, CUDA_MEMSET_NODE_PARAMS *nodeParams);
P cuGraphAddMemcpyNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies, size_t numDependencies, const CUDA_MEMCPY3D *copyParams, CUcontext ctx);
P cuGraphMemcpyNodeGetParams(CUgraphNode hNode, CUDA_MEMCPY3D *nodeParams);
P cuGraphAddHostNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies, size_t numDependencies, const CUDA_HOST_NODE_PARAMS *nodeParams);
P cuGraphHostNodeGetParams(CUgraphNode hNode, CUDA_HOST_NODE_PARAMS *nodeParams);
P cuGraphAddChildGraphNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies, size_t numDependencies, CUgraph childGraph);
P cuGraphChildGraphNodeGetGraph(CUgraphNode hNode, CUgraph *phGraph);
P cuGraphAddEventRecordNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies, size_t numDependencies, CUevent event);
P cuGraphEventRecordNodeGetEvent(CUgraphNode hNode, CUevent *event_out);
P cuGraphAddEventWaitNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies, size_t numDependencies, CUevent event);
P cuGraphEventWaitNodeGetEvent(CUgraphNode hNode, CUevent *event_out);
P cuGraphAddMemAllocNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies, size_t numDependencies, CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams);
P cuGraphMemAllocNodeGetParams(CUgraphNode hNode, CUDA_MEM_ALLOC_NODE_PARAMS *params_out);
P cuGraphAddMemFreeNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies, size_t numDependencies, CUdeviceptr dptr);
P cuGraphMemFreeNodeGetParams(CUgraphNode hNode, CUdeviceptr *dptr_out);
P cuGraphNodeGetParams(CUgraphNode hNode, CUgraphNodeParams *nodeParams);
P cuGraphAddNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies, size_t numDependencies, CUgraphNodeParams *nodeParams);
P cuGraphAddNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies, const CUgraphEdgeData *dependencyData, size_t numDependencies, CUgraphNodeParams *nodeParams);
P cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void *value);
P cuDeviceSetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void *value);
P cuDeviceGraphMemTrim(CUdevice device);
P cuUserObjectCreate(CUuserObject *object_out, void *ptr, CUhostFn destroy, unsigned int initialRefcount, unsigned int flags);
P cuUserObjectRetain(CUuserObject object, unsigned int count);
P cuUserObjectRelease(CUuserObject object, unsigned int count);
P cuGraphRetainUserObject(CUgraph graph, CUuserObject object, unsigned int count, unsigned int flags);
P cuGraphReleaseUserObject(CUgraph graph, CUuserObject object, unsigned int count);
P cuGraphConditionalHandleCreate(CUgraphConditionalHandle *pHandle_out, CUgraph hGraph, CUcontext ctx, unsigned int defaultLaunchValue, unsigned int flags);
P cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph, const CUgraphNode *dependencies, const CUgraphEdgeData *dependencyData, size_t numDependencies, CUstreamCaptureMode mode);
P cuStreamUpdateCaptureDependencies(CUstream hStream, CUgraphNode *dependencies, size_t numDependencies, unsigned int flags);
P cuStreamUpdateCaptureDependencies_v2(CUstream hStream, CUgraphNode *dependencies, const CUgraphEdgeData *dependencyData, size_t numDependencies, unsigned int flags);
P cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray);
P cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray);
P cuArrayDestroy(CUarray hArray);
P cuArray3DGetDescriptor_v2(CUDA_ARRAY3D_DESCRIPTOR *pArrayDescriptor, CUarray hArray);
P cuMipmappedArrayCreate(CUmipmappedArray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc, unsigned int numMipmapLevels);
P cuMipmappedArrayGetLevel(CUarray *pLevelArray, CUmipmappedArray hMipmappedArray, unsigned int level);
P cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray);
P cuTexObjectCreate(CUtexObject *pTexObject, const CUDA_RESOURCE_DESC *pResDesc, const CUDA_TEXTURE_DESC *pTexDesc, const CUDA_RESOURCE_VIEW_DESC *pResViewDesc);
P cuTexObjectDestroy(CUtexObject texObject);
P cuSurfObjectCreate(CUsurfObject *pSurfObject, const CUDA_RESOURCE_DESC *pResDesc);
P cuSurfObjectDestroy(CUsurfObject surfObject);
P cuMemGetMemPool(CUmemoryPool *pool, CUmemLocation *location, CUmemAllocationType type);
P cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc *map, size_t count);
P cuMemPoolGetAccess(CUmemAccess_flags *flags, CUmemoryPool memPool, CUmemLocation *location);
P cuIpcGetEventHandle(CUipcEventHandle *pHandle, CUevent event);
P cuIpcOpenEventHandle(CUevent *phEvent, CUipcEventHandle handle);
P cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr);
P cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags);
P cuIpcCloseMemHandle(CUdeviceptr dptr);
P cuMemPoolExportToShareableHandle(void *handle_out, CUmemoryPool pool, CUmemAllocationHandleType handleType, unsigned long long flags);
P cuMemPoolImportFromShareableHandle(CUmemoryPool *pool_out, void *handle, CUmemAllocationHandleType handleType, unsigned long long flags);
P cuMemPoolExportPointer(CUmemPoolPtrExportData *shareData_out, CUdeviceptr ptr);
P cuMemPoolImportPointer(CUdeviceptr *ptr_out, CUmemoryPool pool, CUmemPoolPtrExportData *shareData);
P cuMemGetDefaultMemPool(CUmemoryPool *pool_out, CUmemLocation *location, CUmemAllocationType type);
P cuMemSetMemPool(CUmemLocation *location, CUmemAllocationType type, CUmemoryPool pool);
P cuMemAdvise_v2(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUmemLocation location);
P cuMemPrefetchAsync_v2(CUdeviceptr devPtr, size_t count, CUmemLocation location, unsigned int flags, CUstream hStream);
P cuMemPrefetchAsync_v2_ptsz(CUdeviceptr devPtr, size_t count, CUmemLocation location, unsigned int flags, CUstream hStream);
P cuMemPrefetchBatchAsync(CUdeviceptr *dptrs, size_t *sizes, size_t count, CUmemLocation *prefetchLocs, size_t *prefetchLocIdxs, size_t numPrefetchLocs, unsigned long long flags, CUstream hStream);
P cuMemPrefetchBatchAsync_ptsz(CUdeviceptr *dptrs, size_t *sizes, size_t count, CUmemLocation *prefetchLocs, size_t *prefetchLocIdxs, size_t numPrefetchLocs, unsigned long long flags, CUstream hStream);
P cuMemDiscardBatchAsync(CUdeviceptr *dptrs, size_t *sizes, size_t count, unsigned long long flags, CUstream hStream);
P cuMemDiscardBatchAsync_ptsz(CUdeviceptr *dptrs, size_t *sizes, size_t count, unsigned long long flags, CUstream hStream);
P cuMemDiscardAndPrefetchBatchAsync(CUdeviceptr *dptrs, size_t *sizes, size_t count, CUmemLocation *prefetchLocs, size_t *prefetchLocIdxs, size_t numPrefetchLocs, unsigned long long flags, CUstream hStream);
P cuMemDiscardAndPrefetchBatchAsync_ptsz(CUdeviceptr *dptrs, size_t *sizes, size_t count, CUmemLocation *prefetchLocs, size_t *prefetchLocIdxs, size_t numPrefetchLocs, unsigned long long flags, CUstream hStream);
P cuMemRangeGetAttribute(void *data, size_t dataSize, CUmem_range_attribute attribute, CUdeviceptr devPtr, size_t count);
P cuMemRangeGetAttributes(void **data, size_t *dataSizes, CUmem_range_attribute *attributes, size_t numAttributes, CUdeviceptr devPtr, size_t count);

P cuLinkCreate(unsigned int numOptions, CUjit_option *options, void **optionValues,
               CUlinkState *stateOut);
P cuLinkCreate_v2(unsigned int numOptions, CUjit_option *options, void **optionValues,
                  CUlinkState *stateOut);
P cuLinkAddData(CUlinkState state, CUjitInputType type, void *data, size_t size,
                const char *name, unsigned int numOptions, CUjit_option *options,
                void **optionValues);
P cuLinkAddData_v2(CUlinkState state, CUjitInputType type, void *data, size_t size,
                   const char *name, unsigned int numOptions, CUjit_option *options,
                   void **optionValues);
P cuLinkAddFile(CUlinkState state, CUjitInputType type, const char *path, unsigned int numOptions,
                CUjit_option *options, void **optionValues);
P cuLinkAddFile_v2(CUlinkState state, CUjitInputType type, const char *path,
                   unsigned int numOptions, CUjit_option *options, void **optionValues);
P cuLinkComplete(CUlinkState state, void **cubinOut, size_t *sizeOut);
P cuLinkDestroy(CUlinkState state);

P cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
                    void **jitOptionsValues, unsigned int numJitOptions,
                    CUlibraryOption *libraryOptions, void **libraryOptionValues,
                    unsigned int numLibraryOptions);
P cuLibraryLoadFromFile(CUlibrary *library, const char *fileName, CUjit_option *jitOptions,
                        void **jitOptionsValues, unsigned int numJitOptions,
                        CUlibraryOption *libraryOptions, void **libraryOptionValues,
                        unsigned int numLibraryOptions);
P cuLibraryUnload(CUlibrary library);
P cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name);
P cuLibraryGetModule(CUmodule *pMod, CUlibrary library);
P cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod, const char *name);
P cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library, const char *name);
P cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel);
P cuKernelGetLibrary(CUlibrary *pLib, CUkernel kernel);
P cuKernelGetName(const char **name, CUkernel hfunc);
P cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex, size_t *paramOffset,
                       size_t *paramSize);
P cuKernelGetAttribute(int *pi, CUfunction_attribute attrib, CUkernel kernel, CUdevice dev);
P cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel, CUdevice dev);
P cuKernelSetCacheConfig(CUkernel kernel, CUfunc_cache config, CUdevice dev);
P cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc);
P cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value);
P cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config);
P cuFuncGetName(const char **name, CUfunction hfunc);
P cuFuncGetModule(CUmodule *hmod, CUfunction hfunc);
P cuFuncIsLoaded(CUfunctionLoadingState *state, CUfunction function);
P cuFuncLoad(CUfunction function);
P cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra);
P cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUfunction func, int blockSize,
                                              size_t dynamicSMemSize);
P cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *numBlocks, CUfunction func,
                                                       int blockSize, size_t dynamicSMemSize,
                                                       unsigned int flags);
P cuOccupancyMaxPotentialBlockSize(int *minGridSize, int *blockSize, CUfunction func,
                                   CUoccupancyB2DSize blockSizeToDynamicSMemSize,
                                   size_t dynamicSMemSize, int blockSizeLimit);
P cuOccupancyMaxPotentialBlockSizeWithFlags(int *minGridSize, int *blockSize, CUfunction func,
                                            CUoccupancyB2DSize blockSizeToDynamicSMemSize,
                                            size_t dynamicSMemSize, int blockSizeLimit,
                                            unsigned int flags);
P cuOccupancyAvailableDynamicSMemPerBlock(size_t *dynamicSmemSize, CUfunction func,
                                          int numBlocks, int blockSize);

P cuTensorMapEncodeTiled(CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType,
                         cuuint32_t tensorRank, void *globalAddress, const cuuint64_t *globalDim,
                         const cuuint64_t *globalStrides, const cuuint32_t *boxDim,
                         const cuuint32_t *elementStrides, CUtensorMapInterleave interleave,
                         CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
                         CUtensorMapFloatOOBfill oobFill);
P cuTensorMapEncodeIm2col(CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType,
                          cuuint32_t tensorRank, void *globalAddress, const cuuint64_t *globalDim,
                          const cuuint64_t *globalStrides, const int *pixelBoxLowerCorner,
                          const int *pixelBoxUpperCorner, cuuint32_t channelsPerPixel,
                          cuuint32_t pixelsPerColumn, const cuuint32_t *elementStrides,
                          CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                          CUtensorMapL2promotion l2Promotion, CUtensorMapFloatOOBfill oobFill);
P cuTensorMapReplaceAddress(CUtensorMap *tensorMap, void *globalAddress);

P cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId);
P cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
P cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                      CUdriverProcAddressQueryResult *symbolStatus);
#undef P

/* Per-thread-default-stream variants (cusim_ptds.c). */
CUSIM_API CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dst, const void *src, size_t n);
CUSIM_API CUresult cuMemcpyDtoH_v2_ptds(void *dst, CUdeviceptr src, size_t n);
CUSIM_API CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n);
CUSIM_API CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n);
CUSIM_API CUresult cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *c);
CUSIM_API CUresult cuMemsetD8_v2_ptds(CUdeviceptr d, unsigned char v, size_t n);
CUSIM_API CUresult cuMemsetD16_v2_ptds(CUdeviceptr d, unsigned short v, size_t n);
CUSIM_API CUresult cuMemsetD32_v2_ptds(CUdeviceptr d, unsigned int v, size_t n);
CUSIM_API CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s);
CUSIM_API CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, const void *src, size_t n, CUstream s);
CUSIM_API CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dst, CUdeviceptr src, size_t n, CUstream s);
CUSIM_API CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s);
CUSIM_API CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *c, CUstream s);
CUSIM_API CUresult cuMemsetD8Async_ptsz(CUdeviceptr d, unsigned char v, size_t n, CUstream s);
CUSIM_API CUresult cuMemsetD16Async_ptsz(CUdeviceptr d, unsigned short v, size_t n, CUstream s);
CUSIM_API CUresult cuMemsetD32Async_ptsz(CUdeviceptr d, unsigned int v, size_t n, CUstream s);
CUSIM_API CUresult cuStreamQuery_ptsz(CUstream s);
CUSIM_API CUresult cuStreamSynchronize_ptsz(CUstream s);
CUSIM_API CUresult cuStreamWaitEvent_ptsz(CUstream s, CUevent e, unsigned int flags);
CUSIM_API CUresult cuStreamGetPriority_ptsz(CUstream s, int *p);
CUSIM_API CUresult cuStreamGetFlags_ptsz(CUstream s, unsigned int *f);
CUSIM_API CUresult cuStreamGetCtx_ptsz(CUstream s, CUcontext *c);
CUSIM_API CUresult cuStreamGetId_ptsz(CUstream s, unsigned long long *id);
CUSIM_API CUresult cuStreamBeginCapture_v2_ptsz(CUstream s, CUstreamCaptureMode mode);
CUSIM_API CUresult cuStreamEndCapture_ptsz(CUstream s, CUgraph *g);
CUSIM_API CUresult cuStreamIsCapturing_ptsz(CUstream s, CUstreamCaptureStatus *st);
CUSIM_API CUresult cuStreamGetCaptureInfo_v2_ptsz(CUstream s, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *g, const CUgraphNode **deps, size_t *ndeps);
CUSIM_API CUresult cuStreamGetCaptureInfo_v3_ptsz(CUstream s, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *g, const CUgraphNode **deps, const CUgraphEdgeData **edges, size_t *ndeps);
CUSIM_API CUresult cuLaunchHostFunc_ptsz(CUstream s, CUhostFn fn, void *user);
CUSIM_API CUresult cuEventRecord_ptsz(CUevent e, CUstream s);
CUSIM_API CUresult cuEventRecordWithFlags_ptsz(CUevent e, CUstream s, unsigned int flags);
CUSIM_API CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared, CUstream s, void **params, void **extra);
CUSIM_API CUresult cuGraphLaunch_ptsz(CUgraphExec x, CUstream s);
CUSIM_API CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *phGraphExec, CUgraph hGraph, CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams);
CUSIM_API CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra);
CUSIM_API CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *d, size_t n, CUmemoryPool pool, CUstream s);
CUSIM_API CUresult cuMemAllocAsync_ptsz(CUdeviceptr *d, size_t n, CUstream s);
CUSIM_API CUresult cuMemFreeAsync_ptsz(CUdeviceptr d, CUstream s);

#endif /* CUSIM_H */
