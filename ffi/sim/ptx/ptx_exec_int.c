/* PTX integer and bit arithmetic, for the interpreter, in 16, 32 and 64
 * bits (the operation's type masks every result). */
#define _GNU_SOURCE
#include <fenv.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_exec.h"

/* A family function's answer for an operation of another family. */
#define NOT_MINE 1

static uint64_t brev64(uint64_t v, int bits)
{
    uint64_t r = 0;
    for (int i = 0; i < bits; i++)
        if (v >> i & 1)
            r |= 1ull << (bits - 1 - i);
    return r;
}

static uint64_t bfe(uint64_t a, uint32_t pos, uint32_t len, int bits, int sgn)
{
    pos &= 0xff;
    len &= 0xff;
    int msb = bits - 1;
    int sbit = 0;
    if (sgn && len > 0) {
        uint32_t top = pos + len - 1;
        sbit = (int)(a >> (top > (uint32_t)msb ? (uint32_t)msb : top) & 1);
    }
    uint64_t d = 0;
    for (int i = 0; i <= msb; i++) {
        int bit = ((uint32_t)i < len && pos + (uint32_t)i <= (uint32_t)msb) ? (int)(a >> (pos + (uint32_t)i) & 1) : sbit;
        d |= (uint64_t)bit << i;
    }
    return d;
}

static uint64_t bfi(uint64_t f, uint64_t base, uint32_t pos, uint32_t len, int bits)
{
    pos &= 0xff;
    len &= 0xff;
    uint64_t d = base;
    for (uint32_t i = 0; i < len && pos + i < (uint32_t)bits; i++) {
        d &= ~(1ull << (pos + i));
        d |= (f >> i & 1) << (pos + i);
    }
    return d & sim_mask(bits);
}

/* add, sub (with .cc and .sat), addc, subc, fns. */
static int int_carry(const pinsn *in, frame *fr, uint64_t *D, const uint64_t *A,
                     const uint64_t *B, const uint64_t *C, const uint64_t *E, uint32_t m)
{
    int bits = ibits(in->type);
    uint64_t mask = sim_mask(bits);
    switch (in->op) {
    case OP_ADD:
        if (in->flags & FL_CC) {
            FOR_LANES(m, {
                uint64_t a = A[l] & mask, s = a + (B[l] & mask);
                fr->cc[l] = bits == 64 ? s < a : (uint8_t)(s >> bits & 1);
                D[l] = s & mask;
            });
        } else if (in->flags & FL_SAT) {
            FOR_LANES(m, {
                int64_t s = sim_sext(A[l], 32) + sim_sext(B[l], 32);
                s = s > INT32_MAX ? INT32_MAX : s < INT32_MIN ? INT32_MIN : s;
                D[l] = (uint64_t)s & mask;
            });
        } else {
            FOR_LANES(m, D[l] = (A[l] + B[l]) & mask);
        }
        return 0;
    case OP_SUB:
        if (in->flags & FL_CC) {
            FOR_LANES(m, {
                uint64_t a = A[l] & mask, bb = B[l] & mask;
                fr->cc[l] = a < bb;
                D[l] = (a - bb) & mask;
            });
        } else if (in->flags & FL_SAT) {
            FOR_LANES(m, {
                int64_t s = sim_sext(A[l], 32) - sim_sext(B[l], 32);
                s = s > INT32_MAX ? INT32_MAX : s < INT32_MIN ? INT32_MIN : s;
                D[l] = (uint64_t)s & mask;
            });
        } else {
            FOR_LANES(m, D[l] = (A[l] - B[l]) & mask);
        }
        return 0;
    case OP_ADDC:
        FOR_LANES(m, {
            uint64_t a = A[l] & mask, bb = B[l] & mask, s = a + bb + fr->cc[l];
            if (in->flags & FL_CC)
                fr->cc[l] = bits == 64 ? (s < a || (s == a && fr->cc[l])) : (uint8_t)(s >> bits & 1);
            D[l] = s & mask;
        });
        return 0;
    case OP_SUBC:
        FOR_LANES(m, {
            uint64_t a = A[l] & mask, bb = B[l] & mask, s = a - bb - fr->cc[l];
            if (in->flags & FL_CC)
                fr->cc[l] = a < bb || (a == bb && fr->cc[l]);
            D[l] = s & mask;
        });
        return 0;
    case OP_FNS:
        FOR_LANES(m, {
            uint32_t msk = (uint32_t)A[l], base = (uint32_t)B[l] & 31;
            int32_t off = (int32_t)C[l];
            uint32_t r = 0xffffffffu;
            if (off == 0) {
                if (msk >> base & 1)
                    r = base;
            } else {
                int32_t need = off > 0 ? off : -off, step = off > 0 ? 1 : -1;
                for (int32_t i = (int32_t)base; i >= 0 && i < 32; i += step)
                    if ((msk >> i & 1) && --need == 0) {
                        r = (uint32_t)i;
                        break;
                    }
            }
            D[l] = r;
        });
        return 0;
    default:
        return NOT_MINE;
    }
}

