/* The simulated device shared by the software drivers (cuda-sim, levelzero-sim).
 *
 * Backend-neutral: a front end (ffi/cuda/sim, ffi/levelzero/sim) translates its
 * API onto these calls and maps arsim_status to its own result codes.
 *
 * Model
 * -----
 * - Devices: ARUNTIME_SIM_DEVICES of them (default 1).  Device memory is host
 *   memory (256-byte aligned), so a device address is a host address and every
 *   pointer is "unified".  Each device has a memory limit
 *   (ARUNTIME_SIM_MEMORY_MB, default 4096); allocating past it fails with
 *   ARSIM_ERR_OUT_OF_MEMORY.  Pinned host memory has no limit.
 * - Queues: in-order lists of ops; a queue has no thread of its own.
 * - Engines: each device has one compute engine and ARUNTIME_SIM_COPY_ENGINES
 *   copy engines (default 2: host-to-device on one, device-to-host on the
 *   other, like a GPU with two DMA engines; with 1, every copy shares one).
 *   Each engine is one thread, started on first use, that runs the ops
 *   ready for it in FIFO order, so two H2D copies on two queues serialize
 *   while a copy overlaps a kernel on another queue.  Among ready ops, those
 *   of a higher-priority queue (a lower number, as in CUDA) go first; a
 *   running op is never preempted.  D2D copies use the
 *   H2D engine; memsets and kernels the compute engine.  Host functions run
 *   on one more thread per device, in order.  An engine's thread ends after
 *   a second without work and starts again when work comes.  Engine threads
 *   run at the main thread's nice value (ARUNTIME_SIM_ENGINE_NICE levels
 *   below it), so that a busy neighbour slows the device no more than the
 *   application.  A copy or memset of at most ARUNTIME_SIM_INLINE_BYTES
 *   (64 KiB) whose engine is idle, with no timing model, runs on the thread
 *   that moves its queue on instead (the submitting thread when the queue
 *   was idle), as a GPU's engine starts an op without a thread to wake; each
 *   drive of the queues runs at most that many bytes of them.  Ops that take no device time
 *   (markers, event records, signals, resets) run on whichever thread moves
 *   the queue on: the engine thread that finished the op before, or the
 *   submitting thread when the queue was idle.  A device-side wait that is
 *   not yet satisfied parks its queue, holding no thread.  So the sim's
 *   threads are at most 4 per device, whatever the number of queues.
 * - Kernels run on the compute engine's thread; a big grid is cut into chunks
 *   of blocks that the engine's thread and ARUNTIME_SIM_KERNEL_THREADS - 1
 *   helper threads per device (default: the online cores; made once, ending
 *   when idle) claim as they get to them, so the engine never waits for a
 *   helper that has not started.
 * - Timing: an engine op (copy, memset, fill, kernel) lasts at least
 *   latency_us + bytes / (gbps * 1e9) seconds (bytes only for copies), taken
 *   from ARUNTIME_SIM_OP_LATENCY_US and ARUNTIME_SIM_COPY_GBPS at load or from
 *   arsim_set_timing().  A copy between two devices (arsim_op_copy_peer)
 *   takes the peer link's bandwidth instead, ARUNTIME_SIM_PEER_GBPS (or
 *   arsim_set_peer_gbps), and occupies a copy engine of each device.  Unset (or <= 0) means fast: the CPU work only.
 *   Event records/signals/waits and markers cost nothing; host functions
 *   cost what they take.
 * - Device time: event timestamps and the model use a device clock on
 *   CLOCK_MONOTONIC.  An op starts at the latest of its submission, the end
 *   of its queue's previous op and the end of its engine's previous op, and
 *   ends after the longer of its modeled duration and its real CPU work.
 *   Threads sleep until that time, but a late wake-up does not delay later
 *   ops' device times, so modeled timelines (and elapsed times between
 *   events) are exact even on a loaded machine.  Without a model, device
 *   time is the real completion time.
 * - Errors: a failed op sets its queue's pending error (the first one
 *   wins).  It is reported once: by the next event record (or signal) that
 *   executes on that queue, which carries it to every waiter of that event,
 *   or else by the next arsim_queue_synchronize / arsim_queue_take_error.
 *   Ops after a non-sticky failure run normally.
 *   A sticky fault (ARSIM_ERR_ILLEGAL_ADDRESS) poisons the device (every
 *   device, with arsim_set_sticky_process_wide): every later op on it fails
 *   with that error (ops still complete, so nobody hangs) and
 *   arsim_device_sticky() reports it until arsim_device_reset().
 * - Memory faults: every allocation of more than 64 KiB is its own mapping
 *   followed by a guard region, so a kernel that runs past an allocation's
 *   last page faults.  Smaller ones are slots of slabs (engine_slabs.c: one
 *   mapping per 1 MiB or more of slots of one size class, so a million live
 *   allocations do not run out of the process's memory maps); each slot is
 *   followed by a red zone as long as its class, that no allocation gets,
 *   so the interpreters' bounds checks catch an access past a small
 *   allocation before it reaches the next one.  A freed slot is reused
 *   first, as a GPU's allocator does.  A
 *   SIGSEGV/SIGBUS on a thread running a kernel is caught there (siglongjmp
 *   out of the kernel): the op fails with the sticky ARSIM_ERR_ILLEGAL_ADDRESS
 *   and arsim_last_fault() says where.  Faults elsewhere go to the handler
 *   that was installed before the engine's.
 * - Sanitizer (ARUNTIME_SIM_SANITIZE=1): each allocation, small ones too
 *   (no slabs), ends exactly at its guard page, so any byte past its end
 *   faults, and freed memory is
 *   kept inaccessible (quarantined, up to 1 GiB / 65536 allocations)
 *   instead of unmapped, so any later access to it faults.  Each fault is
 *   also printed to stderr.  Bytes before an allocation's start are caught
 *   by the interpreters' arsim_check_access, and by host kernels only when
 *   they land outside the allocation's pages.  Two process memory maps per
 *   allocation (and per quarantined one) bound the live allocations to some
 *   32,000 under vm.max_map_count's default 65530.
 * - Every function is thread-safe.  Query functions marked lock-free only do
 *   atomic loads.
 *
 * Symbols here are hidden (each driver links its own copy of the engine);
 * only the test hooks marked ARSIM_EXPORT are exported from the driver.
 */
