/* cuda-sim: streams, events, stream capture, graphs, modules and launches. */
#define _GNU_SOURCE
#include <elf.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cusim.h"
#include "../../sim/ptx/ptx.h"

/* ------------------------------------------------------------- streams */

CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
{
    cu_ctx *c;
    CUSIM_TRY(cusim_current_ctx(&c));
    if (!phStream || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
        return CUDA_ERROR_INVALID_VALUE;
    /* Out-of-range priorities are clamped, as the driver does. */
    if (priority > 0)
        priority = 0;
    if (priority < -5)
        priority = -5;
    cu_stream *s;
    CUresult r = cusim_stream_new(c, flags, priority, 0, &s);
    if (r == CUDA_SUCCESS)
        *phStream = (CUstream)(uintptr_t)s->handle;
    return r;
}

CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
    return cuStreamCreateWithPriority(phStream, Flags, 0);
}

CUresult cuStreamDestroy_v2(CUstream hStream)
{
    CUSIM_TRY(cusim_check_init());
    uintptr_t v = (uintptr_t)hStream;
    if (v == 0 || v == (uintptr_t)CU_STREAM_LEGACY || v == (uintptr_t)CU_STREAM_PER_THREAD)
        return CUDA_ERROR_INVALID_HANDLE;
    cu_stream *s = arsim_handle_remove((uint64_t)v, HK_STREAM);
    if (!s)
        return CUDA_ERROR_INVALID_HANDLE;
    int device = s->ctx->device;
    cusim_stream_free(s);
    return cusim_status(arsim_device_sticky(device));
}

