/* cuda-sim: launching an executable graph, and the references a launch in
 * flight holds (its graph memory and user objects, cusim_graph_mem.c).
 * Apart from the graph memory model so that the graph code, which the
 * stream and submission code use, does not depend on stream resolution. */
#include <stdlib.h>

#include "cusim.h"

typedef struct launch_hold {
    cu_gmem **mem;
    size_t n;
    cu_uref *urefs;
} launch_hold;

static void launch_done(void *arg)
{
    launch_hold *h = arg;
    for (size_t i = 0; i < h->n; i++)
        cusim_gmem_unref(h->mem[i]);
    free(h->mem);
    cusim_urefs_release(h->urefs);
    free(h);
    cusim_uobj_flush();
}

static launch_hold *launch_hold_new(const cu_graph_exec *x)
{
    launch_hold *h = calloc(1, sizeof *h);
    size_t n = x->nallocs + x->nfrees;
    if (!h || (n && !(h->mem = malloc(n * sizeof *h->mem)))) {
        free(h);
        return NULL;
    }
    for (size_t i = 0; i < x->nallocs; i++)
        h->mem[h->n++] = x->allocs[i];
    for (size_t i = 0; i < x->nfrees; i++)
        h->mem[h->n++] = x->frees[i];
    for (size_t i = 0; i < h->n; i++)
        cusim_gmem_ref(h->mem[i]);
    if (cusim_urefs_copy(x->urefs, &h->urefs) != CUDA_SUCCESS) {
        launch_done(h);
        return NULL;
    }
    return h;
}

/* Launching into a capture adds the graph as a child graph node. */
static int launch_captured(cu_stream *s, cu_graph_exec *x, CUresult *r)
{
    pthread_mutex_lock(&g_capture_mu);
    cu_capture *cap = s->cap;
    if (cap) {
        if (cap->invalidated)
            *r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
        else if (x->nallocs || x->nfrees)
            *r = CUDA_ERROR_NOT_SUPPORTED; /* graph memory in a child graph: not modelled */
        else
            *r = cusim_capture_add_exec(cap, x->g);
    }
    pthread_mutex_unlock(&g_capture_mu);
    return cap != NULL;
}

CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
    cu_stream *s;
    CUSIM_TRY(cusim_resolve_stream(hStream, &s));
    cu_graph_exec *x = arsim_handle_get((uint64_t)(uintptr_t)hGraphExec, HK_GRAPH_EXEC);
    if (!x)
        return CUDA_ERROR_INVALID_HANDLE;
    CUresult r;
    if (launch_captured(s, x, &r))
        return r;
    launch_hold *h = launch_hold_new(x);
    if (!h)
        return CUDA_ERROR_OUT_OF_MEMORY;
    r = cusim_gmem_launch(x);
    if (r == CUDA_SUCCESS)
        r = cusim_submit_graph(s, x->g);
    if (r != CUDA_SUCCESS) {
        launch_done(h);
        return r;
    }
    r = cusim_submit(s, arsim_op_release_fn(launch_done, h), NULL);
    if (r != CUDA_SUCCESS)
        launch_done(h); /* a poisoned device runs nothing more */
    return r;
}

CUresult cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream)
{
    cu_stream *s;
    CUSIM_TRY(cusim_resolve_stream(hStream, &s));
    /* Nothing to upload: the ops are ready at instantiation. */
    return arsim_handle_get((uint64_t)(uintptr_t)hGraphExec, HK_GRAPH_EXEC)
               ? CUDA_SUCCESS
               : CUDA_ERROR_INVALID_HANDLE;
}
