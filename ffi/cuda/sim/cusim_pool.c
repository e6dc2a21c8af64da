/* cuda-sim: stream-ordered memory pools (cuMemPool*, cuMemAllocAsync,
 * cuMemAllocFromPoolAsync, cuMemFreeAsync), as the CUDA documentation
 * describes them.
 *
 * A pool owns blocks: engine allocations of device memory (so they count
 * against the device's memory and the engine's bounds checks know them),
 * tagged with CUSIM_POOL_BLOCK and, as owner, the pool itself (a context's
 * teardown frees its own allocations, never a pool's).  A block is
 *   USED     handed out by an allocation;
 *   FREEING  cuMemFreeAsync was called: its stream has not reached the free;
 *   IDLE     the free executed: reusable by any stream.
 * Reuse follows the stream order and nothing else: a FREEING block is reused
 * only by an allocation on the stream that freed it (later work there runs
 * after the free), an IDLE block by anyone (CUDA's opportunistic reuse).  The
 * sim never adds dependencies between streams, so the event-dependency and
 * internal-dependency attributes are stored and reported but change nothing;
 * that is allowed, as they only permit more reuse.
 *
 * Sizes: a block serves any request that fits it with at most max(request,
 * 1 MiB) to spare, best fit first (the smallest such block).  Blocks are not
 * split: each is one engine allocation (of 64 KiB or less: a slot of one of
 * the engine's slabs, followed by a red zone; larger: a mapping of its own
 * with its guard page; with the sanitizer, always the latter), which is
 * what the bounds checks and the sanitizer rest on; a GPU reserves pool
 * memory in chunks of 2 MiB and more, so the slack holds no more memory than
 * a GPU would.  The block's capacity (the size it was allocated with) is
 * what the pool's counters and the device count; the bounds checks see the
 * request: the block is refitted (arsim_mem_refit) to exactly the requested
 * size, so lookups, copies, the interpreters' checks and
 * CU_POINTER_ATTRIBUTE_RANGE_SIZE see what was asked for, and with
 * ARUNTIME_SIM_SANITIZE the base moves so that the last requested byte
 * sits against the guard page: a byte past the request faults, as for a
 * fresh allocation.  When a refit happens:
 *   - an IDLE block (nothing queued may use it): at once, and every page
 *     outside the new fit is closed, so that host kernels fault there too
 *     (a slot shares its pages: nothing to close);
 *   - a FREEING block for a request no smaller than its fit: at once (it
 *     only grows, so work still queued keeps every byte it had);
 *   - a FREEING block for a smaller request: the work queued before the free
 *     may still use the bytes the smaller fit leaves out, so the free's op,
 *     which runs after that work and before the new allocation's, applies
 *     it (pages are not closed then: a copy enqueued meanwhile was checked
 *     against the larger fit).  Under the sanitizer the base would have to
 *     move under that queued work, so there a FREEING block serves only
 *     requests no smaller than its fit.
 * Each refit is numbered, so a deferred one never undoes a later one, and
 * one applied while a later allocation already holds the block fits the
 * larger of the two requests (the later one's enqueues are checked on the
 * host meanwhile), leaving the earlier allocation's work that much slack.
 *
 * Release threshold: when a free executes and the pool holds more than the
 * threshold, idle blocks go back to the device until it holds no more than
 * that (CUDA trims at the next synchronizing call; the state a program can
 * observe after one is the same).  cuMemPoolTrimTo releases idle blocks.
 * Allocating with the device out of memory first releases the pool's idle
 * blocks, then fails with CUDA_ERROR_OUT_OF_MEMORY.
 *
 * Where: a pool holds device memory (pinned, at a device), pinned host memory
 * (at the host or host NUMA node 0, the sim's only one) or managed memory
 * (with a preferred location, or none), as its CUmemPoolProps say.  A
 * managed block that prefers no device counts against the device of the
 * stream that allocated it.  cusim_pool_loc.c keeps each location's default
 * and current pool.
 *
 * In a stream capture, an allocation becomes a graph memory alloc node and
 * a free of graph memory a free node (cusim_graph_mem.c), as in CUDA: the
 * pool's own blocks are not used, since graph memory lives as long as the
 * graph does.  A capture that frees memory the graph did not allocate fails
 * with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and is invalidated.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "cusim.h"

enum { BLOCK_USED = 1, BLOCK_FREEING, BLOCK_IDLE };

/* A request may leave up to max(request, REUSE_SLACK) of a block unused. */
#define REUSE_SLACK ((size_t)1 << 20)

