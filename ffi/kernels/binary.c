/* Element-wise binary ops in the portable dialect (ar_portable.h).
 *
 *   out[i] = f(a[i], b[i]),  op: 0 add, 1 sub, 2 mul, 3 div, 4 max, 5 min
 *
 * max and min propagate NaN as numpy's maximum/minimum do.  out may be the
 * same buffer as a or b.  One thread per element, grid-stride over n.
 */
#include "ar_compute.h"

AR_DEVICE_FN float ar_binary_apply(ar_u32 op, float a, float b)
{
    switch (op) {
    case 0u:
        return a + b;
    case 1u:
        return a - b;
    case 2u:
        return a * b;
    case 3u:
        return a / b;
    case 4u:
        return ar_max_nan(a, b);
    default:
        return ar_min_nan(a, b);
    }
}

AR_KERNEL(binary_f32, ar_u64, n, ar_u32, op, AR_GLOBAL const float *, a,
          AR_GLOBAL const float *, b, AR_GLOBAL float *, out)
{
    for (ar_u64 i = AR_GLOBAL_ID_X; i < n; i += AR_GLOBAL_SIZE_X)
        out[i] = ar_binary_apply(op, a[i], b[i]);
}
