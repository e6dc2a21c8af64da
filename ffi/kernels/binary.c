/* Element-wise binary ops in the portable dialect (ar_portable.h).
 *
 *   out[i] = f(a[i], b[i]),  op: 0 add, 1 sub, 2 mul, 3 div, 4 max, 5 min
 *
 * max and min propagate NaN as numpy's maximum/minimum do.  out may be the
 * same buffer as a or b.  One thread per element, grid-stride over n.
 * Kernels: binary_f32 and binary_f16 (IEEE half stored as ar_u16, computed in float).
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

#define AR_BINARY_KERNEL(dt, T, LOAD, STORE)                                                   \
    AR_KERNEL(binary_##dt, ar_u64, n, ar_u32, op, AR_GLOBAL const T *, a,                      \
              AR_GLOBAL const T *, b, AR_GLOBAL T *, out)                                      \
    {                                                                                          \
        for (ar_u64 i = AR_GLOBAL_ID_X; i < n; i += AR_GLOBAL_SIZE_X)                          \
            STORE(out, i, ar_binary_apply(op, LOAD(a, i), LOAD(b, i)));                        \
    }

AR_BINARY_KERNEL(f32, float, AR_LOAD_F32, AR_STORE_F32)
AR_BINARY_KERNEL(f16, ar_u16, AR_LOAD_F16, AR_STORE_F16)
