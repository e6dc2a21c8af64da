/* Helpers shared by the compute kernels (gemm.c, conv2d.c, ...), in the
 * portable dialect of ar_portable.h. */
#ifndef AR_COMPUTE_H
#define AR_COMPUTE_H

#include "ar_portable.h"

/* numpy's maximum/minimum: a NaN operand wins (fmaxf would drop it). */
AR_DEVICE_FN float ar_max_nan(float a, float b)
{
    if (a != a)
        return a;
    if (b != b)
        return b;
    return a > b ? a : b;
}

AR_DEVICE_FN float ar_min_nan(float a, float b)
{
    if (a != a)
        return a;
    if (b != b)
        return b;
    return a < b ? a : b;
}

#endif /* AR_COMPUTE_H */
