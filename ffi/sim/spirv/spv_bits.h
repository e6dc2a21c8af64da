/* Bit-level helpers of the SPIR-V interpreter.  The widths, sign extension,
 * float bits and unaligned loads and stores are the sims' shared ones
 * (../sim_bits.h, which the PTX interpreter uses too); only what is
 * SPIR-V's own is here. */
#ifndef ARSIM_SPV_BITS_H
#define ARSIM_SPV_BITS_H

#include <stdint.h>

#include "../sim_bits.h"

/* An IEEE half's value (exact). */
static inline float spv_half_value(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
    if (e == 0x1F)
        return sim_f32(sign | 0x7F800000u | (m << 13));
    if (e)
        return sim_f32(sign | ((e + 112u) << 23) | (m << 13));
    float mag = (float)m * 5.9604644775390625e-8f; /* m * 2^-24, exact */
    return sign ? -mag : mag;
}

/* A float operand of width w (16, 32 or 64) as double (exact). */
static inline double fval(uint64_t v, uint32_t w)
{
    if (w == 16)
        return (double)spv_half_value((uint16_t)v);
    return w == 64 ? sim_f64(v) : (double)sim_f32(v);
}

#endif /* ARSIM_SPV_BITS_H */