static CUresult capture_guard(cu_stream *s)
{
    pthread_mutex_lock(&g_capture_mu);
    CUresult r = CUDA_SUCCESS;
    if (s->cap) {
        /* A synchronizing call on a capturing stream breaks the capture. */
        cusim_capture_invalidate(s->cap);
        r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    pthread_mutex_unlock(&g_capture_mu);
    return r;
}

CUresult cuStreamSynchronize(CUstream hStream)
{
    cu_stream *s;
    CUSIM_TRY(cusim_resolve_stream(hStream, &s));
    CUSIM_TRY(capture_guard(s));
    if (s->is_legacy) {
        /* The legacy stream's sync also covers the blocking streams it
         * waits on: enqueue a marker with the legacy ordering and wait for it. */
        uint64_t seq;
        CUSIM_TRY(cusim_submit(s, arsim_op_marker(), &seq));
    }
    CUresult r = cusim_status(arsim_queue_synchronize(s->q, ARSIM_WAIT_BLOCK));
    cusim_printf_flush(s->ctx->handle);
    return r;
}

CUresult cuStreamQuery(CUstream hStream)
{
    cu_stream *s;
    CUSIM_TRY(cusim_resolve_stream(hStream, &s));
    /* An unlocked peek: the query itself stays lock-free. */
    if (__atomic_load_n(&s->cap, __ATOMIC_ACQUIRE))
        return capture_guard(s);
    return arsim_queue_query(s->q) == ARSIM_OK ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult cuStreamGetPriority(CUstream hStream, int *priority)
{
    cu_stream *s;
    CUSIM_TRY(cusim_stream_out(hStream, priority, &s));
    *priority = s->priority;
    return CUDA_SUCCESS;
}

CUresult cuStreamGetFlags(CUstream hStream, unsigned int *flags)
{
    cu_stream *s;
    CUSIM_TRY(cusim_stream_out(hStream, flags, &s));
    *flags = s->flags;
    return CUDA_SUCCESS;
}

CUresult cuStreamGetCtx(CUstream hStream, CUcontext *pctx)
{
    cu_stream *s;
    CUSIM_TRY(cusim_stream_out(hStream, pctx, &s));
    *pctx = (CUcontext)(uintptr_t)s->ctx->handle;
    return CUDA_SUCCESS;
}

CUresult cuStreamGetId(CUstream hStream, unsigned long long *streamId)
{
    cu_stream *s;
    CUSIM_TRY(cusim_stream_out(hStream, streamId, &s));
    *streamId = s->is_legacy ? 0 : s->handle;
    return CUDA_SUCCESS;
}

CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData)
{
    cu_stream *s;
    CUSIM_TRY(cusim_resolve_stream(hStream, &s));
    if (!fn)
        return CUDA_ERROR_INVALID_VALUE;
    return cusim_submit(s, arsim_op_host_fn(fn, userData), NULL);
}

/* ------------------------------------------------------------- events */

static cu_event *event_get(CUevent h) { return arsim_handle_get((uint64_t)(uintptr_t)h, HK_EVENT); }

/* The stream, the event and the flags of a record or a wait, in that order. */
static CUresult stream_event_args(CUstream hs, CUevent he, unsigned flags, cu_stream **s,
                                  cu_event **e)
{
    CUSIM_TRY(cusim_resolve_stream(hs, s));
    *e = event_get(he);
    if (!*e)
        return CUDA_ERROR_INVALID_HANDLE;
    return flags & ~1u ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
    cu_ctx *c;
    CUSIM_TRY(cusim_current_ctx(&c));
    if (!phEvent || (Flags & ~(unsigned)(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING |
                                          CU_EVENT_INTERPROCESS)))
        return CUDA_ERROR_INVALID_VALUE;
    if ((Flags & CU_EVENT_INTERPROCESS) && !(Flags & CU_EVENT_DISABLE_TIMING))
        return CUDA_ERROR_INVALID_VALUE;
    cu_event *e = calloc(1, sizeof *e);
    if (!e)
        return CUDA_ERROR_OUT_OF_MEMORY;
    e->flags = Flags;
    arsim_status st =
        arsim_event_create(Flags & CU_EVENT_DISABLE_TIMING ? 0 : ARSIM_EVENT_TIMING, &e->ev);
    if (st != ARSIM_OK) {
        free(e);
        return cusim_status(st);
    }
    e->handle = arsim_handle_new(HK_EVENT, e);
    if (!e->handle) {
        arsim_event_release(e->ev);
        free(e);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *phEvent = (CUevent)(uintptr_t)e->handle;
    return CUDA_SUCCESS;
}

CUresult cuEventDestroy_v2(CUevent hEvent)
{
    CUSIM_TRY(cusim_check_init());
    cu_event *e = arsim_handle_remove((uint64_t)(uintptr_t)hEvent, HK_EVENT);
    if (!e)
        return CUDA_ERROR_INVALID_HANDLE;
    arsim_event_release(e->ev); /* pending records hold their own reference */
    free(e);
    return CUDA_SUCCESS;
}

CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags)
{
    cu_stream *s;
    cu_event *e;
    CUSIM_TRY(stream_event_args(hStream, hEvent, flags, &s, &e));
    pthread_mutex_lock(&g_capture_mu);
    cu_capture *cap = s->cap;
    if (cap) {
        /* Inside a capture a record only marks a point other streams can
         * join at; it is not a node of the graph. */
        e->captured = cap->invalidated ? 0 : cap->handle;
        pthread_mutex_unlock(&g_capture_mu);
        return cap->invalidated ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED : CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&g_capture_mu);
    CUresult r = cusim_submit(s, arsim_op_event_record(e->ev), NULL);
    if (r == CUDA_SUCCESS) {
        e->recorded = 1;
        e->captured = 0;
    }
    return r;
}

CUresult cuEventRecord(CUevent hEvent, CUstream hStream)
{
    return cuEventRecordWithFlags(hEvent, hStream, 0);
}

static CUresult event_captured_check(cu_event *e)
{
    if (!e->captured)
        return CUDA_SUCCESS;
    pthread_mutex_lock(&g_capture_mu);
    int live = arsim_handle_get(e->captured, HK_CAPTURE) != NULL;
    pthread_mutex_unlock(&g_capture_mu);
    return live ? CUDA_ERROR_CAPTURED_EVENT : CUDA_SUCCESS;
}

CUresult cuEventQuery(CUevent hEvent)
{
    CUSIM_GET(e, cu_event, hEvent, HK_EVENT);
    CUSIM_TRY(event_captured_check(e));
    return cusim_status(arsim_event_query(e->ev)); /* lock-free */
}

CUresult cuEventSynchronize(CUevent hEvent)
{
    CUSIM_GET(e, cu_event, hEvent, HK_EVENT);
    CUSIM_TRY(event_captured_check(e));
    /* CU_EVENT_BLOCKING_SYNC: sleep on a condition variable; otherwise spin. */
    arsim_wait_mode mode = e->flags & CU_EVENT_BLOCKING_SYNC ? ARSIM_WAIT_BLOCK : ARSIM_WAIT_SPIN;
    CUresult r = cusim_status(arsim_event_wait(e->ev, mode, -1));
    /* A printf flush point.  An event does not know its context: every
     * context's held records are written (none held: one atomic load). */
    cusim_printf_flush(0);
    return r;
}

CUresult cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    CUSIM_TRY(cusim_check_init());
    if (!pMilliseconds)
        return CUDA_ERROR_INVALID_VALUE;
    cu_event *a = event_get(hStart), *b = event_get(hEnd);
    if (!a || !b)
        return CUDA_ERROR_INVALID_HANDLE;
    if ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!a->recorded || !b->recorded)
        return CUDA_ERROR_INVALID_HANDLE;
    uint64_t ta, tb;
    arsim_status sa = arsim_event_timestamp(a->ev, &ta);
    arsim_status sb = arsim_event_timestamp(b->ev, &tb);
    if (sa != ARSIM_OK || sb != ARSIM_OK)
        return CUDA_ERROR_NOT_READY;
    *pMilliseconds = (float)(((double)tb - (double)ta) / 1e6);
    return CUDA_SUCCESS;
}

CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    return cuEventElapsedTime_v2(pMilliseconds, hStart, hEnd);
}

/* ------------------------------------------------------------- capture */

static _Atomic unsigned long long g_capture_ids;


static void capture_join(cu_capture *cap, cu_stream *s)
{
    if (s->cap == cap || cap->nmembers >= CUSIM_MAX_CAPTURE_STREAMS)
        return;
    if (!(s->flags & CU_STREAM_NON_BLOCKING))
        __atomic_fetch_add(&s->ctx->capturing_blocking, 1, __ATOMIC_RELEASE);
    cap->members[cap->nmembers++] = s;
    __atomic_store_n(&s->cap, cap, __ATOMIC_RELEASE);
}

CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
    cu_stream *s;
    cu_event *e;
    CUSIM_TRY(stream_event_args(hStream, hEvent, Flags, &s, &e));
    pthread_mutex_lock(&g_capture_mu);
    cu_capture *ecap = e->captured ? arsim_handle_get(e->captured, HK_CAPTURE) : NULL;
    if (ecap) {
        /* Waiting on a point of a capture pulls this stream into it; the
         * graph is a linear order, so the dependency is already satisfied. */
        CUresult r = CUDA_SUCCESS;
        if (ecap->invalidated)
            r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
        else if (s->cap && s->cap != ecap)
            r = CUDA_ERROR_STREAM_CAPTURE_MERGE;
        else if (s->is_legacy)
            r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
        else
            capture_join(ecap, s);
        pthread_mutex_unlock(&g_capture_mu);
        return r;
    }
    if (s->cap) {
        /* A capture may not depend on work outside it. */
        cusim_capture_invalidate(s->cap);
        pthread_mutex_unlock(&g_capture_mu);
        return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
    }
    pthread_mutex_unlock(&g_capture_mu);
    return cusim_submit(s, arsim_op_event_wait(e->ev), NULL);
}

/* Begins a capture into g (a new graph when g is NULL) after deps. */
static CUresult begin_capture(cu_stream *s, CUstreamCaptureMode mode, cu_graph *into,
                              cu_gnode *const *deps, size_t ndeps)
{
    if (mode > CU_STREAM_CAPTURE_MODE_RELAXED) /* unsigned, as in cuda.h: no negatives */
        return CUDA_ERROR_INVALID_VALUE;
    if (s->is_legacy)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; /* the NULL stream cannot capture */
    cu_capture *cap = calloc(1, sizeof *cap);
    if (!cap)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (s->cap || (into && into->capturing)) {
        free(cap);
        return CUDA_ERROR_ILLEGAL_STATE;
    }
    cu_graph *g = into ? into : cusim_graph_new();
    CUresult r = g ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    for (size_t i = 0; r == CUDA_SUCCESS && i < ndeps; i++) {
        if (!deps[i] || deps[i]->graph != g)
            r = CUDA_ERROR_INVALID_VALUE;
        else if (cap->ndeps == cap->depcap) {
            cu_gnode **l = realloc(cap->deps, (ndeps ? ndeps : 1) * sizeof *l);
            r = l ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
            cap->deps = l ? l : cap->deps;
            cap->depcap = l ? ndeps : cap->depcap;
        }
        if (r == CUDA_SUCCESS)
            cap->deps[cap->ndeps++] = deps[i];
    }
    if (r != CUDA_SUCCESS) {
        if (g && !into)
            cusim_graph_free(g);
        free(cap->deps);
        free(cap);
        return r;
    }
    g->capturing = cap;
    cap->handle = arsim_handle_new(HK_CAPTURE, cap);
    cap->graph_handle = g->handle;
    cap->to_graph = into != NULL;
    cap->origin = s;
    cap->mode = mode;
    cap->id = atomic_fetch_add(&g_capture_ids, 1) + 1;
    capture_join(cap, s);
    return CUDA_SUCCESS;
}

static void note_unsafe_capture(cu_stream *s, CUstreamCaptureMode mode, int delta)
{
    if (mode == CU_STREAM_CAPTURE_MODE_RELAXED)
        return;
    pthread_mutex_lock(&s->ctx->mu);
    s->ctx->unsafe_captures += delta;
    pthread_mutex_unlock(&s->ctx->mu);
}

CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode)
{
    cu_stream *s;
    CUSIM_TRY(cusim_resolve_stream(hStream, &s));
    pthread_mutex_lock(&g_capture_mu);
    CUresult r = begin_capture(s, mode, NULL, NULL, 0);
    pthread_mutex_unlock(&g_capture_mu);
    if (r == CUDA_SUCCESS)
        note_unsafe_capture(s, mode, 1);
    return r;
}