#define MAX_DEVICES 64

typedef struct cu_pool cu_pool;
typedef struct pool_free_op pool_free_op;

typedef struct pool_block {
    void *base; /* the engine allocation's base for the current fit */
    size_t cap; /* the size it was allocated with: what it reserves */
    size_t fit; /* the size the engine's bounds checks give it now */
    int state;
    int loose; /* pages past the fit may be open (a deferred refit) */
    int pending; /* free ops queued that still point at this block */
    uint64_t gen; /* bumped by each free, so a stale completion is ignored */
    uint64_t free_ctx, free_stream; /* the stream whose order the free follows */
    pool_free_op *last_free; /* the latest free's op, until it runs */
    uint64_t fit_seq, fit_done; /* refits decided; the latest one applied */
    size_t req; /* the latest allocation's request (refit number fit_seq) */
    struct pool_block *next;
} pool_block;

struct cu_pool {
    uint64_t handle;
    CUmemAllocationType type; /* pinned or managed */
    CUmemLocation loc;        /* a device's, the host's, a host NUMA node's, none */
    arsim_mem_kind kind;      /* its blocks: device, pinned host or managed memory */
    int device;               /* loc's device; -1 if loc is no device */
    int is_default;
    int destroyed; /* cuMemPoolDestroy with allocations outstanding */
    size_t max_size; /* 0: the device's memory */
    pthread_mutex_t mu;
    pool_block *blocks;
    uint64_t threshold, reserved, reserved_high, used, used_high;
    int reuse_follow, reuse_opportunistic, reuse_internal;
    /* cuMemPoolSetAccess: what each other device may do (its own device
     * always reads and writes).  The sim's devices share one address space,
     * so this is recorded and reported, not enforced. */
    unsigned char access[MAX_DEVICES];
};

/* One queued free: the block and the generation it freed, and the refit
 * (fit bytes, numbered fit_seq; 0: none) that the block's next allocation on
 * the same stream left for it to apply. */
struct pool_free_op {
    cu_pool *pool;
    pool_block *block;
    uint64_t gen;
    size_t fit;
    uint64_t fit_seq;
};

static pthread_mutex_t g_pools_mu = PTHREAD_MUTEX_INITIALIZER;

/* Plain (cuMemAlloc) memory given to cuMemFreeAsync and not yet freed, so a
 * second cuMemFreeAsync of it is refused instead of freeing whatever the
 * address holds by then. */
typedef struct pending_plain {
    void *base;
    struct pending_plain *next;
} pending_plain;
static pending_plain *g_pending_plain;

cu_pool *cusim_pool_new(CUmemAllocationType type, const CUmemLocation *loc, size_t max_size,
                        int is_default)
{
    cu_pool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->type = type;
    p->loc = *loc;
    p->device = loc->type == CU_MEM_LOCATION_TYPE_DEVICE ? loc->id : -1;
    p->kind = type == CU_MEM_ALLOCATION_TYPE_MANAGED ? ARSIM_MEM_MANAGED
              : p->device >= 0                       ? ARSIM_MEM_DEVICE
                                                     : ARSIM_MEM_HOST;
    p->is_default = is_default;
    p->max_size = max_size;
    p->reuse_follow = p->reuse_opportunistic = p->reuse_internal = 1;
    pthread_mutex_init(&p->mu, NULL);
    p->handle = arsim_handle_new(HK_POOL, p);
    if (!p->handle) {
        pthread_mutex_destroy(&p->mu);
        free(p);
        return NULL;
    }
    return p;
}

static void pool_free_struct(cu_pool *p)
{
    pthread_mutex_destroy(&p->mu);
    free(p);
}

