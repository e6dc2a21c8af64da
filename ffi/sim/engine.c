/* The simulated device shared by the software drivers.  See engine.h. */
#define _GNU_SOURCE
#include "engine.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* ============================================================ utilities */

uint64_t arsim_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_until_ns(uint64_t deadline)
{
    struct timespec ts = {(time_t)(deadline / 1000000000ull), (long)(deadline % 1000000000ull)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

static void abs_deadline(struct timespec *ts, int64_t timeout_ns)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    uint64_t ns = (uint64_t)ts->tv_nsec + (uint64_t)timeout_ns;
    ts->tv_sec += (time_t)(ns / 1000000000ull);
    ts->tv_nsec = (long)(ns % 1000000000ull);
}

static void cond_init_monotonic(pthread_cond_t *cv)
{
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(cv, &a);
    pthread_condattr_destroy(&a);
}

const char *arsim_status_name(arsim_status s)
{
    switch (s) {
    case ARSIM_OK: return "ARSIM_OK";
    case ARSIM_ERR_INVALID_VALUE: return "ARSIM_ERR_INVALID_VALUE";
    case ARSIM_ERR_OUT_OF_MEMORY: return "ARSIM_ERR_OUT_OF_MEMORY";
    case ARSIM_ERR_INVALID_HANDLE: return "ARSIM_ERR_INVALID_HANDLE";
    case ARSIM_ERR_NOT_READY: return "ARSIM_ERR_NOT_READY";
    case ARSIM_ERR_LAUNCH_FAILED: return "ARSIM_ERR_LAUNCH_FAILED";
    case ARSIM_ERR_ILLEGAL_ADDRESS: return "ARSIM_ERR_ILLEGAL_ADDRESS";
    case ARSIM_ERR_INVALID_IMAGE: return "ARSIM_ERR_INVALID_IMAGE";
    case ARSIM_ERR_NOT_FOUND: return "ARSIM_ERR_NOT_FOUND";
    case ARSIM_ERR_TIMEOUT: return "ARSIM_ERR_TIMEOUT";
    case ARSIM_ERR_INVALID_DEVICE: return "ARSIM_ERR_INVALID_DEVICE";
    case ARSIM_ERR_CAPTURING: return "ARSIM_ERR_CAPTURING";
    case ARSIM_ERR_NOT_CAPTURING: return "ARSIM_ERR_NOT_CAPTURING";
    default: return "ARSIM_ERR_UNKNOWN";
    }
}

/* One engine of a device and the thread that runs its ops (see "engines"
 * below).  Ops of equal priority run in the order they became ready (FIFO),
 * so three queues feeding one engine take turns instead of one starving
 * the others; a higher-priority queue's ready op goes first. */
typedef struct sim_engine {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    arsim_op *head, *tail; /* ready ops, linked through op->next */
    int started;           /* the thread exists (guarded by mu) */
    int device;
    int index;
    uint64_t model_end; /* the timing model's end of the last op; the engine thread only */
} sim_engine;

/* ============================================================ config, devices */

/* The engines of a device.  ENGINE_HOST is not hardware: it is the driver
 * thread that runs host functions (CUDA runs them on one thread too). */
enum { ENGINE_COMPUTE = 0, ENGINE_H2D = 1, ENGINE_D2H = 2, ENGINE_HOST = 3, ENGINE_COUNT = 4 };

typedef struct device {
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
} device;

static int g_ndev = 1;
static size_t g_page = 4096;
static int g_sanitize; /* ARUNTIME_SIM_SANITIZE */
static device *g_dev;
static uint32_t g_compute_units = 16;
static uint32_t g_copy_engines = 2;
#define MAX_KERNEL_THREADS 64
static uint32_t g_kernel_threads = 1; /* ARUNTIME_SIM_KERNEL_THREADS */
static _Atomic double g_gbps;       /* <= 0: unlimited */
static _Atomic double g_latency_us; /* <= 0: none */
static _Atomic int g_live_queues;   /* created, not yet drained after destroy */
static _Atomic int g_engine_threads; /* engine threads alive, all devices */
static _Atomic int g_engine_idle_ms = 1000; /* an engine thread idle this long ends */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static double env_double(const char *name, double dflt)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return dflt;
    char *end;
    double d = strtod(v, &end);
    return end == v ? dflt : d;
}

static void init_once(void)
{
    int n = (int)env_double("ARUNTIME_SIM_DEVICES", 1);
    if (n < 1)
        n = 1;
    if (n > 64)
        n = 64;
    double mb = env_double("ARUNTIME_SIM_MEMORY_MB", 4096);
    if (mb <= 0)
        mb = 4096;
    double cu = env_double("ARUNTIME_SIM_COMPUTE_UNITS", 16);
    g_compute_units = cu >= 1 ? (uint32_t)cu : 16;
    g_copy_engines = env_double("ARUNTIME_SIM_COPY_ENGINES", 2) == 1 ? 1 : 2;
    double kt = env_double("ARUNTIME_SIM_KERNEL_THREADS", 1);
    g_kernel_threads = kt < 1 ? 1 : kt > MAX_KERNEL_THREADS ? MAX_KERNEL_THREADS : (uint32_t)kt;
    long page = sysconf(_SC_PAGESIZE);
    g_page = page > 0 ? (size_t)page : 4096;
    g_sanitize = env_double("ARUNTIME_SIM_SANITIZE", 0) != 0;
    atomic_store(&g_gbps, env_double("ARUNTIME_SIM_COPY_GBPS", 0));
    atomic_store(&g_latency_us, env_double("ARUNTIME_SIM_OP_LATENCY_US", 0));
    g_dev = calloc((size_t)n, sizeof(device));
    if (!g_dev)
        abort();
    for (int i = 0; i < n; i++) {
        g_dev[i].ordinal = i;
        g_dev[i].total = (uint64_t)(mb * 1024.0 * 1024.0);
        for (int e = 0; e < ENGINE_COUNT; e++) {
            sim_engine *eng = &g_dev[i].engines[e];
            pthread_mutex_init(&eng->mu, NULL);
            cond_init_monotonic(&eng->cv);
            eng->device = i;
            eng->index = e;
        }
        pthread_mutex_init(&g_dev[i].qmu, NULL);
    }
    g_ndev = n;
}

static void ensure_init(void) { pthread_once(&g_once, init_once); }

/* Read the knobs when the driver is loaded, as documented. */
__attribute__((constructor)) static void arsim_load(void) { ensure_init(); }

static device *dev_get(int ordinal)
{
    ensure_init();
    if (ordinal < 0 || ordinal >= g_ndev)
        return NULL;
    return &g_dev[ordinal];
}

void arsim_set_timing(double copy_gbps, double op_latency_us)
{
    ensure_init();
    atomic_store(&g_gbps, copy_gbps);
    atomic_store(&g_latency_us, op_latency_us);
}

void arsim_get_timing(double *copy_gbps, double *op_latency_us)
{
    ensure_init();
    if (copy_gbps)
        *copy_gbps = atomic_load(&g_gbps);
    if (op_latency_us)
        *op_latency_us = atomic_load(&g_latency_us);
}

int arsim_inject_fault(int device_ord, int kind, int count)
{
    ensure_init();
    if (count < 0 || kind < ARSIM_FAULT_OUT_OF_MEMORY || kind > ARSIM_FAULT_ILLEGAL_ADDRESS)
        return -1;
    if (device_ord < -1 || device_ord >= g_ndev)
        return -1;
    for (int i = 0; i < g_ndev; i++) {
        if (device_ord != -1 && i != device_ord)
            continue;
        device *d = &g_dev[i];
        _Atomic int *slot = kind == ARSIM_FAULT_OUT_OF_MEMORY ? &d->fault_oom
                            : kind == ARSIM_FAULT_LAUNCH_FAILED ? &d->fault_launch
                                                                : &d->fault_illegal;
        atomic_store(slot, count);
    }
    return 0;
}

static void clear_fault_record(void);

void arsim_clear_faults(void)
{
    ensure_init();
    clear_fault_record();
    for (int i = 0; i < g_ndev; i++)
        arsim_device_reset(i);
}

int arsim_live_queues(void) { return atomic_load(&g_live_queues); }
int arsim_engine_threads(void) { return atomic_load(&g_engine_threads); }

void arsim_set_engine_idle_ms(int ms) { atomic_store(&g_engine_idle_ms, ms > 0 ? ms : 1000); }

int arsim_device_count(void)
{
    ensure_init();
    return g_ndev;
}

arsim_status arsim_device_info_get(int ordinal, arsim_device_info *out)
{
    device *d = dev_get(ordinal);
    if (!d)
        return ARSIM_ERR_INVALID_DEVICE;
    if (!out)
        return ARSIM_ERR_INVALID_VALUE;
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "aruntime simulated device %d", ordinal);
    out->total_memory = d->total;
    out->used_memory = atomic_load(&d->used);
    out->compute_units = g_compute_units;
    out->copy_engines = g_copy_engines;
    return ARSIM_OK;
}

arsim_status arsim_device_sticky(int ordinal)
{
    device *d = dev_get(ordinal);
    if (!d)
        return ARSIM_ERR_INVALID_DEVICE;
    return (arsim_status)atomic_load_explicit(&d->sticky, memory_order_acquire);
}

