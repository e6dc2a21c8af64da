/* cuda-sim: the life of a stream object and of its membership in a capture.
 *
 * The bottom of the front end's call graph: contexts (cusim_core.c) create
 * and free streams here, and the API files above both use it; nothing here
 * calls back up (tests/ffi/test_cuda_sim_layering.py checks the files form
 * no cycle). */
#define _GNU_SOURCE
#include <stdlib.h>

#include "cusim.h"


CUresult cusim_stream_new(cu_ctx *ctx, unsigned flags, int priority, int legacy, cu_stream **out)
{
    cu_stream *s = calloc(1, sizeof *s);
    if (!s)
        return CUDA_ERROR_OUT_OF_MEMORY;
    s->ctx = ctx;
    s->flags = flags;
    s->priority = priority;
    s->is_legacy = legacy;
    arsim_status st = arsim_queue_create(ctx->device, priority, &s->q);
    if (st != ARSIM_OK) {
        free(s);
        return cusim_status(st);
    }
    if (!legacy) {
        s->handle = arsim_handle_new(HK_STREAM, s);
        if (!s->handle) {
            arsim_queue_destroy(s->q);
            free(s);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        pthread_mutex_lock(&ctx->mu);
        s->next = ctx->streams;
        if (ctx->streams)
            ctx->streams->prev = s;
        ctx->streams = s;
        pthread_mutex_unlock(&ctx->mu);
    }
    *out = s;
    return CUDA_SUCCESS;
}

/* Leaves a capture sequence (caller holds g_capture_mu). */
void cusim_capture_detach(cu_stream *s)
{
    cu_capture *cap = s->cap;
    if (!cap)
        return;
    if (!(s->flags & CU_STREAM_NON_BLOCKING))
        __atomic_fetch_sub(&s->ctx->capturing_blocking, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < cap->nmembers; i++) {
        if (cap->members[i] == s) {
            cap->members[i] = cap->members[--cap->nmembers];
            break;
        }
    }
    __atomic_store_n(&s->cap, NULL, __ATOMIC_RELEASE);
}

/* The handle is already removed; queued work still runs (cuStreamDestroy
 * returns at once and the resources go when the work is done). */
void cusim_stream_free(cu_stream *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&g_capture_mu);
    cu_capture *cap = s->cap;
    cu_capture *ended = NULL;
    if (cap) {
        cusim_capture_invalidate(cap);
        if (cap->origin == s) {
            /* Nobody can end this capture any more: end it here, so the
             * context's legacy stream is not refused forever. */
            while (cap->nmembers > 0)
                cusim_capture_detach(cap->members[cap->nmembers - 1]);
            arsim_handle_remove(cap->handle, HK_CAPTURE);
            cu_graph *g = cusim_capture_graph(cap);
            if (g && cap->to_graph)
                g->capturing = NULL; /* the caller's graph: it stays */
            else if (g)
                cusim_graph_free(g);
            ended = cap;
        } else {
            cusim_capture_detach(s);
        }
    }
    pthread_mutex_unlock(&g_capture_mu);
    if (ended) {
        if (ended->mode != CU_STREAM_CAPTURE_MODE_RELAXED) {
            pthread_mutex_lock(&s->ctx->mu);
            s->ctx->unsafe_captures--;
            pthread_mutex_unlock(&s->ctx->mu);
        }
        free(ended->deps);
        free(ended->dep_out);
        free(ended);
    }
    cusim_uobj_flush();
    if (!s->is_legacy) {
        cu_ctx *c = s->ctx;
        pthread_mutex_lock(&c->mu);
        if (s->prev)
            s->prev->next = s->next;
        else if (c->streams == s)
            c->streams = s->next;
        if (s->next)
            s->next->prev = s->prev;
        pthread_mutex_unlock(&c->mu);
    }
    arsim_queue_destroy(s->q);
    free(s);
}

/* Caller holds g_capture_mu. */
void cusim_capture_invalidate(cu_capture *cap)
{
    cap->invalidated = 1;
}
