/* gemm in the portable dialect (ar_portable.h): BLAS sgemm, column-major.
 *
 *   C = alpha * op(A) * op(B) + beta * C,  op(X) = X or X^T,
 *   op(A) is m x k, op(B) is k x n, C is m x n; element (i, j) of a stored
 *   matrix X is X[i + j * ldx].
 *
 * One thread per element of C, grid-stride over m * n (launch 1-D, any grid).
 * As in BLAS, beta == 0 means C is not read (NaN in C is overwritten) and
 * alpha == 0 or k == 0 means A and B are not read.  Accumulates in float.
 * Naive (no tiling): correct everywhere, fast nowhere.
 * Kernels: gemm_f32 (float) and gemm_f16 (IEEE half stored as ar_u16).
 */
#include "ar_compute.h"

/* a_step/b_step: how far apart consecutive reduction indices l are in A and B. */
#define AR_GEMM_KERNEL(dt, T, LOAD, STORE)                                                     \
    AR_KERNEL(gemm_##dt, ar_u64, m, ar_u64, n, ar_u64, k, float, alpha, AR_GLOBAL const T *, a, \
              ar_u64, lda, AR_GLOBAL const T *, b, ar_u64, ldb, float, beta, AR_GLOBAL T *, c,  \
              ar_u64, ldc, ar_u32, trans_a, ar_u32, trans_b)                                   \
    {                                                                                          \
        ar_u64 total = m * n;                                                                  \
        ar_u64 a_step = trans_a ? 1 : lda;                                                     \
        ar_u64 b_step = trans_b ? ldb : 1;                                                     \
        for (ar_u64 idx = AR_GLOBAL_ID_X; idx < total; idx += AR_GLOBAL_SIZE_X) {              \
            ar_u64 i = idx % m;                                                                \
            ar_u64 j = idx / m;                                                                \
            ar_u64 a_at = trans_a ? i * lda : i;                                               \
            ar_u64 b_at = trans_b ? j : j * ldb;                                               \
            float acc = 0.0f;                                                                  \
            if (alpha != 0.0f) {                                                               \
                for (ar_u64 l = 0; l < k; l++) {                                               \
                    acc += LOAD(a, a_at) * LOAD(b, b_at);                                      \
                    a_at += a_step;                                                            \
                    b_at += b_step;                                                            \
                }                                                                              \
            }                                                                                  \
            float r = alpha * acc;                                                             \
            ar_u64 at = i + j * ldc;                                                           \
            if (beta != 0.0f)                                                                  \
                r += beta * LOAD(c, at);                                                       \
            STORE(c, at, r);                                                                   \
        }                                                                                      \
    }

AR_GEMM_KERNEL(f32, float, AR_LOAD_F32, AR_STORE_F32)
AR_GEMM_KERNEL(f16, ar_u16, AR_LOAD_F16, AR_STORE_F16)