CUresult cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph,
                                     const CUgraphNode *dependencies,
                                     const CUgraphEdgeData *dependencyData,
                                     size_t numDependencies, CUstreamCaptureMode mode)
{
    cu_stream *s;
    CUSIM_TRY(cusim_resolve_stream(hStream, &s));
    if (numDependencies && !dependencies)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; dependencyData && i < numDependencies; i++)
        if (dependencyData[i].type || dependencyData[i].from_port || dependencyData[i].to_port)
            return CUDA_ERROR_NOT_SUPPORTED; /* programmatic edges: not modelled */
    cu_gnode **deps = numDependencies ? malloc(numDependencies * sizeof *deps) : NULL;
    if (numDependencies && !deps)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&g_capture_mu);
    cu_graph *g = arsim_handle_get((uint64_t)(uintptr_t)hGraph, HK_GRAPH);
    for (size_t i = 0; i < numDependencies; i++)
        deps[i] = arsim_handle_get((uint64_t)(uintptr_t)dependencies[i], HK_GRAPH_NODE);
    CUresult r = g ? begin_capture(s, mode, g, deps, numDependencies) : CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&g_capture_mu);
    free(deps);
    if (r == CUDA_SUCCESS)
        note_unsafe_capture(s, mode, 1);
    return r;
}

CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
    cu_stream *s;
    CUSIM_TRY(cusim_stream_out(hStream, phGraph, &s));
    pthread_mutex_lock(&g_capture_mu);
    cu_capture *cap = s->cap;
    if (!cap) {
        pthread_mutex_unlock(&g_capture_mu);
        return CUDA_ERROR_ILLEGAL_STATE;
    }
    if (cap->origin != s) {
        cusim_capture_invalidate(cap);
        pthread_mutex_unlock(&g_capture_mu);
        return CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
    }
    while (cap->nmembers > 0)
        cusim_capture_detach(cap->members[cap->nmembers - 1]);
    arsim_handle_remove(cap->handle, HK_CAPTURE);
    cu_graph *g = cusim_capture_graph(cap);
    if (g)
        g->capturing = NULL;
    int invalidated = cap->invalidated;
    if (invalidated && g && !cap->to_graph) {
        cusim_graph_free(g);
        g = NULL;
    }
    pthread_mutex_unlock(&g_capture_mu);
    cusim_uobj_flush();
    note_unsafe_capture(s, cap->mode, -1);
    free(cap->deps);
    free(cap->dep_out);
    free(cap);
    if (invalidated) {
        *phGraph = NULL;
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    }
    *phGraph = g ? (CUgraph)(uintptr_t)g->handle : NULL;
    return g ? CUDA_SUCCESS : CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
}

static CUresult capture_info(CUstream hStream, CUstreamCaptureStatus *status, cuuint64_t *id,
                             CUgraph *graph, const CUgraphNode **deps, size_t *ndeps)
{
    uintptr_t v = (uintptr_t)hStream;
    cu_stream *s;
    CUSIM_TRY(cusim_stream_out(hStream, status, &s));
    if ((v == 0 || v == (uintptr_t)CU_STREAM_LEGACY) &&
        __atomic_load_n(&s->ctx->capturing_blocking, __ATOMIC_ACQUIRE))
        return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    pthread_mutex_lock(&g_capture_mu);
    cu_capture *cap = s->cap;
    *status = !cap ? CU_STREAM_CAPTURE_STATUS_NONE
              : cap->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                 : CU_STREAM_CAPTURE_STATUS_ACTIVE;
    if (id)
        *id = cap ? cap->id : 0;
    if (graph)
        *graph = cap ? (CUgraph)(uintptr_t)cap->graph_handle : NULL;
    CUresult r = CUDA_SUCCESS;
    if (cap && cap->ndeps > cap->dep_out_cap) {
        CUgraphNode *l = realloc(cap->dep_out, cap->ndeps * sizeof *l);
        r = l ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
        if (l) {
            cap->dep_out = l;
            cap->dep_out_cap = cap->ndeps;
        }
    }
    size_t n = cap && r == CUDA_SUCCESS ? cap->ndeps : 0;
    for (size_t i = 0; i < n; i++)
        cap->dep_out[i] = (CUgraphNode)(uintptr_t)cap->deps[i]->handle;
    /* Valid until the next call that changes the capture, as in CUDA. */
    if (deps)
        *deps = n ? cap->dep_out : NULL;
    if (ndeps)
        *ndeps = n;
    pthread_mutex_unlock(&g_capture_mu);
    return r;
}

CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
    return capture_info(hStream, captureStatus, NULL, NULL, NULL, NULL);
}

CUresult cuStreamGetCaptureInfo_v2(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                   cuuint64_t *id_out, CUgraph *graph_out,
                                   const CUgraphNode **dependencies_out,
                                   size_t *numDependencies_out)
{
    return capture_info(hStream, captureStatus_out, id_out, graph_out, dependencies_out,
                        numDependencies_out);
}

CUresult cuStreamGetCaptureInfo_v3(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                   cuuint64_t *id_out, CUgraph *graph_out,
                                   const CUgraphNode **dependencies_out,
                                   const CUgraphEdgeData **edgeData_out,
                                   size_t *numDependencies_out)
{
    if (edgeData_out)
        *edgeData_out = NULL;
    return capture_info(hStream, captureStatus_out, id_out, graph_out, dependencies_out,
                        numDependencies_out);
}

