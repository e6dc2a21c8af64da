/* Running one op: what it does, and when it starts and ends in device time. */
#include "engine_internal.h"

#include <string.h>

/* The device clock.  Timestamps and the timing model use "device time":
 * an op starts when it was submitted, its queue's previous op ended, and its
 * engine's previous op ended, whichever is last; it ends after the longer of
 * its modeled duration and its real CPU work.  Threads sleep until device
 * time, but a late wake-up (sleep overshoot, a loaded CPU) does not push
 * later ops back, so modeled timelines stay exact under load and events
 * measure them.  Without a timing model, device time is the real clock. */
static uint64_t ready_time(const arsim_queue *q, const arsim_op *op)
{
    uint64_t t = atomic_load_explicit(&q->model_time, memory_order_relaxed);
    return op->submit_ns > t ? op->submit_ns : t;
}

static void advance(arsim_queue *q, uint64_t t)
{
    if (t > atomic_load_explicit(&q->model_time, memory_order_relaxed))
        atomic_store_explicit(&q->model_time, t, memory_order_relaxed);
}

/* A peer copy's engines: the source device's outgoing copy engine and the
 * destination's incoming one.  *local gets the one of `device` (the queue's);
 * returns the other device, or -1 when the queue's device is neither. */
static int peer_sides(const arsim_op *op, int device, int *local, int *remote)
{
    int out = eng_copy_engine(ARSIM_COPY_D2H), in = eng_copy_engine(ARSIM_COPY_H2D);
    *local = in;
    *remote = out;
    if (device == op->src_dev) {
        *local = out;
        *remote = in;
        return op->dst_dev;
    }
    return device == op->dst_dev ? op->src_dev : -1;
}

/* Where an op runs: on an engine's thread (copies, memsets, fills, kernels:
 * they take device time), on the host-function thread, or, for ops that
 * take no time (markers, records, signals, resets, waits once satisfied),
 * right where the queue is moved on (see engine_threads.c). */
int eng_op_engine(const arsim_op *op, int device)
{
    switch (op->kind) {
    case OP_COPY:
    case OP_COPY2D:
        if (op->dir == ARSIM_COPY_PEER) {
            int local, remote;
            peer_sides(op, device, &local, &remote);
            return local;
        }
        return eng_copy_engine(op->dir);
    case OP_MEMSET8:
    case OP_FILL:
    case OP_KERNEL:
        return ENGINE_COMPUTE;
    case OP_HOST_FN:
    case OP_RELEASE_FN:
        return ENGINE_HOST;
    default:
        return -1;
    }
}

/* The other device's engine a peer copy also occupies (NULL: none). */
static sim_engine *peer_engine(const arsim_op *op, const sim_engine *mine)
{
    int local, remote;
    int other = peer_sides(op, mine->device, &local, &remote);
    sim_engine *e = eng_dev_get(other) ? &eng_dev[other].engines[remote] : NULL;
    return e == mine ? NULL : e;
}

/* Books the engine (and a peer copy's other engine) from the latest of
 * `ready` and their last ends, for `duration`; returns the start. */
static uint64_t book(sim_engine *a, sim_engine *b, uint64_t ready, uint64_t duration)
{
    sim_engine *first = b && b < a ? b : a, *second = b && b < a ? a : b;
    pthread_mutex_lock(&first->tl_mu);
    if (second)
        pthread_mutex_lock(&second->tl_mu);
    uint64_t t0 = ready > a->model_end ? ready : a->model_end;
    if (b && b->model_end > t0)
        t0 = b->model_end;
    a->model_end = t0 + duration;
    if (b)
        b->model_end = t0 + duration;
    if (second)
        pthread_mutex_unlock(&second->tl_mu);
    pthread_mutex_unlock(&first->tl_mu);
    return t0;
}

static void book_end(sim_engine *e, uint64_t end)
{
    if (!e)
        return;
    pthread_mutex_lock(&e->tl_mu);
    if (end > e->model_end)
        e->model_end = end;
    pthread_mutex_unlock(&e->tl_mu);
}

/* An engine op's work, on its engine's thread; returns its status. */
static int do_work(const arsim_queue *q, const arsim_op *op, sim_device *d)
{
    switch (op->kind) {
    case OP_COPY:
        memmove(op->dst, op->src, op->n);
        return ARSIM_OK;
    case OP_COPY2D:
        for (size_t r = 0; r < op->height; r++)
            memmove((char *)op->dst + r * op->dst_pitch,
                    (const char *)op->src + r * op->src_pitch, op->width);
        return ARSIM_OK;
    case OP_MEMSET8:
        memset(op->dst, op->value, op->n);
        return ARSIM_OK;
    case OP_FILL: {
        size_t ps = op->width;
        for (size_t off = 0; off < op->n; off += ps) {
            size_t c = op->n - off < ps ? op->n - off : ps;
            memcpy((char *)op->dst + off, op->owned, c);
        }
        return ARSIM_OK;
    }
    default: {
        int rc = eng_run_kernel(op, q->device);
        if (rc == ARSIM_ERR_ILLEGAL_ADDRESS || rc == ARSIM_ERR_ASSERT ||
            rc == ARSIM_ERR_MISALIGNED_ADDRESS) {
            eng_poison(d, (arsim_status)rc);
            return rc;
        }
        if (rc == ARSIM_ERR_READONLY_WRITE)
            return rc;
        return rc != 0 ? ARSIM_ERR_LAUNCH_FAILED : ARSIM_OK;
    }
    }
}