void arsim_device_reset(int ordinal)
{
    device *d = dev_get(ordinal);
    if (!d)
        return;
    atomic_store(&d->sticky, 0);
    atomic_store(&d->fault_oom, 0);
    atomic_store(&d->fault_launch, 0);
    atomic_store(&d->fault_illegal, 0);
}

/* Takes one unit of an injected fault, if any is pending. */
static int take_fault(_Atomic int *slot)
{
    int v = atomic_load(slot);
    while (v > 0) {
        if (atomic_compare_exchange_weak(slot, &v, v - 1))
            return 1;
    }
    return 0;
}

/* ============================================================ memory registry */

static pthread_rwlock_t g_mem_lock = PTHREAD_RWLOCK_INITIALIZER;
/* Bumped whenever an allocation goes, so per-thread caches of "the last
 * allocation hit" notice without taking the registry lock. */
static _Atomic uint64_t g_mem_epoch = 1;

static arsim_alloc *g_allocs; /* sorted by base */
static size_t g_nallocs, g_cap_allocs;

/* Index of the last allocation with base <= p, or -1.  Caller holds the lock. */
static ptrdiff_t alloc_floor(const void *p)
{
    size_t lo = 0, hi = g_nallocs;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if ((uintptr_t)g_allocs[mid].base <= (uintptr_t)p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (ptrdiff_t)lo - 1;
}

static arsim_status registry_insert(const arsim_alloc *a)
{
    pthread_rwlock_wrlock(&g_mem_lock);
    if (g_nallocs == g_cap_allocs) {
        size_t cap = g_cap_allocs ? g_cap_allocs * 2 : 256;
        arsim_alloc *n = realloc(g_allocs, cap * sizeof *n);
        if (!n) {
            pthread_rwlock_unlock(&g_mem_lock);
            return ARSIM_ERR_OUT_OF_MEMORY;
        }
        g_allocs = n;
        g_cap_allocs = cap;
    }
    ptrdiff_t i = alloc_floor(a->base);
    /* Overlap with a live range: only possible for a bad registration. */
    if ((i >= 0 && (uintptr_t)g_allocs[i].base + g_allocs[i].size > (uintptr_t)a->base) ||
        ((size_t)(i + 1) < g_nallocs &&
         (uintptr_t)a->base + a->size > (uintptr_t)g_allocs[i + 1].base)) {
        pthread_rwlock_unlock(&g_mem_lock);
        return ARSIM_ERR_INVALID_VALUE;
    }
    size_t at = (size_t)(i + 1);
    memmove(&g_allocs[at + 1], &g_allocs[at], (g_nallocs - at) * sizeof *g_allocs);
    g_allocs[at] = *a;
    g_nallocs++;
    pthread_rwlock_unlock(&g_mem_lock);
    return ARSIM_OK;
}

/* Removes the allocation based exactly at p whose kind is in mask. */
static arsim_status registry_remove(void *p, unsigned mask, arsim_alloc *out)
{
    pthread_rwlock_wrlock(&g_mem_lock);
    ptrdiff_t i = alloc_floor(p);
    if (i < 0 || g_allocs[i].base != p || !(g_allocs[i].kind & mask)) {
        pthread_rwlock_unlock(&g_mem_lock);
        return ARSIM_ERR_INVALID_VALUE;
    }
    *out = g_allocs[i];
    memmove(&g_allocs[i], &g_allocs[i + 1], (g_nallocs - (size_t)i - 1) * sizeof *g_allocs);
    g_nallocs--;
    atomic_fetch_add_explicit(&g_mem_epoch, 1, memory_order_release);
    pthread_rwlock_unlock(&g_mem_lock);
    return ARSIM_OK;
}

/* ---- mappings: one per allocation, with a guard page after it */


/* Freed allocations kept PROT_NONE (sanitizer), oldest first. */
typedef struct quarantined {
    arsim_alloc a;
    struct quarantined *next;
} quarantined;
static pthread_mutex_t g_quar_mu = PTHREAD_MUTEX_INITIALIZER;
static quarantined *g_quar_head, *g_quar_tail;
static size_t g_quar_bytes, g_quar_count;
#define QUARANTINE_BYTES ((size_t)1 << 30)
#define QUARANTINE_COUNT 65536u

static int map_alloc(size_t size, arsim_alloc *a)
{
    if (size > SIZE_MAX - 2 * g_page)
        return -1;
    size_t data = (size + g_page - 1) & ~(g_page - 1);
    size_t len = data + g_page;
    /* PROT_NONE first, then open the data pages: the guard is never accessible. */
    char *m = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        return -1;
    if (mprotect(m, data, PROT_READ | PROT_WRITE) != 0) {
        munmap(m, len);
        return -1;
    }
    a->map = m;
    a->map_len = len;
    /* Sanitizer: the last byte sits right before the guard page.  The base
     * is then only as aligned as the size allows (a float array: 4 bytes). */
    a->base = g_sanitize ? m + data - size : m;
    return 0;
}

static void unmap_alloc(const arsim_alloc *a)
{
    if (!g_sanitize) {
        munmap(a->map, a->map_len);
        return;
    }
    /* Quarantine: the range stays reserved and inaccessible, so a kernel
     * that uses it after the free faults (and the address is not reused). */
    mprotect(a->map, a->map_len, PROT_NONE);
    quarantined *qn = malloc(sizeof *qn);
    if (!qn) {
        munmap(a->map, a->map_len);
        return;
    }
    qn->a = *a;
    qn->next = NULL;
    quarantined *evict = NULL;
    pthread_mutex_lock(&g_quar_mu);
    if (g_quar_tail)
        g_quar_tail->next = qn;
    else
        g_quar_head = qn;
    g_quar_tail = qn;
    g_quar_bytes += a->map_len;
    g_quar_count++;
    while (g_quar_head && (g_quar_bytes > QUARANTINE_BYTES || g_quar_count > QUARANTINE_COUNT)) {
        quarantined *old = g_quar_head;
        g_quar_head = old->next;
        if (!g_quar_head)
            g_quar_tail = NULL;
        g_quar_bytes -= old->a.map_len;
        g_quar_count--;
        old->next = evict;
        evict = old;
    }
    pthread_mutex_unlock(&g_quar_mu);
    while (evict) {
        quarantined *next = evict->next;
        munmap(evict->a.map, evict->a.map_len);
        free(evict);
        evict = next;
    }
}

/* The quarantined (freed) allocation whose mapping holds addr. */
static int quarantine_find(uintptr_t addr, arsim_alloc *out)
{
    int found = 0;
    pthread_mutex_lock(&g_quar_mu);
    for (quarantined *q = g_quar_head; q; q = q->next) {
        if (addr >= (uintptr_t)q->a.map && addr < (uintptr_t)q->a.map + q->a.map_len) {
            *out = q->a; /* the latest wins: keep scanning */
            found = 1;
        }
    }
    pthread_mutex_unlock(&g_quar_mu);
    return found;
}

arsim_status arsim_mem_alloc(int ordinal, size_t size, arsim_mem_kind kind, uint64_t owner,
                             unsigned flags, void **out)
{
    ensure_init();
    if (!out || size == 0)
        return ARSIM_ERR_INVALID_VALUE;
    if (kind != ARSIM_MEM_DEVICE && kind != ARSIM_MEM_MANAGED && kind != ARSIM_MEM_HOST)
        return ARSIM_ERR_INVALID_VALUE;
    device *d = dev_get(ordinal);
    int counted = kind != ARSIM_MEM_HOST;
    if (counted && !d)
        return ARSIM_ERR_INVALID_DEVICE;
    if (d && take_fault(&d->fault_oom))
        return ARSIM_ERR_OUT_OF_MEMORY;
    if (counted) {
        uint64_t prev = atomic_fetch_add(&d->used, size);
        if (prev + size > d->total || prev + size < prev) {
            atomic_fetch_sub(&d->used, size);
            return ARSIM_ERR_OUT_OF_MEMORY;
        }
    }
    arsim_alloc a = {NULL, size, kind, counted ? ordinal : -1, owner, flags, NULL, 0, size};
    if (map_alloc(size, &a) != 0) {
        if (counted)
            atomic_fetch_sub(&d->used, size);
        return ARSIM_ERR_OUT_OF_MEMORY;
    }
    arsim_status st = registry_insert(&a);
    if (st != ARSIM_OK) {
        munmap(a.map, a.map_len);
        if (counted)
            atomic_fetch_sub(&d->used, size);
        return st;
    }
    *out = a.base;
    return ARSIM_OK;
}

static void release_alloc(const arsim_alloc *a)
{
    if (a->kind == ARSIM_MEM_REGISTERED)
        return; /* the caller's memory */
    if (a->device >= 0)
        atomic_fetch_sub(&g_dev[a->device].used, a->charged);
    unmap_alloc(a);
}

int arsim_mem_sanitizing(void)
{
    ensure_init();
    return g_sanitize;
}

arsim_status arsim_mem_refit(void *p, size_t n, int protect, void **out)
{
    ensure_init();
    if (!p || !out || n == 0)
        return ARSIM_ERR_INVALID_VALUE;
    pthread_rwlock_wrlock(&g_mem_lock);
    ptrdiff_t i = alloc_floor(p);
    if (i < 0 || g_allocs[i].base != p || !g_allocs[i].map || n > g_allocs[i].charged) {
        pthread_rwlock_unlock(&g_mem_lock);
        return ARSIM_ERR_INVALID_VALUE;
    }
    arsim_alloc *a = &g_allocs[i];
    char *m = a->map;
    size_t data = a->map_len - g_page;
    size_t need = (n + g_page - 1) & ~(g_page - 1);
    /* The fit's pages: the first ones, or with the sanitizer the last ones
     * (the base stays inside the mapping, so the registry stays sorted). */
    char *lo = g_sanitize ? m + data - need : m;
    int bad = mprotect(lo, need, PROT_READ | PROT_WRITE) != 0;
    if (!bad && protect && need < data)
        bad = mprotect(g_sanitize ? m : m + need, data - need, PROT_NONE) != 0;
    if (bad) {
        pthread_rwlock_unlock(&g_mem_lock);
        return ARSIM_ERR_OUT_OF_MEMORY;
    }
    a->base = g_sanitize ? m + data - n : m;
    a->size = n;
    *out = a->base;
    atomic_fetch_add_explicit(&g_mem_epoch, 1, memory_order_release);
    pthread_rwlock_unlock(&g_mem_lock);
    return ARSIM_OK;
}

arsim_status arsim_mem_free(void *p, unsigned kind_mask)
{
    ensure_init();
    arsim_alloc a;
    if (!p || registry_remove(p, kind_mask & ~(unsigned)ARSIM_MEM_REGISTERED, &a) != ARSIM_OK)
        return ARSIM_ERR_INVALID_VALUE;
    release_alloc(&a);
    return ARSIM_OK;
}

arsim_status arsim_mem_lookup(const void *p, arsim_alloc *out)
{
    pthread_rwlock_rdlock(&g_mem_lock);
    ptrdiff_t i = alloc_floor(p);
    arsim_status st = ARSIM_ERR_NOT_FOUND;
    if (i >= 0 && (uintptr_t)p < (uintptr_t)g_allocs[i].base + g_allocs[i].size) {
        if (out)
            *out = g_allocs[i];
        st = ARSIM_OK;
    }
    pthread_rwlock_unlock(&g_mem_lock);
    return st;
}

int arsim_mem_range_ok(const void *p, size_t n, unsigned kind_mask)
{
    arsim_alloc a;
    if (arsim_mem_lookup(p, &a) != ARSIM_OK || !(a.kind & kind_mask))
        return 0;
    uintptr_t end = (uintptr_t)a.base + a.size;
    return n <= end - (uintptr_t)p;
}

size_t arsim_mem_free_owner(uint64_t owner)
{
    /* One compacting pass under the lock; the memory is released outside it. */
    pthread_rwlock_wrlock(&g_mem_lock);
    size_t n = 0;
    for (size_t i = 0; i < g_nallocs; i++)
        n += g_allocs[i].owner == owner;
    arsim_alloc *gone = n ? malloc(n * sizeof *gone) : NULL;
    if (n && !gone) {
        pthread_rwlock_unlock(&g_mem_lock);
        return 0;
    }
    size_t kept = 0, k = 0;
    for (size_t i = 0; i < g_nallocs; i++) {
        if (g_allocs[i].owner == owner)
            gone[k++] = g_allocs[i];
        else
            g_allocs[kept++] = g_allocs[i];
    }
    g_nallocs = kept;
    atomic_fetch_add_explicit(&g_mem_epoch, 1, memory_order_release);
    pthread_rwlock_unlock(&g_mem_lock);
    for (size_t i = 0; i < n; i++)
        release_alloc(&gone[i]);
    free(gone);
    return n;
}

/* ============================================================ faults */

/* The kernel running on this thread (set around each slice), for fault reports. */
static __thread const char *tls_kernel_name;
static __thread int tls_kernel_device = -1;

static pthread_mutex_t g_fault_mu = PTHREAD_MUTEX_INITIALIZER;
static arsim_fault_info g_fault;
static int g_has_fault;

static __thread uintptr_t tls_hit_lo, tls_hit_hi;
static __thread uint64_t tls_hit_epoch;

/* Fills the allocation nearest to addr (live, or else recently freed). */
static void describe_address(uintptr_t addr, arsim_fault_info *f);

static _Atomic uint64_t g_fault_seq; /* faults recorded so far */

static void record_fault(uintptr_t addr, int access, int size)
{
    arsim_fault_info f;
    memset(&f, 0, sizeof f);
    f.address = addr;
    f.access = access;
    f.size = size;
    f.device = tls_kernel_device;
    snprintf(f.kernel, sizeof f.kernel, "%s", tls_kernel_name ? tls_kernel_name : "?");
    if (addr)
        describe_address(addr, &f);
    pthread_mutex_lock(&g_fault_mu);
    g_fault = f;
    g_has_fault = 1;
    atomic_fetch_add(&g_fault_seq, 1);
    pthread_mutex_unlock(&g_fault_mu);
    if (g_sanitize) {
        char line[512];
        arsim_fault_report(line, sizeof line);
        fprintf(stderr, "aruntime sim sanitizer: %s\n", line);
    }
}

int arsim_last_fault(arsim_fault_info *out)
{
    pthread_mutex_lock(&g_fault_mu);
    int has = g_has_fault;
    if (has && out)
        *out = g_fault;
    pthread_mutex_unlock(&g_fault_mu);
    return has;
}

int arsim_fault_report(char *buf, size_t n)
{
    arsim_fault_info f;
    if (!arsim_last_fault(&f)) {
        if (buf && n)
            buf[0] = 0;
        return 0;
    }
    const char *what = f.access == 1 ? "write" : f.access == 0 ? "read" : "access";
    char size[32] = "";
    if (f.size > 0)
        snprintf(size, sizeof size, " of %d bytes", (int)f.size);
    if (!f.address)
        return snprintf(buf, n, "kernel %s: illegal address on device %d (no address known)",
                        f.kernel, (int)f.device);
    if (!f.alloc_base)
        return snprintf(buf, n,
                        "kernel %s: invalid %s%s at 0x%llx on device %d, outside any allocation",
                        f.kernel, what, size, (unsigned long long)f.address, (int)f.device);
    return snprintf(buf, n,
                    "kernel %s: invalid %s%s at 0x%llx on device %d, offset %lld of %s "
                    "allocation 0x%llx (%llu bytes)%s",
                    f.kernel, what, size, (unsigned long long)f.address, (int)f.device,
                    (long long)f.offset, f.freed ? "freed" : "the", (unsigned long long)f.alloc_base,
                    (unsigned long long)f.alloc_size,
                    f.freed ? ": use after free"
                    : f.offset < 0 ? ": before its start"
                    : (uint64_t)f.offset >= f.alloc_size ? ": past its end"
                                                         : "");
}

static void clear_fault_record(void)
{
    pthread_mutex_lock(&g_fault_mu);
    g_has_fault = 0;
    pthread_mutex_unlock(&g_fault_mu);
}

arsim_status arsim_check_access(const void *p, size_t n, int is_write)
{
    uintptr_t lo = (uintptr_t)p, hi = lo + n;
    if (hi < lo)
        goto bad;
    uint64_t epoch = atomic_load_explicit(&g_mem_epoch, memory_order_acquire);
    if (tls_hit_epoch == epoch && lo >= tls_hit_lo && hi <= tls_hit_hi)
        return ARSIM_OK;
    arsim_alloc a;
    if (arsim_mem_lookup(p, &a) == ARSIM_OK && n <= (uintptr_t)a.base + a.size - lo) {
        tls_hit_lo = (uintptr_t)a.base;
        tls_hit_hi = (uintptr_t)a.base + a.size;
        tls_hit_epoch = epoch;
        return ARSIM_OK;
    }
bad:
    record_fault(lo, is_write < 0 ? -1 : is_write ? 1 : 0, n > INT32_MAX ? INT32_MAX : (int)n);
    return ARSIM_ERR_ILLEGAL_ADDRESS;
}

static void describe_address(uintptr_t addr, arsim_fault_info *f)
{
    pthread_rwlock_rdlock(&g_mem_lock);
    ptrdiff_t i = alloc_floor((const void *)addr);
    const arsim_alloc *best = NULL;
    uintptr_t best_dist = UINTPTR_MAX;
    if (i >= 0) {
        uintptr_t end = (uintptr_t)g_allocs[i].base + g_allocs[i].size;
        best = &g_allocs[i];
        best_dist = addr < end ? 0 : addr - end;
    }
    if ((size_t)(i + 1) < g_nallocs) {
        uintptr_t dist = (uintptr_t)g_allocs[i + 1].base - addr;
        if (dist < best_dist) {
            best = &g_allocs[i + 1];
            best_dist = dist;
        }
    }
    if (best) {
        f->alloc_base = (uintptr_t)best->base;
        f->alloc_size = best->size;
        f->offset = (int64_t)(addr - (uintptr_t)best->base);
    }
    pthread_rwlock_unlock(&g_mem_lock);
    arsim_alloc q;
    if (best_dist != 0 && quarantine_find(addr, &q)) {
        f->alloc_base = (uintptr_t)q.base;
        f->alloc_size = q.size;
        f->offset = (int64_t)(addr - (uintptr_t)q.base);
        f->freed = 1;
    }
}

arsim_status arsim_mem_register(void *p, size_t size, uint64_t owner, unsigned flags)
{
    if (!p || size == 0)
        return ARSIM_ERR_INVALID_VALUE;
    arsim_alloc a = {p, size, ARSIM_MEM_REGISTERED, -1, owner, flags, NULL, 0, 0};
    return registry_insert(&a);
}

arsim_status arsim_mem_unregister(void *p)
{
    arsim_alloc a;
    return registry_remove(p, ARSIM_MEM_REGISTERED, &a);
}

/* ============================================================ handle registry */

#define H_CHUNK_BITS 12
#define H_CHUNK (1u << H_CHUNK_BITS)
#define H_MAX_CHUNKS 4096u /* 16M slots: the 24-bit index in a handle */

typedef struct hslot {
    _Atomic uint64_t tag; /* (generation << 8) | kind; kind 0 = free */
    _Atomic(void *) obj;
    uint32_t next_free;
} hslot;

static _Atomic(hslot *) g_hchunks[H_MAX_CHUNKS];
static pthread_mutex_t g_hmu = PTHREAD_MUTEX_INITIALIZER;
static uint32_t g_hfree = UINT32_MAX; /* free list head */
static uint32_t g_hused;              /* slots ever handed out */

static hslot *hslot_at(uint32_t idx)
{
    hslot *c = atomic_load_explicit(&g_hchunks[idx >> H_CHUNK_BITS], memory_order_acquire);
    return c ? &c[idx & (H_CHUNK - 1)] : NULL;
}

uint64_t arsim_handle_new(unsigned kind, void *obj)
{
    if (kind == 0 || kind > 255)
        return 0;
    pthread_mutex_lock(&g_hmu);
    uint32_t idx;
    hslot *s;
    if (g_hfree != UINT32_MAX) {
        idx = g_hfree;
        s = hslot_at(idx);
        g_hfree = s->next_free;
    } else {
        if (g_hused >= H_CHUNK * H_MAX_CHUNKS) {
            pthread_mutex_unlock(&g_hmu);
            return 0;
        }
        idx = g_hused;
        if (!atomic_load(&g_hchunks[idx >> H_CHUNK_BITS])) {
            hslot *c = calloc(H_CHUNK, sizeof(hslot)); /* chunks are never freed */
            if (!c) {
                pthread_mutex_unlock(&g_hmu);
                return 0;
            }
            atomic_store_explicit(&g_hchunks[idx >> H_CHUNK_BITS], c, memory_order_release);
        }
        g_hused++;
        s = hslot_at(idx);
    }
    uint64_t gen = (atomic_load(&s->tag) >> 8) + 1;
    if ((gen & 0xffffffu) == 0)
        gen = 1;
    gen &= 0xffffffu;
    atomic_store(&s->obj, obj);
    atomic_store_explicit(&s->tag, (gen << 8) | kind, memory_order_release);
    pthread_mutex_unlock(&g_hmu);
    return (gen << 32) | ((uint64_t)(idx + 1) << 8) | kind;
}

static hslot *handle_slot(uint64_t h, unsigned kind, uint64_t *tag_out)
{
    if ((h & 0xff) != kind || kind == 0)
        return NULL;
    uint64_t idx1 = (h >> 8) & 0xffffffu;
    uint64_t gen = h >> 32;
    if (idx1 == 0 || gen == 0 || gen > 0xffffffu)
        return NULL;
    hslot *s = hslot_at((uint32_t)(idx1 - 1));
    if (!s)
        return NULL;
    *tag_out = (gen << 8) | kind;
    return s;
}

void *arsim_handle_get(uint64_t h, unsigned kind)
{
    uint64_t tag;
    hslot *s = handle_slot(h, kind, &tag);
    if (!s || atomic_load_explicit(&s->tag, memory_order_acquire) != tag)
        return NULL;
    return atomic_load_explicit(&s->obj, memory_order_relaxed);
}

void *arsim_handle_remove(uint64_t h, unsigned kind)
{
    uint64_t tag;
    hslot *s = handle_slot(h, kind, &tag);
    if (!s)
        return NULL;
    pthread_mutex_lock(&g_hmu);
    void *obj = NULL;
    if (atomic_load(&s->tag) == tag) {
        obj = atomic_load(&s->obj);
        atomic_store(&s->tag, tag & ~(uint64_t)0xff); /* keep the generation */
        atomic_store(&s->obj, NULL);
        s->next_free = g_hfree;
        g_hfree = (uint32_t)(((h >> 8) & 0xffffffu) - 1);
    }
    pthread_mutex_unlock(&g_hmu);
    return obj;
}

/* ============================================================ events */

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
    cond_init_monotonic(&e->cv);
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

/* Blocks (or spins) until pred(e, arg) holds.  Returns 0, or -1 on timeout. */
typedef int (*event_pred)(arsim_event *e, uint64_t arg);

static int pred_recorded(arsim_event *e, uint64_t target)
{
    return atomic_load_explicit(&e->rec_done, memory_order_acquire) >= target;
}

static int pred_signaled(arsim_event *e, uint64_t unused)
{
    (void)unused;
    return atomic_load_explicit(&e->signaled, memory_order_acquire) != 0;
}

static int event_block(arsim_event *e, event_pred pred, uint64_t arg, arsim_wait_mode mode,
                       int64_t timeout_ns)
{
    if (pred(e, arg))
        return 0;
    if (timeout_ns == 0)
        return -1; /* a query (zeEventQueryStatus): never yield the caller's thread */
    if (mode == ARSIM_WAIT_SPIN) {
        uint64_t deadline = timeout_ns < 0 ? UINT64_MAX : arsim_now_ns() + (uint64_t)timeout_ns;
        for (unsigned i = 0; !pred(e, arg); i++) {
            if ((i & 63) == 63 && arsim_now_ns() >= deadline)
                return -1;
            sched_yield();
        }
        return 0;
    }
    struct timespec ts;
    if (timeout_ns >= 0)
        abs_deadline(&ts, timeout_ns);
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

static void event_wake(arsim_event *e)
{
    pthread_mutex_lock(&e->mu);
    if (e->waiters)
        pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
}

static int record_executed_locked(const arsim_event *e, uint64_t seq);

/* Whether record `seq` itself has executed (a later record executing first,
 * on another queue, does not count). */
static int record_done(arsim_event *e, uint64_t seq)
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
    uint64_t target = atomic_load_explicit(&e->rec_submitted, memory_order_acquire);
    if (target == 0 || record_done(e, target))
        return (arsim_status)atomic_load_explicit(&e->rec_status, memory_order_acquire);
    uint64_t deadline = timeout_ns < 0 ? UINT64_MAX : arsim_now_ns() + (uint64_t)timeout_ns;
    if (mode == ARSIM_WAIT_SPIN) {
        for (unsigned i = 0; !record_done(e, target); i++) {
            if ((i & 63) == 63 && arsim_now_ns() >= deadline)
                return ARSIM_ERR_TIMEOUT;
            sched_yield();
        }
    } else {
        struct timespec ts;
        if (timeout_ns >= 0)
            abs_deadline(&ts, timeout_ns);
        int timed_out = 0;
        pthread_mutex_lock(&e->mu);
        e->waiters++;
        while (!record_executed_locked(e, target)) {
            if (timeout_ns < 0) {
                pthread_cond_wait(&e->cv, &e->mu);
            } else if (pthread_cond_timedwait(&e->cv, &e->mu, &ts) == ETIMEDOUT) {
                timed_out = !record_executed_locked(e, target);
                break;
            }
        }
        e->waiters--;
        pthread_mutex_unlock(&e->mu);
        if (timed_out)
            return ARSIM_ERR_TIMEOUT;
    }
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

static void event_set_signaled(arsim_event *e, int status, uint64_t when)
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

static void wake_parked(void);

void arsim_event_host_signal(arsim_event *e)
{
    event_set_signaled(e, ARSIM_OK, arsim_now_ns());
    wake_parked(); /* queues waiting on device for it */
}

void arsim_event_host_reset(arsim_event *e)
{
    atomic_store(&e->signaled, 0);
    atomic_store(&e->sig_status, 0);
}

arsim_status arsim_event_wait_signaled(arsim_event *e, arsim_wait_mode mode, int64_t timeout_ns)
{
    if (event_block(e, pred_signaled, 0, mode, timeout_ns) != 0)
        return ARSIM_ERR_TIMEOUT;
    return (arsim_status)atomic_load_explicit(&e->sig_status, memory_order_acquire);
}

/* Caller holds e->mu. */
static int record_executed_locked(const arsim_event *e, uint64_t seq)
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

/* A record executed: the event's latest record state. */
static void event_complete_record(arsim_event *e, uint64_t seq, int status, uint64_t when)
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
    if (e->waiters)
        pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
}

/* ============================================================ modules */

struct kernel_node {
    arsim_kernel k;
    ar_kernel_info info_copy; /* foreign kernels: k.info points here */
    struct kernel_node *next;
};

struct arsim_module {
    _Atomic int refs;
    void *dl;
    /* The memfd an image was loaded from stays open for the module's life:
     * glibc matches dlopen paths by name, so a closed fd's number, reused by
     * the next load's "/proc/self/fd/N", would hand back this module. */
    int fd;
    pthread_mutex_t mu;
    struct kernel_node *kernels;
    void *foreign_ctx; /* executor modules: dl is NULL */
    void (*foreign_destroy)(void *ctx);
};

static void module_retain(arsim_module *m) { atomic_fetch_add(&m->refs, 1); }

static void module_release(arsim_module *m)
{
    if (!m || atomic_fetch_sub(&m->refs, 1) != 1)
        return;
    struct kernel_node *n = m->kernels;
    while (n) {
        struct kernel_node *next = n->next;
        free((char *)n->k.name);
        free(n);
        n = next;
    }
    if (m->dl)
        dlclose(m->dl);
    if (m->foreign_destroy)
        m->foreign_destroy(m->foreign_ctx);
    if (m->fd >= 0)
        close(m->fd);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

static arsim_status module_wrap(void *dl, int fd, arsim_module **out)
{
    arsim_module *m = calloc(1, sizeof *m);
    if (!m) {
        dlclose(dl);
        if (fd >= 0)
            close(fd);
        return ARSIM_ERR_OUT_OF_MEMORY;
    }
    atomic_init(&m->refs, 1);
    m->dl = dl;
    m->fd = fd;
    pthread_mutex_init(&m->mu, NULL);
    *out = m;
    return ARSIM_OK;
}

arsim_status arsim_module_load_file(const char *path, arsim_module **out)
{
    if (!path || !out)
        return ARSIM_ERR_INVALID_VALUE;
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!dl)
        return ARSIM_ERR_INVALID_IMAGE;
    return module_wrap(dl, -1, out);
}

arsim_status arsim_module_load(const void *image, size_t size, arsim_module **out)
{
    if (!image || !out)
        return ARSIM_ERR_INVALID_VALUE;
    if (size < 4 || memcmp(image, "\177ELF", 4) != 0)
        return ARSIM_ERR_INVALID_IMAGE;
    /* dlopen wants a file: a memfd is one, without touching the disk.  Each
     * load gets a fresh inode, so two loads are two independent modules. */
    int fd = memfd_create("arsim-module", MFD_CLOEXEC);
    if (fd < 0)
        return ARSIM_ERR_OUT_OF_MEMORY;
    const char *p = image;
    size_t left = size;
    while (left) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            close(fd);
            return ARSIM_ERR_OUT_OF_MEMORY;
        }
        p += w;
        left -= (size_t)w;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        close(fd);
        return ARSIM_ERR_INVALID_IMAGE;
    }
    return module_wrap(dl, fd, out);
}

