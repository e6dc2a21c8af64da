/* Queues: in-order op lists with no thread of their own (engine_threads.c
 * runs them).  Submission, capture into a graph, and the host's waits. */
#include "engine_internal.h"

#include <sched.h>
#include <stdlib.h>

static _Atomic int g_live_queues; /* created, not yet drained after destroy */

void eng_queue_retain(arsim_queue *q) { atomic_fetch_add(&q->refs, 1); }

void eng_queue_release(arsim_queue *q)
{
    if (atomic_fetch_sub(&q->refs, 1) != 1)
        return;
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->cv_done);
    free(q);
}

void eng_queue_finalize(arsim_queue *q)
{
    sim_device *d = &eng_dev[q->device];
    pthread_mutex_lock(&d->qmu);
    if (q->dev_prev)
        q->dev_prev->dev_next = q->dev_next;
    else
        d->queues = q->dev_next;
    if (q->dev_next)
        q->dev_next->dev_prev = q->dev_prev;
    pthread_mutex_unlock(&d->qmu);
    atomic_fetch_sub(&g_live_queues, 1);
    eng_queue_release(q);
}

arsim_status arsim_queue_create(int ordinal, int priority, arsim_queue **out)
{
    if (arsim_forked())
        return ARSIM_ERR_FORKED; /* the engine threads did not survive fork() */
    sim_device *d = eng_dev_get(ordinal);
    if (!d)
        return ARSIM_ERR_INVALID_DEVICE;
    if (!out)
        return ARSIM_ERR_INVALID_VALUE;
    arsim_queue *q = calloc(1, sizeof *q);
    if (!q)
        return ARSIM_ERR_OUT_OF_MEMORY;
    atomic_init(&q->refs, 2); /* the owner, and the queue's life on the device */
    q->device = ordinal;
    q->priority = priority;
    pthread_mutex_init(&q->mu, NULL);
    eng_cond_init_monotonic(&q->cv_done);

    pthread_mutex_lock(&d->qmu);
    q->dev_next = d->queues;
    if (d->queues)
        d->queues->dev_prev = q;
    d->queues = q;
    pthread_mutex_unlock(&d->qmu);
    atomic_fetch_add(&g_live_queues, 1);
    *out = q;
    return ARSIM_OK;
}

void arsim_queue_destroy(arsim_queue *q)
{
    if (!q)
        return;
    pthread_mutex_lock(&q->mu);
    q->destroyed = 1;
    q->capture = NULL; /* the capture graph belongs to whoever began the capture */
    int finalize = !q->active && !q->finalized;
    if (finalize)
        q->finalized = 1;
    pthread_mutex_unlock(&q->mu);
    /* Otherwise whoever holds the token finalizes it once the queue drains. */
    if (finalize)
        eng_queue_finalize(q);
    eng_queue_release(q);
}

int arsim_queue_device(const arsim_queue *q) { return q->device; }
int arsim_queue_priority(const arsim_queue *q) { return q->priority; }

arsim_status arsim_queue_submit(arsim_queue *q, arsim_op *op, uint64_t *seq_out)
{
    if (seq_out)
        *seq_out = 0;
    if (arsim_forked()) {
        arsim_op_free(op);
        return ARSIM_ERR_FORKED; /* the engine threads did not survive fork() */
    }
    if (!op)
        return ARSIM_ERR_OUT_OF_MEMORY;
    if (!q) {
        arsim_op_free(op);
        return ARSIM_ERR_INVALID_VALUE;
    }
    pthread_mutex_lock(&q->mu);
    if (q->capture) {
        arsim_status st = arsim_graph_append(q->capture, op);
        pthread_mutex_unlock(&q->mu);
        return st;
    }
    int sticky = atomic_load_explicit(&eng_dev[q->device].sticky, memory_order_acquire);
    if (sticky) {
        pthread_mutex_unlock(&q->mu);
        arsim_op_free(op);
        return (arsim_status)sticky;
    }
    /* Sequence numbers are taken here, in submission order, so that a wait
     * submitted after a record sees that record. */
    op->submit_ns = arsim_now_ns();
    if (op->kind == OP_EVENT_RECORD)
        op->target = eng_event_new_record(op->event);
    else if (op->kind == OP_EVENT_WAIT)
        op->target = eng_event_last_record(op->event);
    if (q->tail)
        q->tail->next = op;
    else
        q->head = op;
    q->tail = op;
    uint64_t seq = atomic_fetch_add_explicit(&q->submitted, 1, memory_order_release) + 1;
    int take_token = !q->active;
    if (take_token)
        q->active = 1;
    pthread_mutex_unlock(&q->mu);
    if (seq_out)
        *seq_out = seq;
    if (take_token)
        eng_drive(q, NULL, ARSIM_OK);
    return ARSIM_OK;
}

uint64_t arsim_queue_submitted(const arsim_queue *q) { return atomic_load(&q->submitted); }
uint64_t arsim_queue_completed(const arsim_queue *q) { return atomic_load(&q->completed); }

arsim_status arsim_queue_query(const arsim_queue *q)
{
    uint64_t s = atomic_load_explicit(&q->submitted, memory_order_acquire);
    uint64_t c = atomic_load_explicit(&q->completed, memory_order_acquire);
    return c >= s ? ARSIM_OK : ARSIM_ERR_NOT_READY;
}

