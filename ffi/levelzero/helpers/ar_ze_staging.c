/* The host side of a staged Level Zero copy, run without the GIL.
 *
 * aruntime's Level Zero backend stages copies between the device and
 * pageable host memory through pinned buffers (aruntime/backends/levelzero/
 * _staged.py).  Each piece's host side is: wait for an event, memcpy, signal
 * an event.  Doing that loop in Python would take the GIL three times per
 * piece on the stream's worker thread, and on a loaded machine the event
 * loop's thread then waits for the GIL behind it; here the whole job is one
 * call.  The Level Zero functions come in as pointers (from whichever loader
 * or driver the backend bound), so this library links against nothing.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef void *ar_ze_event;
typedef int32_t ar_ze_result; /* ze_result_t: an int-sized enum */
typedef ar_ze_result (*ar_ze_sync_fn)(ar_ze_event event, uint64_t timeout);
typedef ar_ze_result (*ar_ze_signal_fn)(ar_ze_event event);

typedef struct {
    void *dst;
    const void *src;
    size_t nbytes;
    ar_ze_event wait;   /* NULL: nothing to wait for */
    ar_ze_event signal; /* signalled once the piece is copied, or after a failure */
} ar_ze_step;

/* Run the steps in order, then wait for ``tail`` (if any).  Returns the first
 * failing wait's result (0 on success) and stores in *failed_at the index of
 * the step whose wait failed (``count`` for the tail).  After a failure no
 * more bytes move, but every step's event is still signalled, so no device
 * command waits forever on a failed copy. */
__attribute__((visibility("default"))) ar_ze_result ar_ze_run_steps(const ar_ze_step *steps, size_t count,
                                                                    ar_ze_event tail, ar_ze_sync_fn sync,
                                                                    ar_ze_signal_fn signal, uint32_t *failed_at) {
    ar_ze_result rc = 0;
    for (size_t i = 0; i < count; i++) {
        if (rc == 0 && steps[i].wait != NULL) {
            rc = sync(steps[i].wait, UINT64_MAX);
            if (rc != 0)
                *failed_at = (uint32_t)i;
        }
        if (rc == 0)
            memcpy(steps[i].dst, steps[i].src, steps[i].nbytes);
        signal(steps[i].signal);
    }
    if (rc == 0 && tail != NULL) {
        rc = sync(tail, UINT64_MAX);
        if (rc != 0)
            *failed_at = (uint32_t)count;
    }
    return rc;
}
