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
 * No thread ever blocks on a queue's behalf (the host-function thread runs
 * user code, which may), so threads are O(devices), whatever the number of
 * queues, and a wait costs nothing until it is satisfied.
 */
#define _GNU_SOURCE
#include "engine_internal.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
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
    move_on(q, done, status);
    while (tls_todo) {
        arsim_queue *next = tls_todo;
        tls_todo = next->todo_next;
        move_on(next, NULL, ARSIM_OK);
    }
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

static void *engine_main(void *arg)
{
    sim_engine *eng = arg;
    static const char *const names[ENGINE_COUNT] = {"compute", "h2d", "d2h", "hostfn"};
    char name[16];
    snprintf(name, sizeof name, "arsim-%s%d", names[eng->index], eng->device);
    pthread_setname_np(pthread_self(), name);
    /* A GPU's engines do not take the host's CPU; the sim's must, but they
     * give way to the application's threads (its event loop first) when both
     * want a core, so that a busy sim does not show up as a stalled loop.
     * Linux applies a nice value per thread; raising it needs no privilege.
     * The base is the main thread's (the pid names it), not this thread's
     * creator's: an engine thread started by another engine thread would
     * otherwise inherit its raised value and add to it. */
    errno = 0;
    int nice_now = getpriority(PRIO_PROCESS, (id_t)getpid());
    if (errno == 0)
        setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), nice_now + 5 > 19 ? 19 : nice_now + 5);
    for (;;) {
        pthread_mutex_lock(&eng->mu);
        if (!eng->head) {
            /* Idle: end after a while, so that a process that stopped using
             * the device holds none of its threads; engine_push starts
             * another. */
            struct timespec until;
            eng_abs_deadline(&until, (int64_t)atomic_load(&g_engine_idle_ms) * 1000000);
            while (!eng->head) {
                if (pthread_cond_timedwait(&eng->cv, &eng->mu, &until) == ETIMEDOUT &&
                    !eng->head) {
                    eng->started = 0;
                    atomic_fetch_sub(&g_engine_threads, 1);
                    pthread_mutex_unlock(&eng->mu);
                    return NULL;
                }
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
        pthread_mutex_unlock(&eng->mu);
        op->next = NULL;
        arsim_queue *q = op->queue;
        eng_drive(q, op, eng_execute(q, op));
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
        if (engine_push(q->device, engine, q, op) == 0)
            return;
        /* No thread for the engine: the op fails, and the queue goes on. */
        status = ARSIM_ERR_OUT_OF_MEMORY;
        done = op;
    }
}

int arsim_engine_threads(void) { return atomic_load(&g_engine_threads); }

void arsim_set_engine_idle_ms(int ms) { atomic_store(&g_engine_idle_ms, ms > 0 ? ms : 1000); }
