/* Element-wise float32 kernels in the portable dialect (ar_portable.h).
 *
 * Built three ways from this one file:
 *   host .so (gcc, by ffi/build.py):  aruntime/_lib/libarkernels_host.so
 *   PTX (nvcc, committed):            aruntime/kernels/vector_ops.ptx
 *     regenerate: python ffi/kernels/build_ptx.py   (needs /usr/local/cuda/bin/nvcc)
 * All kernels are 1-D: launch with grid.x * block.x >= n.
 */
#include "ar_portable.h"

/* y = a * x + y */
AR_KERNEL(saxpy, ar_u32, n, float, a, AR_GLOBAL const float *, x, AR_GLOBAL float *, y)
{
    ar_u32 i = AR_GLOBAL_ID_X;
    if (i < n)
        y[i] = a * x[i] + y[i];
}

/* y = value */
AR_KERNEL(fill_f32, ar_u32, n, float, value, AR_GLOBAL float *, y)
{
    ar_u32 i = AR_GLOBAL_ID_X;
    if (i < n)
        y[i] = value;
}

/* y = a * y */
AR_KERNEL(scale_f32, ar_u32, n, float, a, AR_GLOBAL float *, y)
{
    ar_u32 i = AR_GLOBAL_ID_X;
    if (i < n)
        y[i] = a * y[i];
}

/* z = x + y */
AR_KERNEL(add_f32, ar_u32, n, AR_GLOBAL const float *, x, AR_GLOBAL const float *, y,
          AR_GLOBAL float *, z)
{
    ar_u32 i = AR_GLOBAL_ID_X;
    if (i < n)
        z[i] = x[i] + y[i];
}

/* y[i] = start + i, as uint32 (handy for checking indexing) */
AR_KERNEL(iota_u32, ar_u32, n, ar_u32, start, AR_GLOBAL ar_u32 *, y)
{
    ar_u32 i = AR_GLOBAL_ID_X;
    if (i < n)
        y[i] = start + i;
}