arsim_status arsim_module_get_kernel(arsim_module *m, const char *name, const arsim_kernel **out)
{
    if (!m || !name || !out)
        return ARSIM_ERR_INVALID_VALUE;
    pthread_mutex_lock(&m->mu);
    for (struct kernel_node *n = m->kernels; n; n = n->next) {
        if (strcmp(n->k.name, name) == 0) {
            *out = &n->k;
            pthread_mutex_unlock(&m->mu);
            return ARSIM_OK;
        }
    }
    size_t len = strlen(name);
    char *info_name = malloc(len + sizeof AR_KINFO_PREFIX);
    if (!info_name) {
        pthread_mutex_unlock(&m->mu);
        return ARSIM_ERR_OUT_OF_MEMORY;
    }
    if (!m->dl) { /* an executor module has only the kernels it was given */
        free(info_name);
        pthread_mutex_unlock(&m->mu);
        return ARSIM_ERR_NOT_FOUND;
    }
    memcpy(info_name, AR_KINFO_PREFIX, sizeof AR_KINFO_PREFIX - 1);
    memcpy(info_name + sizeof AR_KINFO_PREFIX - 1, name, len + 1);
    void *entry = dlsym(m->dl, name);
    const ar_kernel_info *info = dlsym(m->dl, info_name);
    free(info_name);
    if (!entry || !info || info->abi_version != AR_HOST_ABI_VERSION ||
        info->num_params > AR_KERNEL_MAX_PARAMS) {
        pthread_mutex_unlock(&m->mu);
        return ARSIM_ERR_NOT_FOUND;
    }
    struct kernel_node *n = calloc(1, sizeof *n);
    char *copy = strdup(name);
    if (!n || !copy) {
        free(n);
        free(copy);
        pthread_mutex_unlock(&m->mu);
        return ARSIM_ERR_OUT_OF_MEMORY;
    }
    n->k.entry = (ar_kernel_entry)entry;
    n->k.info = info;
    n->k.module = m;
    n->k.name = copy;
    n->next = m->kernels;
    m->kernels = n;
    *out = &n->k;
    pthread_mutex_unlock(&m->mu);
    return ARSIM_OK;
}

