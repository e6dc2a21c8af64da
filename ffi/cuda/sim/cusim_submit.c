/* Submitting an op to a stream: the legacy stream's implicit ordering, and
 * stream capture (an op on a capturing stream becomes a node of the
 * capture's graph, cusim_graph.c).  Apart from cusim_core.c so that the
 * driver's core (init, devices, contexts, streams) does not depend on the
 * graph code, which depends on the core. */
#include "cusim.h"

/* The legacy (NULL) stream waits for the work of every blocking stream of
 * its context, and every blocking stream waits for the legacy stream's.
 * Modelled with queue-wait ops on the tails at submit time. */
static CUresult legacy_ordering(cu_stream *s)
{
    cu_ctx *c = s->ctx;
    if (s->is_legacy) {
        if (__atomic_load_n(&c->capturing_blocking, __ATOMIC_ACQUIRE)) {
            /* The legacy stream would have to wait for a blocking stream
             * that is capturing (in any mode): refused, and it breaks those
             * captures. */
            pthread_mutex_lock(&g_capture_mu);
            pthread_mutex_lock(&c->mu);
            for (cu_stream *o = c->streams; o; o = o->next)
                if (o->cap && !(o->flags & CU_STREAM_NON_BLOCKING))
                    cusim_capture_invalidate(o->cap);
            pthread_mutex_unlock(&c->mu);
            pthread_mutex_unlock(&g_capture_mu);
            return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
        }
        pthread_mutex_lock(&c->mu);
        for (cu_stream *o = c->streams; o; o = o->next) {
            if ((o->flags & CU_STREAM_NON_BLOCKING) ||
                __atomic_load_n(&o->cap, __ATOMIC_ACQUIRE))
                continue;
            if (arsim_queue_query(o->q) == ARSIM_ERR_NOT_READY) {
                arsim_status st = arsim_queue_submit(
                    s->q, arsim_op_queue_wait(o->q, arsim_queue_submitted(o->q)), NULL);
                if (st != ARSIM_OK) {
                    pthread_mutex_unlock(&c->mu);
                    return cusim_status(st);
                }
            }
        }
        pthread_mutex_unlock(&c->mu);
    } else if (!(s->flags & CU_STREAM_NON_BLOCKING)) {
        arsim_queue *l = c->legacy->q;
        if (arsim_queue_query(l) == ARSIM_ERR_NOT_READY) {
            arsim_status st =
                arsim_queue_submit(s->q, arsim_op_queue_wait(l, arsim_queue_submitted(l)), NULL);
            if (st != ARSIM_OK)
                return cusim_status(st);
        }
    }
    return CUDA_SUCCESS;
}

CUresult cusim_submit(cu_stream *s, arsim_op *op, uint64_t *seq_out)
{
    if (seq_out)
        *seq_out = 0;
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    /* Fast path: a stream that is not capturing (racing a capture that
     * begins on another thread is the caller's race, as in CUDA). */
    if (__atomic_load_n(&s->cap, __ATOMIC_ACQUIRE) == NULL) {
        CUresult r = legacy_ordering(s);
        if (r != CUDA_SUCCESS) {
            arsim_op_free(op);
            return r;
        }
        return cusim_status(arsim_queue_submit(s->q, op, seq_out));
    }
    pthread_mutex_lock(&g_capture_mu);
    cu_capture *cap = s->cap;
    if (cap) {
        CUresult r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
        if (!cap->invalidated)
            r = cusim_capture_add_op(cap, op); /* a node of the capture's graph */
        else
            arsim_op_free(op);
        pthread_mutex_unlock(&g_capture_mu);
        return r;
    }
    pthread_mutex_unlock(&g_capture_mu);
    CUresult r = legacy_ordering(s);
    if (r != CUDA_SUCCESS) {
        arsim_op_free(op);
        return r;
    }
    return cusim_status(arsim_queue_submit(s->q, op, seq_out));
}

CUresult cusim_submit_graph(cu_stream *s, const arsim_graph *g)
{
    pthread_mutex_lock(&g_capture_mu);
    cu_capture *cap = s->cap;
    if (cap) {
        /* cuGraphLaunch adds a child graph node instead (cusim_graph_launch.c). */
        pthread_mutex_unlock(&g_capture_mu);
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    pthread_mutex_unlock(&g_capture_mu);
    CUSIM_TRY(legacy_ordering(s));
    return cusim_status(arsim_queue_submit_graph(s->q, g));
}