static CUresult update_deps(CUstream hStream, CUgraphNode *dependencies,
                            const CUgraphEdgeData *edgeData, size_t n, unsigned int flags)
{
    cu_stream *s;
    CUSIM_TRY(cusim_resolve_stream(hStream, &s));
    if (flags > CU_STREAM_SET_CAPTURE_DEPENDENCIES || (n && !dependencies))
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; edgeData && i < n; i++)
        if (edgeData[i].type || edgeData[i].from_port || edgeData[i].to_port)
            return CUDA_ERROR_NOT_SUPPORTED; /* programmatic edges: not modelled */
    pthread_mutex_lock(&g_capture_mu);
    cu_capture *cap = s->cap;
    cu_graph *g = cap ? cusim_capture_graph(cap) : NULL;
    CUresult r = !cap ? CUDA_ERROR_ILLEGAL_STATE
                 : cap->invalidated ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
                                    : CUDA_SUCCESS;
    for (size_t i = 0; r == CUDA_SUCCESS && i < n; i++) {
        cu_gnode *d = arsim_handle_get((uint64_t)(uintptr_t)dependencies[i], HK_GRAPH_NODE);
        if (!d || d->graph != g)
            r = CUDA_ERROR_INVALID_VALUE;
    }
    size_t want = (flags == CU_STREAM_SET_CAPTURE_DEPENDENCIES ? 0 : cap ? cap->ndeps : 0) + n;
    if (r == CUDA_SUCCESS && want > cap->depcap) {
        cu_gnode **l = realloc(cap->deps, want * sizeof *l);
        r = l ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
        if (l) {
            cap->deps = l;
            cap->depcap = want;
        }
    }
    if (r == CUDA_SUCCESS) {
        if (flags == CU_STREAM_SET_CAPTURE_DEPENDENCIES)
            cap->ndeps = 0;
        for (size_t i = 0; i < n; i++) {
            cu_gnode *d = arsim_handle_get((uint64_t)(uintptr_t)dependencies[i], HK_GRAPH_NODE);
            int seen = 0;
            for (size_t k = 0; k < cap->ndeps; k++)
                seen |= cap->deps[k] == d;
            if (!seen)
                cap->deps[cap->ndeps++] = d;
        }
    }
    pthread_mutex_unlock(&g_capture_mu);
    return r;
}

CUresult cuStreamUpdateCaptureDependencies(CUstream hStream, CUgraphNode *dependencies,
                                           size_t numDependencies, unsigned int flags)
{
    return update_deps(hStream, dependencies, NULL, numDependencies, flags);
}

CUresult cuStreamUpdateCaptureDependencies_v2(CUstream hStream, CUgraphNode *dependencies,
                                              const CUgraphEdgeData *dependencyData,
                                              size_t numDependencies, unsigned int flags)
{
    return update_deps(hStream, dependencies, dependencyData, numDependencies, flags);
}

CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
    CUSIM_TRY(cusim_check_init());
    static __thread CUstreamCaptureMode current = CU_STREAM_CAPTURE_MODE_GLOBAL;
    if (!mode || *mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    CUstreamCaptureMode old = current;
    current = *mode;
    *mode = old;
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------- modules */

/* The byte length of an ELF image in memory (cuModuleLoadData gets no size):
 * the furthest of its section header table and its segments' file extents. */
static size_t elf_image_size(const void *image)
{
    const Elf64_Ehdr *eh = image;
    if (eh->e_ident[EI_CLASS] != ELFCLASS64)
        return 0;
    size_t size = (size_t)eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
    const char *base = image;
    for (int i = 0; i < eh->e_phnum; i++) {
        const Elf64_Phdr *ph = (const Elf64_Phdr *)(base + eh->e_phoff + (size_t)i * eh->e_phentsize);
        size_t end = (size_t)ph->p_offset + (size_t)ph->p_filesz;
        if (end > size)
            size = end;
    }
    return size;
}

static CUresult module_wrap(arsim_module *m, CUmodule *out)
{
    cu_module *cm = calloc(1, sizeof *cm);
    if (!cm) {
        arsim_module_unload(m);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    cm->m = m;
    pthread_mutex_init(&cm->mu, NULL);
    cm->handle = arsim_handle_new(HK_MODULE, cm);
    *out = (CUmodule)(uintptr_t)cm->handle;
    return CUDA_SUCCESS;
}

/* cuda.h codes this file returns that cuda_types.h does not list. */
enum { CUSIM_UNSUPPORTED_PTX_VERSION = 222, CUSIM_FILE_NOT_FOUND = 301 };

/* Where a load's error message goes: the caller's CU_JIT_ERROR_LOG_BUFFER,
 * or nowhere. */
typedef struct jit_log {
    char *buf;
    size_t size;
} jit_log;

static CUresult load_ptx(const char *text, jit_log *log, arsim_module **out)
{
    char scratch[512];
    char *buf = log && log->buf && log->size ? log->buf : scratch;
    size_t size = log && log->buf && log->size ? log->size : sizeof scratch;
    switch (ptx_module_load(text, out, buf, size)) {
    case PTX_OK: return CUDA_SUCCESS;
    case PTX_ERR_VERSION: return CUSIM_UNSUPPORTED_PTX_VERSION;
    case PTX_ERR_OUT_OF_MEMORY: return CUDA_ERROR_OUT_OF_MEMORY;
    default: return CUDA_ERROR_INVALID_PTX;
    }
}

/* A fatbin runs as a driver runs one with no machine code for its GPU: the
 * newest PTX entry the device can run is compiled (here: interpreted).
 * One with no such entry is CUDA_ERROR_NO_BINARY_FOR_GPU, saying why. */
static CUresult load_fatbin(cu_ctx *c, const void *image, jit_log *log, arsim_module **out)
{
    /* A fatbin's header says its size; an image pointer says none, so the
     * header is trusted as the driver trusts it. */
    size_t size = cusim_fatbin_size(image, SIZE_MAX);
    if (size == 0)
        return CUDA_ERROR_INVALID_IMAGE;
    int major = 0, minor = 0;
    cuDeviceGetAttribute(&major, 75, c->device); /* COMPUTE_CAPABILITY_MAJOR */
    cuDeviceGetAttribute(&minor, 76, c->device);
    char why[256], *ptx = NULL;
    CUresult r = cusim_fatbin_ptx(image, size, major * 10 + minor, &ptx, why, sizeof why);
    if (r != CUDA_SUCCESS) {
        if (log && log->buf && log->size)
            snprintf(log->buf, log->size, "fatbin refused: %s", why);
        return r;
    }
    r = load_ptx(ptx, log, out);
    free(ptx);
    return r;
}

/* Images: a host shared object (x86-64 ELF) runs as is; PTX text, and the
 * PTX of a fatbin, run on the executor (ptx_exec.c); a cubin (ELF for
 * EM_CUDA) holds no code the sim can run, so CUDA_ERROR_NO_BINARY_FOR_GPU. */
static CUresult module_load_image(CUmodule *module, const void *image, jit_log *log)
{
    cu_ctx *c;
    CUSIM_TRY(cusim_current_ctx(&c));
    if (!module || !image)
        return CUDA_ERROR_INVALID_VALUE;
    cusim_printf_flush(c->handle); /* a module load is a printf flush point */
    const unsigned char *b = image;
    arsim_module *m;
    if (memcmp(b, ELFMAG, SELFMAG) == 0) {
        const Elf64_Ehdr *eh = image;
        if (eh->e_machine != EM_X86_64 && eh->e_machine != EM_AARCH64) {
            if (log && log->buf && log->size)
                snprintf(log->buf, log->size, "cuda-sim runs PTX and host shared objects; "
                                              "a cubin (machine code for a GPU) cannot run here");
            return CUDA_ERROR_NO_BINARY_FOR_GPU;
        }
        size_t size = elf_image_size(image);
        if (size == 0)
            return CUDA_ERROR_INVALID_IMAGE;
        arsim_status st = arsim_module_load(image, size, &m);
        if (st != ARSIM_OK)
            return cusim_status(st);
    } else if (b[0] == 0x50 && b[1] == 0xed && b[2] == 0x55 && b[3] == 0xba) {
        CUSIM_TRY(load_fatbin(c, image, log, &m));
    } else if (cusim_link_image_ptx(image)) {
        CUSIM_TRY(load_ptx(cusim_link_image_ptx(image), log, &m)); /* cusim_link.c's output */
    } else if (ptx_looks_like(image)) {
        CUSIM_TRY(load_ptx(image, log, &m));
    } else {
        return CUDA_ERROR_INVALID_IMAGE;
    }
    return module_wrap(m, module);
}

CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
    return module_load_image(module, image, NULL);
}

/* The JIT options the loader reads: the error log (5, 6) and the info log
 * (3, 4); each size is passed by value in the pointer, as cuda.h documents,
 * and comes back as the bytes written.  Other options tune code
 * generation, which an interpreter does not do. */
enum { JIT_INFO_LOG = 3, JIT_INFO_LOG_SIZE = 4, JIT_ERROR_LOG = 5, JIT_ERROR_LOG_SIZE = 6 };

static void jit_logs(unsigned n, const CUjit_option *options, void **values, jit_log *err,
                     jit_log *info)
{
    for (unsigned i = 0; i < n; i++) {
        if (options[i] == JIT_ERROR_LOG)
            err->buf = values[i];
        else if (options[i] == JIT_ERROR_LOG_SIZE)
            err->size = (size_t)(uintptr_t)values[i];
        else if (options[i] == JIT_INFO_LOG)
            info->buf = values[i];
        else if (options[i] == JIT_INFO_LOG_SIZE)
            info->size = (size_t)(uintptr_t)values[i];
    }
    if (err->buf && err->size)
        err->buf[0] = 0;
    if (info->buf && info->size)
        info->buf[0] = 0; /* no ptxas here: the info log stays empty */
}

CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
                            CUjit_option *options, void **optionValues)
{
    jit_log log = {NULL, 0}, info = {NULL, 0};
    if (numOptions && (!options || !optionValues))
        return CUDA_ERROR_INVALID_VALUE;
    jit_logs(numOptions, options, optionValues, &log, &info);
    CUresult r = module_load_image(module, image, &log);
    for (unsigned i = 0; i < numOptions; i++) {
        if (options[i] == JIT_ERROR_LOG_SIZE)
            optionValues[i] = (void *)(uintptr_t)(log.buf ? strnlen(log.buf, log.size) : 0);
        else if (options[i] == JIT_INFO_LOG_SIZE)
            optionValues[i] = (void *)(uintptr_t)0;
    }
    return r;
}

