/* Events: records (a queue reached a point; CUDA's events) and signals (a
 * flag set by a queue or by the host; Level Zero's), and the waits on them. */
#define _GNU_SOURCE
#include "engine_internal.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>

struct arsim_event {
    _Atomic int refs;
    unsigned flags;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int waiters; /* guarded by mu: blocked waiters to wake */
    _Atomic uint64_t rec_submitted;
    _Atomic uint64_t rec_done; /* the highest record that has executed */
    _Atomic int rec_status;
    /* Records on several queues may execute out of order, and a wait is for
     * one record (CUDA: later records do not affect a wait already made), so
     * executed records are also kept as a floor (every record up to it has
     * executed) plus those executed above it (guarded by mu). */
    _Atomic uint64_t rec_floor;
    uint64_t *above;
    size_t n_above, cap_above;
    _Atomic uint64_t timestamp;
    _Atomic uint64_t model_ts; /* device time of the last record/signal, timing or not */
    _Atomic int has_timestamp;
    _Atomic int signaled;
    _Atomic int sig_status;
};

arsim_status arsim_event_create(unsigned flags, arsim_event **out)
{
    if (!out)
        return ARSIM_ERR_INVALID_VALUE;
    arsim_event *e = calloc(1, sizeof *e);
    if (!e)
        return ARSIM_ERR_OUT_OF_MEMORY;
    atomic_init(&e->refs, 1);
    e->flags = flags;
    pthread_mutex_init(&e->mu, NULL);
    eng_cond_init_monotonic(&e->cv);
    *out = e;
    return ARSIM_OK;
}

void arsim_event_retain(arsim_event *e) { atomic_fetch_add(&e->refs, 1); }

void arsim_event_release(arsim_event *e)
{
    if (e && atomic_fetch_sub(&e->refs, 1) == 1) {
        free(e->above);
        pthread_mutex_destroy(&e->mu);
        pthread_cond_destroy(&e->cv);
        free(e);
    }
}

unsigned arsim_event_flags(const arsim_event *e) { return e->flags; }

arsim_status arsim_event_query(const arsim_event *e)
{
    uint64_t want = atomic_load_explicit(&e->rec_submitted, memory_order_acquire);
    uint64_t done = atomic_load_explicit(&e->rec_done, memory_order_acquire);
    if (done < want)
        return ARSIM_ERR_NOT_READY;
    return (arsim_status)atomic_load_explicit(&e->rec_status, memory_order_acquire);
}

typedef int (*event_pred)(arsim_event *e, uint64_t arg);

static int pred_signaled(arsim_event *e, uint64_t unused)
{
    (void)unused;
    return atomic_load_explicit(&e->signaled, memory_order_acquire) != 0;
}

/* Yields until pred(e, arg) holds.  Returns 0, or -1 past the timeout (< 0: none). */
static int spin_until(arsim_event *e, event_pred pred, uint64_t arg, int64_t timeout_ns)
{
    uint64_t deadline = timeout_ns < 0 ? UINT64_MAX : arsim_now_ns() + (uint64_t)timeout_ns;
    for (unsigned i = 0; !pred(e, arg); i++) {
        if ((i & 63) == 63 && arsim_now_ns() >= deadline)
            return -1;
        sched_yield();
    }
    return 0;
}

/* Sleeps until pred(e, arg), called with e->mu held, holds.  Returns 0, or
 * -1 past the timeout (< 0: none). */
static int block_until(arsim_event *e, event_pred pred, uint64_t arg, int64_t timeout_ns)
{
    struct timespec ts;
    if (timeout_ns >= 0)
        eng_abs_deadline(&ts, timeout_ns);
    int rc = 0;
    pthread_mutex_lock(&e->mu);
    e->waiters++;
    while (!pred(e, arg)) {
        if (timeout_ns < 0) {
            pthread_cond_wait(&e->cv, &e->mu);
        } else if (pthread_cond_timedwait(&e->cv, &e->mu, &ts) == ETIMEDOUT) {
            rc = pred(e, arg) ? 0 : -1;
            break;
        }
    }
    e->waiters--;
    pthread_mutex_unlock(&e->mu);
    return rc;
}

/* Blocks (or spins) until pred(e, arg) holds.  Returns 0, or -1 on timeout. */
static int event_block(arsim_event *e, event_pred pred, uint64_t arg, arsim_wait_mode mode,
                       int64_t timeout_ns)
{
    if (pred(e, arg))
        return 0;
    if (timeout_ns == 0)
        return -1; /* a query (zeEventQueryStatus): never yield the caller's thread */
    if (mode == ARSIM_WAIT_SPIN)
        return spin_until(e, pred, arg, timeout_ns);
    return block_until(e, pred, arg, timeout_ns);
}

