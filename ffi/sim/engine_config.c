/* The engine's knobs (read once, when the library loads), its devices, the
 * clock and the timing model.  See engine.h for what each knob means. */
#define _GNU_SOURCE
#include "engine_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the clock */

uint64_t arsim_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void eng_sleep_until_ns(uint64_t deadline)
{
    struct timespec ts = {(time_t)(deadline / 1000000000ull), (long)(deadline % 1000000000ull)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

void eng_abs_deadline(struct timespec *ts, int64_t timeout_ns)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    uint64_t ns = (uint64_t)ts->tv_nsec + (uint64_t)timeout_ns;
    ts->tv_sec += (time_t)(ns / 1000000000ull);
    ts->tv_nsec = (long)(ns % 1000000000ull);
}

void eng_cond_init_monotonic(pthread_cond_t *cv)
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
    case ARSIM_ERR_ASSERT: return "ARSIM_ERR_ASSERT";
    case ARSIM_ERR_MISALIGNED_ADDRESS: return "ARSIM_ERR_MISALIGNED_ADDRESS";
    case ARSIM_ERR_READONLY_WRITE: return "ARSIM_ERR_READONLY_WRITE";
    case ARSIM_ERR_INVALID_IMAGE: return "ARSIM_ERR_INVALID_IMAGE";
    case ARSIM_ERR_NOT_FOUND: return "ARSIM_ERR_NOT_FOUND";
    case ARSIM_ERR_TIMEOUT: return "ARSIM_ERR_TIMEOUT";
    case ARSIM_ERR_INVALID_DEVICE: return "ARSIM_ERR_INVALID_DEVICE";
    case ARSIM_ERR_CAPTURING: return "ARSIM_ERR_CAPTURING";
    case ARSIM_ERR_NOT_CAPTURING: return "ARSIM_ERR_NOT_CAPTURING";
    case ARSIM_ERR_FORKED: return "ARSIM_ERR_FORKED";
    default: return "ARSIM_ERR_UNKNOWN";
    }
}

/* ---- knobs and devices */

int eng_ndev = 1;
size_t eng_page = 4096;
int eng_sanitize;
sim_device *eng_dev;
uint32_t eng_kernel_threads = 1;
static uint32_t g_compute_units = 16;
static uint32_t g_copy_engines = 2;
static _Atomic double g_gbps;       /* <= 0: unlimited */
static _Atomic double g_latency_us; /* <= 0: none */
static _Atomic double g_peer_gbps;  /* <= 0: g_gbps */
/* A copy or memset this small takes a few microseconds of CPU, less than
 * waking an engine's thread: an idle engine runs it where its queue is moved
 * on (engine_threads.c).  64 KiB, the size up to which the front ends copy
 * pageable memory on the calling thread too. */
#define ENG_INLINE_BYTES_DEFAULT 65536
static _Atomic size_t g_inline_bytes = ENG_INLINE_BYTES_DEFAULT;
static int g_engine_nice;
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

/* A forked child has only the thread that called fork(): the engine
 * threads, and whatever they held, stayed behind.  Nothing here may take a
 * lock; the front ends read the flag and refuse every call. */
static _Atomic int g_forked;
static _Atomic int g_in_use; /* arsim_mark_in_use: a driver was initialized */

static void after_fork_in_child(void)
{
    if (atomic_load(&g_in_use))
        atomic_store(&g_forked, 1);
}

void arsim_mark_in_use(void) { atomic_store(&g_in_use, 1); }

int arsim_forked(void) { return atomic_load_explicit(&g_forked, memory_order_relaxed); }

static void init_once(void)
{
    pthread_atfork(NULL, NULL, after_fork_in_child);
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
    /* A GPU runs a grid's blocks side by side: by default a big grid is
     * split over the machine's cores, as the interpreters did before the
     * engine became the only place that splits grids. */
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    double kt = env_double("ARUNTIME_SIM_KERNEL_THREADS", cores > 0 ? (double)cores : 1);
    eng_kernel_threads = kt < 1                        ? 1
                         : kt > ENG_MAX_KERNEL_THREADS ? ENG_MAX_KERNEL_THREADS
                                                       : (uint32_t)kt;
    long page = sysconf(_SC_PAGESIZE);
    eng_page = page > 0 ? (size_t)page : 4096;
    eng_sanitize = env_double("ARUNTIME_SIM_SANITIZE", 0) != 0;
    atomic_store(&g_gbps, env_double("ARUNTIME_SIM_COPY_GBPS", 0));
    atomic_store(&g_latency_us, env_double("ARUNTIME_SIM_OP_LATENCY_US", 0));
    atomic_store(&g_peer_gbps, env_double("ARUNTIME_SIM_PEER_GBPS", 0));
    double inline_bytes = env_double("ARUNTIME_SIM_INLINE_BYTES", ENG_INLINE_BYTES_DEFAULT);
    atomic_store(&g_inline_bytes, inline_bytes > 0 ? (size_t)inline_bytes : 0);
    double nice = env_double("ARUNTIME_SIM_ENGINE_NICE", 0);
    g_engine_nice = nice < 0 ? 0 : nice > 19 ? 19 : (int)nice;
    eng_dev = calloc((size_t)n, sizeof(sim_device));
    if (!eng_dev)
        abort();
    for (int i = 0; i < n; i++) {
        eng_dev[i].ordinal = i;
        eng_dev[i].total = (uint64_t)(mb * 1024.0 * 1024.0);
        for (int e = 0; e < ENGINE_COUNT; e++) {
            sim_engine *eng = &eng_dev[i].engines[e];
            pthread_mutex_init(&eng->mu, NULL);
            eng_cond_init_monotonic(&eng->cv);
            pthread_mutex_init(&eng->tl_mu, NULL);
            eng->device = i;
            eng->index = e;
        }
        pthread_mutex_init(&eng_dev[i].qmu, NULL);
    }
    eng_ndev = n;
}

