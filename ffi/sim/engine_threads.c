/* The engines' threads, and moving queues on.
 *
 * A device runs its queues on a fixed set of threads, as a GPU runs any
 * number of streams on a fixed set of engines: one thread per engine
 * (compute, and the copy engines), plus one for host functions, each
 * started when first needed.  A queue is a list of ops and a token, not a
 * thread.  Whoever holds the token moves the queue on (move_on): ops that
 * take no device time run right there, an engine op goes to its engine's
 * FIFO (and the token with it: that engine's thread moves the queue on once
 * the op is done), and a wait that is not yet satisfied parks the queue
 * until the event or queue it waits for moves.  The token is taken by a
 * submit that finds the queue idle, so an idle queue's marker or record
 * completes within the submit, as on a GPU whose stream is idle.
 *
 * A small copy or memset whose engine is idle runs right where the queue is
 * moved on too (run_here): a GPU's engine starts an op when the doorbell
 * rings, without a thread to wake, and waking one costs more than the op.
 *
 * No thread ever blocks on a queue's behalf (the host-function thread runs
 * user code, which may), so threads are O(devices), whatever the number of
 * queues, and a wait costs nothing until it is satisfied.
 */
#define _GNU_SOURCE
#include "engine_internal.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

static _Atomic int g_engine_threads; /* engine threads alive, all devices */
static _Atomic int g_engine_idle_ms = 1000; /* an engine thread idle this long ends */

static pthread_mutex_t g_park_mu = PTHREAD_MUTEX_INITIALIZER;
static arsim_queue *g_parked; /* queues whose head op is an unsatisfied wait */
static _Atomic int g_nparked;

static int wait_satisfied(const arsim_op *op)
{
    switch (op->kind) {
    case OP_EVENT_WAIT:
        return op->target == 0 || eng_event_record_done(op->event, op->target);
    case OP_EVENT_WAIT_SIGNALED:
        return arsim_event_is_signaled(op->event);
    case OP_QUEUE_WAIT:
        return atomic_load(&op->other->completed) >= op->target;
    default:
        return 1;
    }
}

static void move_on(arsim_queue *q, arsim_op *done, int status);

static int is_wait(const arsim_op *op)
{
    return op->kind == OP_EVENT_WAIT || op->kind == OP_EVENT_WAIT_SIGNALED ||
           op->kind == OP_QUEUE_WAIT;
}

static void set_pending_err(arsim_queue *q, int err)
{
    int zero = 0;
    atomic_compare_exchange_strong(&q->pending_err, &zero, err);
}

/* Queues to move on, per thread: move_on runs the ops of one queue at a
 * time, and the queues its ops unblock wait here rather than recursing. */
static __thread arsim_queue *tls_todo;
static __thread int tls_moving;
/* Bytes of small ops this thread may still run in place (run_here) before
 * its eng_drive returns: a graph of many small nodes, or a long queue of
 * them, goes to the engines' threads instead of holding the submitting
 * thread.  Each op counts as at least SMALL_OP_MIN bytes. */
static __thread size_t tls_inline_left;
#define SMALL_OP_MIN 1024

static void move_on_later(arsim_queue *q)
{
    q->todo_next = tls_todo;
    tls_todo = q;
}

/* Every queue unblocked meanwhile is moved on by this thread too. */
void eng_drive(arsim_queue *q, arsim_op *done, int status)
{
    if (tls_moving) {
        /* Only from inside move_on, which never hands a finished op here. */
        move_on_later(q);
        return;
    }
    tls_moving = 1;
    tls_inline_left = eng_inline_bytes();
    /* Host waiters on what a queue signals wake once it is let go. */
    eng_defer_wakes(1);
    move_on(q, done, status);
    eng_flush_wakes();
    while (tls_todo) {
        arsim_queue *next = tls_todo;
        tls_todo = next->todo_next;
        move_on(next, NULL, ARSIM_OK);
        eng_flush_wakes();
    }
    eng_defer_wakes(0);
    tls_moving = 0;
}

/* Parks q on its head op, a wait, unless that is satisfied by now.
 * Returns 1 if parked (the park list holds q's token). */
