/* cuda-sim: what graphs own beyond their nodes: graph memory, user objects
 * and conditional handles, and the launch that accounts for them.
 *
 * Graph memory: a memory alloc node gets its address when it is made, as in
 * CUDA, and the sim backs that address from then on (CUDA maps physical
 * memory at launch; a program sees the same addresses either way).  The
 * backing is released when no graph, executable graph or launch in flight
 * refers to it and no launched allocation is still unfreed.  An allocation
 * is live from a launch of its alloc node until a free node runs or the
 * program frees it (cuMemFree, cuMemFreeAsync); launching an executable
 * graph whose allocation is still live is CUDA_ERROR_INVALID_VALUE, as the
 * CUDA documentation requires.
 *
 * User objects: a reference count and a destructor.  Graphs, executable
 * graphs and launches in flight hold references; the destructor runs on the
 * thread that lets go of the last one, once it holds no driver lock. */
#include <stdlib.h>
#include <string.h>

#include "cusim.h"

struct cu_gmem {
    void *base;
    size_t size;
    arsim_mem_kind kind;
    int device;
    int refs;
    int live;    /* launched and not yet freed */
    int freeing; /* a cuMemFreeAsync of it is queued */
};

#define GMEM_DEVICES 64
static pthread_mutex_t g_gmem_mu = PTHREAD_MUTEX_INITIALIZER;
static size_t g_used[GMEM_DEVICES], g_used_high[GMEM_DEVICES];
static size_t g_reserved[GMEM_DEVICES], g_reserved_high[GMEM_DEVICES];

static int dev_slot(int device) { return device >= 0 && device < GMEM_DEVICES ? device : 0; }

static void note(size_t *cur, size_t *high, size_t add)
{
    *cur += add;
    if (*cur > *high)
        *high = *cur;
}

CUresult cusim_gmem_new(int device, arsim_mem_kind kind, size_t size, cu_gmem **out)
{
    cu_gmem *m = calloc(1, sizeof *m);
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    arsim_status st = arsim_mem_alloc(device, size, kind, (uint64_t)(uintptr_t)m,
                                      CUSIM_GRAPH_MEM, &m->base);
    if (st != ARSIM_OK) {
        free(m);
        return cusim_status(st);
    }
    m->size = size;
    m->kind = kind;
    m->device = device;
    m->refs = 1;
    pthread_mutex_lock(&g_gmem_mu);
    int d = dev_slot(device);
    note(&g_reserved[d], &g_reserved_high[d], size);
    pthread_mutex_unlock(&g_gmem_mu);
    *out = m;
    return CUDA_SUCCESS;
}

cu_gmem *cusim_gmem_of(CUdeviceptr p)
{
    arsim_alloc a;
    if (!p || arsim_mem_lookup((void *)(uintptr_t)p, &a) != ARSIM_OK ||
        a.base != (void *)(uintptr_t)p || !(a.flags & CUSIM_GRAPH_MEM))
        return NULL;
    return (cu_gmem *)(uintptr_t)a.owner;
}

CUdeviceptr cusim_gmem_ptr(const cu_gmem *m) { return (CUdeviceptr)(uintptr_t)m->base; }
size_t cusim_gmem_size(const cu_gmem *m) { return m->size; }
int cusim_gmem_device(const cu_gmem *m) { return m->device; }

void cusim_gmem_ref(cu_gmem *m)
{
    pthread_mutex_lock(&g_gmem_mu);
    m->refs++;
    pthread_mutex_unlock(&g_gmem_mu);
}

/* Caller holds g_gmem_mu; releases m if nothing needs it. */
static void gmem_maybe_release_locked(cu_gmem *m)
{
    if (m->refs > 0 || m->live || m->freeing)
        return;
    g_reserved[dev_slot(m->device)] -= m->size;
    arsim_mem_free(m->base, m->kind);
    free(m);
}

