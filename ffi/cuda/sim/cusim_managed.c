/* cuda-sim: managed-memory advice and prefetches (cuMemAdvise, cuMemPrefetchAsync,
 * CUDA 13's batched prefetches and discards, cuMemRangeGetAttribute(s)).
 *
 * The sim's managed memory is host memory that every device reads and
 * writes in place, so nothing migrates: advice and prefetches change no data
 * and take no time.  What a program can observe is kept: the advice set on
 * each byte range and the last location each range was asked to prefetch
 * to, which cuMemRangeGetAttribute reports as cuda.h describes (a value only
 * where the whole queried range agrees).  Ranges are widened to whole host
 * pages first, as the driver does, within their allocation.
 *
 * Records are kept per allocation, keyed by its base and the engine's serial
 * number for it, so that a later allocation at a freed one's address starts
 * with no advice; records of freed allocations are dropped as new ones are
 * made.  A discard leaves the data as it was: reading discarded memory gives
 * an indeterminate value, and the old one is such a value.
 *
 * Only managed memory is accepted (CUDA_ERROR_INVALID_VALUE otherwise), even
 * though the sim's devices report pageable memory access: advice on plain
 * host memory would be kept nowhere. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cusim.h"

#define CU_DEVICE_CPU (-1)
#define CU_DEVICE_INVALID (-2)
#define MAX_DEVICES 64

typedef struct seg {
    size_t lo, hi; /* offsets into the allocation */
    int read_mostly;
    CUmemLocation pref; /* type NONE: no preferred location */
    uint64_t accessed_by; /* bit d: device d */
    int host_accessed_by;
    CUmemLocation prefetched; /* type NONE: never prefetched */
} seg;

typedef struct advised {
    void *base;
    uint64_t serial;
    size_t size;
    seg *segs; /* sorted, covering [0, size) */
    size_t n, cap;
    struct advised *next;
} advised;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static advised *g_advised;

/* The managed allocation holding [p, p + count), widened to host pages and
 * clipped to it, as offsets [*lo, *hi). */
static CUresult managed_range(CUdeviceptr p, size_t count, arsim_alloc *a, size_t *lo, size_t *hi)
{
    CUSIM_TRY(cusim_check_init());
    void *ptr = (void *)(uintptr_t)p;
    if (!p || !count || arsim_mem_lookup(ptr, a) != ARSIM_OK || a->kind != ARSIM_MEM_MANAGED)
        return CUDA_ERROR_INVALID_VALUE;
    size_t off = (size_t)((uintptr_t)ptr - (uintptr_t)a->base);
    if (count > a->size - off)
        return CUDA_ERROR_INVALID_VALUE;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t start = (uintptr_t)ptr & ~(page - 1), end = ((uintptr_t)ptr + count + page - 1) & ~(page - 1);
    uintptr_t base = (uintptr_t)a->base;
    *lo = start < base ? 0 : start - base;
    *hi = end - base > a->size ? a->size : end - base;
    return CUDA_SUCCESS;
}

/* Drops the records of allocations that no longer exist.  Caller holds g_mu. */
static void prune_locked(void)
{
    for (advised **l = &g_advised; *l;) {
        arsim_alloc a;
        advised *r = *l;
        if (arsim_mem_lookup(r->base, &a) == ARSIM_OK && a.base == r->base &&
            a.serial == r->serial) {
            l = &r->next;
            continue;
        }
        *l = r->next;
        free(r->segs);
        free(r);
    }
}

/* The record of allocation a; made (with no advice) if make.  Caller holds g_mu. */
static advised *record_locked(const arsim_alloc *a, int make)
{
    for (advised *r = g_advised; r; r = r->next)
        if (r->base == a->base && r->serial == a->serial)
            return r;
    if (!make)
        return NULL;
    prune_locked();
    advised *r = calloc(1, sizeof *r);
    seg *s = calloc(4, sizeof *s);
    if (!r || !s) {
        free(r);
        free(s);
        return NULL;
    }
    r->base = a->base;
    r->serial = a->serial;
    r->size = a->size;
    r->segs = s;
    r->n = 1;
    r->cap = 4;
    s[0].hi = a->size;
    r->next = g_advised;
    g_advised = r;
    return r;
}

