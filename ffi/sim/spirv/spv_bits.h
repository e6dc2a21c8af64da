/* Bit-level helpers of the SPIR-V interpreter: widths, sign extension, the
 * IEEE bits of floats in 64-bit slots, and unaligned loads and stores. */
#ifndef ARSIM_SPV_BITS_H
#define ARSIM_SPV_BITS_H

#include <stdint.h>
#include <string.h>

static inline uint64_t mask(uint32_t w) { return w >= 64 ? ~0ull : (1ull << w) - 1; }
static inline int64_t sext(uint64_t v, uint32_t w)
{
    return w >= 64 ? (int64_t)v : (int64_t)(v << (64 - w)) >> (64 - w);
}
static inline float f32(uint64_t v)
{
    uint32_t u = (uint32_t)v;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static inline uint64_t uf32(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static inline double f64(uint64_t v)
{
    double d;
    memcpy(&d, &v, 8);
    return d;
}
static inline uint64_t uf64(double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}
/* A float operand of width w as double (exact for f32). */
static inline double fval(uint64_t v, uint32_t w) { return w == 64 ? f64(v) : (double)f32(v); }

static inline uint64_t load_n(const void *p, uint32_t bytes)
{
    switch (bytes) {
    case 1: return *(const uint8_t *)p;
    case 2: { uint16_t v; memcpy(&v, p, 2); return v; }
    case 4: { uint32_t v; memcpy(&v, p, 4); return v; }
    default: { uint64_t v; memcpy(&v, p, 8); return v; }
    }
}

static inline void store_n(void *p, uint32_t bytes, uint64_t v)
{
    switch (bytes) {
    case 1: *(uint8_t *)p = (uint8_t)v; break;
    case 2: { uint16_t x = (uint16_t)v; memcpy(p, &x, 2); break; }
    case 4: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); break; }
    default: memcpy(p, &v, 8); break;
    }
}

#endif /* ARSIM_SPV_BITS_H */
