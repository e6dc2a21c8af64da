/* conv2d forward in the portable dialect (ar_portable.h).
 *
 * Cross-correlation (no filter flip, as cuDNN and PyTorch), dense, no
 * dilation, no groups.  x is NCHW, w is KCRS, y is NKPQ, all packed:
 *   y[n,k,p,q] = sum_{c,r,s} x[n, c, p*sh + r - ph, q*sw + s - pw] * w[k,c,r,s]
 * with zero padding outside x.  One thread per element of y, grid-stride over
 * N*K*P*Q (launch 1-D, any grid).  Accumulates in float.
 * Kernels: conv2d_f32 and conv2d_f16 (IEEE half stored as ar_u16).
 */
#include "ar_compute.h"

#define AR_CONV2D_KERNEL(dt, T, LOAD, STORE)                                                   \
    AR_KERNEL(conv2d_##dt, ar_u64, nb, ar_u64, c, ar_u64, h, ar_u64, w, ar_u64, kf, ar_u64, r,  \
              ar_u64, s, ar_u64, p, ar_u64, q, ar_u32, stride_h, ar_u32, stride_w, ar_u32,      \
              pad_h, ar_u32, pad_w, AR_GLOBAL const T *, x, AR_GLOBAL const T *, wt,            \
              AR_GLOBAL T *, y)                                                                \
    {                                                                                          \
        ar_u64 total = nb * kf * p * q;                                                        \
        for (ar_u64 idx = AR_GLOBAL_ID_X; idx < total; idx += AR_GLOBAL_SIZE_X) {              \
            ar_u64 oq = idx % q;                                                               \
            ar_u64 t = idx / q;                                                                \
            ar_u64 op = t % p;                                                                 \
            t /= p;                                                                            \
            ar_u64 ok = t % kf;                                                                \
            ar_u64 on = t / kf;                                                                \
            ar_i64 h0 = (ar_i64)(op * stride_h) - (ar_i64)pad_h;                               \
            ar_i64 w0 = (ar_i64)(oq * stride_w) - (ar_i64)pad_w;                               \
            float acc = 0.0f;                                                                  \
            for (ar_u64 ci = 0; ci < c; ci++) {                                                \
                ar_u64 x_at = (on * c + ci) * h * w;                                           \
                ar_u64 w_at = (ok * c + ci) * r * s;                                           \
                for (ar_u64 ri = 0; ri < r; ri++) {                                            \
                    ar_i64 ih = h0 + (ar_i64)ri;                                               \
                    if (ih < 0 || ih >= (ar_i64)h)                                             \
                        continue;                                                              \
                    for (ar_u64 si = 0; si < s; si++) {                                        \
                        ar_i64 iw = w0 + (ar_i64)si;                                           \
                        if (iw < 0 || iw >= (ar_i64)w)                                         \
                            continue;                                                          \
                        acc += LOAD(x, x_at + (ar_u64)ih * w + (ar_u64)iw) *                   \
                               LOAD(wt, w_at + ri * s + si);                                   \
                    }                                                                          \
                }                                                                              \
            }                                                                                  \
            STORE(y, idx, acc);                                                                \
        }                                                                                      \
    }

AR_CONV2D_KERNEL(f32, float, AR_LOAD_F32, AR_STORE_F32)
AR_CONV2D_KERNEL(f16, ar_u16, AR_LOAD_F16, AR_STORE_F16)
