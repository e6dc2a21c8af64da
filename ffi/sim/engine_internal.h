/* What the engine's own files (ffi/sim/engine_*.c) share with each other.
 *
 * engine.h is the engine's interface to the front ends; this header is not
 * for them.  Every function and variable declared here is named eng_* and is
 * hidden, so the drivers export exactly engine.h's test hooks, whichever
 * file of the engine defines a thing (tests/ffi/test_sim_engine_files.py).
 * ffi/sim/README.md says what each file holds.
 */
#ifndef ARSIM_ENGINE_INTERNAL_H
#define ARSIM_ENGINE_INTERNAL_H

#include "engine.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#define ENG_HIDDEN __attribute__((visibility("hidden")))

/* ------------------------------------------------------ engine_config.c */

/* One engine of a device and the thread that runs its ops (see
 * engine_threads.c).  Ops of equal priority run in the order they became
 * ready (FIFO), so three queues feeding one engine take turns instead of one
 * starving the others; a higher-priority queue's ready op goes first. */
typedef struct sim_engine {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    arsim_op *head, *tail; /* ready ops, linked through op->next */
    int started;           /* the thread exists (guarded by mu) */
    /* An op of this engine is running (guarded by mu): on its thread, or on
     * whichever thread claimed the idle engine for a small op (see
     * engine_threads.c, run_here). */
    int busy;
    int device;
    int index;
    /* The timing model's end of the engine's last op.  Guarded by tl_mu: a
     * peer copy running on another device's engine books this one too. */
    pthread_mutex_t tl_mu;
    uint64_t model_end;
} sim_engine;

/* The engines of a device.  ENGINE_HOST is not hardware: it is the driver
 * thread that runs host functions (CUDA runs them on one thread too). */
enum { ENGINE_COMPUTE = 0, ENGINE_H2D = 1, ENGINE_D2H = 2, ENGINE_HOST = 3, ENGINE_COUNT = 4 };

typedef struct sim_device {
    int ordinal;
    uint64_t total;
    _Atomic uint64_t used;
    _Atomic int sticky;
    _Atomic int fault_oom;
    _Atomic int fault_launch;
    _Atomic int fault_illegal;
    sim_engine engines[ENGINE_COUNT];
    pthread_mutex_t qmu; /* guards the queue list */
    arsim_queue *queues;
} sim_device;

#define ENG_MAX_KERNEL_THREADS 64

/* Set once, when the library loads (eng_ensure_init), and only read after. */
extern ENG_HIDDEN int eng_ndev;
extern ENG_HIDDEN sim_device *eng_dev;
extern ENG_HIDDEN size_t eng_page;
extern ENG_HIDDEN int eng_sanitize;              /* ARUNTIME_SIM_SANITIZE */
extern ENG_HIDDEN uint32_t eng_kernel_threads;   /* ARUNTIME_SIM_KERNEL_THREADS */

ENG_HIDDEN void eng_ensure_init(void);
/* The device, or NULL for an ordinal out of range. */
ENG_HIDDEN sim_device *eng_dev_get(int ordinal);
/* Takes one unit of an injected fault (a sim_device counter), if any is pending. */
ENG_HIDDEN int eng_take_fault(_Atomic int *slot);

ENG_HIDDEN void eng_sleep_until_ns(uint64_t deadline);
/* ts = now + timeout_ns on CLOCK_MONOTONIC, for eng_cond_init_monotonic's waits. */
ENG_HIDDEN void eng_abs_deadline(struct timespec *ts, int64_t timeout_ns);
ENG_HIDDEN void eng_cond_init_monotonic(pthread_cond_t *cv);

/* The modeled duration of an op, in ns (0: fast).  is_copy: 0 no, 1 a copy,
 * 2 a peer copy (the peer link's bandwidth). */