static void event_wake_now(arsim_event *e)
{
    pthread_mutex_lock(&e->mu);
    if (e->waiters)
        pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
}

/* Host threads blocked on an event that a queue signals while this thread
 * moves the queue on are woken once it has let the queue go (eng_drive), not
 * at the signal.  Woken at the signal, such a thread (an application waiter
 * that the signal releases) tends to take this thread's CPU at once, and the
 * queue stays held, with the work the woken thread enqueues on it next
 * waiting, until the scheduler brings this thread back: measured, 0.6 ms
 * now and then, which on a pipeline put one stream's copy behind two later
 * ones (benchmarks/bench_backends.py row 5).  Polling threads see the signal
 * at once; only the futex wake-up waits, for a few microseconds. */
#define DEFERRED_WAKES 32
static __thread int tls_defer_wakes;
static __thread arsim_event *tls_wakes[DEFERRED_WAKES];
static __thread int tls_nwakes;

static void event_wake(arsim_event *e)
{
    if (!tls_defer_wakes || tls_nwakes == DEFERRED_WAKES) {
        event_wake_now(e);
        return;
    }
    arsim_event_retain(e); /* the op that signalled it may be freed first */
    tls_wakes[tls_nwakes++] = e;
}

void eng_defer_wakes(int on) { tls_defer_wakes = on; }

void eng_flush_wakes(void)
{
    while (tls_nwakes) {
        arsim_event *e = tls_wakes[--tls_nwakes];
        event_wake_now(e);
        arsim_event_release(e);
    }
}

static int record_executed_locked(arsim_event *e, uint64_t seq);

/* A later record executing first, on another queue, does not count. */
int eng_event_record_done(arsim_event *e, uint64_t seq)
{
    if (atomic_load_explicit(&e->rec_floor, memory_order_acquire) >= seq)
        return 1;
    pthread_mutex_lock(&e->mu);
    int done = record_executed_locked(e, seq);
    pthread_mutex_unlock(&e->mu);
    return done;
}

/* CUDA: waits for the record that was the latest when the call was made,
 * never for one submitted later (cuEventSynchronize). */
arsim_status arsim_event_wait(arsim_event *e, arsim_wait_mode mode, int64_t timeout_ns)
{
    if (arsim_forked())
        return ARSIM_ERR_FORKED; /* the engine threads did not survive fork() */
    uint64_t target = atomic_load_explicit(&e->rec_submitted, memory_order_acquire);
    if (target == 0 || eng_event_record_done(e, target))
        return (arsim_status)atomic_load_explicit(&e->rec_status, memory_order_acquire);
    int rc = mode == ARSIM_WAIT_SPIN ? spin_until(e, eng_event_record_done, target, timeout_ns)
                                     : block_until(e, record_executed_locked, target, timeout_ns);
    if (rc != 0)
        return ARSIM_ERR_TIMEOUT;
    return (arsim_status)atomic_load_explicit(&e->rec_status, memory_order_acquire);
}

arsim_status arsim_event_timestamp(const arsim_event *e, uint64_t *ns)
{
    if (!(e->flags & ARSIM_EVENT_TIMING))
        return ARSIM_ERR_INVALID_VALUE;
    if (arsim_event_query(e) == ARSIM_ERR_NOT_READY || !atomic_load(&e->has_timestamp))
        return ARSIM_ERR_NOT_READY;
    *ns = atomic_load(&e->timestamp);
    return ARSIM_OK;
}

int arsim_event_is_signaled(const arsim_event *e)
{
    return atomic_load_explicit(&e->signaled, memory_order_acquire) != 0;
}

void eng_event_set_signaled(arsim_event *e, int status, uint64_t when)
{
    atomic_store(&e->model_ts, when);
    if (e->flags & ARSIM_EVENT_TIMING) {
        atomic_store(&e->timestamp, when);
        atomic_store(&e->has_timestamp, 1);
    }
    atomic_store_explicit(&e->sig_status, status, memory_order_release);
    atomic_store_explicit(&e->signaled, 1, memory_order_release);
    event_wake(e);
}

void arsim_event_host_signal(arsim_event *e)
{
    eng_event_set_signaled(e, ARSIM_OK, arsim_now_ns());
    eng_wake_parked(); /* queues waiting on device for it */
}

void arsim_event_host_reset(arsim_event *e)
{
    atomic_store(&e->signaled, 0);
    atomic_store(&e->sig_status, 0);
}

arsim_status arsim_event_wait_signaled(arsim_event *e, arsim_wait_mode mode, int64_t timeout_ns)
{
    if (arsim_forked())
        return ARSIM_ERR_FORKED; /* the engine threads did not survive fork() */
    if (event_block(e, pred_signaled, 0, mode, timeout_ns) != 0)
        return ARSIM_ERR_TIMEOUT;
    return (arsim_status)atomic_load_explicit(&e->sig_status, memory_order_acquire);
}

