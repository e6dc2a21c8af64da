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

/* IEEE binary16 <-> float, in integer arithmetic so that every dialect
 * computes the same bits (no half type or fp16 extension needed).  float16
 * operands are stored as ar_u16 and computed in float. */
AR_DEVICE_FN float ar_half_to_float(ar_u16 h)
{
    ar_u32 sign = ((ar_u32)h & 0x8000u) << 16;
    ar_u32 exponent = ((ar_u32)h >> 10) & 0x1fu;
    ar_u32 mantissa = (ar_u32)h & 0x3ffu;
    if (exponent == 0x1fu) /* infinity or NaN */
        return ar_u32_as_float(sign | 0x7f800000u | (mantissa << 13));
    if (exponent != 0u) /* normal: rebias 15 -> 127 */
        return ar_u32_as_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
    /* zero or subnormal: mantissa * 2^-24, exact in float */
    float magnitude = (float)mantissa * 5.9604644775390625e-8f;
    return sign ? -magnitude : magnitude;
}

/* Round to nearest, ties to even (as numpy's astype(float16)). */
AR_DEVICE_FN ar_u16 ar_float_to_half(float f)
{
    ar_u32 x = ar_float_as_u32(f);
    ar_u32 sign = (x >> 16) & 0x8000u;
    ar_u32 bits = x & 0x7fffffffu;
    if (bits >= 0x7f800000u) /* infinity, or NaN (kept quiet) */
        return (ar_u16)(sign | 0x7c00u | (bits > 0x7f800000u ? 0x200u : 0u));
    if (bits >= 0x477ff000u) /* 65520 and above round to infinity */
        return (ar_u16)(sign | 0x7c00u);
    if (bits < 0x38800000u) { /* below 2^-14: a subnormal half, or zero */
        if (bits <= 0x33000000u) /* up to 2^-25 (a tie, to even): zero */
            return (ar_u16)sign;
        ar_u32 e = bits >> 23;
        ar_u32 significand = (bits & 0x7fffffu) | 0x800000u;
        ar_u32 shift = 126u - e; /* 14..24: to units of 2^-24 */
        ar_u32 q = significand >> shift;
        ar_u32 rest = significand & ((1u << shift) - 1u);
        ar_u32 halfway = 1u << (shift - 1u);
        if (rest > halfway || (rest == halfway && (q & 1u)))
            q++;
        return (ar_u16)(sign | q);
    }
    ar_u32 r = bits - 0x38000000u; /* rebias 127 -> 15 */
    ar_u32 q = r >> 13;
    ar_u32 rest = r & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (q & 1u)))
        q++; /* a carry into the exponent is the right result */
    return (ar_u16)(sign | q);
}

/* Element access by dtype: kernels are written once over LOAD/STORE and
 * instantiated per dtype (float32 as float, float16 as ar_u16). */
#define AR_LOAD_F32(p, i) ((p)[i])
#define AR_STORE_F32(p, i, v) ((p)[i] = (v))
#define AR_LOAD_F16(p, i) ar_half_to_float((p)[i])
#define AR_STORE_F16(p, i, v) ((p)[i] = ar_float_to_half(v))

#endif /* AR_COMPUTE_H */