void arsim_module_unload(arsim_module *m) { module_release(m); }

arsim_status arsim_module_create_foreign(void *ctx, void (*destroy)(void *ctx),
                                         arsim_module **out)
{
    if (!out)
        return ARSIM_ERR_INVALID_VALUE;
    arsim_module *m = calloc(1, sizeof *m);
    if (!m)
        return ARSIM_ERR_OUT_OF_MEMORY;
    atomic_init(&m->refs, 1);
    m->fd = -1;
    m->foreign_ctx = ctx;
    m->foreign_destroy = destroy;
    pthread_mutex_init(&m->mu, NULL);
    *out = m;
    return ARSIM_OK;
}

void *arsim_module_foreign_ctx(const arsim_module *m) { return m ? m->foreign_ctx : NULL; }

arsim_status arsim_module_add_foreign_kernel(arsim_module *m, const char *name,
                                             const ar_kernel_info *info,
                                             arsim_foreign_run run, void *kernel_ctx)
{
    if (!m || m->dl || !name || !info || !run || info->num_params > AR_KERNEL_MAX_PARAMS)
        return ARSIM_ERR_INVALID_VALUE;
    pthread_mutex_lock(&m->mu);
    for (struct kernel_node *n = m->kernels; n; n = n->next) {
        if (strcmp(n->k.name, name) == 0) {
            pthread_mutex_unlock(&m->mu);
            return ARSIM_ERR_INVALID_VALUE;
        }
    }
    struct kernel_node *n = calloc(1, sizeof *n);
    char *copy = strdup(name);
    if (!n || !copy) {
        free(n);
        free(copy);
        pthread_mutex_unlock(&m->mu);
        return ARSIM_ERR_OUT_OF_MEMORY;
    }
    n->info_copy = *info;
    n->info_copy.abi_version = AR_HOST_ABI_VERSION;
    n->k.run = run;
    n->k.ctx = kernel_ctx;
    n->k.info = &n->info_copy;
    n->k.module = m;
    n->k.name = copy;
    n->next = m->kernels;
    m->kernels = n;
    pthread_mutex_unlock(&m->mu);
    return ARSIM_OK;
}