static int park(arsim_queue *q, arsim_op *wait)
{
    pthread_mutex_lock(&g_park_mu);
    atomic_fetch_add(&g_nparked, 1);
    /* Pairs with the fence in eng_wake_parked: either that sees this park, or
     * this check sees the change that satisfies the wait. */
    atomic_thread_fence(memory_order_seq_cst);
    if (wait_satisfied(wait)) {
        atomic_fetch_sub(&g_nparked, 1);
        pthread_mutex_unlock(&g_park_mu);
        return 0;
    }
    q->parked_on = wait;
    q->park_next = g_parked;
    g_parked = q;
    pthread_mutex_unlock(&g_park_mu);
    return 1;
}

/* After anything a wait may be waiting for: an event recorded or signaled,
 * an op completed.  Cheap when nothing is parked. */
void eng_wake_parked(void)
{
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load(&g_nparked) == 0)
        return;
    arsim_queue *ready = NULL;
    pthread_mutex_lock(&g_park_mu);
    for (arsim_queue **link = &g_parked; *link;) {
        arsim_queue *q = *link;
        if (wait_satisfied(q->parked_on)) {
            *link = q->park_next;
            q->parked_on = NULL;
            q->park_next = ready;
            ready = q;
            atomic_fetch_sub(&g_nparked, 1);
        } else {
            link = &q->park_next;
        }
    }
    pthread_mutex_unlock(&g_park_mu);
    while (ready) {
        arsim_queue *q = ready;
        ready = q->park_next;
        q->park_next = NULL;
        if (tls_moving)
            move_on_later(q);
        else
            eng_drive(q, NULL, ARSIM_OK);
    }
}

static void *engine_main(void *arg);

/* Whether op is small enough to run on the thread that moves its queue on:
 * a copy or memset of at most eng_inline_bytes() that takes no modeled time.
 * Never a kernel (its time is unknown), a host function (the application's
 * code) or a peer copy (it books another device's engine); nor once this
 * thread has spent its budget (tls_inline_left). */
static int small_enough(const arsim_op *op)
{
    size_t bytes;
    int is_copy = 0;
    switch (op->kind) {
    case OP_COPY:
        bytes = op->n;
        is_copy = 1;
        break;
    case OP_COPY2D:
        bytes = op->width * op->height;
        is_copy = 1;
        break;
    case OP_MEMSET8:
    case OP_FILL:
        bytes = op->n;
        break;
    default:
        return 0;
    }
    if (is_copy && op->dir == ARSIM_COPY_PEER)
        return 0;
    size_t cost = bytes < SMALL_OP_MIN ? SMALL_OP_MIN : bytes;
    return bytes <= eng_inline_bytes() && cost <= tls_inline_left &&
           eng_modeled_ns(bytes, is_copy) == 0;
}

/* What running op here costs this thread's budget (see tls_inline_left). */
static void spend_inline(const arsim_op *op)
{
    size_t bytes = op->kind == OP_COPY2D ? op->width * op->height : op->n;
    size_t cost = bytes < SMALL_OP_MIN ? SMALL_OP_MIN : bytes;
    tls_inline_left = cost < tls_inline_left ? tls_inline_left - cost : 0;
}

/* Claims the engine for op, to run it on this thread, if op is small and
 * the engine idle (no op running, none ready).  Returns the engine, to give
 * back with release_engine, or NULL: then op goes to the engine's thread. */
static sim_engine *run_here(arsim_queue *q, const arsim_op *op, int index)
{
    if (!small_enough(op))
        return NULL;
    sim_engine *eng = &eng_dev[q->device].engines[index];
    pthread_mutex_lock(&eng->mu);
    int idle = !eng->head && !eng->busy;
    if (idle)
        eng->busy = 1;
    pthread_mutex_unlock(&eng->mu);
    if (!idle)
        return NULL;
    spend_inline(op);
    return eng;
}

/* The op that held eng is done: its thread may take the ops pushed meanwhile. */
static void release_engine(sim_engine *eng)
{
    pthread_mutex_lock(&eng->mu);
    eng->busy = 0;
    if (eng->head)
        pthread_cond_signal(&eng->cv);
    pthread_mutex_unlock(&eng->mu);
}

/* Hands op (popped from q, whose token goes with it) to its engine's
 * thread, starting the thread on first use. */