#ifndef ARSIM_ENGINE_H
#define ARSIM_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "../kernels/ar_host_abi.h"

#define ARSIM_API __attribute__((visibility("hidden")))
#define ARSIM_EXPORT __attribute__((visibility("default")))

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ status */

typedef enum arsim_status {
    ARSIM_OK = 0,
    ARSIM_ERR_INVALID_VALUE = 1,
    ARSIM_ERR_OUT_OF_MEMORY = 2,
    ARSIM_ERR_INVALID_HANDLE = 3,
    ARSIM_ERR_NOT_READY = 4,
    ARSIM_ERR_LAUNCH_FAILED = 5,   /* non-sticky kernel failure */
    ARSIM_ERR_ILLEGAL_ADDRESS = 6, /* sticky: the device is poisoned */
    ARSIM_ERR_INVALID_IMAGE = 7,   /* module image is not a host shared object */
    ARSIM_ERR_NOT_FOUND = 8,       /* no such kernel in a module */
    ARSIM_ERR_TIMEOUT = 9,         /* a wait with a timeout expired */
    ARSIM_ERR_INVALID_DEVICE = 10,
    ARSIM_ERR_CAPTURING = 11,      /* queue is capturing (front end decides what that means) */
    ARSIM_ERR_NOT_CAPTURING = 12,
    ARSIM_ERR_FORKED = 13,         /* called in a forked child (see arsim_forked) */
    ARSIM_ERR_READONLY_WRITE = 14, /* non-sticky: a kernel stored into memory its
                                    * launch declared read-only (arsim_set_launch_readonly) */
    ARSIM_ERR_ASSERT = 15,         /* sticky: a device-side assert() failed, which
                                    * poisons the device as CUDA_ERROR_ASSERT does */
    ARSIM_ERR_MISALIGNED_ADDRESS = 16, /* sticky: a kernel's load or store of n bytes
                                        * at an address not a multiple of n
                                        * (CUDA_ERROR_MISALIGNED_ADDRESS) */
    ARSIM_ERR_UNKNOWN = 99,
} arsim_status;

ARSIM_API const char *arsim_status_name(arsim_status s);

/* -------------------------------------------------------------- test hooks */
/* Exported from each driver library; callable from tests through ctypes/cffi. */

/* Copy bandwidth in GB/s (<= 0: unlimited) and fixed cost per engine op in
 * microseconds (<= 0: none).  Applies to ops that start after the call. */
ARSIM_EXPORT void arsim_set_timing(double copy_gbps, double op_latency_us);
ARSIM_EXPORT void arsim_get_timing(double *copy_gbps, double *op_latency_us);
/* The peer link's bandwidth in GB/s, for copies between two devices
 * (<= 0: the copy bandwidth above).  ARUNTIME_SIM_PEER_GBPS at load. */
ARSIM_EXPORT void arsim_set_peer_gbps(double gbps);
ARSIM_EXPORT double arsim_get_peer_gbps(void);