static void set_live_locked(cu_gmem *m, int live)
{
    if (m->live == live)
        return;
    m->live = live;
    int d = dev_slot(m->device);
    if (live)
        note(&g_used[d], &g_used_high[d], m->size);
    else
        g_used[d] -= m->size;
}

void cusim_gmem_unref(cu_gmem *m)
{
    pthread_mutex_lock(&g_gmem_mu);
    m->refs--;
    gmem_maybe_release_locked(m);
    pthread_mutex_unlock(&g_gmem_mu);
}

CUresult cusim_gmem_launch(cu_graph_exec *x)
{
    pthread_mutex_lock(&g_gmem_mu);
    for (size_t i = 0; x->auto_free && i < x->nallocs; i++)
        set_live_locked(x->allocs[i], 0);
    for (size_t i = 0; i < x->nallocs; i++) {
        if (x->allocs[i]->live) {
            pthread_mutex_unlock(&g_gmem_mu);
            return CUDA_ERROR_INVALID_VALUE; /* its last launch's memory is unfreed */
        }
    }
    for (size_t i = 0; i < x->nallocs; i++)
        set_live_locked(x->allocs[i], 1);
    for (size_t i = 0; i < x->nfrees; i++)
        set_live_locked(x->frees[i], 0);
    pthread_mutex_unlock(&g_gmem_mu);
    return CUDA_SUCCESS;
}

void cusim_gmem_free_done(void *arg)
{
    cu_gmem *m = arg;
    pthread_mutex_lock(&g_gmem_mu);
    m->freeing = 0;
    gmem_maybe_release_locked(m);
    pthread_mutex_unlock(&g_gmem_mu);
}

CUresult cusim_gmem_user_free(cu_gmem *m, int queued)
{
    pthread_mutex_lock(&g_gmem_mu);
    if (!m->live || m->freeing) {
        pthread_mutex_unlock(&g_gmem_mu);
        return CUDA_ERROR_INVALID_VALUE; /* not allocated now: a double free */
    }
    set_live_locked(m, 0);
    m->freeing = queued; /* the backing stays until the stream reaches the free */
    gmem_maybe_release_locked(m);
    pthread_mutex_unlock(&g_gmem_mu);
    return CUDA_SUCCESS;
}

static CUresult graph_mem_device(CUdevice device)
{
    CUSIM_TRY(cusim_check_init());
    return device < 0 || device >= arsim_device_count() || device >= GMEM_DEVICES
               ? CUDA_ERROR_INVALID_DEVICE
               : CUDA_SUCCESS;
}

CUresult cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void *value)
{
    CUSIM_TRY(graph_mem_device(device));
    if (!value || attr > CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_gmem_mu);
    size_t v = attr == CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT  ? g_used[device]
               : attr == CU_GRAPH_MEM_ATTR_USED_MEM_HIGH   ? g_used_high[device]
               : attr == CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT ? g_reserved[device]
                                                            : g_reserved_high[device];
    pthread_mutex_unlock(&g_gmem_mu);
    *(cuuint64_t *)value = v;
    return CUDA_SUCCESS;
}

CUresult cuDeviceSetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void *value)
{
    CUSIM_TRY(graph_mem_device(device));
    /* Only the high watermarks can be set, and only back to zero (which
     * resets them to the current amount). */
    if (!value || *(cuuint64_t *)value != 0 ||
        (attr != CU_GRAPH_MEM_ATTR_USED_MEM_HIGH && attr != CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH))
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_gmem_mu);
    if (attr == CU_GRAPH_MEM_ATTR_USED_MEM_HIGH)
        g_used_high[device] = g_used[device];
    else
        g_reserved_high[device] = g_reserved[device];
    pthread_mutex_unlock(&g_gmem_mu);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGraphMemTrim(CUdevice device)
{
    /* Nothing to trim: the sim keeps no graph memory that no graph holds. */
    return graph_mem_device(device);
}

/* ------------------------------------------------------------- user objects */

struct cu_uobj {
    uint64_t handle;
    void *ptr;
    CUhostFn destroy;
    unsigned refs;
    cu_uobj *next_dead;
};

