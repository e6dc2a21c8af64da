/* Reductions along one axis in the portable dialect (ar_portable.h).
 *
 * x is viewed as [outer, len, inner] (packed, row-major) and reduced along
 * the middle axis into y [outer, inner].  op: 0 sum, 1 max, 2 min, 3 mean.
 * max and min propagate NaN as numpy does; sum and mean use compensated
 * (Kahan) summation, so long axes stay close to numpy's pairwise sums.
 * One thread per element of y, grid-stride over outer * inner (launch 1-D).
 */
#include "ar_compute.h"

#define AR_REDUCE_SUM 0u
#define AR_REDUCE_MAX 1u
#define AR_REDUCE_MIN 2u
#define AR_REDUCE_MEAN 3u

AR_KERNEL(reduce_f32, ar_u64, outer, ar_u64, len, ar_u64, inner, ar_u32, op,
          AR_GLOBAL const float *, x, AR_GLOBAL float *, y)
{
    ar_u64 total = outer * inner;
    for (ar_u64 idx = AR_GLOBAL_ID_X; idx < total; idx += AR_GLOBAL_SIZE_X) {
        ar_u64 o = idx / inner;
        ar_u64 in = idx % inner;
        AR_GLOBAL const float *xs = x + o * len * inner + in;
        float acc = xs[0];
        if (op == AR_REDUCE_MAX) {
            for (ar_u64 t = 1; t < len; t++)
                acc = ar_max_nan(acc, xs[t * inner]);
        } else if (op == AR_REDUCE_MIN) {
            for (ar_u64 t = 1; t < len; t++)
                acc = ar_min_nan(acc, xs[t * inner]);
        } else {
            float carry = 0.0f;
            for (ar_u64 t = 1; t < len; t++) {
                float term = xs[t * inner] - carry;
                float next = acc + term;
                carry = (next - acc) - term;
                acc = next;
            }
            if (op == AR_REDUCE_MEAN)
                acc = acc / (float)len;
        }
        y[idx] = acc;
    }
}
