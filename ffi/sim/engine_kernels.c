/* Running a kernel's blocks, split over threads for a big grid, and the
 * memory faults inside kernels.
 *
 * A kernel that touches an unmapped or inaccessible page raises SIGSEGV (or
 * SIGBUS) on the thread running it.  The engine's handler jumps back out of
 * the kernel on that thread; the op then fails as a GPU's would.  A fault
 * anywhere else is passed on to the handler installed before ours (Python's
 * faulthandler, say), or, if none, to the default action. */
#define _GNU_SOURCE
#include "engine_internal.h"

#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

static __thread sigjmp_buf *tls_fault_jmp;
static __thread uint64_t tls_kernel_tag;
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

/* One range of a kernel's blocks, run on this thread with its own scratch;
 * returns 0, ARSIM_ERR_ILLEGAL_ADDRESS, ARSIM_ERR_MISALIGNED_ADDRESS or
 * another failure. */
static int run_blocks(const arsim_op *op, int device, uint64_t begin, uint64_t end)
{
    ar_launch l;
    memset(&l, 0, sizeof l);
    l.abi_version = AR_HOST_ABI_VERSION;
    l.grid = op->grid;
    l.block = op->block;
    l.shared_bytes = op->shared_bytes;
    if (op->shared_bytes) {
        l.shared = calloc(1, op->shared_bytes);
        if (!l.shared)
            return -1;
    }
    l.block_begin = begin;
    l.block_end = end;
    eng_fault_set_kernel(op->kernel->name, op->site, device);
    eng_readonly_enter(op->ro, op->kernel->name, op->site);
    tls_kernel_tag = op->tag;
    uint64_t faults_before = eng_fault_count();
    int rc;
    sigjmp_buf jb;
    if (sigsetjmp(jb, 1) == 0) {
        tls_fault_jmp = &jb;
        if (op->kernel->run)
            rc = op->kernel->run(op->kernel->ctx, &l, (void **)op->owned);
        else
            rc = op->kernel->entry(&l, (void **)op->owned);
        tls_fault_jmp = NULL;
        /* The interpreter stopped at a store into read-only memory as it
         * would at a fault, but the device is fine: not sticky. */
        if (eng_readonly_leave())
            rc = ARSIM_ERR_READONLY_WRITE;
        else if (rc == ARSIM_ERR_ILLEGAL_ADDRESS || rc == ARSIM_ERR_MISALIGNED_ADDRESS)
            eng_fault_after_kernel(faults_before, op->kernel->name, op->site, device);
    } else {
        /* The kernel touched memory outside every live allocation. */
        eng_readonly_leave();
        eng_record_fault(tls_fault_addr, -1, 0);
        rc = ARSIM_ERR_ILLEGAL_ADDRESS;
    }
    eng_fault_set_kernel(NULL, NULL, -1);
    tls_kernel_tag = 0;
    free(l.shared);
    return rc;
}

uint64_t arsim_kernel_tag(void) { return tls_kernel_tag; }

/* Which of two chunks' outcomes the launch reports: the sticky ones first,
 * since they poison the device whatever the other chunks did. */
static int severity(int rc)
{
    switch (rc) {
    case 0: return 0;
    case ARSIM_ERR_ILLEGAL_ADDRESS: return 5;
    case ARSIM_ERR_MISALIGNED_ADDRESS: return 4;
    case ARSIM_ERR_ASSERT: return 3;
    case ARSIM_ERR_READONLY_WRITE: return 2;
    default: return 1;
    }
}

/* A big grid is cut into chunks that whoever is free claims: the compute
 * engine's thread itself, and up to ARUNTIME_SIM_KERNEL_THREADS - 1 helper
 * threads per device, started on first use and ending after the engines'
 * idle time.  The engine's thread never waits for a helper that has not
 * started (on a busy host it may not run for a while): it claims every chunk
 * left, then waits only for the chunks helpers are running. */
typedef struct kernel_job {
    const arsim_op *op;
    int device;
    uint64_t nblocks, chunk;
    _Atomic uint64_t next;    /* first block not claimed yet */
    _Atomic int rc;           /* 0, or the most severe failure (see severity) */
    int helping;              /* helpers inside the job (guarded by the pool's mu) */
} kernel_job;

typedef struct kernel_pool {
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    kernel_job *job;    /* posted while its chunks are claimed (guarded by mu) */
    unsigned long post; /* how many jobs have been posted: tells apart two at one address */
    int helpers;        /* helper threads alive */
} kernel_pool;

static pthread_mutex_t g_pools_mu = PTHREAD_MUTEX_INITIALIZER;
static kernel_pool *g_pools; /* one per device, made on first use */