/* mul, mad, madc, mul24, mad24, sad, div, rem, min, max. */
static int int_mul(const pinsn *in, frame *fr, uint64_t *D, const uint64_t *A,
                   const uint64_t *B, const uint64_t *C, const uint64_t *E, uint32_t m)
{
    int t = in->type, bits = ibits(t), sg = is_signed(t);
    uint64_t mask = sim_mask(bits);
    switch (in->op) {
    case OP_MADC:
    case OP_MUL:
    case OP_MAD: {
        if (in->op == OP_MADC || (in->op == OP_MAD && (in->flags & FL_CC))) {
            if (in->type2 == MULW_WIDE)
                return E_FAIL;
            int cin = in->op == OP_MADC;
            FOR_LANES(m, {
                uint64_t p;
                if (in->type2 == MULW_HI)
                    p = bits == 64 ? (uint64_t)(((unsigned __int128)A[l] * B[l]) >> 64)
                                   : (sg ? (uint64_t)((sim_sext(A[l], bits) * sim_sext(B[l], bits)) >> bits)
                                         : ((A[l] & mask) * (B[l] & mask)) >> bits);
                else
                    p = A[l] * B[l];
                p &= mask;
                uint64_t cc = (C[l] & mask);
                unsigned __int128 s = (unsigned __int128)p + cc + (cin ? fr->cc[l] : 0);
                if (in->flags & FL_CC)
                    fr->cc[l] = (uint8_t)((s >> bits) & 1);
                D[l] = (uint64_t)s & mask;
            });
            return 0;
        }
        int mad = in->op == OP_MAD;
        if (in->type2 == MULW_WIDE) {
            uint64_t wm = sim_mask(bits * 2);
            FOR_LANES(m, {
                uint64_t p = sg ? (uint64_t)(sim_sext(A[l], bits) * sim_sext(B[l], bits)) : (A[l] & mask) * (B[l] & mask);
                D[l] = (p + (mad ? C[l] : 0)) & wm;
            });
        } else if (in->type2 == MULW_HI) {
            FOR_LANES(m, {
                uint64_t h;
                if (bits == 64) {
                    if (sg)
                        h = (uint64_t)(((__int128)(int64_t)A[l] * (__int128)(int64_t)B[l]) >> 64);
                    else
                        h = (uint64_t)(((unsigned __int128)A[l] * (unsigned __int128)B[l]) >> 64);
                } else if (sg) {
                    h = (uint64_t)((sim_sext(A[l], bits) * sim_sext(B[l], bits)) >> bits);
                } else {
                    h = ((A[l] & mask) * (B[l] & mask)) >> bits;
                }
                D[l] = (h + (mad ? C[l] : 0)) & mask;
            });
        } else if (mad) {
            FOR_LANES(m, D[l] = (A[l] * B[l] + C[l]) & mask);
        } else {
            FOR_LANES(m, D[l] = (A[l] * B[l]) & mask);
        }
        return 0;
    }
    case OP_MUL24:
    case OP_MAD24:
        FOR_LANES(m, {
            int64_t p = sg ? sim_sext(A[l], 24) * sim_sext(B[l], 24) : (int64_t)((A[l] & 0xffffff) * (B[l] & 0xffffff));
            uint64_t r = in->type2 == MULW_HI ? (uint64_t)p >> 16 : (uint64_t)p;
            D[l] = (r + (in->op == OP_MAD24 ? C[l] : 0)) & 0xffffffffu;
        });
        return 0;
    case OP_SAD:
        FOR_LANES(m, {
            uint64_t d = sg ? (uint64_t)(sim_sext(A[l], bits) > sim_sext(B[l], bits) ? sim_sext(A[l], bits) - sim_sext(B[l], bits) : sim_sext(B[l], bits) - sim_sext(A[l], bits))
                            : ((A[l] & mask) > (B[l] & mask) ? (A[l] & mask) - (B[l] & mask) : (B[l] & mask) - (A[l] & mask));
            D[l] = (C[l] + d) & mask;
        });
        return 0;
    case OP_DIV:
    case OP_REM: {
        int rem = in->op == OP_REM;
        FOR_LANES(m, {
            uint64_t r;
            if (sg) {
                int64_t a = sim_sext(A[l], bits), bb = sim_sext(B[l], bits);
                if (bb == 0)
                    r = rem ? (uint64_t)a : ~0ull; /* what the hardware returns */
                else if (bb == -1)
                    r = rem ? 0 : (uint64_t)0 - (uint64_t)a; /* no overflow trap */
                else
                    r = (uint64_t)(rem ? a % bb : a / bb);
            } else {
                uint64_t a = A[l] & mask, bb = B[l] & mask;
                r = bb == 0 ? (rem ? a : ~0ull) : rem ? a % bb : a / bb;
            }
            D[l] = r & mask;
        });
        return 0;
    }
    case OP_MIN:
    case OP_MAX: {
        int mx = in->op == OP_MAX;
        FOR_LANES(m, {
            int lt = sg ? sim_sext(A[l], bits) < sim_sext(B[l], bits) : (A[l] & mask) < (B[l] & mask);
            D[l] = ((lt != mx) ? A[l] : B[l]) & mask;
        });
        return 0;
    }
    default:
        return NOT_MINE;
    }
}