CUresult cuModuleLoad(CUmodule *module, const char *fname)
{
    cu_ctx *c;
    CUSIM_TRY(cusim_current_ctx(&c));
    if (!module || !fname)
        return CUDA_ERROR_INVALID_VALUE;
    FILE *fp = fopen(fname, "rb");
    if (!fp)
        return CUSIM_FILE_NOT_FOUND;
    char head[4] = {0};
    size_t got = fread(head, 1, sizeof head, fp);
    if (got == 4 && memcmp(head, ELFMAG, SELFMAG) == 0) {
        fclose(fp);
        arsim_module *m;
        if (arsim_module_load_file(fname, &m) != ARSIM_OK)
            return CUDA_ERROR_INVALID_IMAGE;
        return module_wrap(m, module);
    }
    /* PTX (or a fatbin): read it whole and load it like an image. */
    if (fseek(fp, 0, SEEK_END) != 0) {
        fclose(fp);
        return CUDA_ERROR_INVALID_IMAGE;
    }
    long len = ftell(fp);
    rewind(fp);
    char *text = len >= 0 ? malloc((size_t)len + 1) : NULL;
    if (!text) {
        fclose(fp);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    size_t n = fread(text, 1, (size_t)len, fp);
    fclose(fp);
    text[n] = 0;
    CUresult r = module_load_image(module, text, NULL);
    free(text);
    return r;
}

CUresult cuModuleUnload(CUmodule hmod)
{
    CUSIM_TRY(cusim_check_init());
    cu_module *cm = arsim_handle_remove((uint64_t)(uintptr_t)hmod, HK_MODULE);
    if (!cm)
        return CUDA_ERROR_INVALID_HANDLE;
    cusim_printf_flush(0); /* a module unload is a printf flush point */
    for (cu_function *f = cm->funcs; f;) {
        cu_function *next = f->next;
        arsim_handle_remove(f->handle, HK_FUNCTION);
        free(f);
        f = next;
    }
    arsim_module_unload(cm->m); /* pending launches keep the code loaded */
    pthread_mutex_destroy(&cm->mu);
    free(cm);
    return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    CUSIM_TRY(cusim_check_init());
    if (!hfunc || !name)
        return CUDA_ERROR_INVALID_VALUE;
    cu_module *cm = arsim_handle_get((uint64_t)(uintptr_t)hmod, HK_MODULE);
    if (!cm)
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&cm->mu);
    for (cu_function *f = cm->funcs; f; f = f->next) {
        if (strcmp(f->k->name, name) == 0) {
            *hfunc = (CUfunction)(uintptr_t)f->handle;
            pthread_mutex_unlock(&cm->mu);
            return CUDA_SUCCESS;
        }
    }
    const arsim_kernel *k;
    if (arsim_module_get_kernel(cm->m, name, &k) != ARSIM_OK) {
        pthread_mutex_unlock(&cm->mu);
        return CUDA_ERROR_NOT_FOUND;
    }
    cu_function *f = calloc(1, sizeof *f);
    if (!f) {
        pthread_mutex_unlock(&cm->mu);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    f->k = k;
    f->mod = cm;
    ptx_kernel_attributes(k, &f->attrs);
    f->handle = arsim_handle_new(HK_FUNCTION, f);
    f->next = cm->funcs;
    cm->funcs = f;
    *hfunc = (CUfunction)(uintptr_t)f->handle;
    pthread_mutex_unlock(&cm->mu);
    return CUDA_SUCCESS;
}

/* The offset of each parameter is the one nvcc gives it: the next offset
 * aligned to its size (up to 8), the layout params_from_extra reads. */
static size_t param_align(size_t sz)
{
    return sz >= 8 ? 8 : sz >= 4 ? 4 : sz >= 2 ? 2 : 1;
}

CUresult cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t *paramOffset,
                            size_t *paramSize)
{
    CUSIM_GET(fn, cu_function, func, HK_FUNCTION);
    const ar_kernel_info *info = fn->k->info;
    /* Past the last parameter is how a caller learns the count. */
    if (paramIndex >= info->num_params)
        return CUDA_ERROR_INVALID_VALUE;
    size_t off = 0;
    for (size_t i = 0;; i++) {
        size_t sz = info->param_sizes[i];
        size_t align = param_align(sz);
        off = (off + align - 1) & ~(align - 1);
        if (i == paramIndex) {
            if (paramOffset)
                *paramOffset = off;
            if (paramSize)
                *paramSize = sz;
            return CUDA_SUCCESS;
        }
        off += sz;
    }
}