/* Caller holds e->mu. */
static int record_executed_locked(arsim_event *e, uint64_t seq)
{
    if (atomic_load_explicit(&e->rec_floor, memory_order_acquire) >= seq)
        return 1;
    for (size_t i = 0; i < e->n_above; i++)
        if (e->above[i] == seq)
            return 1;
    return 0;
}

/* Caller holds e->mu. */
static void record_mark_executed(arsim_event *e, uint64_t seq)
{
    uint64_t floor = atomic_load(&e->rec_floor);
    if (seq <= floor)
        return;
    if (seq > floor + 1) {
        if (e->n_above == e->cap_above) {
            size_t cap = e->cap_above ? e->cap_above * 2 : 8;
            uint64_t *grown = realloc(e->above, cap * sizeof *grown);
            if (!grown) { /* out of memory: waits for earlier records pass early */
                atomic_store_explicit(&e->rec_floor, seq, memory_order_release);
                e->n_above = 0;
                return;
            }
            e->above = grown;
            e->cap_above = cap;
        }
        e->above[e->n_above++] = seq;
        return;
    }
    floor = seq;
    for (size_t i = 0; i < e->n_above;) {
        if (e->above[i] == floor + 1) {
            floor++;
            e->above[i] = e->above[--e->n_above];
            i = 0;
        } else {
            i++;
        }
    }
    atomic_store_explicit(&e->rec_floor, floor, memory_order_release);
}

/* Also the event's latest record state. */
void eng_event_complete_record(arsim_event *e, uint64_t seq, int status, uint64_t when)
{
    atomic_store(&e->model_ts, when);
    if (e->flags & ARSIM_EVENT_TIMING) {
        atomic_store(&e->timestamp, when);
        atomic_store(&e->has_timestamp, 1);
    }
    pthread_mutex_lock(&e->mu);
    if (seq >= atomic_load(&e->rec_done)) {
        atomic_store_explicit(&e->rec_status, status, memory_order_release);
        atomic_store_explicit(&e->rec_done, seq, memory_order_release);
    }
    record_mark_executed(e, seq);
    atomic_store_explicit(&e->sig_status, status, memory_order_release);
    atomic_store_explicit(&e->signaled, 1, memory_order_release);
    pthread_mutex_unlock(&e->mu);
    /* After the unlock: a waiter checks its condition under mu before it
     * blocks, so a wake-up made later is never lost. */
    event_wake(e);
}

uint64_t eng_event_new_record(arsim_event *e)
{
    return atomic_fetch_add(&e->rec_submitted, 1) + 1;
}

uint64_t eng_event_last_record(const arsim_event *e) { return atomic_load(&e->rec_submitted); }
uint64_t eng_event_model_ts(const arsim_event *e) { return atomic_load(&e->model_ts); }

int eng_event_signal_status(const arsim_event *e)
{
    return atomic_load_explicit(&e->sig_status, memory_order_acquire);
}

/* ---- a check of the deferred wake-ups, for tests */

typedef struct wake_probe {
    arsim_event *e;
    _Atomic uint64_t woke_ns;
    _Atomic int status;
} wake_probe;

static void *wake_probe_wait(void *arg)
{
    wake_probe *p = arg;
    atomic_store(&p->status, arsim_event_wait_signaled(p->e, ARSIM_WAIT_BLOCK, 10000000000LL));
    atomic_store(&p->woke_ns, arsim_now_ns());
    return NULL;
}

int64_t arsim_deferred_wake_ns(int hold_us)
{
    if (hold_us < 0)
        return INT64_MIN;
    wake_probe p = {0};
    if (arsim_event_create(0, &p.e) != ARSIM_OK)
        return INT64_MIN;
    pthread_t th;
    int64_t result = INT64_MIN;
    if (pthread_create(&th, NULL, wake_probe_wait, &p) != 0)
        goto out;
    /* Until the waiter blocks (a waiter that polls would see the signal). */
    for (int blocked = 0; !blocked;) {
        pthread_mutex_lock(&p.e->mu);
        blocked = p.e->waiters > 0;
        pthread_mutex_unlock(&p.e->mu);
        if (!blocked)
            sched_yield();
    }
    eng_defer_wakes(1); /* as eng_drive moves a queue on */
    eng_event_set_signaled(p.e, ARSIM_OK, arsim_now_ns());
    eng_sleep_until_ns(arsim_now_ns() + (uint64_t)hold_us * 1000);
    uint64_t flushed = arsim_now_ns();
    eng_flush_wakes();
    eng_defer_wakes(0);
    pthread_join(th, NULL);
    if (atomic_load(&p.status) == ARSIM_OK)
        result = (int64_t)(atomic_load(&p.woke_ns) - flushed);
out:
    arsim_event_release(p.e);
    return result;
}