ENG_HIDDEN uint64_t eng_modeled_ns(size_t bytes, int is_copy);
/* The engine a copy in this direction runs on. */
ENG_HIDDEN int eng_copy_engine(arsim_copy_dir dir);
/* The largest copy or memset an idle engine runs on the thread that moves
 * its queue on (ARUNTIME_SIM_INLINE_BYTES, arsim_set_inline_bytes). */
ENG_HIDDEN size_t eng_inline_bytes(void);
/* How many nice levels the engine threads run below the main thread
 * (ARUNTIME_SIM_ENGINE_NICE, 0..19). */
ENG_HIDDEN int eng_engine_nice(void);

/* ---------------------------------------- engine_mappings.c, engine_memory.c */

/* Bumped whenever an allocation goes, so per-thread caches of "the last
 * allocation hit" notice without taking the registry lock. */
extern ENG_HIDDEN _Atomic uint64_t eng_mem_epoch;

/* Maps size bytes and a guard region after them; fills a->map, map_len, data_len, base. */
ENG_HIDDEN int eng_map_alloc(size_t size, arsim_alloc *a);
/* Unmaps a's mapping, or with the sanitizer keeps it inaccessible (quarantine). */
ENG_HIDDEN void eng_unmap_alloc(const arsim_alloc *a);
/* The quarantined (freed) allocation whose mapping holds addr. */
ENG_HIDDEN int eng_quarantine_find(uintptr_t addr, arsim_alloc *out);
/* The live allocation nearest to addr and how far addr is from it (0:
 * inside it); 0 if there is none. */
ENG_HIDDEN int eng_mem_nearest(uintptr_t addr, arsim_alloc *out, uintptr_t *dist);
/* A new allocation's serial (1, 2, ...; never reused). */
ENG_HIDDEN uint64_t eng_next_serial(void);

/* ------------------------------------------------------ engine_slabs.c */

/* Whether an allocation of size bytes takes a slot of a slab (small, and
 * no sanitizer). */
ENG_HIDDEN int eng_slab_wants(size_t size);
/* A slot for a (size, kind, device, owner, flags filled in); fills the rest. */
ENG_HIDDEN arsim_status eng_slab_alloc(arsim_alloc *a);
/* Frees the live slot based at p whose kind is in kind_mask; *out: what it was. */
ENG_HIDDEN arsim_status eng_slab_free(void *p, unsigned kind_mask, arsim_alloc *out);
/* The live slot holding p (inside its size), or ARSIM_ERR_NOT_FOUND. */
ENG_HIDDEN arsim_status eng_slab_lookup(const void *p, arsim_alloc *out);
/* arsim_mem_refit for a slot: its size becomes n (<= what it was allocated with). */
ENG_HIDDEN arsim_status eng_slab_refit(void *p, size_t n, void **out);
/* The live slot nearest addr among those near it, and the distance. */
ENG_HIDDEN int eng_slab_nearest(uintptr_t addr, arsim_alloc *out, uintptr_t *dist);
/* Whether [lo, hi) overlaps a slab's slots. */
ENG_HIDDEN int eng_slab_overlaps(uintptr_t lo, uintptr_t hi);
/* Frees every slot with this owner tag; returns how many. */
ENG_HIDDEN size_t eng_slab_free_owner(uint64_t owner);

/* ------------------------------------------------------ engine_faults.c */

/* Records a memory fault (addr 0: the place is not known) for
 * arsim_last_fault, naming the kernel this thread runs. */
ENG_HIDDEN void eng_record_fault(uintptr_t addr, int access, int size);
/* The kernel this thread runs from now on and where it was launched, for
 * fault reports (NULL, NULL, -1: none). */
ENG_HIDDEN void eng_fault_set_kernel(const char *name, const char *site, int device);
/* An injected illegal address (arsim_inject_fault) hit kernel op `op`:
 * recorded as its fault, without an address. */
ENG_HIDDEN void eng_record_injected(const arsim_op *op, int device);
/* Poisons device d with a sticky code, ARSIM_ERR_ILLEGAL_ADDRESS or
 * ARSIM_ERR_ASSERT (every device, when arsim_set_sticky_process_wide is on). */
