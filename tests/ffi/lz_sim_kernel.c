/* A tiny host kernel for the levelzero-sim tests, written directly against the
 * host-kernel ABI (ffi/kernels/ar_host_abi.h) so the tests do not depend on
 * the portable kernel sources.  Built by the tests with gcc into a temporary
 * shared object whose bytes are passed to zeModuleCreate as a native module.
 *
 *   axpy(uint32 n, float a, const float *x, float *y): y[i] = a * x[i] + y[i]
 *   iota(uint32 n, uint32 start, uint32 *y):           y[i] = start + i
 */
#include <stdint.h>

#include "ar_host_abi.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT const ar_kernel_info __ar_kinfo_axpy = {
    AR_HOST_ABI_VERSION, 4, {sizeof(uint32_t), sizeof(float), sizeof(void *), sizeof(void *)}};

EXPORT int axpy(const ar_launch *launch, void **params) {
    uint32_t n = *(const uint32_t *)params[0];
    float a = *(const float *)params[1];
    const float *x = *(const float *const *)params[2];
    float *y = *(float *const *)params[3];
    uint64_t threads = (uint64_t)launch->block.x * launch->block.y * launch->block.z;
    for (uint64_t b = launch->block_begin; b < launch->block_end; b++)
        for (uint64_t t = 0; t < threads; t++) {
            uint64_t i = b * threads + t;
            if (i < n) y[i] = a * x[i] + y[i];
        }
    return 0;
}

EXPORT const ar_kernel_info __ar_kinfo_iota = {
    AR_HOST_ABI_VERSION, 3, {sizeof(uint32_t), sizeof(uint32_t), sizeof(void *)}};

EXPORT int iota(const ar_launch *launch, void **params) {
    uint32_t n = *(const uint32_t *)params[0];
    uint32_t start = *(const uint32_t *)params[1];
    uint32_t *y = *(uint32_t *const *)params[2];
    uint64_t threads = (uint64_t)launch->block.x * launch->block.y * launch->block.z;
    for (uint64_t b = launch->block_begin; b < launch->block_end; b++)
        for (uint64_t t = 0; t < threads; t++) {
            uint64_t i = b * threads + t;
            if (i < n) y[i] = start + (uint32_t)i;
        }
    return 0;
}
