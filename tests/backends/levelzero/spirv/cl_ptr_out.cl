/* OpenCL.std functions that store through a pointer (frexp, modf, fract,
 * sincos, remquo, lgamma_r), and sinpi, cospi, tanpi, tgamma, lgamma, on
 * half, float and double, scalars and 4-vectors; test_spirv_ptr_out.py
 * checks results and stored values against numpy and libm.  The pointers
 * point to global, private and local memory. */
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

/* res: 11 results per work-item; fout: 3 stored values (modf, fract,
 * sincos); iout: 3 stored ints (frexp, remquo, lgamma_r). */
#define SCALAR(T)                                                                        \
    kernel void ptr_out_##T(global const T *a, global const T *b, global T *res,          \
                            global T *fout, global int *iout)                             \
    {                                                                                     \
        local T lbuf[64];                                                                 \
        size_t i = get_global_id(0), l = get_local_id(0);                                 \
        T x = a[i], y = b[i], fl;                                                         \
        int q;                                                                            \
        global T *r = res + 11 * i;                                                       \
        r[0] = frexp(x, iout + 3 * i);          /* global */                              \
        r[1] = modf(x, fout + 3 * i);                                                     \
        r[2] = fract(x, &fl);                   /* private */                             \
        fout[3 * i + 1] = fl;                                                             \
        r[3] = sincos(x, &lbuf[l]);             /* local */                               \
        fout[3 * i + 2] = lbuf[l];                                                        \
        r[4] = remquo(x, y, &q);                                                          \
        iout[3 * i + 1] = q;                                                              \
        r[5] = lgamma_r(x, iout + 3 * i + 2);                                             \
        r[6] = sinpi(x);                                                                  \
        r[7] = cospi(x);                                                                  \
        r[8] = tanpi(x);                                                                  \
        r[9] = tgamma(x);                                                                 \
        r[10] = lgamma(x);                                                                \
    }

/* The same six on 4-vectors, each lane an element of a and b. */
#define VECTOR(T)                                                                         \
    kernel void ptr_out_##T##4(global const T *a, global const T *b, global T *res,       \
                               global T *fout, global int *iout)                          \
    {                                                                                     \
        local T##4 lbuf[64];                                                              \
        size_t i = get_global_id(0), l = get_local_id(0);                                 \
        T##4 x = vload4(i, a), y = vload4(i, b), fl, f;                                   \
        int4 e, q, s;                                                                     \
        vstore4(frexp(x, &e), 7 * i, res);                                                \
        vstore4(e, 3 * i, iout);                                                          \
        vstore4(modf(x, &f), 7 * i + 1, res);                                             \
        vstore4(f, 3 * i, fout);                                                          \
        vstore4(fract(x, &fl), 7 * i + 2, res);                                           \
        vstore4(fl, 3 * i + 1, fout);                                                     \
        vstore4(sincos(x, &lbuf[l]), 7 * i + 3, res);                                     \
        vstore4(lbuf[l], 3 * i + 2, fout);                                                \
        vstore4(remquo(x, y, &q), 7 * i + 4, res);                                        \
        vstore4(q, 3 * i + 1, iout);                                                      \
        vstore4(lgamma_r(x, &s), 7 * i + 5, res);                                         \
        vstore4(s, 3 * i + 2, iout);                                                      \
        vstore4(sinpi(x), 7 * i + 6, res);                                                \
    }

SCALAR(float)
SCALAR(double)
SCALAR(half)
VECTOR(float)
VECTOR(double)
VECTOR(half)

/* frexp storing its exponent n[0] ints past out: past the buffer faults. */
kernel void frexp_at(global const float *a, global float *res, global int *out,
                     global const int *n)
{
    size_t i = get_global_id(0);
    res[i] = frexp(a[i], out + n[0] + i);
}