/* Fault kinds for arsim_inject_fault. */
#define ARSIM_FAULT_OUT_OF_MEMORY 1   /* next `count` allocations on the device fail */
#define ARSIM_FAULT_LAUNCH_FAILED 2   /* next `count` kernels fail when they execute (non-sticky) */
#define ARSIM_FAULT_ILLEGAL_ADDRESS 3 /* next kernel to execute poisons the device (sticky) */

/* device -1 means every device; count 0 clears that kind.  Returns 0, or -1
 * for a bad device or kind. */
ARSIM_EXPORT int arsim_inject_fault(int device, int kind, int count);
/* Clears every pending injected fault and the sticky state of every device. */
ARSIM_EXPORT void arsim_clear_faults(void);
/* How many devices a sticky fault has poisoned (0: none).  Lock-free. */
ARSIM_EXPORT int arsim_lost_devices(void);
/* Where the next kernel op this thread builds was launched from ("file:line"
 * of the application), for the fault report that names it.  The string is
 * not copied: the caller keeps it alive for as long as the library lives. */
ARSIM_EXPORT void arsim_set_launch_site(const char *site);
/* The last kernel memory fault (an access outside any live allocation):
 * where, which kernel, and the allocation nearest to the address. */
typedef struct arsim_fault_info {
    uint64_t address;
    uint64_t alloc_base; /* 0: no allocation near the address */
    uint64_t alloc_size;
    int64_t offset;      /* address - alloc_base (>= alloc_size: past the end) */
    int32_t device;
    int32_t access;      /* 1 store, 0 load, -1 unknown (a hardware fault) */
    int32_t freed;       /* the allocation had been freed */
    int32_t size;        /* bytes accessed, 0 if unknown */
    char kernel[128];
} arsim_fault_info;
/* 1 and fills *out if a fault happened since load or arsim_clear_faults, else 0. */
ARSIM_EXPORT int arsim_last_fault(arsim_fault_info *out);
/* The last fault as one line of text (empty if none); returns its length,
 * like snprintf. */
ARSIM_EXPORT int arsim_fault_report(char *buf, size_t n);
/* Queues created and not yet gone, all devices: a destroyed queue goes once
 * its work has drained (for leak checks in tests). */
ARSIM_EXPORT int arsim_live_queues(void);
/* Engine threads alive now, all devices: at most 4 per device (compute, two
 * copy engines, host functions), however many queues there are.  Each starts
 * when its engine is first needed and ends after a second idle. */
ARSIM_EXPORT int arsim_engine_threads(void);
/* How long an idle engine thread waits for work before it ends, in ms
 * (default 1000; <= 0 restores it).  For tests. */
ARSIM_EXPORT void arsim_set_engine_idle_ms(int ms);
/* The largest copy or memset (bytes) that an idle engine runs on the thread
 * that moves its queue on, instead of waking its own thread (0: none; < 0
 * restores the default, ARUNTIME_SIM_INLINE_BYTES or 65536).  For tests and
 * benchmarks. */
ARSIM_EXPORT void arsim_set_inline_bytes(int64_t bytes);
/* The physical floor of a wake-up, for benchmarks: the median time (ns) of
 * `rounds` round trips between this thread and a second one (at the engine
 * threads' nice value) over a mutex and a condition variable, the primitive
 * that wakes the engine threads and the host's waiters; each round starts
 * gap_us microseconds after the last ends, so that both threads are asleep.
 * 0 if the thread could not start. */
ARSIM_EXPORT uint64_t arsim_handoff_ns(int rounds, int gap_us);
/* For tests of the deferred wake-ups (engine_events.c): a second thread blocks
 * on an event that this thread signals while moving a queue on, holds the
 * queue hold_us more, then lets it go.  Returns the ns from letting go to the
 * waiter's return: negative if it returned before (woken at the signal);
 * INT64_MIN if the probe could not run or the waiter timed out (10 s). */
ARSIM_EXPORT int64_t arsim_deferred_wake_ns(int hold_us);

/* ------------------------------------------------- memory declared read-only
 *
 * aruntime's race checking lets a launch declare pointer arguments that the
 * kernel only reads (launch(reads=...)); the checker then lets other streams
 * read those bytes at the same time.  The interpreters know every store, so
 * they check the claim: a kernel that stores into a declared range stops
 * there, and its op fails with ARSIM_ERR_READONLY_WRITE.  That is not
 * sticky (the device is fine; the declaration was wrong), and the report
 * (arsim_readonly_report) names the kernel, its launch site and the store.
 * Kernels run through the host ABI (native shared objects) are not checked. */

#define ARSIM_MAX_READONLY 64
/* What the front ends answer for ARSIM_ERR_READONLY_WRITE: a code of the
 * sims' own (neither cuda.h nor ze_api.h has one for it), so that aruntime
 * tells it from any other launch failure. */
