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
    eng_fault_set_kernel(op->kernel->name, op->site, sl->device);
    eng_readonly_enter(op->ro, op->kernel->name, op->site);
    tls_kernel_tag = op->tag;
    uint64_t faults_before = eng_fault_count();
    sigjmp_buf jb;
    if (sigsetjmp(jb, 1) == 0) {
        tls_fault_jmp = &jb;
        if (op->kernel->run)
            sl->rc = op->kernel->run(op->kernel->ctx, &l, (void **)op->owned);
        else
            sl->rc = op->kernel->entry(&l, (void **)op->owned);
        tls_fault_jmp = NULL;
        /* The interpreter stopped at a store into read-only memory as it
         * would at a fault, but the device is fine: not sticky. */
        if (eng_readonly_leave())
            sl->rc = ARSIM_ERR_READONLY_WRITE;
        else if (sl->rc == ARSIM_ERR_ILLEGAL_ADDRESS)
            eng_fault_after_kernel(faults_before, op->kernel->name, op->site, sl->device);
    } else {
        /* The kernel touched memory outside every live allocation. */
        eng_readonly_leave();
        eng_record_fault(tls_fault_addr, -1, 0);
        sl->rc = ARSIM_ERR_ILLEGAL_ADDRESS;
    }
    eng_fault_set_kernel(NULL, NULL, -1);
    tls_kernel_tag = 0;
    free(l.shared);
    return NULL;
}

uint64_t arsim_kernel_tag(void) { return tls_kernel_tag; }

/* Runs a kernel's grid on the compute engine's thread, or split into contiguous block
 * ranges over ARUNTIME_SIM_KERNEL_THREADS threads (blocks are independent,
 * as on a GPU) when the grid is big enough to pay for the threads. */
/* Which of two slices' outcomes the launch reports: the sticky ones first,
 * since they poison the device whatever the other slices did. */
static int severity(int rc)
{
    switch (rc) {
    case 0: return 0;
    case ARSIM_ERR_ILLEGAL_ADDRESS: return 4;
    case ARSIM_ERR_ASSERT: return 3;
    case ARSIM_ERR_READONLY_WRITE: return 2;
    default: return 1;
    }
}

int eng_run_kernel(const arsim_op *op, int device)
{
    ensure_fault_handler();
    uint64_t nblocks = (uint64_t)op->grid.x * op->grid.y * op->grid.z;
    uint64_t threads = eng_kernel_threads;
    if (threads > nblocks / 4)
        threads = nblocks / 4 ? nblocks / 4 : 1;
    kernel_slice slices[ENG_MAX_KERNEL_THREADS];
    pthread_t tids[ENG_MAX_KERNEL_THREADS];
    int started[ENG_MAX_KERNEL_THREADS] = {0};
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
        if (severity(slices[i].rc) > severity(rc))
            rc = slices[i].rc;
    }
    return rc;
}