/* Makes off a segment boundary.  Caller holds g_mu. */
static int split_locked(advised *r, size_t off)
{
    for (size_t i = 0; i < r->n; i++) {
        seg *s = &r->segs[i];
        if (off <= s->lo || off >= s->hi)
            continue;
        if (r->n == r->cap) {
            seg *grown = realloc(r->segs, 2 * r->cap * sizeof *grown);
            if (!grown)
                return -1;
            r->segs = grown;
            r->cap *= 2;
            s = &r->segs[i];
        }
        memmove(s + 1, s, (r->n - i) * sizeof *s);
        r->n++;
        s->hi = off;
        s[1].lo = off;
        return 0;
    }
    return 0;
}

typedef void (*seg_fn)(seg *s, const void *arg);

/* Applies fn to every byte of [lo, hi) of allocation a. */
static CUresult apply(const arsim_alloc *a, size_t lo, size_t hi, seg_fn fn, const void *arg)
{
    pthread_mutex_lock(&g_mu);
    advised *r = record_locked(a, 1);
    if (!r || split_locked(r, lo) || split_locked(r, hi)) {
        pthread_mutex_unlock(&g_mu);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    for (size_t i = 0; i < r->n; i++)
        if (r->segs[i].lo >= lo && r->segs[i].hi <= hi)
            fn(&r->segs[i], arg);
    pthread_mutex_unlock(&g_mu);
    return CUDA_SUCCESS;
}

static int device_ok(int id) { return id >= 0 && id < arsim_device_count() && id < MAX_DEVICES; }

/* A prefetch or preferred location, made canonical: the calling thread's
 * host NUMA node and host NUMA node 0 are the one node the sim has. */
static CUresult location(CUmemLocation in, CUmemLocation *out)
{
    switch (in.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
        if (!device_ok(in.id))
            return CUDA_ERROR_INVALID_DEVICE;
        *out = in;
        return CUDA_SUCCESS;
    case CU_MEM_LOCATION_TYPE_HOST:
        out->type = CU_MEM_LOCATION_TYPE_HOST;
        out->id = 0; /* ignored */
        return CUDA_SUCCESS;
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
        if (in.id != 0)
            return CUDA_ERROR_INVALID_VALUE;
        /* fall through */
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
        out->type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
        out->id = 0;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

static int same_location(CUmemLocation x, CUmemLocation y)
{
    return x.type == y.type && (x.type == CU_MEM_LOCATION_TYPE_HOST || x.id == y.id);
}

/* ------------------------------------------------------------- advice */

typedef struct advice_arg {
    CUmem_advise advice;
    CUmemLocation loc;
} advice_arg;

static void advise_seg(seg *s, const void *arg)
{
    const advice_arg *a = arg;
    /* For the accessed-by advice: a device (checked) or the host. */
    int host = a->loc.type == CU_MEM_LOCATION_TYPE_HOST;
    uint64_t bit = a->loc.type == CU_MEM_LOCATION_TYPE_DEVICE ? (uint64_t)1 << a->loc.id : 0;
    switch (a->advice) {
    case CU_MEM_ADVISE_SET_READ_MOSTLY: s->read_mostly = 1; break;
    case CU_MEM_ADVISE_UNSET_READ_MOSTLY: s->read_mostly = 0; break;
    case CU_MEM_ADVISE_SET_PREFERRED_LOCATION: s->pref = a->loc; break;
    case CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION: s->pref.type = CU_MEM_LOCATION_TYPE_NONE; break;
    case CU_MEM_ADVISE_SET_ACCESSED_BY:
        s->accessed_by |= bit;
        s->host_accessed_by |= host;
        break;
    default: /* CU_MEM_ADVISE_UNSET_ACCESSED_BY */
        s->accessed_by &= ~bit;
        if (host)
            s->host_accessed_by = 0;
        break;
    }
}

CUresult cuMemAdvise_v2(CUdeviceptr devPtr, size_t count, CUmem_advise advice,
                        CUmemLocation location_)
{
    arsim_alloc a;
    size_t lo, hi;
    CUSIM_TRY(managed_range(devPtr, count, &a, &lo, &hi));
    advice_arg arg = {advice, location_};
    switch (advice) {
    case CU_MEM_ADVISE_SET_READ_MOSTLY:
    case CU_MEM_ADVISE_UNSET_READ_MOSTLY:
    case CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION:
        break; /* the location is ignored */
    case CU_MEM_ADVISE_SET_PREFERRED_LOCATION:
        CUSIM_TRY(location(location_, &arg.loc));
        break;
    case CU_MEM_ADVISE_SET_ACCESSED_BY:
    case CU_MEM_ADVISE_UNSET_ACCESSED_BY:
        /* A device or the host, nothing else. */
        if (location_.type == CU_MEM_LOCATION_TYPE_DEVICE && !device_ok(location_.id))
            return CUDA_ERROR_INVALID_DEVICE;
        if (location_.type != CU_MEM_LOCATION_TYPE_DEVICE &&
            location_.type != CU_MEM_LOCATION_TYPE_HOST)
            return CUDA_ERROR_INVALID_VALUE;
        break;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
    return apply(&a, lo, hi, advise_seg, &arg);
}

/* ------------------------------------------------------------- prefetches and discards */

static void prefetch_seg(seg *s, const void *arg) { s->prefetched = *(const CUmemLocation *)arg; }

/* Checks a prefetch of [p, p + count) to where and records it (cuda.h: the
 * attribute is the location last asked for, done or not). */
static CUresult prefetch_one(CUdeviceptr p, size_t count, CUmemLocation where)
{
    arsim_alloc a;
    size_t lo, hi;
    CUmemLocation loc;
    CUSIM_TRY(managed_range(p, count, &a, &lo, &hi));
    CUSIM_TRY(location(where, &loc));
    return apply(&a, lo, hi, prefetch_seg, &loc);
}

/* The stream-ordered part: nothing moves, but the call takes its place in
 * the stream (and in a capture). */
static CUresult enqueue(CUstream hStream)
{
    cu_stream *s;
    CUSIM_TRY(cusim_resolve_stream(hStream, &s));
    arsim_op *op = arsim_op_marker();
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    return cusim_submit(s, op, NULL);
}

CUresult cuMemPrefetchAsync_v2(CUdeviceptr devPtr, size_t count, CUmemLocation location_,
                               unsigned int flags, CUstream hStream)
{
    cu_stream *s;
    CUSIM_TRY(cusim_resolve_stream(hStream, &s));
    if (flags)
        return CUDA_ERROR_INVALID_VALUE;
    CUSIM_TRY(prefetch_one(devPtr, count, location_));
    return enqueue(hStream);
}

/* The batch calls' shared checks: the arrays, flags, and a stream that is
 * not the legacy default stream. */
static CUresult batch_check(CUdeviceptr *dptrs, size_t *sizes, size_t count,
                            unsigned long long flags, CUstream hStream)
{
    cu_stream *s;
    CUSIM_TRY(cusim_resolve_stream(hStream, &s));
    if (!dptrs || !sizes || !count || flags)
        return CUDA_ERROR_INVALID_VALUE;
    if (hStream == CU_STREAM_LEGACY || (!hStream && !cusim_tls_ptds))
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; i++) {
        arsim_alloc a;
        size_t lo, hi;
        CUSIM_TRY(managed_range(dptrs[i], sizes[i], &a, &lo, &hi));
    }
    return CUDA_SUCCESS;
}

/* Checks prefetchLocIdxs (first 0, rising, below count) and the locations,
 * then records each range's prefetch. */
static CUresult batch_prefetch(CUdeviceptr *dptrs, size_t *sizes, size_t count,
                               CUmemLocation *locs, size_t *idxs, size_t nlocs)
{
    if (!locs || !idxs || !nlocs || nlocs > count || idxs[0] != 0)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t k = 0; k < nlocs; k++) {
        CUmemLocation loc;
        CUSIM_TRY(location(locs[k], &loc));
        if (idxs[k] >= count || (k && idxs[k] <= idxs[k - 1]))
            return CUDA_ERROR_INVALID_VALUE;
    }
    for (size_t k = 0; k < nlocs; k++) {
        size_t end = k + 1 < nlocs ? idxs[k + 1] : count;
        for (size_t i = idxs[k]; i < end; i++)
            CUSIM_TRY(prefetch_one(dptrs[i], sizes[i], locs[k]));
    }
    return CUDA_SUCCESS;
}

CUresult cuMemPrefetchBatchAsync(CUdeviceptr *dptrs, size_t *sizes, size_t count,
                                 CUmemLocation *prefetchLocs, size_t *prefetchLocIdxs,
                                 size_t numPrefetchLocs, unsigned long long flags,
                                 CUstream hStream)
{
    CUSIM_TRY(batch_check(dptrs, sizes, count, flags, hStream));
    CUSIM_TRY(batch_prefetch(dptrs, sizes, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs));
    return enqueue(hStream);
}

CUresult cuMemDiscardBatchAsync(CUdeviceptr *dptrs, size_t *sizes, size_t count,
                                unsigned long long flags, CUstream hStream)
{
    CUSIM_TRY(batch_check(dptrs, sizes, count, flags, hStream));
    return enqueue(hStream);
}

CUresult cuMemDiscardAndPrefetchBatchAsync(CUdeviceptr *dptrs, size_t *sizes, size_t count,
                                           CUmemLocation *prefetchLocs, size_t *prefetchLocIdxs,
                                           size_t numPrefetchLocs, unsigned long long flags,
                                           CUstream hStream)
{
    return cuMemPrefetchBatchAsync(dptrs, sizes, count, prefetchLocs, prefetchLocIdxs,
                                   numPrefetchLocs, flags, hStream);
}

/* Per-thread-default-stream forms: stream 0 is the calling thread's stream. */

CUresult cuMemPrefetchAsync_v2_ptsz(CUdeviceptr devPtr, size_t count, CUmemLocation location_,
                                    unsigned int flags, CUstream hStream)
{
    PTDS_CALL(cuMemPrefetchAsync_v2(devPtr, count, location_, flags, hStream));
}

CUresult cuMemPrefetchBatchAsync_ptsz(CUdeviceptr *dptrs, size_t *sizes, size_t count,
                                      CUmemLocation *prefetchLocs, size_t *prefetchLocIdxs,
                                      size_t numPrefetchLocs, unsigned long long flags,
                                      CUstream hStream)
{
    PTDS_CALL(cuMemPrefetchBatchAsync(dptrs, sizes, count, prefetchLocs, prefetchLocIdxs,
                                 numPrefetchLocs, flags, hStream));
}

CUresult cuMemDiscardBatchAsync_ptsz(CUdeviceptr *dptrs, size_t *sizes, size_t count,
                                     unsigned long long flags, CUstream hStream)
{
    PTDS_CALL(cuMemDiscardBatchAsync(dptrs, sizes, count, flags, hStream));
}

CUresult cuMemDiscardAndPrefetchBatchAsync_ptsz(CUdeviceptr *dptrs, size_t *sizes, size_t count,
                                                CUmemLocation *prefetchLocs,
                                                size_t *prefetchLocIdxs, size_t numPrefetchLocs,
                                                unsigned long long flags, CUstream hStream)
{
    PTDS_CALL(cuMemDiscardAndPrefetchBatchAsync(dptrs, sizes, count, prefetchLocs, prefetchLocIdxs,
                                           numPrefetchLocs, flags, hStream));
}

/* ------------------------------------------------------------- range attributes */

/* What every byte of [lo, hi) of a record agrees on; r may be NULL (no advice). */
typedef struct range_view {
    int read_mostly;          /* all read-mostly */
    CUmemLocation pref;       /* NONE unless all share one */
    CUmemLocation prefetched; /* NONE unless all share one */
    uint64_t accessed_by;     /* devices set on all of it */
    int host_accessed_by;
} range_view;

static void view_locked(const advised *r, size_t lo, size_t hi, range_view *v)
{
    memset(v, 0, sizeof *v);
    if (!r)
        return;
    int first = 1;
    for (size_t i = 0; i < r->n; i++) {
        const seg *s = &r->segs[i];
        if (s->hi <= lo || s->lo >= hi)
            continue;
        if (first) {
            v->read_mostly = s->read_mostly;
            v->pref = s->pref;
            v->prefetched = s->prefetched;
            v->accessed_by = s->accessed_by;
            v->host_accessed_by = s->host_accessed_by;
            first = 0;
            continue;
        }
        v->read_mostly &= s->read_mostly;
        if (!same_location(v->pref, s->pref))
            v->pref.type = CU_MEM_LOCATION_TYPE_NONE;
        if (!same_location(v->prefetched, s->prefetched))
            v->prefetched.type = CU_MEM_LOCATION_TYPE_NONE;
        v->accessed_by &= s->accessed_by;
        v->host_accessed_by &= s->host_accessed_by;
    }
}

/* The legacy device-ordinal form of a location. */
static int ordinal(CUmemLocation loc)
{
    switch (loc.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE: return loc.id;
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA: return CU_DEVICE_CPU;
    default: return CU_DEVICE_INVALID;
    }
}

static CUresult answer(const range_view *v, void *data, size_t size, CUmem_range_attribute attr)
{
    if (!data)
        return CUDA_ERROR_INVALID_VALUE;
    if (attr == CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY) {
        if (!size || size % sizeof(int))
            return CUDA_ERROR_INVALID_VALUE;
        int *out = data;
        size_t n = size / sizeof(int), k = 0;
        for (int d = 0; d < MAX_DEVICES && k < n; d++)
            if (v->accessed_by & ((uint64_t)1 << d))
                out[k++] = d;
        if (v->host_accessed_by && k < n)
            out[k++] = CU_DEVICE_CPU;
        while (k < n)
            out[k++] = CU_DEVICE_INVALID;
        return CUDA_SUCCESS;
    }
    if (size != sizeof(int))
        return CUDA_ERROR_INVALID_VALUE;
    int *out = data;
    switch (attr) {
    case CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY: *out = v->read_mostly; break;
    case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION: *out = ordinal(v->pref); break;
    case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION: *out = ordinal(v->prefetched); break;
    case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE: *out = (int)v->pref.type; break;
    case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID: *out = v->pref.id; break;
    case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE: *out = (int)v->prefetched.type; break;
    case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID: *out = v->prefetched.id; break;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

CUresult cuMemRangeGetAttributes(void **data, size_t *dataSizes, CUmem_range_attribute *attributes,
                                 size_t numAttributes, CUdeviceptr devPtr, size_t count)
{
    arsim_alloc a;
    size_t lo, hi;
    CUSIM_TRY(managed_range(devPtr, count, &a, &lo, &hi));
    if (!data || !dataSizes || !attributes || !numAttributes)
        return CUDA_ERROR_INVALID_VALUE;
    range_view v;
    pthread_mutex_lock(&g_mu);
    view_locked(record_locked(&a, 0), lo, hi, &v);
    pthread_mutex_unlock(&g_mu);
    for (size_t i = 0; i < numAttributes; i++)
        CUSIM_TRY(answer(&v, data[i], dataSizes[i], attributes[i]));
    return CUDA_SUCCESS;
}

CUresult cuMemRangeGetAttribute(void *data, size_t dataSize, CUmem_range_attribute attribute,
                                CUdeviceptr devPtr, size_t count)
{
    return cuMemRangeGetAttributes(&data, &dataSize, &attribute, 1, devPtr, count);
}