static int engine_push(int device_ord, int index, arsim_queue *q, arsim_op *op)
{
    sim_engine *eng = &eng_dev[device_ord].engines[index];
    op->queue = q;
    op->next = NULL;
    pthread_mutex_lock(&eng->mu);
    if (!eng->started) {
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&attr, 8u << 20);
        /* The engine thread must not take signals meant for the
         * application, but a kernel's own memory faults must reach it (a
         * blocked synchronous fault kills the process). */
        sigset_t all, old;
        sigfillset(&all);
        sigdelset(&all, SIGSEGV);
        sigdelset(&all, SIGBUS);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        pthread_t th;
        int rc = pthread_create(&th, &attr, engine_main, eng);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        pthread_attr_destroy(&attr);
        if (rc != 0) {
            pthread_mutex_unlock(&eng->mu);
            return -1;
        }
        eng->started = 1;
        atomic_fetch_add(&g_engine_threads, 1);
    }
    if (eng->tail)
        eng->tail->next = op;
    else
        eng->head = op;
    eng->tail = op;
    pthread_cond_signal(&eng->cv);
    pthread_mutex_unlock(&eng->mu);
    return 0;
}

/* A GPU's engines take no host CPU; the sim's must, and how they share it
 * with the application's threads is a choice.  By default they run at the
 * main thread's nice value, as any of the application's threads: a busy
 * neighbour process then slows the simulated device no more than it slows
 * the application (measured by benchmarks/bench_contention.py; 5 levels
 * lower starved the device beside two busy processes).  ARUNTIME_SIM_ENGINE_NICE
 * raises it.  Linux applies a nice value per thread.  The base is the main
 * thread's (the pid names it), not this thread's creator's: an engine
 * thread started by another engine thread would otherwise inherit its
 * value and add to it. */
static void set_engine_nice(void)
{
    errno = 0;
    int main_nice = getpriority(PRIO_PROCESS, (id_t)getpid());
    if (errno != 0)
        return;
    int nice = main_nice + eng_engine_nice();
    setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), nice > 19 ? 19 : nice);
}

static void *engine_main(void *arg)
{
    sim_engine *eng = arg;
    static const char *const names[ENGINE_COUNT] = {"compute", "h2d", "d2h", "hostfn"};
    char name[16];
    snprintf(name, sizeof name, "arsim-%s%d", names[eng->index], eng->device);
    pthread_setname_np(pthread_self(), name);
    set_engine_nice();
    for (;;) {
        pthread_mutex_lock(&eng->mu);
        if (!eng->head || eng->busy) {
            /* Idle: end after a while, so that a process that stopped using
             * the device holds none of its threads; engine_push starts
             * another.  (Busy: another thread runs a small op here, and
             * signals once it is done.) */
            struct timespec until;
            eng_abs_deadline(&until, (int64_t)atomic_load(&g_engine_idle_ms) * 1000000);
            while (!eng->head || eng->busy) {
                if (pthread_cond_timedwait(&eng->cv, &eng->mu, &until) != ETIMEDOUT)
                    continue;
                if (!eng->head) {
                    eng->started = 0;
                    atomic_fetch_sub(&g_engine_threads, 1);
                    pthread_mutex_unlock(&eng->mu);
                    return NULL;
                }
                eng_abs_deadline(&until, (int64_t)atomic_load(&g_engine_idle_ms) * 1000000);
            }
        }
        /* The ready op of the highest-priority queue (lowest number, as in
         * CUDA and as the front ends map Level Zero's), the oldest among
         * equals.  At most one op per queue is here, so the scan is short. */
        arsim_op **pick = &eng->head, *prev = NULL, *pick_prev = NULL;
        for (arsim_op **link = &eng->head; *link; prev = *link, link = &(*link)->next)
            if ((*link)->queue->priority < (*pick)->queue->priority) {
                pick = link;
                pick_prev = prev;
            }
        arsim_op *op = *pick;
        *pick = op->next;
        if (eng->tail == op)
            eng->tail = pick_prev;
        eng->busy = 1;
        pthread_mutex_unlock(&eng->mu);
        op->next = NULL;
        arsim_queue *q = op->queue;
        int status = eng_execute(q, op);
        pthread_mutex_lock(&eng->mu);
        eng->busy = 0;
        pthread_mutex_unlock(&eng->mu);
        eng_drive(q, op, status);
    }
    return NULL;
}

/* Moves q on; the caller holds q's token.  `done` is the op that just ran
 * (popped, q->running), with its status, or NULL.  Runs q's ops until one
 * goes to an engine, a wait parks, or the queue is empty; then the token is
 * with the engine, the park list, or nobody (the queue is idle). */