cu_pool *cusim_pool_get(CUmemoryPool h)
{
    cu_pool *p = arsim_handle_get((uint64_t)(uintptr_t)h, HK_POOL);
    if (!p)
        return NULL;
    pthread_mutex_lock(&p->mu);
    int gone = p->destroyed;
    pthread_mutex_unlock(&p->mu);
    return gone ? NULL : p;
}

CUmemoryPool cusim_pool_handle(const cu_pool *p) { return (CUmemoryPool)(uintptr_t)p->handle; }

int cusim_pool_serves(const cu_pool *p, CUmemAllocationType type, const CUmemLocation *loc)
{
    /* A host location's id means nothing. */
    return p->type == type && p->loc.type == loc->type &&
           (loc->type == CU_MEM_LOCATION_TYPE_HOST || p->loc.id == loc->id);
}

static void note_reserved(cu_pool *p, size_t add)
{
    p->reserved += add;
    if (p->reserved > p->reserved_high)
        p->reserved_high = p->reserved;
}

static void note_used(cu_pool *p, size_t add)
{
    p->used += add;
    if (p->used > p->used_high)
        p->used_high = p->used;
}

/* Unlinks the idle blocks to give back until at most `keep` bytes stay
 * reserved; returns them as a list.  Caller holds p->mu. */
static pool_block *take_idle_locked(cu_pool *p, uint64_t keep)
{
    pool_block *out = NULL;
    pool_block **link = &p->blocks;
    while (*link && p->reserved > keep) {
        pool_block *b = *link;
        if (b->state == BLOCK_IDLE && b->pending == 0) {
            *link = b->next;
            p->reserved -= b->cap;
            b->next = out;
            out = b;
        } else {
            link = &b->next;
        }
    }
    return out;
}

static void release_blocks(pool_block *list)
{
    while (list) {
        pool_block *next = list->next;
        arsim_mem_free(list->base, ARSIM_MEM_DEVICE | ARSIM_MEM_HOST | ARSIM_MEM_MANAGED);
        free(list);
        list = next;
    }
}

/* A destroyed pool goes once nothing is outstanding.  Caller holds p->mu;
 * returns 1 if the caller must free the pool after unlocking. */
static int pool_finished_locked(cu_pool *p)
{
    if (!p->destroyed)
        return 0;
    for (pool_block *b = p->blocks; b; b = b->next)
        if (b->state != BLOCK_IDLE || b->pending)
            return 0;
    return 1;
}

static void pool_finish(cu_pool *p)
{
    pthread_mutex_lock(&p->mu);
    pool_block *all = take_idle_locked(p, 0);
    pthread_mutex_unlock(&p->mu);
    release_blocks(all);
    arsim_handle_remove(p->handle, HK_POOL);
    pool_free_struct(p);
}

/* Runs on the stream's thread when the stream reaches the free. */
static void pool_free_done(void *arg)
{
    pool_free_op *f = arg;
    cu_pool *p = f->pool;
    pthread_mutex_lock(&p->mu);
    pool_block *b = f->block;
    b->pending--;
    if (b->last_free == f)
        b->last_free = NULL;
    if (b->state == BLOCK_FREEING && b->gen == f->gen)
        b->state = BLOCK_IDLE;
    if (f->fit && f->fit_seq > b->fit_done) {
        /* The work before the free is done and the allocation that took the
         * block on this stream comes next: its smaller fit applies now.  If
         * a later allocation has the block already (freed and taken again,
         * its own smaller fit deferred to its free's op), its request must
         * stay valid for what the host enqueues meanwhile: the fit is the
         * larger of the two until that op runs. */
        size_t want = f->fit;
        if (b->fit_seq > f->fit_seq && b->req > want)
            want = b->req;
        void *base;
        if (arsim_mem_refit(b->base, want, 0, &base) == ARSIM_OK) {
            b->base = base;
            b->fit = want;
            b->fit_done = f->fit_seq;
            b->loose = 1;
        }
    }
    pool_block *gone = take_idle_locked(p, p->threshold);
    int finished = pool_finished_locked(p);
    pthread_mutex_unlock(&p->mu);
    free(f);
    release_blocks(gone);
    if (finished)
        pool_finish(p);
}

/* An allocation on a capturing stream: a graph memory alloc node.  Returns
 * 0 if s is not capturing (then nothing happened). */