/* ============================================================ ops */

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
    arsim_event *event;
    arsim_queue *other;
    uint64_t target; /* record seq, or the seq to wait for */
    uint64_t submit_ns; /* when it was submitted: the earliest it can start */
    arsim_queue *queue; /* while dispatched to an engine: the queue it runs for */
};

static void queue_retain(arsim_queue *q);
static void queue_release(arsim_queue *q);

static arsim_op *op_new(enum op_kind kind)
{
    arsim_op *op = calloc(1, sizeof *op);
    if (op)
        op->kind = kind;
    return op;
}

void arsim_op_free(arsim_op *op)
{
    if (!op)
        return;
    free(op->owned);
    if (op->event)
        arsim_event_release(op->event);
    if (op->kernel)
        module_release(op->kernel->module);
    if (op->other)
        queue_release(op->other);
    free(op);
}

arsim_op *arsim_op_copy(void *dst, const void *src, size_t n, arsim_copy_dir dir)
{
    arsim_op *op = op_new(OP_COPY);
    if (op) {
        op->dst = dst;
        op->src = src;
        op->n = n;
        op->dir = dir;
    }
    return op;
}

arsim_op *arsim_op_copy_owned_src(void *dst, void *src_malloced, size_t n, arsim_copy_dir dir)
{
    arsim_op *op = arsim_op_copy(dst, src_malloced, n, dir);
    if (op)
        op->owned = src_malloced;
    else
        free(src_malloced);
    return op;
}

arsim_op *arsim_op_copy2d(void *dst, size_t dst_pitch, const void *src, size_t src_pitch,
                          size_t width, size_t height, arsim_copy_dir dir)
{
    arsim_op *op = op_new(OP_COPY2D);
    if (op) {
        op->dst = dst;
        op->src = src;
        op->dst_pitch = dst_pitch;
        op->src_pitch = src_pitch;
        op->width = width;
        op->height = height;
        op->n = width * height;
        op->dir = dir;
    }
    return op;
}

arsim_op *arsim_op_copy2d_owned_src(void *dst, size_t dst_pitch, void *src_malloced,
                                    size_t width, size_t height, arsim_copy_dir dir)
{
    arsim_op *op = arsim_op_copy2d(dst, dst_pitch, src_malloced, width, width, height, dir);
    if (op)
        op->owned = src_malloced;
    else
        free(src_malloced);
    return op;
}

arsim_op *arsim_op_memset8(void *dst, uint8_t value, size_t n)
{
    arsim_op *op = op_new(OP_MEMSET8);
    if (op) {
        op->dst = dst;
        op->value = value;
        op->n = n;
    }
    return op;
}