/* A copy, memset, fill or kernel: takes device time on its engine (a peer
 * copy on one engine of each device). */
static int run_on_engine(arsim_queue *q, const arsim_op *op, sim_device *d, int sticky)
{
    if (sticky)
        return sticky;
    int is_copy = op->kind == OP_COPY || op->kind == OP_COPY2D;
    sim_engine *eng = &d->engines[eng_op_engine(op, q->device)], *peer = NULL;
    if (is_copy && op->dir == ARSIM_COPY_PEER) {
        int local, remote;
        if (peer_sides(op, q->device, &local, &remote) < 0)
            return ARSIM_ERR_INVALID_DEVICE; /* a queue of neither device */
        peer = peer_engine(op, eng);
        is_copy = 2;
    }
    if (op->kind == OP_KERNEL) {
        if (eng_take_fault(&d->fault_illegal)) {
            eng_record_injected(op, q->device);
            eng_poison(d, ARSIM_ERR_ILLEGAL_ADDRESS);
            return ARSIM_ERR_ILLEGAL_ADDRESS;
        }
        if (eng_take_fault(&d->fault_launch))
            return ARSIM_ERR_LAUNCH_FAILED;
    }
    /* Runs on the engine's own thread: the engine is ours until we return;
     * a peer copy's other engine is only booked, in device time. */
    uint64_t duration = eng_modeled_ns(op->n, is_copy);
    uint64_t t0 = duration ? book(eng, peer, ready_time(q, op), duration) : 0;
    uint64_t t_acquired = arsim_now_ns();
    int st = do_work(q, op, d);
    uint64_t t_done = arsim_now_ns();
    uint64_t end;
    if (duration == 0) {
        end = t_done; /* no model: device time is real time */
    } else {
        uint64_t work = t_done - t_acquired;
        end = t0 + (work > duration ? work : duration);
        if (t_done < end)
            eng_sleep_until_ns(end);
    }
    book_end(eng, end);
    book_end(peer, end);
    advance(q, end);
    return st;
}

int eng_execute(arsim_queue *q, arsim_op *op)
{
    sim_device *d = &eng_dev[q->device];
    int sticky = atomic_load_explicit(&d->sticky, memory_order_acquire);
    switch (op->kind) {
    case OP_COPY:
    case OP_COPY2D:
    case OP_MEMSET8:
    case OP_FILL:
    case OP_KERNEL:
        return run_on_engine(q, op, d, sticky);
    case OP_HOST_FN: {
        /* Costs what the function takes, in device time too. */
        uint64_t start = ready_time(q, op), t = arsim_now_ns();
        if (!sticky && op->fn)
            op->fn(op->user);
        advance(q, start + (arsim_now_ns() - t));
        return sticky;
    }
    case OP_RELEASE_FN:
        advance(q, ready_time(q, op));
        op->fn(op->user);
        return sticky;
    case OP_MARKER:
        advance(q, ready_time(q, op));
        return sticky;
    case OP_EVENT_RECORD: {
        int err = sticky ? sticky : atomic_exchange(&q->pending_err, 0);
        uint64_t when = ready_time(q, op);
        advance(q, when);
        eng_event_complete_record(op->event, op->target, err, when);
        return ARSIM_OK; /* reported through the event */
    }
    case OP_EVENT_SIGNAL: {
        int err = sticky ? sticky : atomic_exchange(&q->pending_err, 0);
        uint64_t when = ready_time(q, op);
        advance(q, when);
        eng_event_set_signaled(op->event, err, when);
        return ARSIM_OK;
    }
    case OP_EVENT_RESET:
        advance(q, ready_time(q, op));
        arsim_event_host_reset(op->event);
        return ARSIM_OK;
    /* Waits run once wait_satisfied() held (the queue was parked until
     * then): never block here, the thread is shared by every queue. */
    case OP_EVENT_WAIT:
        advance(q, ready_time(q, op));
        advance(q, eng_event_model_ts(op->event));
        return ARSIM_OK;
    case OP_EVENT_WAIT_SIGNALED:
        /* An event signaled with an error passes it on to the queue that
         * waited for it, as its own pending error: what was ordered after
         * a failed op through an event fails too (Level Zero; a CUDA
         * event wait, OP_EVENT_WAIT, has sticky errors instead). */
        advance(q, ready_time(q, op));
        advance(q, eng_event_model_ts(op->event));
        return sticky ? sticky : eng_event_signal_status(op->event);
    case OP_QUEUE_WAIT:
        advance(q, ready_time(q, op));
        advance(q, atomic_load(&op->other->model_time));
        return ARSIM_OK;
    }
    return ARSIM_OK;
}