/* abs, neg, logic, shifts, bit counts and fields, prmt, shf, lop3. */
static int int_bits(const pinsn *in, frame *fr, uint64_t *D, const uint64_t *A,
                    const uint64_t *B, const uint64_t *C, const uint64_t *E, uint32_t m)
{
    int t = in->type, bits = ibits(t), sg = is_signed(t);
    uint64_t mask = sim_mask(bits);
    switch (in->op) {
    case OP_ABS:
        FOR_LANES(m, { int64_t v = sim_sext(A[l], bits); D[l] = (uint64_t)(v < 0 ? -v : v) & mask; });
        return 0;
    case OP_NEG:
        FOR_LANES(m, D[l] = (0 - A[l]) & mask);
        return 0;
    case OP_AND: FOR_LANES(m, D[l] = A[l] & B[l] & mask); return 0;
    case OP_OR: FOR_LANES(m, D[l] = (A[l] | B[l]) & mask); return 0;
    case OP_XOR: FOR_LANES(m, D[l] = (A[l] ^ B[l]) & mask); return 0;
    case OP_NOT: FOR_LANES(m, D[l] = ~A[l] & mask); return 0;
    case OP_CNOT: FOR_LANES(m, D[l] = (A[l] & mask) == 0); return 0;
    case OP_SHL:
        FOR_LANES(m, { uint32_t s = (uint32_t)B[l]; D[l] = s >= (uint32_t)bits ? 0 : (A[l] << s) & mask; });
        return 0;
    case OP_SHR:
        FOR_LANES(m, {
            uint32_t s = (uint32_t)B[l];
            if (sg)
                D[l] = (uint64_t)(sim_sext(A[l], bits) >> (s >= (uint32_t)bits ? (uint32_t)bits - 1 : s)) & mask;
            else
                D[l] = s >= (uint32_t)bits ? 0 : (A[l] & mask) >> s;
        });
        return 0;
    case OP_POPC: FOR_LANES(m, D[l] = (uint64_t)__builtin_popcountll(A[l] & mask)); return 0;
    case OP_CLZ:
        FOR_LANES(m, { uint64_t v = A[l] & mask; D[l] = v ? (uint64_t)(__builtin_clzll(v) - (64 - bits)) : (uint64_t)bits; });
        return 0;
    case OP_BREV: FOR_LANES(m, D[l] = brev64(A[l], bits)); return 0;
    case OP_BFIND:
        FOR_LANES(m, {
            uint64_t v = sg && sim_sext(A[l], bits) < 0 ? ~A[l] & mask : A[l] & mask;
            uint32_t r = v ? (uint32_t)(63 - __builtin_clzll(v)) : 0xffffffffu;
            if (v && (in->flags & FL_SHIFTAMT))
                r = (uint32_t)bits - 1 - r;
            D[l] = r;
        });
        return 0;
    case OP_BFE: FOR_LANES(m, D[l] = bfe(A[l], (uint32_t)B[l], (uint32_t)C[l], bits, sg) & mask); return 0;
    case OP_BFI: FOR_LANES(m, D[l] = bfi(A[l], B[l], (uint32_t)C[l], (uint32_t)E[l], bits)); return 0;
    case OP_PRMT:
        if (in->mode != 0)
            return E_FAIL;
        FOR_LANES(m, {
            uint64_t bytes = (A[l] & 0xffffffffu) | (B[l] & 0xffffffffu) << 32;
            uint32_t sel = (uint32_t)C[l], r = 0;
            for (int k = 0; k < 4; k++) {
                uint32_t s = sel >> (4 * k) & 0xf;
                uint32_t byte = (uint32_t)(bytes >> (8 * (s & 7))) & 0xff;
                if (s & 8)
                    byte = (byte & 0x80) ? 0xff : 0;
                r |= byte << (8 * k);
            }
            D[l] = r;
        });
        return 0;
    case OP_SHF:
        FOR_LANES(m, {
            uint64_t v = (A[l] & 0xffffffffu) | (B[l] & 0xffffffffu) << 32;
            uint32_t n = (uint32_t)C[l];
            n = (in->flags & FL_WRAP) ? n & 31 : (n > 32 ? 32 : n);
            D[l] = (in->flags & FL_RIGHT) ? (v >> n) & 0xffffffffu : (uint32_t)((v << n) >> 32);
        });
        return 0;
    case OP_LOP3: {
        uint32_t lut = (uint32_t)in->imm;
        FOR_LANES(m, {
            uint64_t a = A[l], bb = B[l], c = C[l], r = 0;
            for (int k = 0; k < 8; k++)
                if (lut >> k & 1)
                    r |= ((k & 4) ? a : ~a) & ((k & 2) ? bb : ~bb) & ((k & 1) ? c : ~c);
            D[l] = r & 0xffffffffu;
        });
        return 0;
    }
    default:
        return E_FAIL;
    }
}

int ptx_exec_int(const pinsn *in, frame *fr, uint64_t *D, const uint64_t *A, const uint64_t *B,
                 const uint64_t *C, const uint64_t *E, uint32_t m)
{
    int rc = int_carry(in, fr, D, A, B, C, E, m);
    if (rc == NOT_MINE)
        rc = int_mul(in, fr, D, A, B, C, E, m);
    if (rc == NOT_MINE)
        rc = int_bits(in, fr, D, A, B, C, E, m);
    return rc;
}