ENG_HIDDEN void eng_poison(sim_device *d, arsim_status code);
/* The launch site arsim_set_launch_site left for this thread's next kernel
 * op (taken: the next op gets none unless it is set again). */
ENG_HIDDEN const char *eng_take_launch_site(void);
/* How many faults have been recorded so far. */
ENG_HIDDEN uint64_t eng_fault_count(void);
/* A kernel failed with ARSIM_ERR_ILLEGAL_ADDRESS: names it in the fault
 * recorded since eng_fault_count() was `before` (an executor's own threads do
 * not know the kernel's name), or records one without an address. */
ENG_HIDDEN void eng_fault_after_kernel(uint64_t before, const char *name, const char *site,
                                       int device);

/* ---------------------------------------------------- engine_readonly.c */

/* The ranges arsim_set_launch_readonly left for this thread's next kernel
 * op, now the op's to free (taken: the next op gets none unless they are
 * set again); NULL if none. */
ENG_HIDDEN arsim_readonly *eng_take_launch_readonly(void);
/* A copy of ro for a cloned op (NULL for NULL); *failed set if out of memory. */
ENG_HIDDEN arsim_readonly *eng_readonly_copy(const arsim_readonly *ro, int *failed);
/* Around one slice of a kernel on this thread: the ranges it may not store
 * into (NULL: none), the kernel's name and launch site for the report and,
 * after it, whether it did (1, and forgets it). */
ENG_HIDDEN void eng_readonly_enter(const arsim_readonly *ro, const char *kernel,
                                   const char *site);
ENG_HIDDEN int eng_readonly_leave(void);

/* ------------------------------------------------------ engine_events.c */

/* The sequence number of a record of e submitted now. */
ENG_HIDDEN uint64_t eng_event_new_record(arsim_event *e);
/* The sequence number of e's latest submitted record (0: none). */
ENG_HIDDEN uint64_t eng_event_last_record(const arsim_event *e);
/* Whether record `seq` itself has executed. */
ENG_HIDDEN int eng_event_record_done(arsim_event *e, uint64_t seq);
/* The device time of e's last record or signal. */
ENG_HIDDEN uint64_t eng_event_model_ts(const arsim_event *e);
/* The status the event was last signaled with (0 until then, and after a reset). */
ENG_HIDDEN int eng_event_signal_status(const arsim_event *e);
/* Record `seq` executed at device time `when`, with the queue's status. */
ENG_HIDDEN void eng_event_complete_record(arsim_event *e, uint64_t seq, int status,
                                          uint64_t when);
ENG_HIDDEN void eng_event_set_signaled(arsim_event *e, int status, uint64_t when);
/* While on, wake-ups of host threads blocked on events signalled by this
 * thread wait for eng_flush_wakes (see engine_events.c). */
ENG_HIDDEN void eng_defer_wakes(int on);
ENG_HIDDEN void eng_flush_wakes(void);

/* ----------------------------------------------------- engine_modules.c */

ENG_HIDDEN void eng_module_retain(arsim_module *m);
ENG_HIDDEN void eng_module_release(arsim_module *m);

/* --------------------------------------------------------- engine_ops.c */

enum op_kind {
    OP_COPY = 1,
    OP_COPY2D,
    OP_MEMSET8,
    OP_FILL,
    OP_KERNEL,
    OP_HOST_FN,
    OP_RELEASE_FN,
    OP_MARKER,
    OP_EVENT_RECORD,
    OP_EVENT_WAIT,
    OP_EVENT_SIGNAL,
    OP_EVENT_RESET,
    OP_EVENT_WAIT_SIGNALED,
    OP_QUEUE_WAIT,
};