/* Unpacks CU_LAUNCH_PARAM_BUFFER_POINTER arguments: each parameter at the
 * next offset aligned to its size (up to 8), as nvcc lays them out. */
static CUresult params_from_extra(const ar_kernel_info *info, void **extra, void **argv)
{
    const char *buf = NULL;
    size_t size = 0;
    for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
        if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
            buf = extra[i + 1];
        else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
            size = *(size_t *)extra[i + 1];
        else
            return CUDA_ERROR_INVALID_VALUE;
    }
    size_t off = 0;
    for (uint32_t i = 0; i < info->num_params; i++) {
        size_t sz = info->param_sizes[i];
        size_t align = param_align(sz);
        off = (off + align - 1) & ~(align - 1);
        if (!buf || off + sz > size)
            return CUDA_ERROR_INVALID_VALUE;
        argv[i] = (void *)(buf + off);
        off += sz;
    }
    return CUDA_SUCCESS;
}

/* A module variable of a PTX module (host code has none the sim can see).
 * Either output may be NULL, as in cuda.h. */
CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod, const char *name)
{
    CUSIM_TRY(cusim_check_init());
    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    cu_module *cm = arsim_handle_get((uint64_t)(uintptr_t)hmod, HK_MODULE);
    if (!cm)
        return CUDA_ERROR_INVALID_HANDLE;
    void *p;
    size_t size;
    if (ptx_module_global(cm->m, name, &p, &size) != 0)
        return CUDA_ERROR_NOT_FOUND;
    if (dptr)
        *dptr = (CUdeviceptr)(uintptr_t)p;
    if (bytes)
        *bytes = size;
    return CUDA_SUCCESS;
}

/* .maxntid and .reqntid bind as on the GPU: a block over the maximum, or
 * other than the required shape, does not launch. */
static CUresult check_launch_bounds(const cu_function *fn, unsigned x, unsigned y, unsigned z)
{
    const ptx_kernel_attrs *a = &fn->attrs;
    if (a->max_threads && (unsigned long long)x * y * z > a->max_threads)
        return CUDA_ERROR_INVALID_VALUE;
    if (a->reqntid[0] && (x != a->reqntid[0] || y != a->reqntid[1] || z != a->reqntid[2]))
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                        unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                        unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                        void **kernelParams, void **extra)
{
    cu_stream *s;
    CUSIM_TRY(cusim_resolve_stream(hStream, &s));
    cu_function *fn = cusim_function_get(f);
    if (!fn)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!gridDimX || !gridDimY || !gridDimZ || !blockDimX || !blockDimY || !blockDimZ)
        return CUDA_ERROR_INVALID_VALUE;
    if (gridDimY > 65535 || gridDimZ > 65535 || blockDimX > 1024 || blockDimY > 1024 ||
        blockDimZ > 64)
        return CUDA_ERROR_INVALID_VALUE;
    if ((unsigned long long)blockDimX * blockDimY * blockDimZ > 1024)
        return CUDA_ERROR_INVALID_VALUE;
    if (sharedMemBytes > (unsigned)cusim_func_max_dynamic_shared(fn))
        return CUDA_ERROR_INVALID_VALUE;
    CUSIM_TRY(check_launch_bounds(fn, blockDimX, blockDimY, blockDimZ));
    const ar_kernel_info *info = fn->k->info;
    void *argv[AR_KERNEL_MAX_PARAMS];
    void **params = kernelParams;
    if (!kernelParams && info->num_params > 0) {
        if (!extra)
            return CUDA_ERROR_INVALID_VALUE;
        CUSIM_TRY(params_from_extra(info, extra, argv));
        params = argv;
    }
    ar_dim3 grid = {gridDimX, gridDimY, gridDimZ};
    ar_dim3 block = {blockDimX, blockDimY, blockDimZ};
    /* A launch is a printf flush point; the kernel's records go to the
     * stream's context. */
    cusim_printf_flush(s->ctx->handle);
    if (fn->attrs.uses_printf)
        cusim_printf_seal(s->ctx->handle);
    arsim_op *op = arsim_op_kernel(fn->k, grid, block, sharedMemBytes, params);
    arsim_op_set_tag(op, s->ctx->handle);
    return cusim_submit(s, op, NULL);
}
