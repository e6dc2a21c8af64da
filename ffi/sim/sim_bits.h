/* Value and bounds helpers both interpreters (ptx/, spirv/) need.
 *
 * Registers hold every value as 64 raw bits; these reinterpret them
 * (memcpy, so no aliasing rules are broken), mask and sign-extend them to a
 * width, move them to and from memory of a given size, and test whether an
 * access lies inside a window without the end address wrapping around.
 */
#ifndef ARSIM_SIM_BITS_H
#define ARSIM_SIM_BITS_H

#include <stdint.h>
#include <string.h>

static inline float sim_f32(uint64_t v)
{
    uint32_t u = (uint32_t)v;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline uint64_t sim_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static inline double sim_f64(uint64_t v)
{
    double d;
    memcpy(&d, &v, 8);
    return d;
}

static inline uint64_t sim_f64_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}

/* The low `bits` bits set (all 64 for bits >= 64). */
static inline uint64_t sim_mask(uint32_t bits) { return bits >= 64 ? ~0ull : (1ull << bits) - 1; }

/* The low `bits` bits of v, sign-extended. */
static inline int64_t sim_sext(uint64_t v, uint32_t bits)
{
    return bits >= 64 ? (int64_t)v : (int64_t)(v << (64 - bits)) >> (64 - bits);
}

/* An unsigned value of 1, 2, 4 or 8 bytes (any other size reads 8). */
static inline uint64_t sim_load_n(const void *p, uint32_t bytes)
{
    switch (bytes) {
    case 1: return *(const uint8_t *)p;
    case 2: { uint16_t v; memcpy(&v, p, 2); return v; }
    case 4: { uint32_t v; memcpy(&v, p, 4); return v; }
    default: { uint64_t v; memcpy(&v, p, 8); return v; }
    }
}

/* The low 1, 2, 4 or 8 bytes of v (any other size writes 8). */
static inline void sim_store_n(void *p, uint32_t bytes, uint64_t v)
{
    switch (bytes) {
    case 1: *(uint8_t *)p = (uint8_t)v; break;
    case 2: { uint16_t x = (uint16_t)v; memcpy(p, &x, 2); break; }
    case 4: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); break; }
    default: memcpy(p, &v, 8); break;
    }
}

/* 1 if [a, a + n) lies inside [lo, hi).  Written so that no sum can wrap:
 * an address near the top of the space must not pass as small. */
static inline int sim_inside(uint64_t a, uint64_t n, uint64_t lo, uint64_t hi)
{
    return a >= lo && a <= hi && n <= hi - a;
}

#endif /* ARSIM_SIM_BITS_H */
