/* A kernel that holds its engine for a set time, for the loop-stall test:
 * the long device op that other calls must not wait for on the loop thread.
 * Written against the host-kernel ABI (ffi/kernels/ar_host_abi.h) and built
 * by the tests with the C compiler; launch it with one block of one thread.
 *
 *   sleep_us(uint64 microseconds)
 */
#include <errno.h>
#include <stdint.h>
#include <time.h>

#include "ar_host_abi.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT const ar_kernel_info __ar_kinfo_sleep_us = {AR_HOST_ABI_VERSION, 1, {sizeof(uint64_t)}};

EXPORT int sleep_us(const ar_launch *launch, void **params) {
    uint64_t us = *(const uint64_t *)params[0];
    struct timespec left = {(time_t)(us / 1000000u), (long)(us % 1000000u) * 1000L};
    if (launch->block_begin < launch->block_end)
        while (nanosleep(&left, &left) != 0 && errno == EINTR) {
        }
    return 0;
}
