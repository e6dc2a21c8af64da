/* Host functions the CUDA backend enqueues with cuLaunchHostFunc.
 *
 * ar_hostfn_copy stages pageable host memory through pinned memory, in stream
 * order, so that a large pageable copy costs the event loop only the enqueue.
 * It takes no lock and touches no Python state.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../decl/90_aruntime_helpers.h"

#define AR_EXPORT __attribute__((visibility("default")))

/* Set by the interpreter's exit hook: from then on host functions copy
 * nothing, because the Python objects owning the pageable buffers may
 * already be gone while the driver is still running queued work. */
static atomic_int shutting_down;
/* Host functions between their look at shutting_down and the end of their
 * copy (sequentially consistent with it, so ar_helpers_shutdown either sees
 * one here or that one sees the flag). */
static atomic_int copying;

AR_EXPORT struct ar_copy_job *ar_copy_job_new(void *dst, const void *src, size_t nbytes,
                                              int free_after) {
    struct ar_copy_job *job = malloc(sizeof *job);
    if (job == NULL) return NULL;
    job->dst = dst;
    job->src = src;
    job->nbytes = nbytes;
    job->free_after = free_after;
    return job;
}

AR_EXPORT void ar_copy_job_free(struct ar_copy_job *job) { free(job); }

AR_EXPORT void ar_hostfn_copy(void *user_data) {
    struct ar_copy_job *job = user_data;
    atomic_fetch_add(&copying, 1);
    if (!atomic_load(&shutting_down))
        memcpy(job->dst, job->src, job->nbytes);
    atomic_fetch_sub(&copying, 1);
    /* A job enqueued once frees itself; a job captured into a graph runs on
     * every replay and is freed with the graph. */
    if (job->free_after) free(job);
}

AR_EXPORT void ar_helpers_shutdown(void) {
    atomic_store(&shutting_down, 1);
    /* A host function that looked before the flag was set may still be
     * copying, from or into a pageable buffer whose Python owner is freed
     * once this returns: wait for it (one staging chunk, milliseconds; at
     * most 2 s, for a driver thread that is itself stuck). */
    const struct timespec pause = {0, 100 * 1000};
    for (int i = 0; i < 20000 && atomic_load(&copying); i++)
        nanosleep(&pause, NULL);
}

AR_EXPORT int ar_helpers_is_shutdown(void) {
    return atomic_load_explicit(&shutting_down, memory_order_acquire);
}
