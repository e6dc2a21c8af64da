/* Host functions the CUDA backend enqueues with cuLaunchHostFunc.
 *
 * ar_hostfn_copy stages pageable host memory through pinned memory, in stream
 * order, so that a large pageable copy costs the event loop only the enqueue.
 * It takes no lock and touches no Python state.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "../decl/90_aruntime_helpers.h"

#define AR_EXPORT __attribute__((visibility("default")))

/* Set by the interpreter's exit hook: from then on host functions copy
 * nothing, because the Python objects owning the pageable buffers may
 * already be gone while the driver is still running queued work. */
static atomic_int shutting_down;

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
    if (!atomic_load_explicit(&shutting_down, memory_order_acquire))
        memcpy(job->dst, job->src, job->nbytes);
    /* A job enqueued once frees itself; a job captured into a graph runs on
     * every replay and is freed with the graph. */
    if (job->free_after) free(job);
}

AR_EXPORT void ar_helpers_shutdown(void) {
    atomic_store_explicit(&shutting_down, 1, memory_order_release);
}

AR_EXPORT int ar_helpers_is_shutdown(void) {
    return atomic_load_explicit(&shutting_down, memory_order_acquire);
}