static void job_failed(kernel_job *job, int rc)
{
    int was = atomic_load(&job->rc);
    while (severity(rc) > severity(was) && !atomic_compare_exchange_weak(&job->rc, &was, rc)) {
    }
    /* A fault, an assert or a store into read-only memory stops the kernel,
     * as on a GPU: no chunk not yet claimed runs. */
    if (severity(rc) >= 2)
        atomic_store(&job->next, job->nblocks);
}

/* Claims and runs chunks of job until none is left. */
static void run_chunks(kernel_job *job)
{
    for (;;) {
        uint64_t begin = atomic_fetch_add(&job->next, job->chunk);
        if (begin >= job->nblocks)
            return;
        uint64_t end = begin + job->chunk < job->nblocks ? begin + job->chunk : job->nblocks;
        int rc = run_blocks(job->op, job->device, begin, end);
        if (rc != 0)
            job_failed(job, rc);
    }
}

static void *helper_main(void *arg)
{
    kernel_pool *pool = arg;
    pthread_setname_np(pthread_self(), "arsim-kernel");
    pthread_mutex_lock(&pool->mu);
    for (;;) {
        if (!pool->job) {
            struct timespec until;
            eng_abs_deadline(&until, (int64_t)eng_engine_idle_ms() * 1000000);
            if (pthread_cond_timedwait(&pool->work, &pool->mu, &until) == ETIMEDOUT &&
                !pool->job)
                break;
            continue;
        }
        kernel_job *job = pool->job;
        unsigned long post = pool->post;
        job->helping++;
        pthread_mutex_unlock(&pool->mu);
        run_chunks(job);
        pthread_mutex_lock(&pool->mu);
        if (--job->helping == 0)
            pthread_cond_broadcast(&pool->done);
        /* Wait for the next job: this one's chunks are all claimed. */
        while (pool->job && pool->post == post)
            pthread_cond_wait(&pool->work, &pool->mu);
    }
    pool->helpers--;
    pthread_mutex_unlock(&pool->mu);
    return NULL;
}

static kernel_pool *pool_of(int device)
{
    pthread_mutex_lock(&g_pools_mu);
    if (!g_pools) {
        g_pools = calloc((size_t)eng_ndev, sizeof *g_pools);
        for (int i = 0; g_pools && i < eng_ndev; i++) {
            pthread_mutex_init(&g_pools[i].mu, NULL);
            eng_cond_init_monotonic(&g_pools[i].work);
            pthread_cond_init(&g_pools[i].done, NULL);
        }
    }
    pthread_mutex_unlock(&g_pools_mu);
    return g_pools ? &g_pools[device] : NULL;
}

/* Runs a kernel op's grid on the compute engine's thread, with the device's
 * helpers for a grid big enough to pay for them (blocks are independent, as
 * on a GPU). */
int eng_run_kernel(const arsim_op *op, int device)
{
    ensure_fault_handler();
    uint64_t nblocks = (uint64_t)op->grid.x * op->grid.y * op->grid.z;
    uint64_t threads = eng_kernel_threads;
    if (threads > nblocks / 4)
        threads = nblocks / 4 ? nblocks / 4 : 1;
    kernel_pool *pool = threads > 1 ? pool_of(device) : NULL;
    if (!pool)
        return run_blocks(op, device, 0, nblocks);
    /* Four chunks a thread: a late helper leaves little for the others. */
    kernel_job job = {.op = op, .device = device, .nblocks = nblocks};
    job.chunk = nblocks / (threads * 4) ? nblocks / (threads * 4) : 1;
    atomic_init(&job.next, 0);
    atomic_init(&job.rc, 0);
    pthread_mutex_lock(&pool->mu);
    while ((uint64_t)pool->helpers < threads - 1) {
        pthread_t th;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&attr, 8u << 20);
        int started = pthread_create(&th, &attr, helper_main, pool) == 0;
        pthread_attr_destroy(&attr);
        if (!started)
            break; /* fewer helpers: this thread runs what they would have */
        pool->helpers++;
    }
    pool->job = &job;
    pool->post++;
    pthread_cond_broadcast(&pool->work);
    pthread_mutex_unlock(&pool->mu);
    run_chunks(&job);
    pthread_mutex_lock(&pool->mu);
    pool->job = NULL; /* no helper joins it from now on */
    pthread_cond_broadcast(&pool->work);
    while (job.helping)
        pthread_cond_wait(&pool->done, &pool->mu);
    pthread_mutex_unlock(&pool->mu);
    return atomic_load(&job.rc);
}
