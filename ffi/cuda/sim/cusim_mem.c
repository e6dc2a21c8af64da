/* cuda-sim: memory, copies, memsets, pointer attributes.
 *
 * Device memory is host memory, so a CUdeviceptr is a host address (unified
 * addressing).  Device ranges are checked against the engine's allocation
 * registry at enqueue time (CUDA_ERROR_INVALID_VALUE otherwise), so a bad
 * pointer never reaches a memcpy.
 *
 * Pageable host memory (anything not from cuMemHostAlloc/cuMemAllocHost/
 * cuMemHostRegister or managed memory) follows the driver's documented "API
 * synchronization behavior":
 *   - cuMemcpyHtoDAsync from pageable memory: the driver stages the source
 *     through a pinned buffer and returns once the source bytes have been
 *     copied into it; the DMA to the device happens later, in stream order.
 *     The sim does the same: the calling thread copies the source into a
 *     malloc'd staging buffer (so the call blocks for that memcpy, which for
 *     a large buffer is long) and enqueues a copy from the staging buffer.
 *     The caller may reuse its buffer as soon as the call returns.
 *   - cuMemcpyDtoHAsync to pageable memory: returns only once the copy has
 *     completed (the calling thread waits for the op).
 *   - pinned memory: fully asynchronous.
 *   - During stream capture nothing is staged or waited for: the graph's
 *     copy reads and writes the caller's memory when it runs.
 * Synchronous copies (cuMemcpyHtoD_v2, ...) run on the legacy stream and
 * return when the copy has completed, except device-to-device copies and
 * memsets of device memory, which the driver documents as asynchronous with
 * respect to the host.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "cusim.h"

#define DEV_KINDS (ARSIM_MEM_DEVICE | ARSIM_MEM_MANAGED | ARSIM_MEM_HOST | ARSIM_MEM_REGISTERED)
#define PINNED_KINDS (ARSIM_MEM_MANAGED | ARSIM_MEM_HOST | ARSIM_MEM_REGISTERED | ARSIM_MEM_DEVICE)

static void *dptr(CUdeviceptr p) { return (void *)(uintptr_t)p; }

static int is_pinned(const void *p, size_t n) { return arsim_mem_range_ok(p, n, PINNED_KINDS); }

/* ------------------------------------------------------------- allocation */

CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total)
{
    cu_ctx *c;
    CUSIM_TRY(cusim_current_ctx(&c));
    arsim_device_info info;
    arsim_device_info_get(c->device, &info);
    if (free_bytes)
        *free_bytes = (size_t)(info.total_memory - info.used_memory);
    if (total)
        *total = (size_t)info.total_memory;
    return CUDA_SUCCESS;
}

static CUresult mem_alloc(void **out, size_t size, arsim_mem_kind kind, unsigned flags)
{
    cu_ctx *c;
    CUSIM_TRY(cusim_current_ctx(&c));
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    return cusim_status(arsim_mem_alloc(c->device, size, kind, c->handle, flags, out));
}

CUresult cuMemAlloc_v2(CUdeviceptr *dp, size_t bytesize)
{
    if (!dp)
        return CUDA_ERROR_INVALID_VALUE;
    void *p;
    CUresult r = mem_alloc(&p, bytesize, ARSIM_MEM_DEVICE, 0);
    if (r == CUDA_SUCCESS)
        *dp = (CUdeviceptr)(uintptr_t)p;
    return r;
}

CUresult cuMemAllocManaged(CUdeviceptr *dp, size_t bytesize, unsigned int flags)
{
    if (!dp || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST))
        return CUDA_ERROR_INVALID_VALUE;
    void *p;
    CUresult r = mem_alloc(&p, bytesize, ARSIM_MEM_MANAGED, flags);
    if (r == CUDA_SUCCESS)
        *dp = (CUdeviceptr)(uintptr_t)p;
    return r;
}

CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    if (Flags & ~(unsigned)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP |
                            CU_MEMHOSTALLOC_WRITECOMBINED))
        return CUDA_ERROR_INVALID_VALUE;
    return mem_alloc(pp, bytesize, ARSIM_MEM_HOST, Flags);
}

CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    return mem_alloc(pp, bytesize, ARSIM_MEM_HOST, 0);
}

/* Freeing waits for the device first, as cuMemFree and cuMemFreeHost do (the
 * CUDA documentation's implicit synchronization): in-flight work may still
 * use the memory, and here that would be a use-after-free.  The caller's
 * thread blocks meanwhile, as on a GPU. */
static CUresult mem_free(void *p, unsigned kinds)
{
    CUSIM_TRY(cusim_check_init());
    arsim_alloc a;
    if (!p || arsim_mem_lookup(p, &a) != ARSIM_OK || a.base != p)
        return CUDA_ERROR_INVALID_VALUE;
    /* cuMemFree takes whatever a pool handed out, pinned host memory too;
     * cuMemFreeHost only what cuMemAllocHost/cuMemHostAlloc did. */
    int pool = (a.flags & CUSIM_POOL_BLOCK) != 0;
    int ok = kinds & ARSIM_MEM_HOST ? !pool && (a.kind & kinds) : pool || (a.kind & kinds);
    if (!ok)
        return CUDA_ERROR_INVALID_VALUE;
    if (a.device >= 0)
        arsim_device_synchronize(a.device);
    else
        for (int d = 0; d < arsim_device_count(); d++)
            arsim_device_synchronize(d);
    if (a.flags & CUSIM_GRAPH_MEM) {
        CUresult gr = cusim_gmem_user_free(cusim_gmem_of((CUdeviceptr)(uintptr_t)p), 0);
        if (gr != CUDA_SUCCESS)
            return gr;
    } else if (a.flags & CUSIM_POOL_BLOCK) {
        CUresult pr = cusim_pool_free_now(p); /* back to its pool */
        if (pr != CUDA_SUCCESS)
            return pr;
    } else if (arsim_mem_free(p, kinds) != ARSIM_OK) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    /* Freed even on a poisoned device, but the call still reports it. */
    if (a.device >= 0 && arsim_device_sticky(a.device) != ARSIM_OK)
        return cusim_status(arsim_device_sticky(a.device));
    return CUDA_SUCCESS;
}

CUresult cuMemFree_v2(CUdeviceptr p)
{
    return mem_free(dptr(p), ARSIM_MEM_DEVICE | ARSIM_MEM_MANAGED);
}

CUresult cuMemFreeHost(void *p) { return mem_free(p, ARSIM_MEM_HOST); }

CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
    CUSIM_TRY(cusim_check_init());
    if (!pdptr || Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!arsim_mem_range_ok(p, 1, ARSIM_MEM_HOST | ARSIM_MEM_REGISTERED))
        return CUDA_ERROR_INVALID_VALUE;
    *pdptr = (CUdeviceptr)(uintptr_t)p; /* mapped at the same address */
    return CUDA_SUCCESS;
}

CUresult cuMemHostGetFlags(unsigned int *pFlags, void *p)
{
    CUSIM_TRY(cusim_check_init());
    arsim_alloc a;
    if (!pFlags || arsim_mem_lookup(p, &a) != ARSIM_OK ||
        !(a.kind & (ARSIM_MEM_HOST | ARSIM_MEM_REGISTERED)))
        return CUDA_ERROR_INVALID_VALUE;
    *pFlags = a.flags;
    return CUDA_SUCCESS;
}

CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
    cu_ctx *c;
    CUSIM_TRY(cusim_current_ctx(&c));
    if (!p || bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (arsim_mem_register(p, bytesize, c->handle, Flags) != ARSIM_OK)
        return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    return CUDA_SUCCESS;
}