static int capture_alloc(cu_stream *s, const cu_pool *p, size_t size, CUdeviceptr *out,
                         CUresult *r)
{
    if (!__atomic_load_n(&s->cap, __ATOMIC_ACQUIRE))
        return 0;
    cu_gmem *m = NULL;
    int device = p->kind == ARSIM_MEM_HOST ? -1 : p->device >= 0 ? p->device : s->ctx->device;
    *r = cusim_gmem_new(device, p->kind, size, &m);
    CUmemPoolProps props = {.allocType = p->type, .location = p->loc}; /* what its node reports */
    pthread_mutex_lock(&g_capture_mu);
    cu_capture *cap = s->cap;
    if (cap && *r == CUDA_SUCCESS)
        *r = cap->invalidated ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
                              : cusim_capture_add_mem(cap, CU_GRAPH_NODE_TYPE_MEM_ALLOC, m,
                                                      &props);
    pthread_mutex_unlock(&g_capture_mu);
    if (!cap && *r == CUDA_SUCCESS) {
        cusim_gmem_unref(m); /* the capture ended meanwhile: allocate normally */
        return 0;
    }
    if (*r == CUDA_SUCCESS)
        *out = cusim_gmem_ptr(m);
    if (m && (cap || *r != CUDA_SUCCESS))
        cusim_gmem_unref(m); /* the node holds it now */
    return 1;
}

static int stream_capturing(cu_stream *s)
{
    pthread_mutex_lock(&g_capture_mu);
    int cap = s->cap != NULL;
    if (cap)
        cusim_capture_invalidate(s->cap);
    pthread_mutex_unlock(&g_capture_mu);
    return cap;
}

/* Whether block b may serve a request of n bytes (whatever its state). */
static int block_fits(const pool_block *b, size_t n)
{
    return n <= b->cap && b->cap - n <= (n > REUSE_SLACK ? n : REUSE_SLACK);
}

/* Whether stream (ctx, sid) may take block b now, stream order permitting. */
static int block_reusable(const cu_pool *p, const pool_block *b, size_t n, uint64_t ctx,
                          uint64_t sid)
{
    if (b->state == BLOCK_IDLE)
        return p->reuse_opportunistic;
    if (b->state != BLOCK_FREEING || b->free_ctx != ctx || b->free_stream != sid)
        return 0;
    /* A smaller fit is left to the free's op, except under the sanitizer
     * (see the header comment). */
    return n >= b->fit || (b->last_free && !arsim_mem_sanitizing());
}

/* Fits block b, taken for a request of n bytes, to n (see the header
 * comment).  Caller holds p->mu. */
static arsim_status refit_locked(pool_block *b, size_t n)
{
    uint64_t seq = ++b->fit_seq;
    b->req = n;
    int idle = b->state == BLOCK_IDLE;
    if (!idle && n < b->fit) {
        b->last_free->fit = n;
        b->last_free->fit_seq = seq;
        return ARSIM_OK;
    }
    if (n != b->fit || (idle && b->loose)) {
        void *base;
        arsim_status st = arsim_mem_refit(b->base, n, idle, &base);
        if (st != ARSIM_OK)
            return st;
        b->base = base;
        b->fit = n;
        if (idle)
            b->loose = 0;
    }
    /* Even unchanged: a refit still queued for an earlier allocation must
     * not shrink this one. */
    b->fit_done = seq;
    return ARSIM_OK;
}