arsim_op *arsim_op_fill(void *dst, const void *pattern, size_t pattern_size, size_t n)
{
    if (!pattern || pattern_size == 0)
        return NULL;
    arsim_op *op = op_new(OP_FILL);
    if (!op)
        return NULL;
    op->owned = malloc(pattern_size);
    if (!op->owned) {
        free(op);
        return NULL;
    }
    memcpy(op->owned, pattern, pattern_size);
    op->dst = dst;
    op->width = pattern_size;
    op->n = n;
    return op;
}

/* Packs argument values after the pointer array, each 16-byte aligned. */
static void *pack_args(const ar_kernel_info *info, void *const *params)
{
    size_t np = info->num_params;
    size_t off = (np * sizeof(void *) + 15) & ~(size_t)15;
    size_t total = off;
    for (size_t i = 0; i < np; i++)
        total += (info->param_sizes[i] + 15) & ~(size_t)15;
    unsigned char *buf = malloc(total ? total : 1);
    if (!buf)
        return NULL;
    void **argv = (void **)buf;
    for (size_t i = 0; i < np; i++) {
        argv[i] = buf + off;
        if (params && params[i])
            memcpy(buf + off, params[i], info->param_sizes[i]);
        else
            memset(buf + off, 0, info->param_sizes[i]);
        off += (info->param_sizes[i] + 15) & ~(size_t)15;
    }
    return buf;
}

/* Re-points the argument array of a copied pack at the copy's own values. */
static void *clone_args(const ar_kernel_info *info, const void *src)
{
    void *const *argv = (void *const *)src;
    return pack_args(info, argv);
}

arsim_op *arsim_op_kernel(const arsim_kernel *k, ar_dim3 grid, ar_dim3 block,
                          uint32_t shared_bytes, void *const *params)
{
    if (!k)
        return NULL;
    arsim_op *op = op_new(OP_KERNEL);
    if (!op)
        return NULL;
    op->owned = pack_args(k->info, params);
    if (!op->owned) {
        free(op);
        return NULL;
    }
    module_retain(k->module);
    op->kernel = k;
    op->grid = grid;
    op->block = block;
    op->shared_bytes = shared_bytes;
    return op;
}

arsim_op *arsim_op_host_fn(void (*fn)(void *), void *user)
{
    arsim_op *op = op_new(OP_HOST_FN);
    if (op) {
        op->fn = fn;
        op->user = user;
    }
    return op;
}

arsim_op *arsim_op_release_fn(void (*fn)(void *), void *user)
{
    arsim_op *op = arsim_op_host_fn(fn, user);
    if (op)
        op->kind = OP_RELEASE_FN;
    return op;
}

arsim_op *arsim_op_marker(void) { return op_new(OP_MARKER); }

static arsim_op *event_op(enum op_kind kind, arsim_event *e)
{
    if (!e)
        return NULL;
    arsim_op *op = op_new(kind);
    if (op) {
        arsim_event_retain(e);
        op->event = e;
    }
    return op;
}

arsim_op *arsim_op_event_record(arsim_event *e) { return event_op(OP_EVENT_RECORD, e); }
arsim_op *arsim_op_event_wait(arsim_event *e) { return event_op(OP_EVENT_WAIT, e); }
arsim_op *arsim_op_event_signal(arsim_event *e) { return event_op(OP_EVENT_SIGNAL, e); }
arsim_op *arsim_op_event_reset(arsim_event *e) { return event_op(OP_EVENT_RESET, e); }
arsim_op *arsim_op_event_wait_signaled(arsim_event *e)
{
    return event_op(OP_EVENT_WAIT_SIGNALED, e);
}

arsim_op *arsim_op_queue_wait(arsim_queue *other, uint64_t seq)
{
    if (!other)
        return NULL;
    arsim_op *op = op_new(OP_QUEUE_WAIT);
    if (op) {
        queue_retain(other);
        op->other = other;
        op->target = seq;
    }
    return op;
}

static arsim_op *op_clone(const arsim_op *src)
{
    arsim_op *op = op_new(src->kind);
    if (!op)
        return NULL;
    *op = *src;
    op->next = NULL;
    op->owned = NULL;
    op->target = 0;
    if (src->owned) {
        if (src->kind == OP_KERNEL) {
            op->owned = clone_args(src->kernel->info, src->owned);
        } else {
            size_t n = src->kind == OP_FILL ? src->width : src->n;
            op->owned = malloc(n ? n : 1);
            if (op->owned)
                memcpy(op->owned, src->owned, n);
            if (src->kind == OP_COPY || src->kind == OP_COPY2D)
                op->src = op->owned;
        }
        if (!op->owned) {
            free(op);
            return NULL;
        }
    }
    if (op->event)
        arsim_event_retain(op->event);
    if (op->kernel)
        module_retain(op->kernel->module);
    if (op->other)
        queue_retain(op->other);
    return op;
}

/* ============================================================ graphs */

struct arsim_graph {
    arsim_op **ops;
    size_t n, cap;
};

arsim_status arsim_graph_create(arsim_graph **out)
{
    if (!out)
        return ARSIM_ERR_INVALID_VALUE;
    *out = calloc(1, sizeof(arsim_graph));
    return *out ? ARSIM_OK : ARSIM_ERR_OUT_OF_MEMORY;
}

arsim_status arsim_graph_append(arsim_graph *g, arsim_op *op)
{
    if (!op)
        return ARSIM_ERR_OUT_OF_MEMORY;
    if (!g) {
        arsim_op_free(op);
        return ARSIM_ERR_INVALID_VALUE;
    }
    if (g->n == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 16;
        arsim_op **ops = realloc(g->ops, cap * sizeof *ops);
        if (!ops) {
            arsim_op_free(op);
            return ARSIM_ERR_OUT_OF_MEMORY;
        }
        g->ops = ops;
        g->cap = cap;
    }
    g->ops[g->n++] = op;
    return ARSIM_OK;
}

size_t arsim_graph_size(const arsim_graph *g) { return g ? g->n : 0; }

void arsim_graph_destroy(arsim_graph *g)
{
    if (!g)
        return;
    for (size_t i = 0; i < g->n; i++)
        arsim_op_free(g->ops[i]);
    free(g->ops);
    free(g);
}

arsim_status arsim_graph_clone(const arsim_graph *g, arsim_graph **out)
{
    if (!g || !out)
        return ARSIM_ERR_INVALID_VALUE;
    arsim_graph *c;
    arsim_status st = arsim_graph_create(&c);
    if (st != ARSIM_OK)
        return st;
    for (size_t i = 0; i < g->n; i++) {
        st = arsim_graph_append(c, op_clone(g->ops[i]));
        if (st != ARSIM_OK) {
            arsim_graph_destroy(c);
            return st;
        }
    }
    *out = c;
    return ARSIM_OK;
}

/* ============================================================ queues */

struct arsim_queue {
    _Atomic int refs;
    int device;
    int priority;
    pthread_mutex_t mu;
    pthread_cond_t cv_done; /* an op completed */
    int done_waiters;       /* guarded by mu */
    arsim_op *head, *tail;
    int destroyed;
    int active;    /* someone holds the token (see "engines"); guarded by mu */
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

static void queue_retain(arsim_queue *q) { atomic_fetch_add(&q->refs, 1); }

static void queue_release(arsim_queue *q)
{
    if (atomic_fetch_sub(&q->refs, 1) != 1)
        return;
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->cv_done);
    free(q);
}

static void set_pending_err(arsim_queue *q, int err)
{
    int zero = 0;
    atomic_compare_exchange_strong(&q->pending_err, &zero, err);
}

/* The modeled duration of an op, in ns (0: fast). */
static uint64_t modeled_ns(size_t bytes, int is_copy)
{
    double lat = atomic_load(&g_latency_us);
    double gbps = atomic_load(&g_gbps);
    double ns = 0;
    if (lat > 0)
        ns += lat * 1000.0;
    if (is_copy && gbps > 0)
        ns += (double)bytes / gbps; /* bytes / (GB/s) = ns */
    return ns > 0 ? (uint64_t)ns : 0;
}

/* The device clock.  Timestamps and the timing model use "device time":
 * an op starts when it was submitted, its queue's previous op ended, and its
 * engine's previous op ended, whichever is last; it ends after the longer of
 * its modeled duration and its real CPU work.  Threads sleep until device
 * time, but a late wake-up (sleep overshoot, a loaded CPU) does not push
 * later ops back, so modeled timelines stay exact under load and events
 * measure them.  Without a timing model, device time is the real clock. */
static uint64_t ready_time(arsim_queue *q, const arsim_op *op)
{
    uint64_t t = atomic_load_explicit(&q->model_time, memory_order_relaxed);
    return op->submit_ns > t ? op->submit_ns : t;
}

static void advance(arsim_queue *q, uint64_t t)
{
    if (t > atomic_load_explicit(&q->model_time, memory_order_relaxed))
        atomic_store_explicit(&q->model_time, t, memory_order_relaxed);
}

static int copy_engine(arsim_copy_dir dir)
{
    if (g_copy_engines == 1)
        return ENGINE_H2D;
    return dir == ARSIM_COPY_D2H ? ENGINE_D2H : ENGINE_H2D;
}

/* Where an op runs: on an engine's thread (copies, memsets, fills, kernels:
 * they take device time), on the host-function thread, or, for ops that
 * take no time (markers, records, signals, resets, waits once satisfied),
 * right where the queue is moved on (see "engines"). */
