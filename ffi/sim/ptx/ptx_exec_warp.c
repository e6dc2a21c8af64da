/* PTX warp-synchronous instructions (shfl, vote, redux, match, elect), for the
 * interpreter: run once the lanes named in the member mask have arrived. */
#define _GNU_SOURCE
#include <fenv.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_exec.h"

/* shfl.sync, vote.sync, redux.sync, match.sync for the lanes in m. */
void ptx_exec_warp(warp *w, frame *fr, const pinsn *in, uint32_t m)
{
    lanes_t *R = fr->R;
    uint64_t *D = R[in->d];
    switch (in->op) {
    case OP_SHFL: {
        uint64_t src[PTX_LANES];
        memcpy(src, R[in->a], sizeof src);
        const uint64_t *B = R[in->b], *C = R[in->c];
        uint64_t *P = in->d2 != PTX_NONE ? R[in->d2] : NULL;
        FOR_LANES(m, {
            uint32_t bv = (uint32_t)B[l] & 0x1f, cv = (uint32_t)C[l];
            uint32_t seg = (cv >> 8) & 0x1f;
            uint32_t maxl = ((uint32_t)l & seg) | ((cv & 0x1f) & ~seg);
            uint32_t minl = (uint32_t)l & seg;
            int32_t j;
            int ok;
            switch (in->mode) {
            case SHFL_UP: j = l - (int32_t)bv; ok = j >= (int32_t)maxl; break;
            case SHFL_DOWN: j = l + (int32_t)bv; ok = j <= (int32_t)maxl; break;
            case SHFL_BFLY: j = l ^ (int32_t)bv; ok = j <= (int32_t)maxl; break;
            default: j = (int32_t)(minl | (bv & ~seg)); ok = j <= (int32_t)maxl; break;
            }
            if (!ok)
                j = l;
            D[l] = src[j] & 0xffffffffu;
            if (P)
                P[l] = (uint64_t)ok;
        });
        return;
    }
    case OP_VOTE: {
        const uint64_t *A = R[in->a];
        uint32_t ballot = 0;
        FOR_LANES(m, { if ((A[l] & 1) ^ (in->neg & 1)) ballot |= 1u << l; });
        FOR_LANES(m, {
            switch (in->mode) {
            case VOTE_ALL: D[l] = ballot == m; break;
            case VOTE_ANY: D[l] = ballot != 0; break;
            case VOTE_UNI: D[l] = ballot == 0 || ballot == m; break;
            default: D[l] = ballot; break;
            }
        });
        return;
    }
    case OP_REDUX: {
        const uint64_t *A = R[in->a];
        int sg = is_signed(in->type);
        uint32_t acc = 0;
        int first = 1;
        FOR_LANES(m, {
            uint32_t v = (uint32_t)A[l];
            if (first) {
                acc = v;
                first = 0;
                continue;
            }
            switch (in->mode) {
            case ATOM_ADD: acc += v; break;
            case ATOM_MIN: acc = sg ? ((int32_t)v < (int32_t)acc ? v : acc) : (v < acc ? v : acc); break;
            case ATOM_MAX: acc = sg ? ((int32_t)v > (int32_t)acc ? v : acc) : (v > acc ? v : acc); break;
            case ATOM_AND: acc &= v; break;
            case ATOM_OR: acc |= v; break;
            default: acc ^= v; break;
            }
        });
        FOR_LANES(m, D[l] = acc);
        return;
    }
    case OP_MATCH: {
        const uint64_t *A = R[in->a];
        uint64_t mask = sim_mask(ibits(in->type));
        uint64_t vals[PTX_LANES];
        memcpy(vals, A, sizeof vals);
        uint64_t *P = in->d2 != PTX_NONE ? R[in->d2] : NULL;
        uint32_t same_all = m;
        FOR_LANES(m, { if ((vals[l] & mask) != (vals[__builtin_ctz(m)] & mask)) same_all = 0; });
        FOR_LANES(m, {
            if (in->mode == 1) {
                uint32_t s = 0;
                for (uint32_t q = m; q; q &= q - 1) {
                    int k = __builtin_ctz(q);
                    if ((vals[k] & mask) == (vals[l] & mask))
                        s |= 1u << k;
                }
                D[l] = s;
            } else {
                D[l] = same_all;
                if (P)
                    P[l] = same_all != 0;
            }
        });
        return;
    }
    case OP_ELECT: { /* the lowest lane of the member mask is the leader */
        uint32_t c = m & (uint32_t)R[in->a][__builtin_ctz(m)];
        uint64_t leader = c ? (uint64_t)__builtin_ctz(c) : PTX_LANES;
        FOR_LANES(m, {
            D[l] = leader;
            R[in->d2][l] = (uint64_t)l == leader;
        });
        return;
    }
    default:
        (void)w;
        return;
    }
}