static CUresult pool_alloc(cu_pool *p, size_t size, cu_stream *s, CUdeviceptr *out)
{
    uint64_t ctx = s->ctx->handle, sid = s->handle;
    pthread_mutex_lock(&p->mu);
    pool_block *hit = NULL;
    for (pool_block *b = p->blocks; b; b = b->next) {
        /* Best fit; among equals, the freeing stream's own block first. */
        if (!block_fits(b, size) || !block_reusable(p, b, size, ctx, sid))
            continue;
        if (!hit || b->cap < hit->cap || (b->cap == hit->cap && b->state == BLOCK_FREEING))
            hit = b;
    }
    if (hit && refit_locked(hit, size) == ARSIM_OK) {
        hit->state = BLOCK_USED;
        note_used(p, hit->cap);
        *out = (CUdeviceptr)(uintptr_t)hit->base;
        pthread_mutex_unlock(&p->mu);
        return CUDA_SUCCESS;
    }
    if (p->max_size && p->reserved + size > p->max_size) {
        pool_block *gone = take_idle_locked(p, p->max_size - (size < p->max_size ? size : p->max_size));
        pthread_mutex_unlock(&p->mu);
        release_blocks(gone);
        pthread_mutex_lock(&p->mu);
        if (p->reserved + size > p->max_size) {
            pthread_mutex_unlock(&p->mu);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    pthread_mutex_unlock(&p->mu);

    pool_block *b = calloc(1, sizeof *b);
    if (!b)
        return CUDA_ERROR_OUT_OF_MEMORY;
    void *mem = NULL;
    /* Host memory belongs to no device; managed memory that prefers none is
     * the allocating stream's device's to count. */
    int device = p->kind == ARSIM_MEM_HOST ? -1 : p->device >= 0 ? p->device : s->ctx->device;
    arsim_status st = arsim_mem_alloc(device, size, p->kind, (uint64_t)(uintptr_t)p,
                                      CUSIM_POOL_BLOCK, &mem);
    if (st == ARSIM_ERR_OUT_OF_MEMORY) {
        /* The device is full: give back what this pool keeps idle, then retry. */
        pthread_mutex_lock(&p->mu);
        pool_block *gone = take_idle_locked(p, 0);
        pthread_mutex_unlock(&p->mu);
        if (gone) {
            release_blocks(gone);
            st = arsim_mem_alloc(device, size, p->kind, (uint64_t)(uintptr_t)p,
                                 CUSIM_POOL_BLOCK, &mem);
        }
    }
    if (st != ARSIM_OK) {
        free(b);
        return cusim_status(st);
    }
    b->base = mem;
    b->cap = b->fit = b->req = size;
    b->state = BLOCK_USED;
    pthread_mutex_lock(&p->mu);
    b->next = p->blocks;
    p->blocks = b;
    note_reserved(p, size);
    note_used(p, size);
    pthread_mutex_unlock(&p->mu);
    *out = (CUdeviceptr)(uintptr_t)mem;
    return CUDA_SUCCESS;
}

/* The block at p, with its pool locked, or NULL. */
static pool_block *find_block_locked(cu_pool *pool, const void *p)
{
    for (pool_block *b = pool->blocks; b; b = b->next)
        if (b->base == p)
            return b;
    return NULL;
}

static cu_pool *pool_of_alloc(const arsim_alloc *a)
{
    if (!(a->flags & CUSIM_POOL_BLOCK))
        return NULL;
    return (cu_pool *)(uintptr_t)a->owner;
}

uint64_t cusim_pool_of(const void *p)
{
    arsim_alloc a;
    if (arsim_mem_lookup(p, &a) != ARSIM_OK)
        return 0;
    cu_pool *pool = pool_of_alloc(&a);
    return pool ? pool->handle : 0;
}

CUresult cusim_pool_free_now(void *ptr)
{
    arsim_alloc a;
    if (arsim_mem_lookup(ptr, &a) != ARSIM_OK || a.base != ptr)
        return CUDA_ERROR_INVALID_VALUE;
    cu_pool *p = pool_of_alloc(&a);
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&p->mu);
    pool_block *b = find_block_locked(p, ptr);
    if (!b || b->state != BLOCK_USED) {
        pthread_mutex_unlock(&p->mu);
        return CUDA_ERROR_INVALID_VALUE;
    }
    b->state = BLOCK_IDLE;
    b->gen++;
    b->last_free = NULL;
    p->used -= b->cap;
    pool_block *gone = take_idle_locked(p, p->threshold);
    int finished = pool_finished_locked(p);
    pthread_mutex_unlock(&p->mu);
    release_blocks(gone);
    if (finished)
        pool_finish(p);
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------- access */

static CUresult check_device(CUdevice dev)
{
    if (dev < 0 || dev >= arsim_device_count() || dev >= MAX_DEVICES)
        return CUDA_ERROR_INVALID_DEVICE;
    return CUDA_SUCCESS;
}

static CUresult access_check(const cu_pool *p, const CUmemAccessDesc *d)
{
    if (d->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    CUSIM_TRY(check_device(d->location.id));
    if (d->flags != CU_MEM_ACCESS_FLAGS_PROT_NONE && d->flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
        d->flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
        return CUDA_ERROR_INVALID_VALUE;
    /* A device pool's own device keeps read-write access. */
    if (d->location.id == p->device && d->flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
        return CUDA_ERROR_INVALID_DEVICE;
    return CUDA_SUCCESS;
}

CUresult cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc *map, size_t count)
{
    CUSIM_TRY(cusim_check_init());
    cu_pool *p = cusim_pool_get(pool);
    if (!p || (count && !map))
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; i++)
        CUSIM_TRY(access_check(p, &map[i]));
    pthread_mutex_lock(&p->mu);
    for (size_t i = 0; i < count; i++)
        p->access[map[i].location.id] = (unsigned char)map[i].flags;
    pthread_mutex_unlock(&p->mu);
    return CUDA_SUCCESS;
}

CUresult cuMemPoolGetAccess(CUmemAccess_flags *flags, CUmemoryPool memPool,
                            CUmemLocation *location)
{
    CUSIM_TRY(cusim_check_init());
    cu_pool *p = cusim_pool_get(memPool);
    if (!p || !flags || !location || location->type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    CUSIM_TRY(check_device(location->id));
    pthread_mutex_lock(&p->mu);
    *flags = location->id == p->device ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE
                                       : p->access[location->id];
    pthread_mutex_unlock(&p->mu);
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------- pools */

/* Whether loc names a device, or host NUMA node 0 (the sim's host has no
 * other). */
static int loc_device_ok(const CUmemLocation *loc)
{
    return loc->id >= 0 && loc->id < arsim_device_count() && loc->id < MAX_DEVICES;
}

/* cuMemPoolCreate's rules for where each allocation type may live. */
static CUresult check_props(const CUmemPoolProps *pp)
{
    for (size_t i = 0; i < sizeof pp->reserved; i++)
        if (pp->reserved[i])
            return CUDA_ERROR_INVALID_VALUE;
    if (pp->win32SecurityAttributes)
        return CUDA_ERROR_INVALID_VALUE;
    const CUmemLocation *loc = &pp->location;
    int managed = pp->allocType == CU_MEM_ALLOCATION_TYPE_MANAGED;
    if (!managed && pp->allocType != CU_MEM_ALLOCATION_TYPE_PINNED)
        return CUDA_ERROR_INVALID_VALUE;
    /* Managed pools share nothing and take no size limit. */
    if (managed && (pp->handleTypes != CU_MEM_HANDLE_TYPE_NONE || pp->maxSize))
        return CUDA_ERROR_INVALID_VALUE;
    switch (loc->type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
        if (!loc_device_ok(loc))
            return CUDA_ERROR_INVALID_VALUE;
        break;
    case CU_MEM_LOCATION_TYPE_HOST:
        if (pp->handleTypes != CU_MEM_HANDLE_TYPE_NONE)
            return CUDA_ERROR_INVALID_VALUE; /* host pools are never IPC capable */
        break;
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
        if (loc->id != 0)
            return CUDA_ERROR_INVALID_VALUE;
        break;
    case CU_MEM_LOCATION_TYPE_NONE:
        if (!managed)
            return CUDA_ERROR_INVALID_VALUE;
        break;
    default: /* HOST_NUMA_CURRENT among them */
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (pp->handleTypes != CU_MEM_HANDLE_TYPE_NONE || pp->usage != 0)
        return CUDA_ERROR_NOT_SUPPORTED; /* no IPC, no special usage */
    return CUDA_SUCCESS;
}

CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props)
{
    CUSIM_TRY(cusim_check_init());
    if (!pool || !props)
        return CUDA_ERROR_INVALID_VALUE;
    CUSIM_TRY(check_props(props));
    cu_pool *p = cusim_pool_new(props->allocType, &props->location, props->maxSize, 0);
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *pool = cusim_pool_handle(p);
    return CUDA_SUCCESS;
}

CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
    CUSIM_TRY(cusim_check_init());
    cu_pool *p = cusim_pool_get(pool);
    if (!p || p->is_default)
        return CUDA_ERROR_INVALID_VALUE; /* a default pool cannot be destroyed */
    /* Where it was the current pool, the default serves again: a destroyed
     * pool's handle no longer resolves (cusim_pool_loc.c). */
    pthread_mutex_lock(&p->mu);
    if (p->destroyed) {
        pthread_mutex_unlock(&p->mu);
        return CUDA_ERROR_INVALID_VALUE;
    }
    p->destroyed = 1;
    int finished = pool_finished_locked(p);
    pthread_mutex_unlock(&p->mu);
    /* Otherwise the last free of an outstanding allocation finishes it. */
    if (finished)
        pool_finish(p);
    return CUDA_SUCCESS;
}

CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    CUSIM_TRY(cusim_check_init());
    cu_pool *p = cusim_pool_get(pool);
    if (!p || !value)
        return CUDA_ERROR_INVALID_VALUE;
    pool_block *gone = NULL;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&p->mu);
    switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
        p->reuse_follow = *(int *)value != 0;
        break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
        p->reuse_opportunistic = *(int *)value != 0;
        break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
        p->reuse_internal = *(int *)value != 0;
        break;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
        p->threshold = *(cuuint64_t *)value;
        gone = take_idle_locked(p, p->threshold);
        break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
        /* Only a reset (to the current value) is allowed. */
        if (*(cuuint64_t *)value != 0)
            r = CUDA_ERROR_INVALID_VALUE;
        else
            p->reserved_high = p->reserved;
        break;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
        if (*(cuuint64_t *)value != 0)
            r = CUDA_ERROR_INVALID_VALUE;
        else
            p->used_high = p->used;
        break;
    default: /* the *_CURRENT counters are read-only */
        r = CUDA_ERROR_INVALID_VALUE;
        break;
    }
    pthread_mutex_unlock(&p->mu);
    release_blocks(gone);
    return r;
}

CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    CUSIM_TRY(cusim_check_init());
    cu_pool *p = cusim_pool_get(pool);
    if (!p || !value)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&p->mu);
    switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES: *(int *)value = p->reuse_follow; break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC: *(int *)value = p->reuse_opportunistic; break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: *(int *)value = p->reuse_internal; break;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: *(cuuint64_t *)value = p->threshold; break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT: *(cuuint64_t *)value = p->reserved; break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: *(cuuint64_t *)value = p->reserved_high; break;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT: *(cuuint64_t *)value = p->used; break;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH: *(cuuint64_t *)value = p->used_high; break;
    default: r = CUDA_ERROR_INVALID_VALUE; break;
    }
    pthread_mutex_unlock(&p->mu);
    return r;
}

CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
    CUSIM_TRY(cusim_check_init());
    cu_pool *p = cusim_pool_get(pool);
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&p->mu);
    pool_block *gone = take_idle_locked(p, minBytesToKeep);
    pthread_mutex_unlock(&p->mu);
    release_blocks(gone);
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------- stream-ordered calls */

/* Unlike cuMemAlloc, the stream-ordered calls take a zero-byte request (only
 * Windows' TCC mode refuses one, and cuda.core's allocate(0) relies on it).
 * It gets a one-byte block: a distinct pointer that cuMemFreeAsync frees. */
static size_t pool_request(size_t bytesize) { return bytesize ? bytesize : 1; }

CUresult cusim_pool_alloc_async(cu_pool *p, size_t bytesize, cu_stream *s, CUdeviceptr *out)
{
    CUresult r;
    if (capture_alloc(s, p, pool_request(bytesize), out, &r))
        return r;
    return pool_alloc(p, pool_request(bytesize), s, out);
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                 CUstream hStream)
{
    cu_stream *s;
    CUSIM_TRY(cusim_resolve_stream(hStream, &s));
    cu_pool *p = cusim_pool_get(pool);
    if (!dptr || !p)
        return CUDA_ERROR_INVALID_VALUE;
    return cusim_pool_alloc_async(p, bytesize, s, dptr);
}