#define ARSIM_READONLY_WRITE_RESULT 0x41520001
typedef struct arsim_readonly {
    uint32_t n;
    uint64_t lo[ARSIM_MAX_READONLY], hi[ARSIM_MAX_READONLY];
} arsim_readonly;

/* The next kernel op this thread builds may not store into any of the n
 * ranges [pairs[2i], pairs[2i] + pairs[2i+1]).  n = 0 forgets them.
 * Returns 0, or -1 (nothing kept) if n > ARSIM_MAX_READONLY or a range is
 * empty or wraps around. */
ARSIM_EXPORT int arsim_set_launch_readonly(const uint64_t *pairs, uint32_t n);
/* The declared ranges of the kernel running on this thread, or NULL. */
ARSIM_API const arsim_readonly *arsim_running_readonly(void);
/* Records that the running kernel stored n bytes at p inside ro's range i
 * (the first such store of its slice is reported); the interpreter then
 * stops the kernel as it would on a fault. */
ARSIM_API void arsim_readonly_violation(const arsim_readonly *ro, uint32_t i, uint64_t p,
                                        size_t n);
/* For the interpreters' stores: 1 (and recorded) if [p, p+n) touches a
 * range of ro.  ro is NULL for nearly every launch, so this costs one test. */
static inline int arsim_readonly_hit(const arsim_readonly *ro, uint64_t p, size_t n)
{
    if (!ro)
        return 0;
    for (uint32_t i = 0; i < ro->n; i++)
        if (p < ro->hi[i] && p + n > ro->lo[i]) {
            arsim_readonly_violation(ro, i, p, n);
            return 1;
        }
    return 0;
}
/* The latest report of such a store, as one line; returns its length like
 * snprintf (0: none yet). */
ARSIM_EXPORT int arsim_readonly_report(char *buf, size_t n);

/* ----------------------------------------------------------------- clock */

/* CLOCK_MONOTONIC in nanoseconds; event timestamps use the same clock. */
ARSIM_API uint64_t arsim_now_ns(void);

/* --------------------------------------------------------------- devices */

typedef struct arsim_device_info {
    char name[64];
    uint64_t total_memory;
    uint64_t used_memory;
    uint32_t compute_units; /* ARUNTIME_SIM_COMPUTE_UNITS, default 16 */
    uint32_t copy_engines;  /* 1 or 2 */
} arsim_device_info;

ARSIM_API int arsim_device_count(void);
ARSIM_API arsim_status arsim_device_info_get(int device, arsim_device_info *out);
/* ARSIM_OK, or the sticky error that poisoned the device.  Lock-free. */
ARSIM_API arsim_status arsim_device_sticky(int device);
/* Clears the sticky error and the device's pending faults. */
ARSIM_API void arsim_device_reset(int device);
/* 1: a sticky fault on one device poisons every device (CUDA: the whole
 * process is unusable); 0 (the default): only its own (Level Zero). */
ARSIM_API void arsim_set_sticky_process_wide(int on);
/* 1 in a child forked after arsim_mark_in_use: the engine's threads did
 * not survive the fork, so the front ends must refuse every call.
 * Lock-free. */
ARSIM_API int arsim_forked(void);
/* The front end was initialized (cuInit, zeInit): a child forked from now on
 * is arsim_forked().  Before it, a child may use the driver afresh. */
ARSIM_API void arsim_mark_in_use(void);
/* Waits until every queue of the device has drained (errors not consumed). */
ARSIM_API arsim_status arsim_device_synchronize(int device);

/* ---------------------------------------------------------------- memory */

typedef enum arsim_mem_kind {
    ARSIM_MEM_DEVICE = 1,  /* counts against the device's limit */
    ARSIM_MEM_MANAGED = 2, /* counts against the device's limit */
    ARSIM_MEM_HOST = 4,    /* pinned host memory; device ignored, no limit */
    ARSIM_MEM_REGISTERED = 8, /* caller's host memory registered as pinned */
} arsim_mem_kind;

typedef struct arsim_alloc {
    void *base;
    size_t size;
    arsim_mem_kind kind;
    int device; /* -1 for host kinds */
    uint64_t owner; /* tag given at allocation (a context, say) */
    unsigned flags; /* flags given at allocation, kept for the front end */
    void *map;      /* engine's own: the mapping behind it (NULL: registered) */
    size_t map_len;
    size_t charged; /* engine's own: bytes counted against the device */
    size_t data_len; /* engine's own: the accessible pages' bytes (the rest is guard) */
    uint64_t serial; /* engine's own: this allocation's number, never reused (1, 2, ...) */
} arsim_alloc;

/* Zero-byte allocations are rejected (ARSIM_ERR_INVALID_VALUE). */
ARSIM_API arsim_status arsim_mem_alloc(int device, size_t size, arsim_mem_kind kind,
                                       uint64_t owner, unsigned flags, void **out);