static void move_on(arsim_queue *q, arsim_op *done, int status)
{
    for (;;) {
        if (done && status != ARSIM_OK)
            set_pending_err(q, status);
        pthread_mutex_lock(&q->mu);
        if (done) {
            q->running = NULL;
            arsim_op_free(done);
            done = NULL;
            atomic_fetch_add_explicit(&q->completed, 1, memory_order_release);
            if (q->done_waiters)
                pthread_cond_broadcast(&q->cv_done);
            pthread_mutex_unlock(&q->mu);
            eng_wake_parked(); /* a record, a signal or this completion may satisfy a wait */
            pthread_mutex_lock(&q->mu);
        }
        arsim_op *op = q->head;
        if (!op) {
            q->active = 0;
            int finalize = q->destroyed && !q->finalized;
            if (finalize)
                q->finalized = 1;
            pthread_mutex_unlock(&q->mu);
            if (finalize)
                eng_queue_finalize(q);
            return;
        }
        if (is_wait(op)) {
            /* Left at the head while parked: a queue is in order. */
            pthread_mutex_unlock(&q->mu);
            if (!wait_satisfied(op) && park(q, op))
                return;
            pthread_mutex_lock(&q->mu);
        }
        q->head = op->next;
        if (!q->head)
            q->tail = NULL;
        q->running = op;
        pthread_mutex_unlock(&q->mu);
        int engine = eng_op_engine(op, q->device);
        if (engine < 0) {
            status = eng_execute(q, op);
            done = op;
            continue;
        }
        sim_engine *claimed = run_here(q, op, engine);
        if (claimed) {
            status = eng_execute(q, op);
            release_engine(claimed);
            done = op;
            continue;
        }
        if (engine_push(q->device, engine, q, op) == 0)
            return;
        /* No thread for the engine: the op fails, and the queue goes on. */
        status = ARSIM_ERR_OUT_OF_MEMORY;
        done = op;
    }
}

int arsim_engine_threads(void) { return atomic_load(&g_engine_threads); }

int eng_engine_idle_ms(void) { return atomic_load(&g_engine_idle_ms); }

void arsim_set_engine_idle_ms(int ms) { atomic_store(&g_engine_idle_ms, ms > 0 ? ms : 1000); }

/* ---- the floor: one hand-off there and back, for benchmarks */

/* Two threads taking turns through a mutex and a condition variable each
 * way, as engine_push wakes an engine and an event wakes a host waiter; the
 * second thread runs at the engine threads' nice value. */
typedef struct handoff {
    pthread_mutex_t mu;
    pthread_cond_t to_pong, to_ping;
    int turn; /* 1: the pong thread's */
    int rounds;
} handoff;

static void *handoff_pong(void *arg)
{
    handoff *h = arg;
    set_engine_nice();
    pthread_mutex_lock(&h->mu);
    for (int i = 0; i < h->rounds; i++) {
        while (h->turn != 1)
            pthread_cond_wait(&h->to_pong, &h->mu);
        h->turn = 0;
        pthread_cond_signal(&h->to_ping);
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

uint64_t arsim_handoff_ns(int rounds, int gap_us)
{
    if (rounds < 1 || gap_us < 0)
        return 0;
    uint64_t *took = malloc((size_t)rounds * sizeof *took);
    if (!took)
        return 0;
    handoff h = {.turn = 0, .rounds = rounds};
    pthread_mutex_init(&h.mu, NULL);
    pthread_cond_init(&h.to_pong, NULL);
    pthread_cond_init(&h.to_ping, NULL);
    pthread_t th;
    uint64_t median = 0;
    if (pthread_create(&th, NULL, handoff_pong, &h) == 0) {
        for (int i = 0; i < rounds; i++) {
            if (gap_us)
                eng_sleep_until_ns(arsim_now_ns() + (uint64_t)gap_us * 1000);
            uint64_t t0 = arsim_now_ns();
            pthread_mutex_lock(&h.mu);
            h.turn = 1;
            pthread_cond_signal(&h.to_pong);
            while (h.turn != 0)
                pthread_cond_wait(&h.to_ping, &h.mu);
            pthread_mutex_unlock(&h.mu);
            took[i] = arsim_now_ns() - t0;
        }
        pthread_join(th, NULL);
        qsort(took, (size_t)rounds, sizeof *took, cmp_u64);
        median = took[rounds / 2];
    }
    pthread_cond_destroy(&h.to_ping);
    pthread_cond_destroy(&h.to_pong);
    pthread_mutex_destroy(&h.mu);
    free(took);
    return median;
}