static void plain_free_done(void *base)
{
    pthread_mutex_lock(&g_pools_mu);
    for (pending_plain **l = &g_pending_plain; *l; l = &(*l)->next) {
        if ((*l)->base == base) {
            pending_plain *gone = *l;
            *l = gone->next;
            free(gone);
            break;
        }
    }
    arsim_mem_free(base, ARSIM_MEM_DEVICE | ARSIM_MEM_MANAGED);
    pthread_mutex_unlock(&g_pools_mu);
}

/* cuMemFreeAsync of cuMemAlloc memory: freed when the stream reaches it. */
static CUresult free_plain_async(void *base, cu_stream *s)
{
    pending_plain *pp = malloc(sizeof *pp);
    if (!pp)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&g_pools_mu);
    for (pending_plain *q = g_pending_plain; q; q = q->next) {
        if (q->base == base) {
            pthread_mutex_unlock(&g_pools_mu);
            free(pp);
            return CUDA_ERROR_INVALID_VALUE; /* already being freed */
        }
    }
    pp->base = base;
    pp->next = g_pending_plain;
    g_pending_plain = pp;
    pthread_mutex_unlock(&g_pools_mu);
    CUresult r = cusim_submit(s, arsim_op_release_fn(plain_free_done, base), NULL);
    if (r != CUDA_SUCCESS)
        plain_free_done(base); /* a poisoned device: nothing will run, free it now */
    return r;
}

