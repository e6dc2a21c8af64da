/* Element-wise unary ops in the portable dialect (ar_portable.h).
 *
 *   y[i] = f(x[i]),  op: 0 relu, 1 gelu (tanh approximation), 2 sigmoid,
 *                        3 tanh, 4 exp, 5 log, 6 sqrt, 7 neg
 *
 * gelu is the tanh approximation 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
 * (torch's gelu(approximate="tanh")).  x and y may be the same buffer.
 * One thread per element, grid-stride over n (launch 1-D, any grid).
 * Kernels: unary_f32 and unary_f16 (IEEE half stored as ar_u16, computed in float).
 */
#include "ar_compute.h"

AR_DEVICE_FN float ar_unary_apply(ar_u32 op, float x)
{
    switch (op) {
    case 0u:
        return x > 0.0f ? x : (x != x ? x : 0.0f);
    case 1u:
        return 0.5f * x * (1.0f + ar_tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
    case 2u:
        return 1.0f / (1.0f + ar_expf(-x));
    case 3u:
        return ar_tanhf(x);
    case 4u:
        return ar_expf(x);
    case 5u:
        return ar_logf(x);
    case 6u:
        return ar_sqrtf(x);
    default:
        return -x;
    }
}

#define AR_UNARY_KERNEL(dt, T, LOAD, STORE)                                                    \
    AR_KERNEL(unary_##dt, ar_u64, n, ar_u32, op, AR_GLOBAL const T *, x, AR_GLOBAL T *, y)     \
    {                                                                                          \
        for (ar_u64 i = AR_GLOBAL_ID_X; i < n; i += AR_GLOBAL_SIZE_X)                          \
            STORE(y, i, ar_unary_apply(op, LOAD(x, i)));                                       \
    }

AR_UNARY_KERNEL(f32, float, AR_LOAD_F32, AR_STORE_F32)
AR_UNARY_KERNEL(f16, ar_u16, AR_LOAD_F16, AR_STORE_F16)