static void queue_wait_completed(arsim_queue *q, uint64_t target, arsim_wait_mode mode)
{
    if (mode == ARSIM_WAIT_SPIN) {
        while (atomic_load_explicit(&q->completed, memory_order_acquire) < target)
            sched_yield();
        return;
    }
    pthread_mutex_lock(&q->mu);
    q->done_waiters++;
    while (atomic_load(&q->completed) < target)
        pthread_cond_wait(&q->cv_done, &q->mu);
    q->done_waiters--;
    pthread_mutex_unlock(&q->mu);
}

void arsim_queue_wait_seq(arsim_queue *q, uint64_t seq, arsim_wait_mode mode)
{
    if (q)
        queue_wait_completed(q, seq, mode);
}

arsim_status arsim_queue_take_error(arsim_queue *q)
{
    return q ? (arsim_status)atomic_exchange(&q->pending_err, 0) : ARSIM_ERR_INVALID_VALUE;
}

arsim_status arsim_queue_synchronize(arsim_queue *q, arsim_wait_mode mode)
{
    if (arsim_forked())
        return ARSIM_ERR_FORKED; /* the engine threads did not survive fork() */
    if (!q)
        return ARSIM_ERR_INVALID_VALUE;
    queue_wait_completed(q, atomic_load(&q->submitted), mode);
    int sticky = atomic_load(&eng_dev[q->device].sticky);
    int err = atomic_exchange(&q->pending_err, 0);
    return (arsim_status)(sticky ? sticky : err);
}

arsim_status arsim_queue_begin_capture(arsim_queue *q, arsim_graph *g)
{
    if (!q || !g)
        return ARSIM_ERR_INVALID_VALUE;
    pthread_mutex_lock(&q->mu);
    arsim_status st = ARSIM_OK;
    if (q->capture)
        st = ARSIM_ERR_CAPTURING;
    else
        q->capture = g;
    pthread_mutex_unlock(&q->mu);
    return st;
}

arsim_status arsim_queue_end_capture(arsim_queue *q, arsim_graph **out)
{
    if (!q)
        return ARSIM_ERR_INVALID_VALUE;
    pthread_mutex_lock(&q->mu);
    arsim_graph *g = q->capture;
    q->capture = NULL;
    pthread_mutex_unlock(&q->mu);
    if (out)
        *out = g;
    return g ? ARSIM_OK : ARSIM_ERR_NOT_CAPTURING;
}

arsim_graph *arsim_queue_capture_graph(const arsim_queue *q)
{
    arsim_queue *mq = (arsim_queue *)q;
    pthread_mutex_lock(&mq->mu);
    arsim_graph *g = mq->capture;
    pthread_mutex_unlock(&mq->mu);
    return g;
}

arsim_status arsim_device_synchronize(int ordinal)
{
    if (arsim_forked())
        return ARSIM_ERR_FORKED; /* the engine threads did not survive fork() */
    sim_device *d = eng_dev_get(ordinal);
    if (!d)
        return ARSIM_ERR_INVALID_DEVICE;
    /* Snapshot the queues (holding a reference) and wait on each outside the
     * device lock, so queues can come and go meanwhile. */
    size_t n = 0, cap = 16;
    arsim_queue **qs = malloc(cap * sizeof *qs);
    uint64_t *targets = malloc(cap * sizeof *targets);
    if (!qs || !targets) {
        free(qs);
        free(targets);
        return ARSIM_ERR_OUT_OF_MEMORY;
    }
    pthread_mutex_lock(&d->qmu);
    for (arsim_queue *q = d->queues; q; q = q->dev_next) {
        if (n == cap) {
            arsim_queue **nq = realloc(qs, 2 * cap * sizeof *qs);
            if (nq)
                qs = nq;
            uint64_t *nt = nq ? realloc(targets, 2 * cap * sizeof *targets) : NULL;
            if (nt)
                targets = nt;
            if (!nq || !nt)
                break; /* out of memory: wait for the queues we have */
            cap *= 2;
        }
        eng_queue_retain(q);
        qs[n] = q;
        targets[n] = atomic_load(&q->submitted);
        n++;
    }
    pthread_mutex_unlock(&d->qmu);
    for (size_t i = 0; i < n; i++) {
        queue_wait_completed(qs[i], targets[i], ARSIM_WAIT_BLOCK);
        eng_queue_release(qs[i]);
    }
    free(qs);
    free(targets);
    return (arsim_status)atomic_load(&d->sticky);
}

int arsim_mem_in_use(const void *p)
{
    eng_ensure_init();
    arsim_alloc a;
    if (arsim_mem_lookup(p, &a) != ARSIM_OK)
        return 0;
    uintptr_t lo = (uintptr_t)a.base, hi = lo + a.size;
    int used = 0;
    for (int d = 0; d < eng_ndev && !used; d++) {
        pthread_mutex_lock(&eng_dev[d].qmu);
        for (arsim_queue *q = eng_dev[d].queues; q && !used; q = q->dev_next) {
            pthread_mutex_lock(&q->mu);
            if (q->running && eng_op_uses(q->running, lo, hi))
                used = 1;
            for (const arsim_op *op = q->head; op && !used; op = op->next)
                used = eng_op_uses(op, lo, hi);
            pthread_mutex_unlock(&q->mu);
        }
        pthread_mutex_unlock(&eng_dev[d].qmu);
    }
    return used;
}

int arsim_live_queues(void) { return atomic_load(&g_live_queues); }