CUresult cuMemHostUnregister(void *p)
{
    CUSIM_TRY(cusim_check_init());
    arsim_alloc a;
    if (!p || arsim_mem_lookup(p, &a) != ARSIM_OK || a.base != p ||
        a.kind != ARSIM_MEM_REGISTERED)
        return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    /* Like cuMemFreeHost, it waits for the device first: queued copies may
     * still read or write the pages. */
    for (int d = 0; d < arsim_device_count(); d++)
        arsim_device_synchronize(d);
    if (arsim_mem_unregister(p) != ARSIM_OK)
        return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    return CUDA_SUCCESS;
}

CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr p)
{
    CUSIM_TRY(cusim_check_init());
    arsim_alloc a;
    /* With unified addressing pinned host memory (and a module's variables,
     * registered memory here) is mapped at the same address: a device range. */
    if (arsim_mem_lookup(dptr(p), &a) != ARSIM_OK || !(a.kind & DEV_KINDS))
        return CUDA_ERROR_NOT_FOUND;
    if (pbase)
        *pbase = (CUdeviceptr)(uintptr_t)a.base;
    if (psize)
        *psize = a.size;
    return CUDA_SUCCESS;
}

CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr p)
{
    CUSIM_TRY(cusim_check_init());
    if (!data)
        return CUDA_ERROR_INVALID_VALUE;
    arsim_alloc a;
    if (arsim_mem_lookup(dptr(p), &a) != ARSIM_OK)
        return CUDA_ERROR_INVALID_VALUE; /* memory the driver does not know */
    int host = a.kind & (ARSIM_MEM_HOST | ARSIM_MEM_REGISTERED);
    switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        /* Pool memory belongs to its pool, not to a context. */
        *(CUcontext *)data =
            (a.flags & CUSIM_POOL_BLOCK) ? NULL : (CUcontext)(uintptr_t)a.owner;
        break;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *(unsigned int *)data = host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        *(CUdeviceptr *)data = p;
        break;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        if (a.kind == ARSIM_MEM_DEVICE)
            return CUDA_ERROR_INVALID_VALUE;
        *(void **)data = dptr(p);
        break;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
        *(int *)data = 1;
        break;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
        *(unsigned long long *)data = (unsigned long long)(uintptr_t)a.base;
        break;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
        *(int *)data = a.kind == ARSIM_MEM_MANAGED;
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        *(int *)data = a.device >= 0 ? a.device : 0;
        break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        *(CUdeviceptr *)data = (CUdeviceptr)(uintptr_t)a.base;
        break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        *(size_t *)data = a.size;
        break;
    case CU_POINTER_ATTRIBUTE_MAPPED:
        *(int *)data = 1;
        break;
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
        *(int *)data = 0x3; /* read-write */
        break;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
        *(void **)data = (void *)(uintptr_t)cusim_pool_of(a.base);
        break;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes,
                                void **data, CUdeviceptr p)
{
    CUSIM_TRY(cusim_check_init());
    if (!attributes || !data)
        return CUDA_ERROR_INVALID_VALUE;
    int known = arsim_mem_lookup(dptr(p), NULL) == ARSIM_OK;
    for (unsigned i = 0; i < numAttributes; i++) {
        if (!data[i])
            continue;
        if (!known) {
            /* Unknown memory is reported, not rejected: plain host memory. */
            switch (attributes[i]) {
            case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: *(unsigned int *)data[i] = 0; break;
            case CU_POINTER_ATTRIBUTE_CONTEXT: *(CUcontext *)data[i] = NULL; break;
            case CU_POINTER_ATTRIBUTE_IS_MANAGED: *(int *)data[i] = 0; break;
            case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *(int *)data[i] = -2; break;
            case CU_POINTER_ATTRIBUTE_MAPPED: *(int *)data[i] = 0; break;
            default: break;
            }
            continue;
        }
        CUresult r = cuPointerGetAttribute(data[i], attributes[i], p);
        if (r != CUDA_SUCCESS && r != CUDA_ERROR_INVALID_VALUE)
            return r;
    }
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------- copies */

static int stream_capturing(cu_stream *s)
{
    if (__atomic_load_n(&s->cap, __ATOMIC_ACQUIRE) == NULL)
        return 0;
    pthread_mutex_lock(&g_capture_mu);
    int cap = s->cap != NULL;
    pthread_mutex_unlock(&g_capture_mu);
    return cap;
}

/* Waits until op number seq of the stream has run; returns the stream's error. */
static CUresult wait_op(cu_stream *s, uint64_t seq)
{
    arsim_queue_wait_seq(s->q, seq, ARSIM_WAIT_BLOCK);
    arsim_status sticky = arsim_device_sticky(s->ctx->device);
    if (sticky != ARSIM_OK)
        return cusim_status(sticky);
    return cusim_status(arsim_queue_take_error(s->q));
}

static arsim_copy_dir dir_of(const void *dst, const void *src)
{
    arsim_alloc a;
    int dst_dev = arsim_mem_lookup(dst, &a) == ARSIM_OK &&
                  (a.kind & (ARSIM_MEM_DEVICE | ARSIM_MEM_MANAGED));
    int src_dev = arsim_mem_lookup(src, &a) == ARSIM_OK &&
                  (a.kind & (ARSIM_MEM_DEVICE | ARSIM_MEM_MANAGED));
    if (src_dev && dst_dev)
        return ARSIM_COPY_D2D;
    if (src_dev)
        return ARSIM_COPY_D2H;
    if (dst_dev)
        return ARSIM_COPY_H2D;
    return ARSIM_COPY_H2H;
}

/* The device of device (or managed) memory at p, or -1. */
static int device_of(const void *p)
{
    arsim_alloc a;
    if (arsim_mem_lookup(p, &a) != ARSIM_OK || !(a.kind & (ARSIM_MEM_DEVICE | ARSIM_MEM_MANAGED)))
        return -1;
    return a.device;
}

/* A device-to-device copy: a peer copy when the two sides are on two
 * devices, which the stream's device must be one of (NULL: refused). */
static arsim_op *d2d_op(void *dst, const void *src, size_t n, const cu_stream *s, CUresult *r)
{
    int dd = device_of(dst), sd = device_of(src);
    if (dd == sd || dd < 0 || sd < 0)
        return arsim_op_copy(dst, src, n, ARSIM_COPY_D2D);
    if (s->ctx->device != dd && s->ctx->device != sd) {
        *r = CUDA_ERROR_INVALID_VALUE; /* a third device's stream: not modeled */
        return NULL;
    }
    return arsim_op_copy_peer(dst, dd, src, sd, n);
}

/* One entry for every 1-D copy.  blocking: the synchronous API. */
CUresult cusim_copy1d(void *dst, const void *src, size_t n, arsim_copy_dir dir, CUstream h,
                      int blocking)
{
    cu_stream *s;
    CUSIM_TRY(cusim_resolve_stream(blocking ? NULL : h, &s));
    if (n == 0)
        return CUDA_SUCCESS;
    if (!dst || !src)
        return CUDA_ERROR_INVALID_VALUE;
    if ((dir == ARSIM_COPY_H2D || dir == ARSIM_COPY_D2D) && !arsim_mem_range_ok(dst, n, DEV_KINDS))
        return CUDA_ERROR_INVALID_VALUE;
    if ((dir == ARSIM_COPY_D2H || dir == ARSIM_COPY_D2D) && !arsim_mem_range_ok(src, n, DEV_KINDS))
        return CUDA_ERROR_INVALID_VALUE;
    int capturing = stream_capturing(s);
    if (blocking && capturing)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;

    arsim_op *op;
    /* The synchronous device-to-device copy does not wait for the host. */
    int wait = blocking && dir != ARSIM_COPY_D2D;
    if (!capturing && !blocking && dir == ARSIM_COPY_H2D && !is_pinned(src, n)) {
        /* Pageable source: stage it now, on this thread (see the top). */
        void *staging = malloc(n);
        if (!staging)
            return CUDA_ERROR_OUT_OF_MEMORY;
        memcpy(staging, src, n);
        op = arsim_op_copy_owned_src(dst, staging, n, dir);
    } else if (dir == ARSIM_COPY_D2D) {
        CUresult refused = CUDA_ERROR_OUT_OF_MEMORY;
        op = d2d_op(dst, src, n, s, &refused);
        if (!op)
            return refused;
    } else {
        op = arsim_op_copy(dst, src, n, dir);
        if (!capturing && dir == ARSIM_COPY_D2H && !is_pinned(dst, n))
            wait = 1; /* pageable destination: returns once the copy is done */
        if (!capturing && dir == ARSIM_COPY_H2H)
            wait = 1;
    }
    uint64_t seq;
    CUresult r = cusim_submit(s, op, &seq);
    if (r == CUDA_SUCCESS && wait && seq)
        r = wait_op(s, seq);
    if (blocking)
        cusim_printf_flush(s->ctx->handle); /* a blocking copy is a printf flush point */
    return r;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    return cusim_copy1d(dptr(dstDevice), srcHost, ByteCount, ARSIM_COPY_H2D, NULL, 1);
}

CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    return cusim_copy1d(dstHost, dptr(srcDevice), ByteCount, ARSIM_COPY_D2H, NULL, 1);
}

CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
{
    return cusim_copy1d(dptr(dstDevice), dptr(srcDevice), ByteCount, ARSIM_COPY_D2D, NULL, 1);
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount,
                              CUstream hStream)
{
    return cusim_copy1d(dptr(dstDevice), srcHost, ByteCount, ARSIM_COPY_H2D, hStream, 0);
}

CUresult cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                              CUstream hStream)
{
    return cusim_copy1d(dstHost, dptr(srcDevice), ByteCount, ARSIM_COPY_D2H, hStream, 0);
}

CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                              CUstream hStream)
{
    return cusim_copy1d(dptr(dstDevice), dptr(srcDevice), ByteCount, ARSIM_COPY_D2D, hStream, 0);
}

CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    return cusim_copy1d(dptr(dst), dptr(src), ByteCount, dir_of(dptr(dst), dptr(src)), NULL, 1);
}

CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
{
    return cusim_copy1d(dptr(dst), dptr(src), ByteCount, dir_of(dptr(dst), dptr(src)), hStream, 0);
}

/* One side of a 2-D copy: its first byte, and whether it is device memory. */
static CUresult side_2d(CUmemorytype type, const void *host, CUdeviceptr dev, size_t x, size_t y,
                        size_t pitch, const char **base, int *is_device)
{
    const char *p;
    switch (type) {
    case CU_MEMORYTYPE_HOST:
        p = host;
        *is_device = 0;
        break;
    case CU_MEMORYTYPE_DEVICE:
        p = dptr(dev);
        *is_device = 1;
        break;
    case CU_MEMORYTYPE_UNIFIED: {
        p = dptr(dev);
        arsim_alloc a;
        *is_device = arsim_mem_lookup(p, &a) == ARSIM_OK &&
                     (a.kind & (ARSIM_MEM_DEVICE | ARSIM_MEM_MANAGED));
        break;
    }
    case CU_MEMORYTYPE_ARRAY:
        return CUDA_ERROR_NOT_SUPPORTED; /* no CUDA arrays in the sim */
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    *base = p + y * pitch + x;
    return CUDA_SUCCESS;
}

static CUresult copy2d(const CUDA_MEMCPY2D *c, CUstream h, int blocking)
{
    cu_stream *s;
    CUSIM_TRY(cusim_resolve_stream(blocking ? NULL : h, &s));
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    if (c->WidthInBytes == 0 || c->Height == 0)
        return CUDA_SUCCESS;
    if (c->Height > 1 && (c->srcPitch < c->WidthInBytes || c->dstPitch < c->WidthInBytes))
        return CUDA_ERROR_INVALID_VALUE;
    const char *src, *dstc;
    int src_dev, dst_dev;
    CUresult r = side_2d(c->srcMemoryType, c->srcHost, c->srcDevice, c->srcXInBytes, c->srcY,
                         c->srcPitch, &src, &src_dev);
    if (r == CUDA_SUCCESS)
        r = side_2d(c->dstMemoryType, c->dstHost, c->dstDevice, c->dstXInBytes, c->dstY,
                    c->dstPitch, &dstc, &dst_dev);
    if (r != CUDA_SUCCESS)
        return r;
    void *dst = (void *)dstc;
    size_t src_span = (c->Height - 1) * c->srcPitch + c->WidthInBytes;
    size_t dst_span = (c->Height - 1) * c->dstPitch + c->WidthInBytes;
    if (src_dev && !arsim_mem_range_ok(src, src_span, DEV_KINDS))
        return CUDA_ERROR_INVALID_VALUE;
    if (dst_dev && !arsim_mem_range_ok(dst, dst_span, DEV_KINDS))
        return CUDA_ERROR_INVALID_VALUE;
    arsim_copy_dir dir = src_dev ? (dst_dev ? ARSIM_COPY_D2D : ARSIM_COPY_D2H)
                                 : (dst_dev ? ARSIM_COPY_H2D : ARSIM_COPY_H2H);
    int capturing = stream_capturing(s);
    if (blocking && capturing)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    arsim_op *op;
    int wait = blocking;
    if (!capturing && !blocking && !src_dev && !is_pinned(src, src_span)) {
        /* Pageable source: stage the rows now, packed (see the top). */
        char *staging = malloc(c->WidthInBytes * c->Height);
        if (!staging)
            return CUDA_ERROR_OUT_OF_MEMORY;
        for (size_t row = 0; row < c->Height; row++)
            memcpy(staging + row * c->WidthInBytes, src + row * c->srcPitch, c->WidthInBytes);
        op = arsim_op_copy2d_owned_src(dst, c->dstPitch, staging, c->WidthInBytes, c->Height,
                                       dir);
    } else {
        op = arsim_op_copy2d(dst, c->dstPitch, src, c->srcPitch, c->WidthInBytes, c->Height, dir);
        if (!capturing && !dst_dev && !is_pinned(dst, dst_span))
            wait = 1;
    }
    uint64_t seq;
    r = cusim_submit(s, op, &seq);
    if (r == CUDA_SUCCESS && wait && seq)
        r = wait_op(s, seq);
    if (blocking)
        cusim_printf_flush(s->ctx->handle); /* a blocking copy is a printf flush point */
    return r;
}

CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *pCopy) { return copy2d(pCopy, NULL, 1); }

CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *pCopy, CUstream hStream)
{
    return copy2d(pCopy, hStream, 0);
}

/* ------------------------------------------------------------- memsets */

static CUresult memset_any(CUdeviceptr d, const void *pattern, size_t width, size_t count,
                           CUstream h, int blocking)
{
    cu_stream *s;
    CUSIM_TRY(cusim_resolve_stream(blocking ? NULL : h, &s));
    if (count == 0)
        return CUDA_SUCCESS;
    size_t n = count * width;
    if (n / width != count || (d % width) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!arsim_mem_range_ok(dptr(d), n, DEV_KINDS))
        return CUDA_ERROR_INVALID_VALUE;
    if (blocking && stream_capturing(s))
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    arsim_op *op = width == 1 ? arsim_op_memset8(dptr(d), *(const uint8_t *)pattern, n)
                              : arsim_op_fill(dptr(d), pattern, width, n);
    /* The "synchronous" memsets are asynchronous for device memory and
     * wait only when the target is host-resident (pinned or managed). */
    arsim_alloc a;
    int wait = blocking && arsim_mem_lookup(dptr(d), &a) == ARSIM_OK && a.kind != ARSIM_MEM_DEVICE;
    uint64_t seq;
    CUresult r = cusim_submit(s, op, &seq);
    if (r != CUDA_SUCCESS || !wait || !seq)
        return r;
    return wait_op(s, seq);
}

CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char uc, size_t N)
{
    return memset_any(d, &uc, 1, N, NULL, 1);
}

CUresult cuMemsetD16_v2(CUdeviceptr d, unsigned short us, size_t N)
{
    return memset_any(d, &us, 2, N, NULL, 1);
}

CUresult cuMemsetD32_v2(CUdeviceptr d, unsigned int ui, size_t N)
{
    return memset_any(d, &ui, 4, N, NULL, 1);
}

CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char uc, size_t N, CUstream h)
{
    return memset_any(d, &uc, 1, N, h, 0);
}

CUresult cuMemsetD16Async(CUdeviceptr d, unsigned short us, size_t N, CUstream h)
{
    return memset_any(d, &us, 2, N, h, 0);
}

CUresult cuMemsetD32Async(CUdeviceptr d, unsigned int ui, size_t N, CUstream h)
{
    return memset_any(d, &ui, 4, N, h, 0);
}

/* CUDA arrays, and the textures and surfaces made over them, are not
 * modelled: refused, never imitated with linear memory. */
CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray)
{
    (void)pHandle;
    (void)pAllocateArray;
    CUSIM_TRY(cusim_check_init());
    return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult cuArray3DCreate_v2(CUarray *pHandle,
                            const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray)
{
    (void)pHandle;
    (void)pAllocateArray;
    CUSIM_TRY(cusim_check_init());
    return CUDA_ERROR_NOT_SUPPORTED;
}

/* No array, mipmapped array, texture or surface object is ever made, so
 * every handle given to the calls that take one is unknown; the calls that
 * would make one are refused like cuArrayCreate.  PTX that samples a texture
 * or touches a surface is refused by the interpreter. */
CUresult cuArrayDestroy(CUarray hArray)
{
    (void)hArray;
    CUSIM_TRY(cusim_check_init());
    return CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuArray3DGetDescriptor_v2(CUDA_ARRAY3D_DESCRIPTOR *pArrayDescriptor, CUarray hArray)
{
    (void)pArrayDescriptor;
    (void)hArray;
    CUSIM_TRY(cusim_check_init());
    return CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle,
                                const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc,
                                unsigned int numMipmapLevels)
{
    (void)pHandle;
    (void)pMipmappedArrayDesc;
    (void)numMipmapLevels;
    CUSIM_TRY(cusim_check_init());
    return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult cuMipmappedArrayGetLevel(CUarray *pLevelArray, CUmipmappedArray hMipmappedArray,
                                  unsigned int level)
{
    (void)pLevelArray;
    (void)hMipmappedArray;
    (void)level;
    CUSIM_TRY(cusim_check_init());
    return CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray)
{
    (void)hMipmappedArray;
    CUSIM_TRY(cusim_check_init());
    return CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuTexObjectCreate(CUtexObject *pTexObject, const CUDA_RESOURCE_DESC *pResDesc,
                           const CUDA_TEXTURE_DESC *pTexDesc,
                           const CUDA_RESOURCE_VIEW_DESC *pResViewDesc)
{
    (void)pTexObject;
    (void)pResDesc;
    (void)pTexDesc;
    (void)pResViewDesc;
    CUSIM_TRY(cusim_check_init());
    return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult cuTexObjectDestroy(CUtexObject texObject)
{
    (void)texObject;
    CUSIM_TRY(cusim_check_init());
    return CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuSurfObjectCreate(CUsurfObject *pSurfObject, const CUDA_RESOURCE_DESC *pResDesc)
{
    (void)pSurfObject;
    (void)pResDesc;
    CUSIM_TRY(cusim_check_init());
    return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult cuSurfObjectDestroy(CUsurfObject surfObject)
{
    (void)surfObject;
    CUSIM_TRY(cusim_check_init());
    return CUDA_ERROR_INVALID_HANDLE;
}