struct arsim_op {
    arsim_op *next;
    enum op_kind kind;
    arsim_copy_dir dir;
    void *dst;
    const void *src;
    void *owned; /* freed with the op: staged source, fill pattern, kernel args */
    size_t n, dst_pitch, src_pitch, width, height;
    uint8_t value;
    const arsim_kernel *kernel;
    ar_dim3 grid, block;
    uint32_t shared_bytes;
    void (*fn)(void *);
    void *user;
    const char *site; /* a kernel's launch site (arsim_set_launch_site), or NULL */
    arsim_readonly *ro; /* a kernel's ranges declared read-only, owned; or NULL */
    uint64_t tag;     /* a kernel's arsim_op_set_tag */
    arsim_event *event;
    arsim_queue *other;
    int src_dev, dst_dev; /* a peer copy's two devices */
    uint64_t target; /* record seq, or the seq to wait for */
    uint64_t submit_ns; /* when it was submitted: the earliest it can start */
    arsim_queue *queue; /* while dispatched to an engine: the queue it runs for */
};

/* A copy of an op (a graph's, for replay) with its own staged data; NULL if
 * out of memory. */
ENG_HIDDEN arsim_op *eng_op_clone(const arsim_op *src);
/* Whether op reads or writes [lo, hi) (a kernel: gets a pointer into it). */
ENG_HIDDEN int eng_op_uses(const arsim_op *op, uintptr_t lo, uintptr_t hi);

/* ------------------------------------------------------ engine_queues.c */

struct arsim_queue {
    _Atomic int refs;
    int device;
    int priority;
    pthread_mutex_t mu;
    pthread_cond_t cv_done; /* an op completed */
    int done_waiters;       /* guarded by mu */
    arsim_op *head, *tail;
    int destroyed;
    int active;    /* someone holds the token (see engine_threads.c); guarded by mu */
    int finalized; /* guarded by mu */
    arsim_op *parked_on;    /* the head op, a wait, while parked (g_park_mu) */
    arsim_queue *park_next; /* the park list (g_park_mu), or a wake-up batch */
    arsim_queue *todo_next; /* a thread's queues to move on (tls_todo) */
    _Atomic uint64_t submitted;
    _Atomic uint64_t completed;
    _Atomic int pending_err; /* first error not yet reported */
    _Atomic uint64_t model_time; /* device time at which the last executed op ended */
    arsim_graph *capture;
    arsim_op *running; /* the op executing now, guarded by mu */
    arsim_queue *dev_next, *dev_prev; /* device list, guarded by device qmu */
};

ENG_HIDDEN void eng_queue_retain(arsim_queue *q);
ENG_HIDDEN void eng_queue_release(arsim_queue *q);
/* A destroyed queue has drained: it leaves its device. */
ENG_HIDDEN void eng_queue_finalize(arsim_queue *q);

/* ------------------------------------------- engine_exec.c, engine_kernels.c */

/* Where an op run by a queue of `device` runs: an ENGINE_* index, or -1 (it
 * takes no device time). */
ENG_HIDDEN int eng_op_engine(const arsim_op *op, int device);
/* Runs one op for q (on its engine's thread, if it has one); returns its status. */
ENG_HIDDEN int eng_execute(arsim_queue *q, arsim_op *op);
/* Runs a kernel op's grid; 0, ARSIM_ERR_ILLEGAL_ADDRESS or another failure. */
ENG_HIDDEN int eng_run_kernel(const arsim_op *op, int device);

/* ----------------------------------------------------- engine_threads.c */

/* Moves q on (the caller holds its token; `done` is the op that just ran,
 * with its status, or NULL), then every queue unblocked meanwhile. */
ENG_HIDDEN void eng_drive(arsim_queue *q, arsim_op *done, int status);
/* After anything a parked wait may be waiting for. */
ENG_HIDDEN void eng_wake_parked(void);
/* How long an idle engine thread waits for work before it ends (ms); the
 * kernel helpers (engine_kernels.c) wait as long. */
ENG_HIDDEN int eng_engine_idle_ms(void);

#endif /* ARSIM_ENGINE_INTERNAL_H */