/* cuMemFreeAsync of graph memory: a free node in a capture, else freed in
 * stream order. */
static CUresult free_graph_mem(cu_gmem *gm, cu_stream *s)
{
    pthread_mutex_lock(&g_capture_mu);
    cu_capture *cap = s->cap;
    CUresult r = CUDA_SUCCESS;
    if (cap)
        r = cap->invalidated ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
                             : cusim_capture_add_mem(cap, CU_GRAPH_NODE_TYPE_MEM_FREE, gm, NULL);
    pthread_mutex_unlock(&g_capture_mu);
    if (cap)
        return r;
    CUSIM_TRY(cusim_gmem_user_free(gm, 1));
    r = cusim_submit(s, arsim_op_release_fn(cusim_gmem_free_done, gm), NULL);
    if (r != CUDA_SUCCESS)
        cusim_gmem_free_done(gm); /* nothing will run on a poisoned device */
    return r;
}

CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    cu_stream *s;
    CUSIM_TRY(cusim_resolve_stream(hStream, &s));
    void *base = (void *)(uintptr_t)dptr;
    cu_gmem *gm = cusim_gmem_of(dptr);
    if (gm)
        return free_graph_mem(gm, s);
    arsim_alloc a;
    if (!base || arsim_mem_lookup(base, &a) != ARSIM_OK || a.base != base ||
        !((a.kind & (ARSIM_MEM_DEVICE | ARSIM_MEM_MANAGED)) || (a.flags & CUSIM_POOL_BLOCK)))
        return CUDA_ERROR_INVALID_VALUE;
    if (stream_capturing(s))
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    cu_pool *p = pool_of_alloc(&a);
    if (!p)
        return free_plain_async(base, s);
    pool_free_op *f = malloc(sizeof *f);
    if (!f)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&p->mu);
    pool_block *b = find_block_locked(p, base);
    if (!b || b->state != BLOCK_USED) {
        pthread_mutex_unlock(&p->mu);
        free(f);
        return CUDA_ERROR_INVALID_VALUE; /* a double free */
    }
    b->state = BLOCK_FREEING;
    b->gen++;
    b->pending++;
    b->free_ctx = s->ctx->handle;
    b->free_stream = s->handle;
    b->last_free = f;
    p->used -= b->cap;
    f->pool = p;
    f->block = b;
    f->gen = b->gen;
    f->fit = 0;
    f->fit_seq = 0;
    pthread_mutex_unlock(&p->mu);
    CUresult r = cusim_submit(s, arsim_op_release_fn(pool_free_done, f), NULL);
    if (r != CUDA_SUCCESS)
        pool_free_done(f); /* nothing will run on a poisoned device: free it now */
    return r;
}