static pthread_mutex_t g_uobj_mu = PTHREAD_MUTEX_INITIALIZER;
static __thread cu_uobj *t_dead; /* destroyed here, destructor not yet run */

void cusim_uobj_release(cu_uobj *o, unsigned count)
{
    pthread_mutex_lock(&g_uobj_mu);
    o->refs = count >= o->refs ? 0 : o->refs - count;
    int dead = o->refs == 0;
    if (dead)
        arsim_handle_remove(o->handle, HK_USER_OBJECT);
    pthread_mutex_unlock(&g_uobj_mu);
    if (dead) {
        o->next_dead = t_dead;
        t_dead = o;
    }
}

void cusim_uobj_flush(void)
{
    while (t_dead) {
        cu_uobj *o = t_dead;
        t_dead = o->next_dead;
        o->destroy(o->ptr);
        free(o);
    }
}

void cusim_urefs_release(cu_uref *list)
{
    while (list) {
        cu_uref *next = list->next;
        cusim_uobj_release(list->obj, list->count);
        free(list);
        list = next;
    }
}

static void uobj_retain(cu_uobj *o, unsigned count)
{
    pthread_mutex_lock(&g_uobj_mu);
    o->refs += count;
    pthread_mutex_unlock(&g_uobj_mu);
}

CUresult cusim_urefs_copy(const cu_uref *from, cu_uref **to)
{
    for (; from; from = from->next) {
        cu_uref *r = malloc(sizeof *r);
        if (!r)
            return CUDA_ERROR_OUT_OF_MEMORY; /* what was copied is the caller's to release */
        r->obj = from->obj;
        r->count = from->count;
        r->next = *to;
        *to = r;
        uobj_retain(r->obj, r->count);
    }
    return CUDA_SUCCESS;
}

static cu_uobj *uobj_get(CUuserObject h) { return arsim_handle_get((uint64_t)(uintptr_t)h, HK_USER_OBJECT); }

