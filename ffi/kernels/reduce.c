/* Reductions along one axis in the portable dialect (ar_portable.h).
 *
 * x is viewed as [outer, len, inner] (packed, row-major) and reduced along
 * the middle axis into y [outer, inner].  op: 0 sum, 1 max, 2 min, 3 mean.
 * max and min propagate NaN as numpy does; sum and mean use compensated
 * (Kahan) summation in float, so long axes stay close to numpy's pairwise sums.
 * One thread per element of y, grid-stride over outer * inner (launch 1-D).
 * Kernels: reduce_f32 and reduce_f16 (IEEE half stored as ar_u16).
 */
#include "ar_compute.h"

#define AR_REDUCE_SUM 0u
#define AR_REDUCE_MAX 1u
#define AR_REDUCE_MIN 2u
#define AR_REDUCE_MEAN 3u

#define AR_REDUCE_KERNEL(dt, T, LOAD, STORE)                                                   \
    AR_KERNEL(reduce_##dt, ar_u64, outer, ar_u64, len, ar_u64, inner, ar_u32, op,              \
              AR_GLOBAL const T *, x, AR_GLOBAL T *, y)                                        \
    {                                                                                          \
        ar_u64 total = outer * inner;                                                          \
        for (ar_u64 idx = AR_GLOBAL_ID_X; idx < total; idx += AR_GLOBAL_SIZE_X) {              \
            ar_u64 base = idx / inner * len * inner + idx % inner;                             \
            float acc = LOAD(x, base);                                                         \
            if (op == AR_REDUCE_MAX) {                                                         \
                for (ar_u64 t = 1; t < len; t++)                                               \
                    acc = ar_max_nan(acc, LOAD(x, base + t * inner));                          \
            } else if (op == AR_REDUCE_MIN) {                                                  \
                for (ar_u64 t = 1; t < len; t++)                                               \
                    acc = ar_min_nan(acc, LOAD(x, base + t * inner));                          \
            } else {                                                                           \
                float carry = 0.0f;                                                            \
                for (ar_u64 t = 1; t < len; t++) {                                             \
                    float term = LOAD(x, base + t * inner) - carry;                            \
                    float next = acc + term;                                                   \
                    carry = (next - acc) - term;                                               \
                    acc = next;                                                                \
                }                                                                              \
                if (op == AR_REDUCE_MEAN)                                                      \
                    acc = acc / (float)len;                                                    \
            }                                                                                  \
            STORE(y, idx, acc);                                                                \
        }                                                                                      \
    }

AR_REDUCE_KERNEL(f32, float, AR_LOAD_F32, AR_STORE_F32)
AR_REDUCE_KERNEL(f16, ar_u16, AR_LOAD_F16, AR_STORE_F16)
