/* A kernel that holds its engine until the host says so, for the tests that
 * need "this engine is busy" without a timing assumption.  Written against
 * the host-kernel ABI (ffi/kernels/ar_host_abi.h) and built by the tests with
 * the C compiler; launch it with one block of one thread.
 *
 *   hold_until(uint32 *flag): returns once *flag is non-zero (fails after 60 s)
 */
#include <stdint.h>
#include <time.h>

#include "ar_host_abi.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT const ar_kernel_info __ar_kinfo_hold_until = {AR_HOST_ABI_VERSION, 1, {sizeof(void *)}};

EXPORT int hold_until(const ar_launch *launch, void **params) {
    volatile uint32_t *flag = *(volatile uint32_t *const *)params[0];
    if (launch->block_begin >= launch->block_end)
        return 0;
    const struct timespec tick = {0, 100000}; /* 100 us */
    for (long i = 0; i < 600000; i++) {
        if (*flag)
            return 0;
        nanosleep(&tick, NULL);
    }
    return 1; /* never released: fail rather than hold the engine forever */
}