static int engine_of(const arsim_op *op)
{
    switch (op->kind) {
    case OP_COPY:
    case OP_COPY2D:
        return copy_engine(op->dir);
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

static int is_wait(const arsim_op *op)
{
    return op->kind == OP_EVENT_WAIT || op->kind == OP_EVENT_WAIT_SIGNALED ||
           op->kind == OP_QUEUE_WAIT;
}

/* ---- memory faults inside kernels
 *
 * A kernel that touches an unmapped or inaccessible page raises SIGSEGV (or
 * SIGBUS) on the thread running it.  The engine's handler jumps back out of
 * the kernel on that thread; the op then fails as a GPU's would.  A fault
 * anywhere else is passed on to the handler installed before ours (Python's
 * faulthandler, say), or, if none, to the default action. */

static __thread sigjmp_buf *tls_fault_jmp;
static __thread volatile uintptr_t tls_fault_addr;
static struct sigaction g_prev_segv, g_prev_bus;
static pthread_mutex_t g_sig_mu = PTHREAD_MUTEX_INITIALIZER;

static void on_memory_fault(int sig, siginfo_t *si, void *uc)
{
    sigjmp_buf *jb = tls_fault_jmp;
    if (jb) {
        tls_fault_jmp = NULL;
        tls_fault_addr = (uintptr_t)si->si_addr;
        siglongjmp(*jb, 1);
    }
    const struct sigaction *prev = sig == SIGBUS ? &g_prev_bus : &g_prev_segv;
    if ((prev->sa_flags & SA_SIGINFO) && prev->sa_sigaction) {
        prev->sa_sigaction(sig, si, uc);
        return;
    }
    if (prev->sa_handler != SIG_DFL && prev->sa_handler != SIG_IGN) {
        prev->sa_handler(sig);
        return;
    }
    /* No one else: the default action, when the faulting access re-runs. */
    signal(sig, SIG_DFL);
}

/* Installs the handler, again if someone replaced it since (Python's
 * faulthandler, enabled after the driver loaded): checked before kernels. */
static void ensure_fault_handler(void)
{
    struct sigaction cur;
    if (sigaction(SIGSEGV, NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) &&
        cur.sa_sigaction == on_memory_fault) {
        struct sigaction cur_bus;
        if (sigaction(SIGBUS, NULL, &cur_bus) == 0 && (cur_bus.sa_flags & SA_SIGINFO) &&
            cur_bus.sa_sigaction == on_memory_fault)
            return;
    }
    pthread_mutex_lock(&g_sig_mu);
    struct sigaction mine;
    memset(&mine, 0, sizeof mine);
    mine.sa_sigaction = on_memory_fault;
    mine.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&mine.sa_mask);
    int signals[2] = {SIGSEGV, SIGBUS};
    struct sigaction *prev[2] = {&g_prev_segv, &g_prev_bus};
    for (int i = 0; i < 2; i++) {
        struct sigaction old;
        if (sigaction(signals[i], NULL, &old) != 0)
            continue;
        if ((old.sa_flags & SA_SIGINFO) && old.sa_sigaction == on_memory_fault)
            continue;
        *prev[i] = old;
        sigaction(signals[i], &mine, NULL);
    }
    pthread_mutex_unlock(&g_sig_mu);
}

/* One slice of a kernel's blocks, with its own scratch. */
typedef struct kernel_slice {
    const arsim_op *op;
    int device;
    uint64_t begin, end;
    int rc;
} kernel_slice;

static void *run_slice(void *arg)
{
    kernel_slice *sl = arg;
    const arsim_op *op = sl->op;
    ar_launch l;
    memset(&l, 0, sizeof l);
    l.abi_version = AR_HOST_ABI_VERSION;
    l.grid = op->grid;
    l.block = op->block;
    l.shared_bytes = op->shared_bytes;
    if (op->shared_bytes) {
        l.shared = calloc(1, op->shared_bytes);
        if (!l.shared) {
            sl->rc = -1;
            return NULL;
        }
    }
    l.block_begin = sl->begin;
    l.block_end = sl->end;
    tls_kernel_name = op->kernel->name;
    tls_kernel_device = sl->device;
    uint64_t faults_before = atomic_load(&g_fault_seq);
    sigjmp_buf jb;
    if (sigsetjmp(jb, 1) == 0) {
        tls_fault_jmp = &jb;
        if (op->kernel->run)
            sl->rc = op->kernel->run(op->kernel->ctx, &l, (void **)op->owned);
        else
            sl->rc = op->kernel->entry(&l, (void **)op->owned);
        tls_fault_jmp = NULL;
        if (sl->rc == ARSIM_ERR_ILLEGAL_ADDRESS) {
            pthread_mutex_lock(&g_fault_mu);
            int recorded = atomic_load(&g_fault_seq) != faults_before;
            /* An executor's own threads do not know the kernel's name. */
            if (recorded && strcmp(g_fault.kernel, "?") == 0) {
                snprintf(g_fault.kernel, sizeof g_fault.kernel, "%s", op->kernel->name);
                g_fault.device = sl->device;
            }
            pthread_mutex_unlock(&g_fault_mu);
            if (!recorded)
                record_fault(0, -1, 0); /* an executor that did not say where */
        }
    } else {
        /* The kernel touched memory outside every live allocation. */
        record_fault(tls_fault_addr, -1, 0);
        sl->rc = ARSIM_ERR_ILLEGAL_ADDRESS;
    }
    tls_kernel_name = NULL;
    tls_kernel_device = -1;
    free(l.shared);
    return NULL;
}

/* Runs a kernel's grid on the compute engine's thread, or split into contiguous block
 * ranges over ARUNTIME_SIM_KERNEL_THREADS threads (blocks are independent,
 * as on a GPU) when the grid is big enough to pay for the threads. */
static int run_kernel(const arsim_op *op, int device)
{
    ensure_fault_handler();
    uint64_t nblocks = (uint64_t)op->grid.x * op->grid.y * op->grid.z;
    uint64_t threads = g_kernel_threads;
    if (threads > nblocks / 4)
        threads = nblocks / 4 ? nblocks / 4 : 1;
    kernel_slice slices[MAX_KERNEL_THREADS];
    pthread_t tids[MAX_KERNEL_THREADS];
    int started[MAX_KERNEL_THREADS] = {0};
    for (uint64_t i = 0; i < threads; i++) {
        slices[i].op = op;
        slices[i].device = device;
        slices[i].begin = nblocks * i / threads;
        slices[i].end = nblocks * (i + 1) / threads;
        slices[i].rc = 0;
    }
    for (uint64_t i = 1; i < threads; i++)
        started[i] = pthread_create(&tids[i], NULL, run_slice, &slices[i]) == 0;
    run_slice(&slices[0]);
    int rc = slices[0].rc;
    for (uint64_t i = 1; i < threads; i++) {
        if (started[i])
            pthread_join(tids[i], NULL);
        else
            run_slice(&slices[i]); /* no thread: run it here */
        if (slices[i].rc != 0 && rc != ARSIM_ERR_ILLEGAL_ADDRESS)
            rc = slices[i].rc;
    }
    return rc;
}

/* Runs one op on the queue's thread; returns its status. */
static int execute(arsim_queue *q, arsim_op *op)
{
    device *d = &g_dev[q->device];
    int sticky = atomic_load_explicit(&d->sticky, memory_order_acquire);
    int st = ARSIM_OK;
    switch (op->kind) {
    case OP_COPY:
    case OP_COPY2D:
    case OP_MEMSET8:
    case OP_FILL:
    case OP_KERNEL: {
        if (sticky)
            return sticky;
        int is_copy = op->kind == OP_COPY || op->kind == OP_COPY2D;
        if (op->kind == OP_KERNEL) {
            if (take_fault(&d->fault_illegal)) {
                atomic_store_explicit(&d->sticky, ARSIM_ERR_ILLEGAL_ADDRESS, memory_order_release);
                return ARSIM_ERR_ILLEGAL_ADDRESS;
            }
            if (take_fault(&d->fault_launch))
                return ARSIM_ERR_LAUNCH_FAILED;
        }
        /* Runs on the engine's own thread: the engine is ours until we return. */
        sim_engine *eng = &d->engines[engine_of(op)];
        uint64_t duration = modeled_ns(op->n, is_copy);
        uint64_t ready = ready_time(q, op);
        uint64_t t_acquired = arsim_now_ns();
        switch (op->kind) {
        case OP_COPY:
            memmove(op->dst, op->src, op->n);
            break;
        case OP_COPY2D:
            for (size_t r = 0; r < op->height; r++)
                memmove((char *)op->dst + r * op->dst_pitch,
                        (const char *)op->src + r * op->src_pitch, op->width);
            break;
        case OP_MEMSET8:
            memset(op->dst, op->value, op->n);
            break;
        case OP_FILL: {
            size_t ps = op->width;
            for (size_t off = 0; off < op->n; off += ps) {
                size_t c = op->n - off < ps ? op->n - off : ps;
                memcpy((char *)op->dst + off, op->owned, c);
            }
            break;
        }
        default:
        {
            int rc = run_kernel(op, q->device);
            if (rc == ARSIM_ERR_ILLEGAL_ADDRESS) {
                atomic_store_explicit(&d->sticky, ARSIM_ERR_ILLEGAL_ADDRESS,
                                      memory_order_release);
                st = ARSIM_ERR_ILLEGAL_ADDRESS;
            } else if (rc != 0) {
                st = ARSIM_ERR_LAUNCH_FAILED;
            }
            break;
        }
        }
        uint64_t t_done = arsim_now_ns();
        uint64_t end;
        if (duration == 0) {
            end = t_done; /* no model: device time is real time */
        } else {
            uint64_t t0 = ready > eng->model_end ? ready : eng->model_end;
            uint64_t work = t_done - t_acquired;
            end = t0 + (work > duration ? work : duration);
            if (t_done < end)
                sleep_until_ns(end);
        }
        eng->model_end = end;
        advance(q, end);
        return st;
    }
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
        event_complete_record(op->event, op->target, err, when);
        return ARSIM_OK; /* reported through the event */
    }
    case OP_EVENT_SIGNAL: {
        int err = sticky ? sticky : atomic_exchange(&q->pending_err, 0);
        uint64_t when = ready_time(q, op);
        advance(q, when);
        event_set_signaled(op->event, err, when);
        return ARSIM_OK;
    }
    case OP_EVENT_RESET:
        advance(q, ready_time(q, op));
        arsim_event_host_reset(op->event);
        return ARSIM_OK;
    /* Waits run once wait_satisfied() held (the queue was parked until
     * then): never block here, the thread is shared by every queue. */
    case OP_EVENT_WAIT:
    case OP_EVENT_WAIT_SIGNALED:
        advance(q, ready_time(q, op));
        advance(q, atomic_load(&op->event->model_ts));
        return ARSIM_OK;
    case OP_QUEUE_WAIT:
        advance(q, ready_time(q, op));
        advance(q, atomic_load(&op->other->model_time));
        return ARSIM_OK;
    }
    return ARSIM_OK;
}