/* p must be the base of a live allocation whose kind is in kind_mask;
 * otherwise ARSIM_ERR_INVALID_VALUE and nothing happens. */
ARSIM_API arsim_status arsim_mem_free(void *p, unsigned kind_mask);
/* The live allocation containing p, or ARSIM_ERR_NOT_FOUND. */
ARSIM_API arsim_status arsim_mem_lookup(const void *p, arsim_alloc *out);
/* 1 if [p, p+n) lies inside one live allocation whose kind is in kind_mask. */
ARSIM_API int arsim_mem_range_ok(const void *p, size_t n, unsigned kind_mask);
/* Bounds check for executors that interpret a kernel's loads and stores (PTX,
 * SPIR-V): ARSIM_OK if [p, p+n) lies inside one live allocation of any kind
 * (device, managed, pinned or registered host memory), as a GPU's page tables
 * would allow; otherwise ARSIM_ERR_ILLEGAL_ADDRESS, and the fault is recorded
 * (arsim_last_fault) with the running kernel's name when called from a
 * kernel.  Return that status from the kernel's run function: the op fails
 * and the device is poisoned, as on hardware.  is_write: 1 store, 0 load,
 * -1 not known.
 * Fast path lock-free (a per-thread cache of the last allocation hit). */
ARSIM_API arsim_status arsim_check_access(const void *p, size_t n, int is_write);
/* For the same executors: a kernel's access of n bytes at p is not aligned
 * to its size.  Records the fault (the report says "misaligned"; p NULL: the
 * address is not a global one) and returns ARSIM_ERR_MISALIGNED_ADDRESS,
 * which the kernel's run function returns: sticky, as ILLEGAL_ADDRESS. */
ARSIM_API arsim_status arsim_fault_misaligned(const void *p, size_t n, int is_write);
/* The same, naming the instruction that made the access (a string that
 * outlives the report: a literal), which the report quotes. */
ARSIM_API arsim_status arsim_fault_misaligned_by(const void *p, size_t n, int is_write,
                                                 const char *insn);
/* 1 if work submitted to a queue and not yet completed (running or waiting)
 * reads or writes the live allocation containing p: a copy or memset
 * touching it, or a kernel given a pointer into it as an argument.  0 if
 * not, or if p is in no allocation.  For drivers whose free of memory in
 * use is an error (zeMemFree). */
ARSIM_API int arsim_mem_in_use(const void *p);
/* For pools, which reuse an allocation for a request of another size: fits
 * the live allocation based at p (made by arsim_mem_alloc) to n bytes,
 * 1 <= n <= the size it was allocated with, as if it had been allocated with
 * n: lookups and bounds checks see n bytes and, with the sanitizer, the base
 * moves so that the last byte sits against the guard page.  *out: the new
 * base.  Contents stay; the device keeps counting the size allocated.  The
 * pages the fit needs are opened; with `protect`, every other page of the
 * mapping is closed, so that host code running past the fit faults as past
 * a fresh allocation (a small allocation's slot shares its pages with
 * others: none are opened or closed).  The caller guarantees that no op still in a queue
 * uses bytes the new fit leaves out (and, with `protect`, pages). */
ARSIM_API arsim_status arsim_mem_refit(void *p, size_t n, int protect, void **out);
/* 1 if ARUNTIME_SIM_SANITIZE is on (allocations end at their guard page). */
ARSIM_API int arsim_mem_sanitizing(void);
/* Frees every allocation with this owner tag; returns how many. */
ARSIM_API size_t arsim_mem_free_owner(uint64_t owner);
/* Registers existing host memory as pinned (ARSIM_MEM_REGISTERED). */
ARSIM_API arsim_status arsim_mem_register(void *p, size_t size, uint64_t owner, unsigned flags);
ARSIM_API arsim_status arsim_mem_unregister(void *p);

/* --------------------------------------------------------------- handles */
/* A registry of API handles: opaque 64-bit values (never 0, 1 or 2) with a
 * generation, so a destroyed handle is rejected and never dereferenced.
 * Lookup is lock-free.  kind is any small non-zero number (< 256) the front
 * end chooses. */

ARSIM_API uint64_t arsim_handle_new(unsigned kind, void *obj); /* 0 on failure */
ARSIM_API void *arsim_handle_get(uint64_t handle, unsigned kind); /* NULL if not live */
ARSIM_API void *arsim_handle_remove(uint64_t handle, unsigned kind); /* NULL if not live */

/* ---------------------------------------------------------------- events */

typedef struct arsim_event arsim_event;

#define ARSIM_EVENT_TIMING 1u /* records take a timestamp */

