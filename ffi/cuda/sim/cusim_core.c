/* cuda-sim: the driver version, devices, contexts, stream resolution (cuInit: cusim_init.c). */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cusim.h"

CUresult cuDriverGetVersion(int *driverVersion)
{
    if (!driverVersion)
        return CUDA_ERROR_INVALID_VALUE;
    const char *v = getenv("ARUNTIME_SIM_DRIVER_VERSION");
    *driverVersion = v && *v ? atoi(v) : CUSIM_DRIVER_VERSION;
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------- devices */

static CUresult check_device(CUdevice dev)
{
    CUSIM_TRY(cusim_check_init());
    return dev >= 0 && dev < arsim_device_count() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    CUSIM_TRY(cusim_check_init());
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    if (ordinal < 0 || ordinal >= arsim_device_count())
        return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count)
{
    CUSIM_TRY(cusim_check_init());
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    *count = arsim_device_count();
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    CUSIM_TRY(check_device(dev));
    if (!name || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(name, (size_t)len, "aruntime cuda-sim device %d", dev);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
    CUSIM_TRY(check_device(dev));
    if (!uuid)
        return CUDA_ERROR_INVALID_VALUE;
    memset(uuid->bytes, 0, sizeof uuid->bytes);
    memcpy(uuid->bytes, "arsim-cuda", 10);
    uuid->bytes[15] = (char)dev;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev) { return cuDeviceGetUuid_v2(uuid, dev); }

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    CUSIM_TRY(check_device(dev));
    if (!bytes)
        return CUDA_ERROR_INVALID_VALUE;
    arsim_device_info info;
    arsim_device_info_get(dev, &info);
    *bytes = (size_t)info.total_memory;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
    CUSIM_TRY(check_device(dev));
    if (!pciBusId || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(pciBusId, (size_t)len, "0000:%02x:00.0", 0x10 + dev);
    return CUDA_SUCCESS;
}

CUresult cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev)
{
    CUSIM_TRY(check_device(dev));
    CUSIM_TRY(check_device(peerDev));
    if (!canAccessPeer)
        return CUDA_ERROR_INVALID_VALUE;
    *canAccessPeer = dev != peerDev; /* all device memory is host memory */
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    CUSIM_TRY(check_device(dev));
    if (!pi)
        return CUDA_ERROR_INVALID_VALUE;
    arsim_device_info info;
    arsim_device_info_get(dev, &info);
    int v;
    switch (attrib) {
    case 1: v = 1024; break;              /* MAX_THREADS_PER_BLOCK */
    case 2: case 3: v = 1024; break;      /* MAX_BLOCK_DIM_X/Y */
    case 4: v = 64; break;                /* MAX_BLOCK_DIM_Z */
    case 5: v = 2147483647; break;        /* MAX_GRID_DIM_X */
    case 6: case 7: v = 65535; break;     /* MAX_GRID_DIM_Y/Z */
    case 8: v = 49152; break;             /* MAX_SHARED_MEMORY_PER_BLOCK */
    case 9: v = 65536; break;             /* TOTAL_CONSTANT_MEMORY */
    case 10: v = 32; break;               /* WARP_SIZE */
    case 11: v = 2147483647; break;       /* MAX_PITCH */
    case 12: v = 65536; break;            /* MAX_REGISTERS_PER_BLOCK */
    case 13: v = 1000000; break;          /* CLOCK_RATE (kHz) */
    case 14: v = 512; break;              /* TEXTURE_ALIGNMENT */
    case 15: v = 1; break;                /* GPU_OVERLAP */
    case 16: v = (int)info.compute_units; break; /* MULTIPROCESSOR_COUNT */
    case 17: v = 0; break;                /* KERNEL_EXEC_TIMEOUT */
    case 18: v = 0; break;                /* INTEGRATED */
    case 19: v = 1; break;                /* CAN_MAP_HOST_MEMORY */
    case 20: v = 0; break;                /* COMPUTE_MODE: default */
    case 31: v = 1; break;                /* CONCURRENT_KERNELS */
    case 32: v = 0; break;                /* ECC_ENABLED */
    case 33: v = 0x10 + dev; break;       /* PCI_BUS_ID */
    case 34: v = 0; break;                /* PCI_DEVICE_ID */
    case 35: v = 0; break;                /* TCC_DRIVER */
    case 36: v = 1000000; break;          /* MEMORY_CLOCK_RATE */
    case 37: v = 256; break;              /* GLOBAL_MEMORY_BUS_WIDTH */
    case 38: v = 4 << 20; break;          /* L2_CACHE_SIZE */
    case 39: v = 2048; break;             /* MAX_THREADS_PER_MULTIPROCESSOR */
    case 40: v = (int)info.copy_engines; break; /* ASYNC_ENGINE_COUNT */
    case 41: v = 1; break;                /* UNIFIED_ADDRESSING */
    case 50: v = 0; break;                /* PCI_DOMAIN_ID */
    case 75: v = 8; break;                /* COMPUTE_CAPABILITY_MAJOR */
    case 76: v = 0; break;                /* COMPUTE_CAPABILITY_MINOR */
    case 78: v = 1; break;                /* STREAM_PRIORITIES_SUPPORTED */
    case 79: v = 1; break;                /* GLOBAL_L1_CACHE_SUPPORTED */
    case 81: v = 167936; break;           /* MAX_SHARED_MEMORY_PER_MULTIPROCESSOR */
    case 82: v = 65536; break;            /* MAX_REGISTERS_PER_MULTIPROCESSOR */
    case 83: v = 1; break;                /* MANAGED_MEMORY */
    case 86: v = 1; break;                /* HOST_NATIVE_ATOMIC_SUPPORTED */
    case 88: v = 1; break;                /* PAGEABLE_MEMORY_ACCESS */
    case 89: v = 1; break;                /* CONCURRENT_MANAGED_ACCESS */
    case 91: v = 1; break;                /* CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM */
    case 95: v = 0; break;                /* COOPERATIVE_LAUNCH */
    case 97: v = CUSIM_SHARED_PER_BLOCK_OPTIN; break; /* MAX_SHARED_MEMORY_PER_BLOCK_OPTIN */
    case 99: v = 1; break;                /* HOST_REGISTER_SUPPORTED */
    case 101: v = 1; break;               /* DIRECT_MANAGED_MEM_ACCESS_FROM_HOST */
    case 106: v = 32; break;              /* MAX_BLOCKS_PER_MULTIPROCESSOR */
    case 115: v = 1; break;               /* MEMORY_POOLS_SUPPORTED (cusim_pool.c) */
    case 134: v = 0; break;               /* HOST_NUMA_ID: the host is one node */
    case 142: v = 1; break;               /* HOST_NUMA_MEMORY_POOLS_SUPPORTED */
    case 144: v = 1; break;               /* HOST_MEMORY_POOLS_SUPPORTED */
    default:
        if (attrib <= 0 || attrib > 200)
            return CUDA_ERROR_INVALID_VALUE;
        v = 0; /* a feature the sim does not have */
        break;
    }
    *pi = v;
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------- contexts */

/* The current-context stack of this thread, as registry handles, so a
 * destroyed context is noticed instead of dereferenced. */
#define CTX_STACK_MAX 32
static __thread uint64_t tls_ctx_stack[CTX_STACK_MAX];
static __thread int tls_ctx_depth;

static pthread_mutex_t g_primary_mu = PTHREAD_MUTEX_INITIALIZER;
static cu_ctx *g_primary[64];

static CUresult ctx_new(int device, int primary, unsigned flags, cu_ctx **out)
{
    cu_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return CUDA_ERROR_OUT_OF_MEMORY;
    c->device = device;
    c->primary = primary;
    c->flags = flags;
    pthread_mutex_init(&c->mu, NULL);
    c->handle = arsim_handle_new(HK_CTX, c);
    if (!c->handle) {
        free(c);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    CUresult r = cusim_stream_new(c, CU_STREAM_DEFAULT, 0, 1, &c->legacy);
    if (r != CUDA_SUCCESS) {
        arsim_handle_remove(c->handle, HK_CTX);
        free(c);
        return r;
    }
    *out = c;
    return CUDA_SUCCESS;
}

/* Waits for the context's work, then destroys its streams and frees its
 * memory: what destroying (or resetting a primary) context means. */
static void ctx_release_resources(cu_ctx *c)
{
    arsim_device_synchronize(c->device);
    for (;;) {
        pthread_mutex_lock(&c->mu);
        cu_stream *s = c->streams;
        pthread_mutex_unlock(&c->mu);
        if (!s)
            break;
        arsim_handle_remove(s->handle, HK_STREAM);
        cusim_stream_free(s);
    }
    arsim_mem_free_owner(c->handle);
    __atomic_store_n(&c->peers, 0, __ATOMIC_RELAXED); /* a context's peer access goes with it */
    /* An error its legacy stream had not reported yet dies with it.  A
     * sticky error does not: cuda.h says the process must be relaunched
     * (arsim_clear_faults stands in for that, for tests). */
    arsim_queue_take_error(c->legacy->q);
    cusim_printf_forget(c->handle); /* its records are written, its FIFO starts anew */
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    CUresult r = check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    CUSIM_TRY(cusim_status(arsim_device_sticky(dev))); /* no new context after a sticky error */
    pthread_mutex_lock(&g_primary_mu);
    if (!g_primary[dev]) {
        r = ctx_new(dev, 1, 0, &g_primary[dev]);
        if (r != CUDA_SUCCESS) {
            pthread_mutex_unlock(&g_primary_mu);
            return r;
        }
    }
    g_primary[dev]->retain_count++;
    *pctx = (CUcontext)(uintptr_t)g_primary[dev]->handle;
    pthread_mutex_unlock(&g_primary_mu);
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    CUSIM_TRY(check_device(dev));
    pthread_mutex_lock(&g_primary_mu);
    cu_ctx *c = g_primary[dev];
    if (!c || c->retain_count <= 0) {
        pthread_mutex_unlock(&g_primary_mu);
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    if (--c->retain_count == 0)
        ctx_release_resources(c); /* the handle stays: a later retain reuses it */
    pthread_mutex_unlock(&g_primary_mu);
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    CUSIM_TRY(check_device(dev));
    pthread_mutex_lock(&g_primary_mu);
    if (g_primary[dev])
        ctx_release_resources(g_primary[dev]);
    pthread_mutex_unlock(&g_primary_mu);
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    CUSIM_TRY(check_device(dev));
    if (!flags || !active)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_primary_mu);
    *flags = g_primary[dev] ? g_primary[dev]->flags : 0;
    *active = g_primary[dev] && g_primary[dev]->retain_count > 0;
    pthread_mutex_unlock(&g_primary_mu);
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
{
    CUresult r = check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&g_primary_mu);
    if (!g_primary[dev])
        r = ctx_new(dev, 1, flags, &g_primary[dev]);
    else
        g_primary[dev]->flags = flags;
    pthread_mutex_unlock(&g_primary_mu);
    return r;
}

static void push_ctx(uint64_t h)
{
    if (tls_ctx_depth < CTX_STACK_MAX)
        tls_ctx_stack[tls_ctx_depth++] = h;
    else
        tls_ctx_stack[CTX_STACK_MAX - 1] = h;
}

CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    CUSIM_TRY(check_device(dev));
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    CUSIM_TRY(cusim_status(arsim_device_sticky(dev)));
    cu_ctx *c;
    CUSIM_TRY(ctx_new(dev, 0, flags, &c));
    push_ctx(c->handle);
    *pctx = (CUcontext)(uintptr_t)c->handle;
    return CUDA_SUCCESS;
}

CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags,
                        CUdevice dev)
{
    (void)ctxCreateParams; /* execution affinity / CIG: not modelled */
    return cuCtxCreate_v2(pctx, flags, dev);
}

CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    CUSIM_TRY(cusim_check_init());
    cu_ctx *c = cusim_ctx_from_handle(ctx);
    if (!c || c->primary)
        return CUDA_ERROR_INVALID_CONTEXT;
    ctx_release_resources(c);
    arsim_handle_remove(c->handle, HK_CTX);
    /* Unbind it from this thread; other threads notice through the registry. */
    for (int i = 0; i < tls_ctx_depth; i++)
        if (tls_ctx_stack[i] == c->handle)
            tls_ctx_stack[i] = 0;
    while (tls_ctx_depth > 0 && tls_ctx_stack[tls_ctx_depth - 1] == 0)
        tls_ctx_depth--;
    cusim_stream_free(c->legacy);
    pthread_mutex_destroy(&c->mu);
    free(c);
    return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx)
{
    CUSIM_TRY(cusim_check_init());
    if (!ctx) {
        if (tls_ctx_depth > 0)
            tls_ctx_depth--;
        return CUDA_SUCCESS;
    }
    if (!cusim_ctx_from_handle(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (tls_ctx_depth == 0)
        tls_ctx_depth = 1;
    tls_ctx_stack[tls_ctx_depth - 1] = (uint64_t)(uintptr_t)ctx;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    CUSIM_TRY(cusim_check_init());
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t h = tls_ctx_depth ? tls_ctx_stack[tls_ctx_depth - 1] : 0;
    *pctx = h && arsim_handle_get(h, HK_CTX) ? (CUcontext)(uintptr_t)h : NULL;
    return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
    CUSIM_TRY(cusim_check_init());
    if (!cusim_ctx_from_handle(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    push_ctx((uint64_t)(uintptr_t)ctx);
    return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
{
    CUSIM_TRY(cusim_check_init());
    if (tls_ctx_depth == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    uint64_t h = tls_ctx_stack[--tls_ctx_depth];
    if (pctx)
        *pctx = (CUcontext)(uintptr_t)h;
    return CUDA_SUCCESS;
}

CUresult cusim_current_ctx(cu_ctx **out)
{
    CUSIM_TRY(cusim_check_init());
    uint64_t h = tls_ctx_depth ? tls_ctx_stack[tls_ctx_depth - 1] : 0;
    cu_ctx *c = h ? arsim_handle_get(h, HK_CTX) : NULL;
    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    arsim_status sticky = arsim_device_sticky(c->device);
    if (sticky != ARSIM_OK)
        return cusim_status(sticky);
    *out = c;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice *device)
{
    cu_ctx *c;
    CUSIM_TRY(cusim_current_ctx(&c));
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    *device = c->device;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetFlags(unsigned int *flags)
{
    cu_ctx *c;
    CUSIM_TRY(cusim_current_ctx(&c));
    if (!flags)
        return CUDA_ERROR_INVALID_VALUE;
    *flags = c->flags;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
    CUSIM_TRY(cusim_check_init());
    if (!version)
        return CUDA_ERROR_INVALID_VALUE;
    if (ctx && !cusim_ctx_from_handle(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    *version = 12000;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
    CUSIM_TRY(cusim_check_init());
    if (leastPriority)
        *leastPriority = 0;
    if (greatestPriority)
        *greatestPriority = -5;
    return CUDA_SUCCESS;
}

CUresult cusim_ctx_synchronize(cu_ctx *c)
{
    arsim_status st = arsim_device_synchronize(c->device);
    cusim_printf_flush(c->handle);
    if (st != ARSIM_OK)
        return cusim_status(st);
    /* Collect (and clear) errors of the context's streams nobody has seen. */
    arsim_status err = arsim_queue_take_error(c->legacy->q);
    pthread_mutex_lock(&c->mu);
    for (cu_stream *s = c->streams; s; s = s->next) {
        arsim_status e = arsim_queue_take_error(s->q);
        if (err == ARSIM_OK)
            err = e;
    }
    pthread_mutex_unlock(&c->mu);
    return cusim_status(err);
}

CUresult cuCtxSynchronize(void)
{
    cu_ctx *c;
    CUSIM_TRY(cusim_current_ctx(&c));
    pthread_mutex_lock(&c->mu);
    int capturing = c->unsafe_captures;
    pthread_mutex_unlock(&c->mu);
    if (capturing)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    return cusim_ctx_synchronize(c);
}

/* ------------------------------------------------------------- streams */

/* The per-thread default stream of each context this thread used. */
#define PTDS_SLOTS 8
static __thread struct {
    uint64_t ctx;
    uint64_t stream;
} tls_ptds[PTDS_SLOTS];
static pthread_key_t g_ptds_key;
static pthread_once_t g_ptds_once = PTHREAD_ONCE_INIT;

/* Thread exit: its per-thread streams go (their queued work still runs). */
static void ptds_cleanup(void *unused)
{
    (void)unused;
    for (int i = 0; i < PTDS_SLOTS; i++) {
        if (!tls_ptds[i].stream)
            continue;
        cu_stream *s = arsim_handle_remove(tls_ptds[i].stream, HK_STREAM);
        if (s)
            cusim_stream_free(s);
        tls_ptds[i].stream = tls_ptds[i].ctx = 0;
    }
}

static void ptds_key_init(void) { pthread_key_create(&g_ptds_key, ptds_cleanup); }

static CUresult per_thread_stream(cu_ctx *c, cu_stream **out)
{
    int free_slot = -1;
    for (int i = 0; i < PTDS_SLOTS; i++) {
        if (tls_ptds[i].ctx == c->handle) {
            cu_stream *s = arsim_handle_get(tls_ptds[i].stream, HK_STREAM);
            if (s) {
                *out = s;
                return CUDA_SUCCESS;
            }
            free_slot = i; /* stale: the context was reset */
            break;
        }
        if (free_slot < 0 && (!tls_ptds[i].ctx || !arsim_handle_get(tls_ptds[i].stream, HK_STREAM)))
            free_slot = i;
    }
    if (free_slot < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_once(&g_ptds_once, ptds_key_init);
    pthread_setspecific(g_ptds_key, (void *)1); /* arms the exit hook */
    cu_stream *s;
    CUSIM_TRY(cusim_stream_new(c, CU_STREAM_DEFAULT, 0, 0, &s));
    tls_ptds[free_slot].ctx = c->handle;
    tls_ptds[free_slot].stream = s->handle;
    *out = s;
    return CUDA_SUCCESS;
}

__thread int cusim_tls_ptds;

CUresult cusim_resolve_stream(CUstream h, cu_stream **out)
{
    uintptr_t v = (uintptr_t)h;
    if (v == 0 && cusim_tls_ptds)
        v = (uintptr_t)CU_STREAM_PER_THREAD; /* a _ptsz/_ptds entry point */
    if (v == 0 || v == (uintptr_t)CU_STREAM_LEGACY || v == (uintptr_t)CU_STREAM_PER_THREAD) {
        cu_ctx *c;
        CUSIM_TRY(cusim_current_ctx(&c));
        if (v == (uintptr_t)CU_STREAM_PER_THREAD)
            return per_thread_stream(c, out);
        *out = c->legacy;
        return CUDA_SUCCESS;
    }
    CUSIM_TRY(cusim_check_init());
    cu_stream *s = arsim_handle_get((uint64_t)v, HK_STREAM);
    if (!s)
        return CUDA_ERROR_INVALID_HANDLE;
    arsim_status sticky = arsim_device_sticky(s->ctx->device);
    if (sticky != ARSIM_OK)
        return cusim_status(sticky);
    *out = s;
    return CUDA_SUCCESS;
}

CUresult cusim_stream_out(CUstream h, const void *out, cu_stream **s)
{
    CUSIM_TRY(cusim_resolve_stream(h, s));
    return out ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* The sim has a printf FIFO (cusim_printf.c) and nothing else cuCtxSetLimit
 * sizes: no device malloc heap, no device runtime, an interpreter's own
 * per-thread stack and no L2.  Those limits answer
 * CUDA_ERROR_UNSUPPORTED_LIMIT, as a device without them does. */
static CUresult check_limit(CUlimit limit)
{
    if (limit >= CU_LIMIT_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    return limit == CU_LIMIT_PRINTF_FIFO_SIZE ? CUDA_SUCCESS : CUDA_ERROR_UNSUPPORTED_LIMIT;
}

CUresult cuCtxSetLimit(CUlimit limit, size_t value)
{
    cu_ctx *c;
    CUSIM_TRY(cusim_current_ctx(&c));
    CUSIM_TRY(check_limit(limit));
    return cusim_printf_limit(c->handle, NULL, &value);
}

CUresult cuCtxGetLimit(size_t *pvalue, CUlimit limit)
{
    cu_ctx *c;
    CUSIM_TRY(cusim_current_ctx(&c));
    if (!pvalue)
        return CUDA_ERROR_INVALID_VALUE;
    CUSIM_TRY(check_limit(limit));
    return cusim_printf_limit(c->handle, pvalue, NULL);
}

/* No profiler is ever attached to the sim; with none, NVIDIA's driver answers
 * success and does nothing. */
CUresult cuProfilerStart(void)
{
    cu_ctx *c;
    return cusim_current_ctx(&c);
}

CUresult cuProfilerStop(void)
{
    cu_ctx *c;
    return cusim_current_ctx(&c);
}