/* ============================================================ engines
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

static pthread_mutex_t g_park_mu = PTHREAD_MUTEX_INITIALIZER;
static arsim_queue *g_parked; /* queues whose head op is an unsatisfied wait */
static _Atomic int g_nparked;

static int wait_satisfied(const arsim_op *op)
{
    switch (op->kind) {
    case OP_EVENT_WAIT:
        return op->target == 0 || record_done(op->event, op->target);
    case OP_EVENT_WAIT_SIGNALED:
        return pred_signaled(op->event, 0);
    case OP_QUEUE_WAIT:
        return atomic_load(&op->other->completed) >= op->target;
    default:
        return 1;
    }
}

static void move_on(arsim_queue *q, arsim_op *done, int status);

/* Queues to move on, per thread: move_on runs the ops of one queue at a
 * time, and the queues its ops unblock wait here rather than recursing. */
static __thread arsim_queue *tls_todo;
static __thread int tls_moving;

static void move_on_later(arsim_queue *q)
{
    q->todo_next = tls_todo;
    tls_todo = q;
}

/* Moves q on (the caller holds its token), then every queue unblocked
 * meanwhile on this thread. */
static void drive(arsim_queue *q, arsim_op *done, int status)
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
    /* Pairs with the fence in wake_parked: either that sees this park, or
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
static void wake_parked(void)
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
            drive(q, NULL, ARSIM_OK);
    }
}

static void *engine_main(void *arg);

/* Hands op (popped from q, whose token goes with it) to its engine's
 * thread, starting the thread on first use. */
static int engine_push(int device_ord, int index, arsim_queue *q, arsim_op *op)
{
    sim_engine *eng = &g_dev[device_ord].engines[index];
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
    for (;;) {
        pthread_mutex_lock(&eng->mu);
        if (!eng->head) {
            /* Idle: end after a while, so that a process that stopped using
             * the device holds none of its threads; engine_push starts
             * another. */
            struct timespec until;
            abs_deadline(&until, (int64_t)atomic_load(&g_engine_idle_ms) * 1000000);
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
        drive(q, op, execute(q, op));
    }
    return NULL;
}

static void queue_finalize(arsim_queue *q)
{
    device *d = &g_dev[q->device];
    pthread_mutex_lock(&d->qmu);
    if (q->dev_prev)
        q->dev_prev->dev_next = q->dev_next;
    else
        d->queues = q->dev_next;
    if (q->dev_next)
        q->dev_next->dev_prev = q->dev_prev;
    pthread_mutex_unlock(&d->qmu);
    atomic_fetch_sub(&g_live_queues, 1);
    queue_release(q);
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
            wake_parked(); /* a record, a signal or this completion may satisfy a wait */
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
                queue_finalize(q);
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
        int engine = engine_of(op);
        if (engine < 0) {
            status = execute(q, op);
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

arsim_status arsim_queue_create(int ordinal, int priority, arsim_queue **out)
{
    device *d = dev_get(ordinal);
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
    cond_init_monotonic(&q->cv_done);

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
        queue_finalize(q);
    queue_release(q);
}

int arsim_queue_device(const arsim_queue *q) { return q->device; }
int arsim_queue_priority(const arsim_queue *q) { return q->priority; }

arsim_status arsim_queue_submit(arsim_queue *q, arsim_op *op, uint64_t *seq_out)
{
    if (seq_out)
        *seq_out = 0;
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
    int sticky = atomic_load_explicit(&g_dev[q->device].sticky, memory_order_acquire);
    if (sticky) {
        pthread_mutex_unlock(&q->mu);
        arsim_op_free(op);
        return (arsim_status)sticky;
    }
    /* Sequence numbers are taken here, in submission order, so that a wait
     * submitted after a record sees that record. */
    op->submit_ns = arsim_now_ns();
    if (op->kind == OP_EVENT_RECORD)
        op->target = atomic_fetch_add(&op->event->rec_submitted, 1) + 1;
    else if (op->kind == OP_EVENT_WAIT)
        op->target = atomic_load(&op->event->rec_submitted);
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
        drive(q, NULL, ARSIM_OK);
    return ARSIM_OK;
}

arsim_status arsim_queue_submit_graph(arsim_queue *q, const arsim_graph *g)
{
    if (!q || !g)
        return ARSIM_ERR_INVALID_VALUE;
    for (size_t i = 0; i < g->n; i++) {
        arsim_status st = arsim_queue_submit(q, op_clone(g->ops[i]), NULL);
        if (st != ARSIM_OK)
            return st;
    }
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
    if (!q)
        return ARSIM_ERR_INVALID_VALUE;
    queue_wait_completed(q, atomic_load(&q->submitted), mode);
    int sticky = atomic_load(&g_dev[q->device].sticky);
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
    device *d = dev_get(ordinal);
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
        queue_retain(q);
        qs[n] = q;
        targets[n] = atomic_load(&q->submitted);
        n++;
    }
    pthread_mutex_unlock(&d->qmu);
    for (size_t i = 0; i < n; i++) {
        queue_wait_completed(qs[i], targets[i], ARSIM_WAIT_BLOCK);
        queue_release(qs[i]);
    }
    free(qs);
    free(targets);
    return (arsim_status)atomic_load(&d->sticky);
}

/* ============================================================ memory in use */

static int range_hits(uintptr_t p, size_t n, uintptr_t lo, uintptr_t hi)
{
    return n && p < hi && p + n > lo;
}

static int op_uses(const arsim_op *op, uintptr_t lo, uintptr_t hi)
{
    switch (op->kind) {
    case OP_COPY:
        return range_hits((uintptr_t)op->dst, op->n, lo, hi) ||
               range_hits((uintptr_t)op->src, op->n, lo, hi);
    case OP_COPY2D: {
        if (!op->height || !op->width)
            return 0;
        size_t dn = (op->height - 1) * op->dst_pitch + op->width;
        size_t sn = (op->height - 1) * op->src_pitch + op->width;
        return range_hits((uintptr_t)op->dst, dn, lo, hi) ||
               range_hits((uintptr_t)op->src, sn, lo, hi);
    }
    case OP_MEMSET8:
    case OP_FILL:
        return range_hits((uintptr_t)op->dst, op->n, lo, hi);
    case OP_KERNEL: {
        /* A pointer-sized argument pointing into the allocation. */
        const ar_kernel_info *info = op->kernel->info;
        void *const *argv = (void *const *)op->owned;
        for (uint32_t i = 0; i < info->num_params; i++) {
            if (info->param_sizes[i] != sizeof(uintptr_t))
                continue;
            uintptr_t v;
            memcpy(&v, argv[i], sizeof v);
            if (v >= lo && v < hi)
                return 1;
        }
        return 0;
    }
    default:
        return 0;
    }
}

int arsim_mem_in_use(const void *p)
{
    ensure_init();
    arsim_alloc a;
    if (arsim_mem_lookup(p, &a) != ARSIM_OK)
        return 0;
    uintptr_t lo = (uintptr_t)a.base, hi = lo + a.size;
    int used = 0;
    for (int d = 0; d < g_ndev && !used; d++) {
        pthread_mutex_lock(&g_dev[d].qmu);
        for (arsim_queue *q = g_dev[d].queues; q && !used; q = q->dev_next) {
            pthread_mutex_lock(&q->mu);
            if (q->running && op_uses(q->running, lo, hi))
                used = 1;
            for (const arsim_op *op = q->head; op && !used; op = op->next)
                used = op_uses(op, lo, hi);
            pthread_mutex_unlock(&q->mu);
        }
        pthread_mutex_unlock(&g_dev[d].qmu);
    }
    return used;
}