typedef enum arsim_wait_mode {
    ARSIM_WAIT_BLOCK = 0, /* condition variable */
    ARSIM_WAIT_SPIN = 1,  /* spin (with sched_yield) on an atomic */
} arsim_wait_mode;

/* Refcounted: ops that use an event hold a reference, so destroying an event
 * with work pending is safe (freed when the last op lets go). */
ARSIM_API arsim_status arsim_event_create(unsigned flags, arsim_event **out);
ARSIM_API void arsim_event_retain(arsim_event *e);
ARSIM_API void arsim_event_release(arsim_event *e);
ARSIM_API unsigned arsim_event_flags(const arsim_event *e);

/* CUDA-style "record" state: arsim_op_event_record takes a new sequence
 * number when submitted; the event is complete when every record submitted so
 * far has executed.  Never recorded = complete.
 * Returns ARSIM_OK, ARSIM_ERR_NOT_READY, or the error the last executed record
 * carried.  Lock-free. */
ARSIM_API arsim_status arsim_event_query(const arsim_event *e);
/* Waits until the records submitted before the call have executed.
 * timeout_ns < 0: forever.  Returns like arsim_event_query (or TIMEOUT). */
ARSIM_API arsim_status arsim_event_wait(arsim_event *e, arsim_wait_mode mode, int64_t timeout_ns);
/* Device timestamp (ns, arsim_now_ns clock) of the last executed record or
 * signal; ARSIM_ERR_NOT_READY if none or incomplete, ARSIM_ERR_INVALID_VALUE
 * without ARSIM_EVENT_TIMING. */
ARSIM_API arsim_status arsim_event_timestamp(const arsim_event *e, uint64_t *ns);

/* Level Zero-style "signaled" state, independent of the record state above
 * (a record also sets it).  Lock-free query: 1 signaled, 0 not. */
ARSIM_API int arsim_event_is_signaled(const arsim_event *e);
ARSIM_API void arsim_event_host_signal(arsim_event *e);
ARSIM_API void arsim_event_host_reset(arsim_event *e);
/* Waits until signaled.  Returns ARSIM_OK (or the error carried by the
 * signaling op), or ARSIM_ERR_TIMEOUT. */
ARSIM_API arsim_status arsim_event_wait_signaled(arsim_event *e, arsim_wait_mode mode,
                                                 int64_t timeout_ns);

/* ----------------------------------------------------------------- modules */

typedef struct arsim_module arsim_module;
/* A kernel that is not host code (the PTX and SPIR-V executors): the host
 * ABI's contract (run blocks [launch->block_begin, block_end), params as
 * CUDA's kernelParams) plus the executor's own context.  Returns 0, an
 * arsim_status (ARSIM_ERR_ILLEGAL_ADDRESS poisons the device), or -1 for a
 * plain launch failure. */
typedef int (*arsim_foreign_run)(void *kernel_ctx, const ar_launch *launch, void **params);

typedef struct arsim_kernel {
    ar_kernel_entry entry;      /* host shared objects; NULL for foreign kernels */
    arsim_foreign_run run;      /* foreign kernels; NULL for host shared objects */
    void *ctx;                  /* run's first argument */
    const ar_kernel_info *info;
    arsim_module *module;
    const char *name; /* owned by the module */
} arsim_kernel;

/* image: the bytes of a host shared object (ELF).  Loaded through a memfd. */
ARSIM_API arsim_status arsim_module_load(const void *image, size_t size, arsim_module **out);
/* Also loads a host shared object from a file path. */
ARSIM_API arsim_status arsim_module_load_file(const char *path, arsim_module **out);
/* The kernel stays valid while the module is loaded; ops hold a module
 * reference, so unloading with launches pending is safe. */
ARSIM_API arsim_status arsim_module_get_kernel(arsim_module *m, const char *name,
                                               const arsim_kernel **out);
ARSIM_API void arsim_module_unload(arsim_module *m);

/* A module whose kernels an executor provides (PTX, SPIR-V).  destroy(ctx)
 * runs when the last reference goes (after every op that used it). */
ARSIM_API arsim_status arsim_module_create_foreign(void *ctx, void (*destroy)(void *ctx),
                                                   arsim_module **out);
ARSIM_API void *arsim_module_foreign_ctx(const arsim_module *m);
/* Adds a kernel; the module copies name and info.  Returns ARSIM_ERR_INVALID_VALUE
 * for a duplicate name or more than AR_KERNEL_MAX_PARAMS parameters. */
ARSIM_API arsim_status arsim_module_add_foreign_kernel(arsim_module *m, const char *name,
                                                       const ar_kernel_info *info,
                                                       arsim_foreign_run run, void *kernel_ctx);

/* -------------------------------------------------------------------- ops */
/* An op is built, then either submitted to a queue or appended to a graph;
 * both take ownership, even when they fail.  A builder returns NULL when out
 * of memory; submitting NULL returns ARSIM_ERR_OUT_OF_MEMORY. */