CUresult cuUserObjectCreate(CUuserObject *object_out, void *ptr, CUhostFn destroy,
                            unsigned int initialRefcount, unsigned int flags)
{
    CUSIM_TRY(cusim_check_init());
    if (!object_out || !destroy || initialRefcount == 0 ||
        flags != CU_USER_OBJECT_NO_DESTRUCTOR_SYNC)
        return CUDA_ERROR_INVALID_VALUE;
    cu_uobj *o = calloc(1, sizeof *o);
    if (!o)
        return CUDA_ERROR_OUT_OF_MEMORY;
    o->ptr = ptr;
    o->destroy = destroy;
    o->refs = initialRefcount;
    o->handle = arsim_handle_new(HK_USER_OBJECT, o);
    if (!o->handle) {
        free(o);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *object_out = (CUuserObject)(uintptr_t)o->handle;
    return CUDA_SUCCESS;
}

CUresult cuUserObjectRetain(CUuserObject object, unsigned int count)
{
    CUSIM_TRY(cusim_check_init());
    if (count == 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_uobj_mu);
    cu_uobj *o = uobj_get(object);
    if (o)
        o->refs += count;
    pthread_mutex_unlock(&g_uobj_mu);
    return o ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuUserObjectRelease(CUuserObject object, unsigned int count)
{
    CUSIM_TRY(cusim_check_init());
    if (count == 0)
        return CUDA_ERROR_INVALID_VALUE;
    cu_uobj *o = uobj_get(object);
    if (!o)
        return CUDA_ERROR_INVALID_HANDLE;
    cusim_uobj_release(o, count);
    cusim_uobj_flush();
    return CUDA_SUCCESS;
}

static cu_uref *uref_find(cu_graph *g, const cu_uobj *o)
{
    for (cu_uref *r = g->urefs; r; r = r->next)
        if (r->obj == o)
            return r;
    return NULL;
}

CUresult cuGraphRetainUserObject(CUgraph graph, CUuserObject object, unsigned int count,
                                 unsigned int flags)
{
    CUSIM_TRY(cusim_check_init());
    if (count == 0 || (flags & ~(unsigned)CU_GRAPH_USER_OBJECT_MOVE))
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_capture_mu);
    cu_graph *g = arsim_handle_get((uint64_t)(uintptr_t)graph, HK_GRAPH);
    cu_uobj *o = uobj_get(object);
    cu_uref *r = g && o ? uref_find(g, o) : NULL;
    if (g && o && !r && (r = calloc(1, sizeof *r))) {
        r->obj = o;
        r->next = g->urefs;
        g->urefs = r;
    }
    if (r) {
        r->count += count;
        if (!(flags & CU_GRAPH_USER_OBJECT_MOVE))
            uobj_retain(o, count); /* MOVE: the caller's references become the graph's */
    }
    pthread_mutex_unlock(&g_capture_mu);
    return !g || !o ? CUDA_ERROR_INVALID_HANDLE : r ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuGraphReleaseUserObject(CUgraph graph, CUuserObject object, unsigned int count)
{
    CUSIM_TRY(cusim_check_init());
    if (count == 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_capture_mu);
    cu_graph *g = arsim_handle_get((uint64_t)(uintptr_t)graph, HK_GRAPH);
    cu_uobj *o = uobj_get(object);
    cu_uref *r = g && o ? uref_find(g, o) : NULL;
    CUresult r_ = !g || !o ? CUDA_ERROR_INVALID_HANDLE
                  : !r || r->count < count ? CUDA_ERROR_INVALID_VALUE
                                           : CUDA_SUCCESS;
    if (r_ == CUDA_SUCCESS) {
        r->count -= count;
        if (r->count == 0) {
            for (cu_uref **l = &g->urefs; *l; l = &(*l)->next) {
                if (*l == r) {
                    *l = r->next;
                    break;
                }
            }
            free(r);
        }
        cusim_uobj_release(o, count);
    }
    pthread_mutex_unlock(&g_capture_mu);
    cusim_uobj_flush();
    return r_;
}

/* ------------------------------------------------------------- conditionals */

/* The handles made, with their default values: a handle is the graph's
 * handle and a count, so it never repeats. */
typedef struct cond_entry {
    CUgraphConditionalHandle handle;
    unsigned value;
    struct cond_entry *next;
} cond_entry;
static cond_entry *g_conds; /* guarded by g_capture_mu */

CUresult cuGraphConditionalHandleCreate(CUgraphConditionalHandle *pHandle_out, CUgraph hGraph,
                                        CUcontext ctx, unsigned int defaultLaunchValue,
                                        unsigned int flags)
{
    CUSIM_TRY(cusim_check_init());
    if (!pHandle_out || (flags & ~(unsigned)CU_GRAPH_COND_ASSIGN_DEFAULT) ||
        (ctx && !cusim_ctx_from_handle(ctx)))
        return CUDA_ERROR_INVALID_VALUE;
    cond_entry *e = malloc(sizeof *e);
    if (!e)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&g_capture_mu);
    cu_graph *g = arsim_handle_get((uint64_t)(uintptr_t)hGraph, HK_GRAPH);
    if (g) {
        /* With or without CU_GRAPH_COND_ASSIGN_DEFAULT the value at every
         * launch is the default: the initial value, which nothing here can
         * change. */
        e->handle = ((g->root ? g->root : g->handle) << 16) | ++g->next_cond;
        e->value = defaultLaunchValue;
        e->next = g_conds;
        g_conds = e;
        *pHandle_out = e->handle;
    }
    pthread_mutex_unlock(&g_capture_mu);
    if (!g)
        free(e);
    return g ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

long long cusim_cond_value(CUgraphConditionalHandle h)
{
    for (cond_entry *e = g_conds; e; e = e->next)
        if (e->handle == h)
            return e->value;
    return -1;
}

/* ------------------------------------------------------------- launch */

/* What a launch in flight holds, let go when the stream reaches its end. */
