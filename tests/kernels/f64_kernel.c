/* A kernel that takes a C double, for the float64 argument conformance test,
 * written against the host-kernel ABI (ffi/kernels/ar_host_abi.h): the
 * portable kernels are all float32.  Built by the test with the C compiler.
 *
 *   fill_f64(uint32 n, double value, double *y): y[i] = value
 */
#include <stdint.h>

#include "ar_host_abi.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT const ar_kernel_info __ar_kinfo_fill_f64 = {
    AR_HOST_ABI_VERSION, 3, {sizeof(uint32_t), sizeof(double), sizeof(void *)}};

EXPORT int fill_f64(const ar_launch *launch, void **params) {
    uint32_t n = *(const uint32_t *)params[0];
    double value = *(const double *)params[1];
    double *y = *(double *const *)params[2];
    uint64_t threads = (uint64_t)launch->block.x * launch->block.y * launch->block.z;
    for (uint64_t b = launch->block_begin; b < launch->block_end; b++)
        for (uint64_t t = 0; t < threads; t++) {
            uint64_t i = b * threads + t;
            if (i < n) y[i] = value;
        }
    return 0;
}