typedef struct arsim_op arsim_op;
typedef struct arsim_queue arsim_queue;
typedef struct arsim_graph arsim_graph;

typedef enum arsim_copy_dir {
    ARSIM_COPY_H2D = 0,
    ARSIM_COPY_D2H = 1,
    ARSIM_COPY_D2D = 2,
    ARSIM_COPY_H2H = 3, /* runs on the H2D engine */
    ARSIM_COPY_PEER = 4, /* device to another device: arsim_op_copy_peer only */
} arsim_copy_dir;

ARSIM_API arsim_op *arsim_op_copy(void *dst, const void *src, size_t n, arsim_copy_dir dir);
/* Like arsim_op_copy but the op owns src (malloc'd) and frees it: for staged
 * pageable copies. */
/* A copy from device src_dev's memory to device dst_dev's (two devices).  It
 * runs on the source device's outgoing copy engine and the destination's
 * incoming one (with one copy engine a device: that one), both busy for its
 * whole modeled duration, which takes the peer link's bandwidth
 * (ARUNTIME_SIM_PEER_GBPS, else the copy bandwidth).  It must be submitted to
 * a queue of one of the two devices: on any other it fails with
 * ARSIM_ERR_INVALID_DEVICE when it runs. */
ARSIM_API arsim_op *arsim_op_copy_peer(void *dst, int dst_dev, const void *src, int src_dev,
                                       size_t n);
ARSIM_API arsim_op *arsim_op_copy_owned_src(void *dst, void *src_malloced, size_t n,
                                            arsim_copy_dir dir);
ARSIM_API arsim_op *arsim_op_copy2d(void *dst, size_t dst_pitch, const void *src,
                                    size_t src_pitch, size_t width, size_t height,
                                    arsim_copy_dir dir);
/* 2-D copy from a packed, malloc'd source (pitch = width) that the op owns. */
ARSIM_API arsim_op *arsim_op_copy2d_owned_src(void *dst, size_t dst_pitch, void *src_malloced,
                                              size_t width, size_t height, arsim_copy_dir dir);
ARSIM_API arsim_op *arsim_op_memset8(void *dst, uint8_t value, size_t n);
/* Repeats a pattern of pattern_size bytes (copied now) over n bytes. */
ARSIM_API arsim_op *arsim_op_fill(void *dst, const void *pattern, size_t pattern_size, size_t n);
/* Copies the argument values now (sizes from the kernel's info), as CUDA does
 * at launch.  params: kernel->info->num_params pointers to argument values. */
ARSIM_API arsim_op *arsim_op_kernel(const arsim_kernel *k, ar_dim3 grid, ar_dim3 block,
                                    uint32_t shared_bytes, void *const *params);
/* A front end's own number on a kernel op (cuda-sim: the context whose printf
 * FIFO the kernel writes), kept by the op's copies in graphs.  While the
 * kernel runs, arsim_kernel_tag() answers it on each thread running its
 * blocks (0 on any other thread). */
ARSIM_API void arsim_op_set_tag(arsim_op *op, uint64_t tag);
ARSIM_API uint64_t arsim_kernel_tag(void);
/* Runs fn(user) on the device's host-function thread, in order with the
 * queue's other ops.  fn must not wait for another host function, on any
 * queue of the device: they share that thread. */
ARSIM_API arsim_op *arsim_op_host_fn(void (*fn)(void *), void *user);
/* Like arsim_op_host_fn, but it runs even on a poisoned device: for the
 * driver's own bookkeeping (a stream-ordered free), never user code. */
ARSIM_API arsim_op *arsim_op_release_fn(void (*fn)(void *), void *user);
ARSIM_API arsim_op *arsim_op_marker(void);
/* Record (CUDA): the sequence number is taken at submit time. */
ARSIM_API arsim_op *arsim_op_event_record(arsim_event *e);
/* Wait for the latest record of e submitted before this op's submit (CUDA); records
 * submitted later do not affect it, even when they execute first. */
ARSIM_API arsim_op *arsim_op_event_wait(arsim_event *e);
/* Level Zero: signal / reset / wait-until-signaled. */
ARSIM_API arsim_op *arsim_op_event_signal(arsim_event *e);
ARSIM_API arsim_op *arsim_op_event_reset(arsim_event *e);
ARSIM_API arsim_op *arsim_op_event_wait_signaled(arsim_event *e);
/* Wait until `other` has completed `seq` ops (see arsim_queue_submitted). */
ARSIM_API arsim_op *arsim_op_queue_wait(arsim_queue *other, uint64_t seq);
ARSIM_API void arsim_op_free(arsim_op *op);
/* What an op does, for a front end that reports it (a CUDA graph node's
 * type).  The numbers are the builders above, in their order. */