void eng_ensure_init(void) { pthread_once(&g_once, init_once); }

/* Read the knobs when the driver is loaded, as documented. */
__attribute__((constructor)) static void arsim_load(void) { eng_ensure_init(); }

sim_device *eng_dev_get(int ordinal)
{
    eng_ensure_init();
    if (ordinal < 0 || ordinal >= eng_ndev)
        return NULL;
    return &eng_dev[ordinal];
}

void arsim_set_timing(double copy_gbps, double op_latency_us)
{
    eng_ensure_init();
    atomic_store(&g_gbps, copy_gbps);
    atomic_store(&g_latency_us, op_latency_us);
}

void arsim_get_timing(double *copy_gbps, double *op_latency_us)
{
    eng_ensure_init();
    if (copy_gbps)
        *copy_gbps = atomic_load(&g_gbps);
    if (op_latency_us)
        *op_latency_us = atomic_load(&g_latency_us);
}

void arsim_set_peer_gbps(double gbps)
{
    eng_ensure_init();
    atomic_store(&g_peer_gbps, gbps);
}

double arsim_get_peer_gbps(void)
{
    eng_ensure_init();
    return atomic_load(&g_peer_gbps);
}

void arsim_set_inline_bytes(int64_t bytes)
{
    eng_ensure_init();
    atomic_store(&g_inline_bytes, bytes < 0 ? ENG_INLINE_BYTES_DEFAULT : (size_t)bytes);
}

size_t eng_inline_bytes(void) { return atomic_load_explicit(&g_inline_bytes, memory_order_relaxed); }

int eng_engine_nice(void) { return g_engine_nice; }

int arsim_inject_fault(int device_ord, int kind, int count)
{
    eng_ensure_init();
    if (count < 0 || kind < ARSIM_FAULT_OUT_OF_MEMORY || kind > ARSIM_FAULT_ILLEGAL_ADDRESS)
        return -1;
    if (device_ord < -1 || device_ord >= eng_ndev)
        return -1;
    for (int i = 0; i < eng_ndev; i++) {
        if (device_ord != -1 && i != device_ord)
            continue;
        sim_device *d = &eng_dev[i];
        _Atomic int *slot = kind == ARSIM_FAULT_OUT_OF_MEMORY ? &d->fault_oom
                            : kind == ARSIM_FAULT_LAUNCH_FAILED ? &d->fault_launch
                                                                : &d->fault_illegal;
        atomic_store(slot, count);
    }
    return 0;
}

int arsim_device_count(void)
{
    eng_ensure_init();
    return eng_ndev;
}

arsim_status arsim_device_info_get(int ordinal, arsim_device_info *out)
{
    sim_device *d = eng_dev_get(ordinal);
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
    sim_device *d = eng_dev_get(ordinal);
    if (!d)
        return ARSIM_ERR_INVALID_DEVICE;
    return (arsim_status)atomic_load_explicit(&d->sticky, memory_order_acquire);
}

void arsim_device_reset(int ordinal)
{
    sim_device *d = eng_dev_get(ordinal);
    if (!d)
        return;
    atomic_store(&d->sticky, 0);
    atomic_store(&d->fault_oom, 0);
    atomic_store(&d->fault_launch, 0);
    atomic_store(&d->fault_illegal, 0);
}

int eng_take_fault(_Atomic int *slot)
{
    int v = atomic_load(slot);
    while (v > 0) {
        if (atomic_compare_exchange_weak(slot, &v, v - 1))
            return 1;
    }
    return 0;
}

/* ---- the timing model */

uint64_t eng_modeled_ns(size_t bytes, int is_copy)
{
    double lat = atomic_load(&g_latency_us);
    double gbps = atomic_load(&g_gbps);
    double peer = atomic_load(&g_peer_gbps);
    if (is_copy == 2 && peer > 0)
        gbps = peer;
    double ns = 0;
    if (lat > 0)
        ns += lat * 1000.0;
    if (is_copy && gbps > 0)
        ns += (double)bytes / gbps; /* bytes / (GB/s) = ns */
    return ns > 0 ? (uint64_t)ns : 0;
}

int eng_copy_engine(arsim_copy_dir dir)
{
    if (g_copy_engines == 1)
        return ENGINE_H2D;
    return dir == ARSIM_COPY_D2H ? ENGINE_D2H : ENGINE_H2D;
}
