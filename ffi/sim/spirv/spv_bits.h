/* Bit-level helpers of the SPIR-V interpreter.  The widths, sign extension,
 * float bits and unaligned loads and stores are the sims' shared ones
 * (../sim_bits.h, which the PTX interpreter uses too); only what is
 * SPIR-V's own is here. */
#ifndef ARSIM_SPV_BITS_H
#define ARSIM_SPV_BITS_H

#include <stdint.h>

#include "../sim_bits.h"

/* A float operand of width w as double (exact for f32). */
static inline double fval(uint64_t v, uint32_t w)
{
    return w == 64 ? sim_f64(v) : (double)sim_f32(v);
}

#endif /* ARSIM_SPV_BITS_H */