typedef enum arsim_op_kind {
    ARSIM_OPK_COPY = 1,
    ARSIM_OPK_COPY2D,
    ARSIM_OPK_MEMSET8,
    ARSIM_OPK_FILL,
    ARSIM_OPK_KERNEL,
    ARSIM_OPK_HOST_FN,
    ARSIM_OPK_RELEASE_FN,
    ARSIM_OPK_MARKER,
    ARSIM_OPK_EVENT_RECORD,
    ARSIM_OPK_EVENT_WAIT,
    ARSIM_OPK_EVENT_SIGNAL,
    ARSIM_OPK_EVENT_RESET,
    ARSIM_OPK_EVENT_WAIT_SIGNALED,
    ARSIM_OPK_QUEUE_WAIT,
} arsim_op_kind;
ARSIM_API arsim_op_kind arsim_op_kind_of(const arsim_op *op);
/* A host-function op's function and argument (1), or 0 for any other op. */
ARSIM_API int arsim_op_host_fn_of(const arsim_op *op, void (**fn)(void *), void **user);

/* ---------------------------------------------------------------- queues */

ARSIM_API arsim_status arsim_queue_create(int device, int priority, arsim_queue **out);
/* Returns at once; queued work still runs, then the thread exits and the
 * queue is freed.  The caller must not use q afterwards. */
ARSIM_API void arsim_queue_destroy(arsim_queue *q);
ARSIM_API int arsim_queue_device(const arsim_queue *q);
ARSIM_API int arsim_queue_priority(const arsim_queue *q);
/* Executes the op in order after everything submitted before.  When the
 * queue is capturing, appends the op to the capture graph instead.  When the
 * device is poisoned, returns its sticky error (op discarded).  seq_out (may
 * be NULL) gets the op's sequence number (0 when captured). */
ARSIM_API arsim_status arsim_queue_submit(arsim_queue *q, arsim_op *op, uint64_t *seq_out);
/* Submits a copy of each op of g, in order. */
ARSIM_API arsim_status arsim_queue_submit_graph(arsim_queue *q, const arsim_graph *g);
/* Ops submitted so far (the sequence number of the last one). */
ARSIM_API uint64_t arsim_queue_submitted(const arsim_queue *q);
ARSIM_API uint64_t arsim_queue_completed(const arsim_queue *q);
/* ARSIM_OK if idle, ARSIM_ERR_NOT_READY if work is pending.  Lock-free. */
ARSIM_API arsim_status arsim_queue_query(const arsim_queue *q);
/* Waits for the ops submitted before the call; returns and clears the
 * queue's pending sync error (or the device's sticky error). */
ARSIM_API arsim_status arsim_queue_synchronize(arsim_queue *q, arsim_wait_mode mode);
/* Waits until the queue has completed `seq` ops (a seq from arsim_queue_submit). */
ARSIM_API void arsim_queue_wait_seq(arsim_queue *q, uint64_t seq, arsim_wait_mode mode);
/* Returns and clears the queue's pending error without waiting. */
ARSIM_API arsim_status arsim_queue_take_error(arsim_queue *q);
/* Capture: while capturing, submits go to g (which the caller created). */
ARSIM_API arsim_status arsim_queue_begin_capture(arsim_queue *q, arsim_graph *g);
ARSIM_API arsim_status arsim_queue_end_capture(arsim_queue *q, arsim_graph **out);
ARSIM_API arsim_graph *arsim_queue_capture_graph(const arsim_queue *q); /* NULL if not capturing */

/* ---------------------------------------------------------------- graphs */

ARSIM_API arsim_status arsim_graph_create(arsim_graph **out);
ARSIM_API arsim_status arsim_graph_append(arsim_graph *g, arsim_op *op);
ARSIM_API size_t arsim_graph_size(const arsim_graph *g);
/* Deep copy (an "instantiated" graph is a clone). */
ARSIM_API arsim_status arsim_graph_clone(const arsim_graph *g, arsim_graph **out);
ARSIM_API void arsim_graph_destroy(arsim_graph *g);
/* Appends a copy of each op of src to dst, in order. */
ARSIM_API arsim_status arsim_graph_append_graph(arsim_graph *dst, const arsim_graph *src);
/* The kind of op i of g (0 if there is none). */
ARSIM_API arsim_op_kind arsim_graph_op_kind(const arsim_graph *g, size_t i);
/* A copy of op i of g, or NULL (out of memory, or no such op). */
ARSIM_API arsim_op *arsim_graph_op_clone(const arsim_graph *g, size_t i);

#ifdef __cplusplus
}
#endif

#endif /* ARSIM_ENGINE_H */
